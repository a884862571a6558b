// Figure: the SQL statements (and, on PostgreSQL, round trips) the worker runs per chat job, by
// statement, on each engine: a burn-down of BENCH_STATEMENT_JOBS (200) chat jobs against svc
// model-server with the worker loop in this process (src/generation/worker/loop.ts, concurrency 2),
// every statement of its Db counted by its text (transaction control included: BEGIN, COMMIT,
// SAVEPOINT, RELEASE; on PostgreSQL every message its connections send, as sent). PostgreSQL runs on the bench's own cluster (freshPostgresUrl in lib.ts). The
// per-job figure includes the loop's own statements (heartbeat, stamps) spread over the jobs.
import type { Db } from '../src/db/db.ts';
import { createContext } from '../src/directory/context.ts';
import { createLogger } from '../src/kernel/log.ts';
import { startWorkerLoop } from '../src/generation/worker/loop.ts';
import { workerActor } from '../src/generation/worker/host.ts';
import { bindSubscribers } from '../src/subscribers.ts';
import { workerWorld } from './worker-world.ts';
/** The driver's client class, whose messages are counted on PostgreSQL (the optional package pg; absent, PostgreSQL is skipped). */
const pgClient = (await import('pg').catch(() => null))?.default.Client;
import { BENCH_POSTGRES, NO_BENCH_POSTGRES, SVC_BIN, freshPostgresUrl, num, printTable, startProcess } from './lib.ts';

const JOBS = Number(process.env.BENCH_STATEMENT_JOBS ?? 200);
const VERBOSE = process.env.BENCH_STATEMENT_TEXT === '1';

const model = await startProcess([SVC_BIN, 'model-server', '--port', '0']);
bindSubscribers();

/** A statement's text as counted: one line, numbered placeholders as `?`, cut at 110 characters. */
const label = (sql: string) => sql.replace(/\s+/g, ' ').replace(/\$\d+|\?\d+/g, '?').replace(/'[^']*'/g, "'…'").trim().slice(0, 110);

/**
 * Counts every statement `db` runs by its text (the engines' private statement paths and transaction
 * steps are wrapped), with the milliseconds until each one's answer on PostgreSQL (`ms`).
 */
function counting(db: Db): { counts: Map<string, number>; ms: Map<string, number> } {
  const counts = new Map<string, number>();
  const ms = new Map<string, number>();
  const add = (sql: string) => { const k = label(sql); counts.set(k, (counts.get(k) ?? 0) + 1); return k; };
  const o = db as unknown as Record<string, (...a: unknown[]) => unknown>;
  if (db.engine === 'sqlite') {
    const prepare = o.prepare.bind(db);
    o.prepare = (...a: unknown[]) => { add(a[0] as string); return prepare(...a); };
    // exec() counts through raw.exec; transaction steps are raw exec calls too.
    const raw = o.raw as unknown as { exec: (sql: string) => void };
    const exec = raw.exec.bind(raw);
    raw.exec = (sql: string) => { add(sql); exec(sql); };
  } else {
    // Every message a connection of db's pool sends, as sent: transaction control that waits for a
    // statement (BEGIN, RELEASE) goes with it, or is never sent (postgres.ts).
    const pool = o.pool as unknown as { _clients: unknown[] };
    const proto = pgClient!.prototype as unknown as { query: (...a: unknown[]) => unknown };
    const query = proto.query;
    proto.query = function (this: unknown, ...a: unknown[]) {
      if (!pool._clients.includes(this)) return query.apply(this, a);
      const q = a[0] as string | { text: string };
      const k = add(typeof q === 'string' ? q : q.text);
      const t0 = performance.now();
      const r = query.apply(this, a);
      if (r instanceof Promise) void r.finally(() => { ms.set(k, (ms.get(k) ?? 0) + performance.now() - t0); }).catch(() => {});
      return r;
    };
  }
  return { counts, ms };
}

async function measure(env: Record<string, string>): Promise<{ counts: Map<string, number>; ms: Map<string, number>; seconds: number }> {
  const world = await workerWorld(model.url, env);
  const { config, db, connectorId, chat } = world;
  try {
    await db.tx(async () => { for (let i = 0; i < JOBS; i++) await chat(i); });
    await db.run("UPDATE model_connectors SET status = 'ready' WHERE id = ?", connectorId);
    const { counts, ms } = counting(db);
    const t0 = performance.now();
    const loop = await startWorkerLoop(createContext({ db, config, log: createLogger('warn'), actor: workerActor(config.workerId), requestId: 'bench-worker' }));
    await world.drained();
    const seconds = (performance.now() - t0) / 1000;
    await loop.stop(1000);
    await world.allCompleted();
    return { counts, ms, seconds };
  } finally {
    await world.close();
  }
}

const total = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
const sqlite = await measure({});
const url = await freshPostgresUrl();
const postgres = url ? await measure({ SVC_DATABASE: 'postgres', SVC_POSTGRES_URL: url }) : null;
const keys = [...new Set([...sqlite.counts.keys(), ...(postgres?.counts.keys() ?? [])])]
  .sort((a, b) => (postgres?.counts.get(b) ?? sqlite.counts.get(b) ?? 0) - (postgres?.counts.get(a) ?? sqlite.counts.get(a) ?? 0));
const perJob = (m: Map<string, number> | undefined, k: string) => (m?.has(k) ? num(m.get(k)! / JOBS, 2) : '-');
const meanMs = (k: string) => (postgres?.ms.has(k) ? num(postgres.ms.get(k)! / postgres.counts.get(k)!, 2) : '-');
const rows: string[][] = [['statement', 'SQLite per job', 'PostgreSQL per job', 'PostgreSQL ms each']];
rows.push(['all statements', num(total(sqlite.counts) / JOBS, 2), postgres ? num(total(postgres.counts) / JOBS, 2) : 'n/a', '']);
for (const k of keys) rows.push([k, perJob(sqlite.counts, k), perJob(postgres?.counts, k), meanMs(k)]);
printTable(`Statements per chat job (worker loop in process, concurrency 2, ${num(JOBS)} jobs against svc model-server)`, rows, [
  `burn-down: SQLite ${num(sqlite.seconds, 2)} s, PostgreSQL ${postgres ? `${num(postgres.seconds, 2)} s` : 'n/a'} (in-process, timing only indicative)`,
  'every statement counted by its text, transaction control included (on PostgreSQL each message as sent, one round trip)',
  'PostgreSQL ms each: mean time from sending to the answer (waits for the connection included)',
  url ? BENCH_POSTGRES : NO_BENCH_POSTGRES,
]);
if (VERBOSE) for (const k of keys) console.log(`${perJob(sqlite.counts, k)}\t${perJob(postgres?.counts, k)}\t${k}`);
await model.stop();
