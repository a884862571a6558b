// Events on PostgreSQL at READ COMMITTED (src/directory/events.ts): two processes (two pools, each with
// its bus) dispatching the same pending rows at once run each row's handler exactly once, and an
// emitter's own dispatch and another process's dispatchPending never both run it.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { migrate } from '../../src/db/migrate.ts';
import { openPostgres, type PostgresDb } from '../../src/db/postgres.ts';
import { createEventBus, type EventBus, type EventContext } from '../../src/directory/events.ts';
import { createLogger } from '../../src/kernel/log.ts';
import { freshDatabaseUrl } from '../helpers/postgres.ts';

declare module '../../src/directory/events.ts' {
  interface EventMap { 'test.pg': { n: number } }
}

/** A process: a pool of its own, a bus with the one subscriber, and a context for it. */
interface Process { ctx: EventContext; bus: EventBus<EventContext> }

async function processes(t: TestContext): Promise<Process[]> {
  const pools: PostgresDb[] = [];
  const url = await freshDatabaseUrl(t, async () => { for (const p of pools) await p.close(); });
  pools.push(await openPostgres({ url, max: 4 }), await openPostgres({ url, max: 4 }));
  await migrate(pools[0]);
  await pools[0].exec('CREATE TABLE handled (n bigint NOT NULL, by text NOT NULL)');
  return pools.map((db, i) => {
    const bus = createEventBus<EventContext>();
    // The handler's effect is written in its transaction; it takes a while, as real handlers do.
    bus.subscribe('test.pg', 'test.recorder', async (ctx, p) => {
      await ctx.db.run('INSERT INTO handled (n, by) VALUES (?, ?)', p.n, `p${i}`);
      await new Promise((r) => setTimeout(r, 5));
    });
    return { bus, ctx: { db, log: createLogger('silent'), now: () => new Date(), afterCommit: (fn) => db.afterCommit(fn) } };
  });
}

const handledOf = async (p: Process) => (await p.ctx.db.all<{ n: number; times: number }>('SELECT n, count(*) AS times FROM handled GROUP BY n ORDER BY n'))
  .map((r) => ({ ...r }));

test('postgres: two processes dispatching the same pending rows at once handle each exactly once', async (t) => {
  const [a, b] = await processes(t);
  for (let n = 1; n <= 20; n++) {
    await a.ctx.db.run("INSERT INTO event_outbox (id, event, subscriber, payload, created_at, attempts) VALUES (?, 'test.pg', 'test.recorder', ?, ?, 0)",
      `evt_${String(n).padStart(2, '0')}`, JSON.stringify({ n }), '2026-01-01T00:00:00.000Z');
  }
  await Promise.all([a.bus.dispatchPending(a.ctx), b.bus.dispatchPending(b.ctx)]);
  assert.deepEqual(await handledOf(a), Array.from({ length: 20 }, (_, k) => ({ n: k + 1, times: 1 })));
  const by = (await a.ctx.db.all<{ by: string }>('SELECT DISTINCT by FROM handled ORDER BY by')).map((r) => r.by);
  assert.deepEqual(by, ['p0', 'p1'], 'both processes took part');
  assert.deepEqual({ ...await a.ctx.db.get('SELECT count(*) AS n, min(attempts) AS lo, max(attempts) AS hi FROM event_outbox WHERE done_at IS NOT NULL') },
    { n: 20, lo: 1, hi: 1 });
});

test('postgres: an emitter\'s dispatch after commit and another process\'s dispatchPending handle each event once', async (t) => {
  const [a, b] = await processes(t);
  const emitted = (async () => {
    for (let n = 1; n <= 10; n++) await a.ctx.db.tx(async () => { await a.bus.emit(a.ctx, 'test.pg', { n }); });
  })();
  const swept = (async () => {
    for (let i = 0; i < 10; i++) {
      await b.bus.dispatchPending(b.ctx);
      await new Promise((r) => setTimeout(r, 2));
    }
  })();
  await Promise.all([emitted, swept]);
  assert.deepEqual(await handledOf(a), Array.from({ length: 10 }, (_, k) => ({ n: k + 1, times: 1 })));
});
