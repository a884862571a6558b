// The main thread's handle on the worker thread, found by database (one service per database):
// services wake it after a commit that may have made a job claimable (enqueue, probe to ready,
// approval, retry), without knowing whether a worker runs in this process (the CLI has none). On
// PostgreSQL they notify every process's worker instead (WORKER_CHANNEL).
import type { Ctx } from '../../directory/context.ts';
import type { Db } from '../../db/db.ts';

export interface WorkerHandle {
  /** Asks the worker to claim now (a message, not a poll). */
  wake(): void;
  /** Asks the worker to abort the call of a job that was cancelled. */
  abort(jobId: string): void;
  /** One claim now (of one organization when given), even when paused; the claimed job's id or null. */
  dispatch(organizationId: string | null): Promise<string | null>;
}

const handles = new WeakMap<Db, WorkerHandle>();

export function registerWorker(db: Db, handle: WorkerHandle | null): void {
  if (handle) handles.set(db, handle);
  else handles.delete(db);
}

export function workerOf(db: Db): WorkerHandle | null {
  return handles.get(db) ?? null;
}

/** The channel on which every process's worker hears wake-ups and aborts (Db.notify, Db.listen). */
export const WORKER_CHANNEL = 'svc_worker';

/**
 * Tells the workers once the current transaction commits (at once outside one). On PostgreSQL a
 * NOTIFY reaches the worker of every process on every host, this one's included; on SQLite the worker
 * thread of this process gets a message, and other processes' workers find the work at their poll.
 */
async function tellWorkers(ctx: Ctx, message: 'wake' | `abort:${string}`, local: (w: WorkerHandle) => void): Promise<void> {
  if (ctx.db.engine === 'postgres') await ctx.db.notify(WORKER_CHANNEL, message);
  else await ctx.afterCommit(() => { const w = workerOf(ctx.db); if (w) local(w); });
}

/** Wakes the workers once the current transaction commits: a job may have become claimable. */
export const wakeWorker = (ctx: Ctx): Promise<void> => tellWorkers(ctx, 'wake', (w) => { w.wake(); });

/** Aborts the running call of a cancelled job once the cancel commits, on whichever worker runs it. */
export const abortOnWorkers = (ctx: Ctx, jobId: string): Promise<void> => tellWorkers(ctx, `abort:${jobId}`, (w) => { w.abort(jobId); });

/** What the worker of this process does with a message of WORKER_CHANNEL. */
export function onWorkerMessage(handle: Pick<WorkerHandle, 'wake' | 'abort'>): (payload: string) => void {
  return (payload) => {
    if (payload === 'wake') handle.wake();
    else if (payload.startsWith('abort:')) handle.abort(payload.slice('abort:'.length));
  };
}
