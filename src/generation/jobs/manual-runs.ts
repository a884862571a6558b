// The manual runs (POST /api/jobs/:id/run, service.ts runNow) in flight in this process: a cancel
// aborts one, and the shutdown aborts them all and puts their jobs back in the queue.
import type { Db } from '../../db/db.ts';
import { releaseLeases } from './claim.ts';
import type { JobRow } from './store.ts';

/**
 * Manual runs in flight in this process, so that a cancel or the shutdown can abort them; `released`
 * is the shutdown's release of the run's lease, which the run's answer waits for.
 */
export interface ManualRun { controller: AbortController; db: Db; runner: string; released?: Promise<unknown> }
export const manualRuns = new Map<string, ManualRun>();

/**
 * At shutdown: manual runs in flight are aborted and their jobs put back in the queue (that attempt
 * forgotten). The release is written while the aborted run unwinds (on PostgreSQL on another
 * connection): the run waits for it before it reads the job back, so that its answer shows the job queued.
 */
export async function stopManualRuns(db: Db, now: string): Promise<number> {
  const releases: Array<Promise<JobRow[]>> = [];
  for (const [jobId, run] of manualRuns) {
    if (run.db !== db) continue;
    run.controller.abort(new Error('the service is stopping'));
    const released = releaseLeases(db, run.runner, now, jobId);
    run.released = released.catch(() => {});
    releases.push(released);
  }
  return (await Promise.all(releases)).reduce((n, rows) => n + rows.length, 0);
}
