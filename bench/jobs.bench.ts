// Figures: (1) burn-down of 20,000 chat jobs by the worker thread against the project's own model
// server (svc model-server, a child process) at concurrency 2 and 8, in jobs/s, each job a real
// HTTP call to the model server plus its claim and result commits (synchronous=FULL, the default);
// goal at least 2,000 jobs/s. (2) enqueue-to-start latency over 200 jobs created through
// POST /api/jobs 25 ms apart on an idle worker: started_at - created_at, p50/p99; goal p99 under 10 ms.
// BENCH_JOBS (20000), BENCH_CONCURRENCY (2,8) and BENCH_SYNC (full or normal) change the run.
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { openDb } from '../src/db/db.ts';
import { migrate } from '../src/db/migrate.ts';
import { loadConfig } from '../src/kernel/config.ts';
import { createContext, withScope } from '../src/directory/context.ts';
import { createLogger } from '../src/kernel/log.ts';
import { createOrganization, createWorkspace } from '../src/tenancy/service.ts';
import { createProject } from '../src/production/projects/service.ts';
import { registerConnector } from '../src/generation/connectors/service.ts';
import { createJob } from '../src/generation/jobs/service.ts';
import { userByEmail } from '../src/directory/users/store.ts';
import { SVC_BIN, goal, login, num, percentile, printTable, report, setupSvc, startProcess, startSvc, type SvcSetup } from './lib.ts';

const JOBS = Number(process.env.BENCH_JOBS ?? 20_000);
const SPACED = 200;
const GOAL_RATE = 2000;
const GOAL_P99_MS = 10;
const SYNC = (process.env.BENCH_SYNC ?? 'full') as 'full' | 'normal';

const model = await startProcess([SVC_BIN, 'model-server', '--port', '0']);

interface World { setup: SvcSetup; connectorId: string; projectId: string }

/** A studio with one project and a chat connector (pending: not yet probed) holding `jobs` queued chat jobs. */
async function seed(jobs: number): Promise<World> {
  const setup = setupSvc();
  const config = loadConfig({ dataDir: setup.dataDir, storageDir: setup.storageDir }, {});
  const db = openDb(config.dbPath);
  await migrate(db);
  const ctx = createContext({ db, config, log: createLogger('warn') });
  const org = await createOrganization(ctx, { name: 'Bench Studio', ownerUserId: (await userByEmail(db, setup.email))!.id });
  const ws = await createWorkspace(ctx, org.id, { name: 'Dramas' });
  const project = await createProject(ctx, ws.id, { name: 'Night Train' });
  const scoped = withScope(ctx, { organizationId: org.id, workspaceId: ws.id, projectId: project.id });
  const connector = await registerConnector(scoped, {
    label: 'svc model-server', endpoint: model.url, kind: 'openai-compatible', capability: ['chat'], costMode: 'local',
    protocol: { models: { chat: 'svc-chat' } },
  });
  // All jobs in one transaction. bench/compare.ts also runs this script on commits before the
  // asynchronous data layer, whose synchronous Db.tx refuses a function that returns a promise.
  const add = (i: number): unknown => createJob(scoped, { kind: 'chat', connectorId: connector.id, prompt: `line ${i}: the conductor looks up` });
  const tx: (fn: () => unknown) => unknown = db.tx.bind(db);
  const probe = tx(() => 0);
  if (probe instanceof Promise) {
    await probe;
    await tx(async () => { for (let i = 0; i < jobs; i++) await add(i); });
  } else {
    tx(() => { for (let i = 0; i < jobs; i++) add(i); });
  }
  db.close();
  return { setup, connectorId: connector.id, projectId: project.id };
}

const count = (dbFile: string, sql: string): number => {
  const db = new DatabaseSync(dbFile, { readOnly: true });
  try {
    return (db.prepare(sql).get() as { n: number }).n;
  } finally {
    db.close();
  }
};

async function probe(url: string, token: string, connectorId: string): Promise<void> {
  const r = await fetch(`${url}/api/platform/models/${connectorId}/probe`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
  const body = (await r.json()) as { status?: string };
  if (body.status !== 'ready') throw new Error(`probe: ${r.status} ${JSON.stringify(body)}`);
}

async function burnDown(concurrency: number, sync: 'full' | 'normal'): Promise<{ seconds: number; rate: number; failed: number }> {
  const w = await seed(JOBS);
  const svc = await startSvc(w.setup, { SVC_WORKER_CONCURRENCY: String(concurrency), SVC_LOG_LEVEL: 'warn', SVC_DB_SYNCHRONOUS: sync });
  const token = await login(svc.url, w.setup.email, w.setup.password);
  const dbFile = path.join(w.setup.dataDir, 'svc.db');
  const t0 = performance.now();
  await probe(svc.url, token, w.connectorId); // ready: the probe wakes the worker
  // The poll reads the two partial indexes (queued, running) only, every 50 ms, so that it costs
  // the measured processes next to nothing.
  for (;;) {
    const left = count(dbFile, `SELECT (SELECT count(*) FROM generation_jobs WHERE status = 'queued')
      + (SELECT count(*) FROM generation_jobs WHERE status = 'running') AS n`);
    if (left === 0) break;
    await new Promise((res) => setTimeout(res, 50));
  }
  const seconds = (performance.now() - t0) / 1000;
  const failed = count(dbFile, "SELECT count(*) AS n FROM generation_jobs WHERE status <> 'completed'");
  await svc.stop();
  return { seconds, rate: JOBS / seconds, failed };
}

async function enqueueToStart(): Promise<number[]> {
  const w = await seed(0);
  const svc = await startSvc(w.setup, { SVC_LOG_LEVEL: 'warn' });
  const token = await login(svc.url, w.setup.email, w.setup.password);
  await probe(svc.url, token, w.connectorId);
  for (let i = 0; i < SPACED; i++) {
    const r = await fetch(`${svc.url}/api/jobs`, {
      method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'chat', connectorId: w.connectorId, prompt: `spaced ${i}` }),
    });
    if (r.status !== 201) throw new Error(`create: ${r.status} ${await r.text()}`);
    await new Promise((res) => setTimeout(res, 25));
  }
  const dbFile = path.join(w.setup.dataDir, 'svc.db');
  while (count(dbFile, "SELECT count(*) AS n FROM generation_jobs WHERE status <> 'completed'") > 0) await new Promise((res) => setTimeout(res, 20));
  const db = new DatabaseSync(dbFile, { readOnly: true });
  const rows = db.prepare('SELECT created_at, started_at FROM generation_jobs').all() as Array<{ created_at: string; started_at: string }>;
  db.close();
  await svc.stop();
  return rows.map((r) => Date.parse(r.started_at) - Date.parse(r.created_at));
}

try {
  const rows: Array<Array<string | number>> = [['concurrency', 'jobs', 'seconds', 'jobs/s', 'not completed', `goal >= ${num(GOAL_RATE)}/s`]];
  for (const c of (process.env.BENCH_CONCURRENCY ?? "2,8").split(",").map(Number)) {
    const r = await burnDown(c, SYNC);
    rows.push([c, num(JOBS), num(r.seconds, 2), num(r.rate), r.failed, goal(r.rate >= GOAL_RATE)]);
    report({ figure: `burn-down jobs/s, concurrency ${c}`, value: r.rate, unit: 'jobs/s', better: 'higher' });
  }
  printTable('Worker burn-down: chat jobs against svc model-server (openai-compatible, real HTTP)', rows, [
    'each job: atomic claim (UPDATE ... RETURNING), a POST /v1/chat/completions over keep-alive HTTP, the result committed with the next claim',
    `database synchronous=${SYNC.toUpperCase()}${SYNC === 'full' ? ' (the default): every commit is durable' : ': the last commits may be lost on power loss'}`,
  ]);
  const lat = await enqueueToStart();
  printTable('Enqueue-to-start latency (POST /api/jobs 25 ms apart, idle worker, started_at - created_at)', [
    ['jobs', 'p50 ms', 'p99 ms', 'max ms', `goal p99 < ${GOAL_P99_MS} ms`],
    [SPACED, num(percentile(lat, 50), 1), num(percentile(lat, 99), 1), num(Math.max(...lat), 1), goal(percentile(lat, 99) < GOAL_P99_MS)],
  ], ['timestamps have millisecond resolution']);
  report({ figure: 'enqueue-to-start p50', value: percentile(lat, 50), unit: 'ms', better: 'lower' });
  report({ figure: 'enqueue-to-start p99', value: percentile(lat, 99), unit: 'ms', better: 'lower', goal: GOAL_P99_MS });
} finally {
  await model.stop();
}
