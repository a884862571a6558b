// Figures, side by side in one run: the worker's burn-down of chat jobs (each a real POST to svc
// model-server, the result committed) by the single SQLite node (`svc serve`, role all) against 1, 2
// and 4 worker processes (`svc serve --role worker`) on one PostgreSQL database (the test cluster of
// the bench's own durable cluster, freshPostgresUrl in lib.ts), and the enqueue-to-start latency across processes (POST /api/jobs
// to an API process, the job started by a worker process woken by NOTIFY; on SQLite one process).
// BENCH_ENGINE_JOBS (5000), BENCH_WORKERS (1,2,4) and BENCH_SPACED (100) change the run. Each
// worker process runs SVC_WORKER_CONCURRENCY=2.
import { loadConfig, type Config } from '../src/kernel/config.ts';
import { openDatabase } from '../src/db/open.ts';
import type { Db } from '../src/db/db.ts';
import { migrate } from '../src/db/migrate.ts';
import { registerConnector } from '../src/generation/connectors/service.ts';
import { createJob } from '../src/generation/jobs/service.ts';
import { BENCH_POSTGRES, NO_BENCH_POSTGRES, createStudio, freshPostgresUrl, SVC_BIN, login, num, percentile, printTable, setupSvc, startProcess, type Running, type SvcSetup } from './lib.ts';

const JOBS = Number(process.env.BENCH_ENGINE_JOBS ?? 5000);
const WORKERS = (process.env.BENCH_WORKERS ?? '1,2,4').split(',').map(Number);
const SPACED = Number(process.env.BENCH_SPACED ?? 100);
const CONCURRENCY = 2;

const model = await startProcess([SVC_BIN, 'model-server', '--port', '0']);


interface World { setup: SvcSetup; config: Config; env: Record<string, string>; connectorId: string }

/** A studio with a pending chat connector and `jobs` queued chat jobs, on the engine of `env`. */
async function seed(jobs: number, env: Record<string, string>): Promise<World> {
  const setup = setupSvc({ env });
  const config = loadConfig({ dataDir: setup.dataDir, storageDir: setup.storageDir }, env);
  const db = await openDatabase(config);
  await migrate(db);
  const { ctx: scoped } = await createStudio(db, config, setup.email);
  const connector = await registerConnector(scoped, {
    label: 'svc model-server', endpoint: model.url, kind: 'openai-compatible', capability: ['chat'], costMode: 'local',
    protocol: { models: { chat: 'svc-chat' } },
  });
  await db.tx(async () => { for (let i = 0; i < jobs; i++) await createJob(scoped, { kind: 'chat', connectorId: connector.id, prompt: `line ${i}: the conductor looks up` }); });
  await db.close();
  return { setup, config, env, connectorId: connector.id };
}

const serve = (w: World, role: string, id: string): Promise<Running> => startProcess(
  [SVC_BIN, 'serve', '--host', '127.0.0.1', '--port', '0', '--role', role, '--data-dir', w.setup.dataDir, '--storage-dir', w.setup.storageDir],
  { env: { ...w.env, SVC_WORKER_ID: id, SVC_WORKER_CONCURRENCY: String(CONCURRENCY), SVC_LOG_LEVEL: 'warn' }, stderrFile: w.setup.logFile },
);

async function probe(url: string, token: string, connectorId: string): Promise<void> {
  const r = await fetch(`${url}/api/platform/models/${connectorId}/probe`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
  const body = (await r.json()) as { status?: string };
  if (body.status !== 'ready') throw new Error(`probe: ${r.status} ${JSON.stringify(body)}`);
}

const left = async (db: Db) => (await db.get<{ n: number }>(
  "SELECT (SELECT count(*) FROM generation_jobs WHERE status = 'queued') + (SELECT count(*) FROM generation_jobs WHERE status = 'running') AS n"))!.n;

/** The API process (role api, or all on SQLite) and `workers` worker processes; the burn-down's seconds and the not-completed count. */
async function burnDown(w: World, workers: number): Promise<{ seconds: number; failed: number }> {
  const sqlite = w.config.database === 'sqlite';
  const procs = [await serve(w, sqlite ? 'all' : 'api', 'api')];
  for (let i = 1; i <= (sqlite ? 0 : workers); i++) procs.push(await serve(w, 'worker', `worker-${i}`));
  const db = await openDatabase(w.config);
  try {
    const token = await login(procs[0].url, w.setup.email, w.setup.password);
    const t0 = performance.now();
    await probe(procs[0].url, token, w.connectorId); // ready: wakes the workers
    while (await left(db) > 0) await new Promise((res) => setTimeout(res, 50));
    const seconds = (performance.now() - t0) / 1000;
    const failed = (await db.get<{ n: number }>("SELECT count(*) AS n FROM generation_jobs WHERE status <> 'completed'"))!.n;
    return { seconds, failed };
  } finally {
    await db.close();
    for (const p of procs) await p.stop();
  }
}

/** Jobs created SPACED times 25 ms apart through the API process: started_at - created_at in ms. */
async function enqueueToStart(w: World): Promise<number[]> {
  const sqlite = w.config.database === 'sqlite';
  const procs = [await serve(w, sqlite ? 'all' : 'api', 'api')];
  if (!sqlite) procs.push(await serve(w, 'worker', 'worker-1'));
  const db = await openDatabase(w.config);
  try {
    const token = await login(procs[0].url, w.setup.email, w.setup.password);
    await probe(procs[0].url, token, w.connectorId);
    for (let i = 0; i < SPACED; i++) {
      const r = await fetch(`${procs[0].url}/api/jobs`, {
        method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ kind: 'chat', connectorId: w.connectorId, prompt: `spaced ${i}` }),
      });
      if (r.status !== 201) throw new Error(`create: ${r.status} ${await r.text()}`);
      await new Promise((res) => setTimeout(res, 25));
    }
    while ((await db.get<{ n: number }>("SELECT count(*) AS n FROM generation_jobs WHERE status <> 'completed'"))!.n > 0) await new Promise((res) => setTimeout(res, 20));
    const rows = await db.all<{ created_at: string; started_at: string }>('SELECT created_at, started_at FROM generation_jobs');
    return rows.map((r) => Date.parse(r.started_at) - Date.parse(r.created_at));
  } finally {
    await db.close();
    for (const p of procs) await p.stop();
  }
}

try {
  const rows: string[][] = [['engine', 'worker processes', 'jobs', 'seconds', 'jobs/s', 'not completed']];
  const sqlite = await burnDown(await seed(JOBS, {}), 1);
  rows.push(['SQLite (one node, role all)', '1 (thread)', num(JOBS), num(sqlite.seconds, 2), num(JOBS / sqlite.seconds), String(sqlite.failed)]);
  const latency: string[][] = [['engine', 'jobs', 'p50 ms', 'p99 ms', 'max ms']];
  const lat = await enqueueToStart(await seed(0, {}));
  latency.push(['SQLite (one process)', String(SPACED), num(percentile(lat, 50), 1), num(percentile(lat, 99), 1), num(Math.max(...lat), 1)]);
  const notes: string[] = [];
  for (const n of WORKERS) {
    const url = await freshPostgresUrl();
    if (!url) {
      notes.push(NO_BENCH_POSTGRES);
      break;
    }
    const env = { SVC_DATABASE: 'postgres', SVC_POSTGRES_URL: url };
    const r = await burnDown(await seed(JOBS, env), n);
    rows.push(['PostgreSQL (api + workers)', String(n), num(JOBS), num(r.seconds, 2), num(JOBS / r.seconds), String(r.failed)]);
  }
  const url = await freshPostgresUrl();
  if (url) {
    const l = await enqueueToStart(await seed(0, { SVC_DATABASE: 'postgres', SVC_POSTGRES_URL: url }));
    latency.push(['PostgreSQL (api process -> worker process)', String(SPACED), num(percentile(l, 50), 1), num(percentile(l, 99), 1), num(Math.max(...l), 1)]);
  }
  printTable('Worker burn-down: chat jobs against svc model-server, by engine and worker processes', rows, [
    `each worker process: concurrency ${CONCURRENCY}; SQLite synchronous=FULL`,
    BENCH_POSTGRES,
    ...notes,
  ]);
  printTable('Enqueue-to-start latency (POST /api/jobs 25 ms apart, started_at - created_at; goal p99 <= 10 ms)', latency, ['timestamps have millisecond resolution']);
} finally {
  await model.stop();
}
