// Events (src/directory/events.ts): recorded in the emitting transaction, handled once after it
// commits, a failing handler kept pending with its error, and pending news handled at the next start.
import test from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { events } from '../../src/directory/context.ts';
import { startTestServer, tempDir, serversRunTheWorker } from '../helpers/server.ts';
import { counterKey } from '../helpers/sql.ts';

serversRunTheWorker();

declare module '../../src/directory/events.ts' {
  interface EventMap { 'test.ping': { n: number }; 'test.news': { n: number } }
}

const rows = async (s: { db: { all<T>(sql: string, ...p: unknown[]): Promise<T[]> } }, event = 'test.ping') =>
  (await s.db.all<{ subscriber: string; attempts: number; last_error: string | null; done: number }>(
    "SELECT subscriber, attempts, last_error, CASE WHEN done_at IS NULL THEN 0 ELSE 1 END AS done FROM event_outbox WHERE event = ? ORDER BY subscriber", event))
    .map((r) => ({ ...r }));

test('an event is recorded in the transaction, handled once after commit, and not at all when the transaction rolls back', async (t) => {
  const s = await startTestServer(t);
  const seen: Array<{ n: number; committed: boolean; inTx: boolean }> = [];
  await s.db.exec('CREATE TABLE pings (n INTEGER)');
  events.subscribe('test.ping', 'test.counter', async (ctx, p) => {
    seen.push({ n: p.n, committed: await ctx.db.get('SELECT 1 FROM pings WHERE n = ?', p.n) !== undefined, inTx: ctx.db.inTransaction });
  });
  const ctx = s.operator();
  await assert.rejects(async () => await ctx.db.tx(async () => {
    await ctx.db.run('INSERT INTO pings (n) VALUES (1)');
    await ctx.emit('test.ping', { n: 1 });
    throw new Error('changed my mind');
  }), /changed my mind/);
  assert.deepEqual(seen, [], 'a rolled-back emit is never handled');
  assert.deepEqual(await rows(s), [], 'nor recorded');
  await ctx.db.tx(async () => {
    await ctx.db.run('INSERT INTO pings (n) VALUES (2)');
    await ctx.emit('test.ping', { n: 2 });
    assert.deepEqual(seen, [], 'nothing runs before the commit');
    assert.equal((await rows(s)).length, 1, 'the outbox row is written in the transaction');
  });
  assert.deepEqual(seen, [{ n: 2, committed: true, inTx: true }], 'handled after commit, in a transaction of its own, seeing the committed write');
  assert.deepEqual(await rows(s), [{ subscriber: 'test.counter', attempts: 1, last_error: null, done: 1 }]);
  assert.equal(await events.dispatchPending(ctx), 0, 'a done row is never handled again');
  assert.equal(seen.length, 1);
});

test('a failing handler rolls back alone and stays pending with its error; the next start handles it', async (t) => {
  const dir = tempDir(t);
  const dirs = { dataDir: path.join(dir, 'data'), storageDir: path.join(dir, 'storage') };
  const s = await startTestServer(t, {}, dirs);
  // The key numbers the rows in the order they were written.
  await s.db.exec(`CREATE TABLE effects (n ${counterKey(s.db)}, who TEXT)`);
  let broken = true;
  events.subscribe('test.news', 'test.fragile', async (ctx) => {
    await ctx.db.run("INSERT INTO effects (who) VALUES ('fragile')");
    if (broken) throw new Error('the fragile handler broke');
  }, 'pinging the fragile one');
  events.subscribe('test.news', 'test.sturdy', async (ctx) => { await ctx.db.run("INSERT INTO effects (who) VALUES ('sturdy')"); });
  const ctx = s.operator();
  await ctx.db.tx(async () => {
    await ctx.db.run("INSERT INTO effects (who) VALUES ('emitter')");
    await ctx.emit('test.news', { n: 7 });
  });
  const who = async () => (await s.db.all<{ who: string }>('SELECT who FROM effects ORDER BY n')).map((r) => r.who);
  assert.deepEqual(await who(), ['emitter', 'sturdy'], 'the emitter and the other subscriber keep their work; the failed handler leaves nothing');
  assert.deepEqual(await rows(s, 'test.news'), [
    { subscriber: 'test.fragile', attempts: 1, last_error: 'the fragile handler broke', done: 0 },
    { subscriber: 'test.sturdy', attempts: 1, last_error: null, done: 1 },
  ]);
  const logged = s.logs.find((l) => l.includes('pinging the fragile one failed'));
  assert.ok(logged, 'the failure is logged');
  assert.match(logged, /"level":"error"/);
  assert.match(logged, /"n":7/, 'with the payload');

  // The server stops with the row pending; the next one handles it before its first request.
  await s.close();
  broken = false;
  const again = await startTestServer(t, {}, dirs);
  assert.deepEqual(await rows(again, 'test.news'), [
    { subscriber: 'test.fragile', attempts: 2, last_error: null, done: 1 },
    { subscriber: 'test.sturdy', attempts: 1, last_error: null, done: 1 },
  ]);
  assert.deepEqual((await again.db.all<{ who: string }>('SELECT who FROM effects ORDER BY n')).map((r) => r.who), ['emitter', 'sturdy', 'fragile']);
  assert.ok(again.logs.some((l) => l.includes('pending events dispatched')), 'the start says so');
});
