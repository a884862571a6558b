// The svc side of the queue benches (engines.bench.ts, queues.bench.ts): a studio with a chat
// connector to svc model-server and N queued chat jobs on either engine, copied for each run (its
// folders, and on PostgreSQL its database as a template), then burned down by `svc serve`
// processes, or fed jobs through POST /api/jobs one by one for the enqueue-to-start latency.
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig, type Config } from '../src/kernel/config.ts';
import { openDatabase } from '../src/db/open.ts';
import type { Db } from '../src/db/db.ts';
import type { Ctx } from '../src/directory/context.ts';
import { migrate } from '../src/db/migrate.ts';
import { registerConnector } from '../src/generation/connectors/service.ts';
import { createJob } from '../src/generation/jobs/service.ts';
import { clonePostgresDatabase, createStudio, login, setupSvc, startProcess, SVC_BIN, tempDir, type Running, type SvcSetup } from './lib.ts';

export interface SvcQueue { setup: SvcSetup; config: Config; env: Record<string, string>; connectorId: string; jobs: number }

/** The prompt of chat job `i`, the same for every system the queue benches compare. */
export const chatPrompt = (i: number) => `line ${i}: the conductor looks up`;

/** The chat connector of the queue benches: svc model-server at `modelUrl`, local, pending (not yet probed). */
export const registerChatConnector = (scoped: Ctx, modelUrl: string) => registerConnector(scoped, {
  label: 'svc model-server', endpoint: modelUrl, kind: 'openai-compatible', capability: ['chat'], costMode: 'local',
  protocol: { models: { chat: 'svc-chat' } },
});

/** Queues chat job `i` on `connectorId` (in the caller's transaction, if any); its id. */
export const queueChat = async (scoped: Ctx, connectorId: string, i: number) =>
  (await createJob(scoped, { kind: 'chat', connectorId, prompt: chatPrompt(i) })).id;

/** A studio with a pending chat connector to `modelUrl` and `jobs` queued chat jobs, on the engine of `env`. */
export async function seedSvcQueue(modelUrl: string, jobs: number, env: Record<string, string> = {}): Promise<SvcQueue> {
  const setup = setupSvc({ env });
  const config = loadConfig({ dataDir: setup.dataDir, storageDir: setup.storageDir }, env);
  const db = await openDatabase(config);
  await migrate(db);
  const { ctx: scoped } = await createStudio(db, config, setup.email);
  const connector = await registerChatConnector(scoped, modelUrl);
  await db.tx(async () => { for (let i = 0; i < jobs; i++) await queueChat(scoped, connector.id, i); });
  await db.close();
  return { setup, config, env, connectorId: connector.id, jobs };
}

/** A copy of `q` to run once: its folders, and on PostgreSQL a database made from its own. */
export async function cloneSvcQueue(q: SvcQueue): Promise<SvcQueue> {
  const dir = tempDir();
  fs.cpSync(q.setup.dir, dir, { recursive: true });
  const moved = (p: string) => path.join(dir, path.relative(q.setup.dir, p));
  const setup: SvcSetup = { ...q.setup, dir, dataDir: moved(q.setup.dataDir), storageDir: moved(q.setup.storageDir), logFile: moved(q.setup.logFile) };
  const env = q.config.database === 'postgres' ? { ...q.env, SVC_POSTGRES_URL: await clonePostgresDatabase(q.env.SVC_POSTGRES_URL) } : q.env;
  return { ...q, setup, env, config: loadConfig({ dataDir: setup.dataDir, storageDir: setup.storageDir }, env) };
}

export function serveSvc(q: SvcQueue, role: string, id: string, concurrency: number): Promise<Running> {
  return startProcess(
    [SVC_BIN, 'serve', '--host', '127.0.0.1', '--port', '0', '--role', role, '--data-dir', q.setup.dataDir, '--storage-dir', q.setup.storageDir],
    { env: { ...q.env, SVC_WORKER_ID: id, SVC_WORKER_CONCURRENCY: String(concurrency), SVC_LOG_LEVEL: 'warn' }, stderrFile: q.setup.logFile },
  );
}

/** Probes the connector through the API: ready, which wakes the workers. */
async function probe(url: string, token: string, connectorId: string): Promise<void> {
  const r = await fetch(`${url}/api/platform/models/${connectorId}/probe`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
  const body = (await r.json()) as { status?: string };
  if (body.status !== 'ready') throw new Error(`probe: ${r.status} ${JSON.stringify(body)}`);
}

const count = async (db: Db, where: string) => (await db.get<{ n: number }>(`SELECT count(*) AS n FROM generation_jobs WHERE ${where}`))!.n;
/** Queued and running jobs, through the two partial indexes only (so that the poll costs the measured processes next to nothing). */
export const left = async (db: Db) => (await db.get<{ n: number }>(
  "SELECT (SELECT count(*) FROM generation_jobs WHERE status = 'queued') + (SELECT count(*) FROM generation_jobs WHERE status = 'running') AS n"))!.n;

/**
 * The burn-down of `q`'s jobs: one `svc serve` (role all; with `workers` > 0, role api beside that
 * many role worker processes) with `concurrency` slots a worker; from the probe that makes the
 * connector ready to the last job settled. Stops its processes.
 */
export async function burnDown(q: SvcQueue, opts: { workers: number; concurrency: number }): Promise<{ seconds: number; notCompleted: number }> {
  const procs = [await serveSvc(q, opts.workers > 0 ? 'api' : 'all', 'api', opts.concurrency)];
  for (let i = 1; i <= opts.workers; i++) procs.push(await serveSvc(q, 'worker', `worker-${i}`, opts.concurrency));
  const db = await openDatabase(q.config);
  try {
    const token = await login(procs[0].url, q.setup.email, q.setup.password);
    const t0 = performance.now();
    await probe(procs[0].url, token, q.connectorId);
    while (await left(db) > 0) await new Promise((res) => setTimeout(res, 50));
    return { seconds: (performance.now() - t0) / 1000, notCompleted: await count(db, "status <> 'completed'") };
  } finally {
    await db.close();
    for (const p of procs) await p.stop();
  }
}

/**
 * `spaced` chat jobs created through POST /api/jobs 25 ms apart on idle workers (one `svc serve`,
 * role all; or role api and one role worker process): started_at - created_at of each, in ms.
 */
export async function enqueueToStart(q: SvcQueue, opts: { spaced: number; workerProcess: boolean; concurrency: number }): Promise<number[]> {
  const procs = [await serveSvc(q, opts.workerProcess ? 'api' : 'all', 'api', opts.concurrency)];
  if (opts.workerProcess) procs.push(await serveSvc(q, 'worker', 'worker-1', opts.concurrency));
  const db = await openDatabase(q.config);
  try {
    const token = await login(procs[0].url, q.setup.email, q.setup.password);
    await probe(procs[0].url, token, q.connectorId);
    for (let i = 0; i < opts.spaced; i++) {
      const r = await fetch(`${procs[0].url}/api/jobs`, {
        method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ kind: 'chat', connectorId: q.connectorId, prompt: `spaced ${i}` }),
      });
      if (r.status !== 201) throw new Error(`create: ${r.status} ${await r.text()}`);
      await new Promise((res) => setTimeout(res, 25));
    }
    while (await count(db, "status <> 'completed'") > 0) await new Promise((res) => setTimeout(res, 20));
    const rows = await db.all<{ created_at: string; started_at: string }>('SELECT created_at, started_at FROM generation_jobs');
    return rows.map((r) => Date.parse(r.started_at) - Date.parse(r.created_at));
  } finally {
    await db.close();
    for (const p of procs) await p.stop();
  }
}
