// The in-process world of the worker benches that run the worker loop in the bench's own process
// (job-statements, wal-pages): a data folder, its config (worker concurrency 2, SVC_LOG_LEVEL=warn,
// `env` over them), a migrated database with a writing connection and a watching one, a studio, and a
// connector on the model server at `modelUrl` (not yet ready: the bench sets it ready once its jobs
// are queued). The caller closes it (both connections).
import { loadConfig, type Config } from '../src/kernel/config.ts';
import { openDatabase } from '../src/db/open.ts';
import type { Db } from '../src/db/db.ts';
import { migrate } from '../src/db/migrate.ts';
import { createStudio, setupSvc } from './lib.ts';
import { left, queueChat, registerChatConnector } from './svc-queue.ts';

export interface WorkerWorld {
  config: Config;
  db: Db;
  connectorId: string;
  /** Queues chat job `i` (in the caller's transaction, if any); its id. */
  chat: (i: number) => Promise<string>;
  /** Resolves once no job is queued or running (read every 20 ms on the watching connection). */
  drained: () => Promise<void>;
  /** Throws unless every job completed. */
  allCompleted: () => Promise<void>;
  /** Closes both connections. */
  close: () => Promise<void>;
}

export async function workerWorld(modelUrl: string, env: Record<string, string> = {}): Promise<WorkerWorld> {
  const setup = setupSvc({ env });
  const config = loadConfig({ dataDir: setup.dataDir, storageDir: setup.storageDir },
    { SVC_WORKER_CONCURRENCY: '2', SVC_WORKER_ID: 'bench-worker', SVC_LOG_LEVEL: 'warn', ...env });
  const db = await openDatabase(config);
  const watch = await openDatabase(config);
  const close = async () => {
    await watch.close();
    await db.close();
  };
  try {
    await migrate(db);
    const { ctx: scoped } = await createStudio(db, config, setup.email);
    const connector = await registerChatConnector(scoped, modelUrl);
    const chat = (i: number) => queueChat(scoped, connector.id, i);
    const drained = async () => { while (await left(watch) > 0) await new Promise((res) => setTimeout(res, 20)); };
    const allCompleted = async () => {
      const failed = (await watch.get<{ n: number }>("SELECT count(*) AS n FROM generation_jobs WHERE status <> 'completed'"))!.n;
      if (failed) throw new Error(`${failed} jobs not completed`);
    };
    return { config, db, connectorId: connector.id, chat, drained, allCompleted, close };
  } catch (err) {
    await close();
    throw err;
  }
}
