// The main thread's handle on the worker thread, found by database (one service per database):
// services wake it after a commit that may have made a job claimable (enqueue, probe to ready,
// approval, retry), without knowing whether a worker runs in this process (the CLI has none).
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

/** Wakes the worker once the current transaction commits (at once outside a transaction). */
export async function wakeWorker(ctx: Ctx): Promise<void> {
  await ctx.afterCommit(() => workerOf(ctx.db)?.wake());
}
