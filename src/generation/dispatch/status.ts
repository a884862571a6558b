// The worker's status, from the worker_state row its thread keeps (heartbeat every poll, stamps
// written in the same transactions as claims and results), so that the API and `svc worker status`
// read the same live values, whether or not the worker runs in the reading process.
import type { Ctx } from '../../directory/context.ts';
import * as o from '../../kernel/view.ts';

interface StateRow {
  worker_id: string; started_at: string; heartbeat_at: string; enabled: number; concurrency: number; poll_ms: number; lease_ms: number;
  running: number; stopped_at: string | null; last_claimed_at: string | null; last_completed_at: string | null; last_failed_at: string | null;
  last_reclaimed_at: string | null; last_retried_at: string | null; last_error: string | null;
}

/** A worker silent this long (killed, its host gone) leaves the list of live workers. */
const FORGET_AFTER_MS = 24 * 3_600_000;

/** A queued job older than this raises the oldest_waiting alert. */
export const OLD_WAITING_MS = 15 * 60_000;

export const WORKER_HEALTH = ['ok', 'paused', 'stale', 'stopped', 'not_started'] as const;
export type Health = (typeof WORKER_HEALTH)[number];

export const QueueAlertView = o.named('QueueAlert', o.object({
  code: o.oneOf(['worker_paused', 'worker_stale', 'worker_not_running', 'jobs_not_claimable', 'oldest_waiting']),
  message: o.text(),
  count: o.optional(o.int()),
}));
export type Alert = o.Out<typeof QueueAlertView>;

const at = o.nullable(o.time());

export const LiveWorkerView = o.named('LiveWorker', o.object({
  workerId: o.text(), healthStatus: o.oneOf(['ok', 'paused', 'stale']), heartbeatAt: o.time(), heartbeatAgeMs: o.int(),
  concurrency: o.int(), runningCount: o.int(), startedAt: o.time(),
}, 'a worker that has not stopped (one per process running one, on any host)'));

export const WorkerStatusView = o.named('WorkerStatus', o.object({
  workerId: o.text(), healthStatus: o.oneOf(WORKER_HEALTH), enabled: o.bool('SVC_WORKER_ENABLED: claims jobs by itself'),
  startedAt: at, heartbeatAt: at, heartbeatAgeMs: o.nullable(o.int()), staleThresholdMs: o.int(),
  concurrency: o.int(), pollIntervalMs: o.int(), leaseMs: o.int(),
  queueDepth: o.record(o.int(), 'jobs by status (queued, running, blocked, failed, completed, cancelled always listed)'),
  queueAlerts: o.array(QueueAlertView),
  runningCount: o.int(),
  lastClaimedAt: at, lastCompletedAt: at, lastFailedAt: at, lastReclaimedAt: at, lastRetriedAt: at,
  lastError: o.nullable(o.text()),
  workers: o.optional(o.array(LiveWorkerView, 'every worker not stopped that was heard from in the last 24 hours, by id (the system-wide status only): the processes sharing the database, on any host')),
}, 'the job worker\'s state: this process\'s worker, or the freshest one'));

function healthOf(row: StateRow | undefined, ageMs: number | null, staleMs: number): Health {
  if (!row) return 'not_started';
  if (row.stopped_at) return 'stopped';
  if (ageMs !== null && ageMs > staleMs) return 'stale';
  return row.enabled ? 'ok' : 'paused';
}

/** workerOnly: just the worker's own alerts (the queue overview adds its organization's). */
export async function workerStatus(ctx: Ctx, workerOnly = false): Promise<o.Out<typeof WorkerStatusView>> {
  const { db, config } = ctx;
  const row = await db.get<StateRow>('SELECT * FROM worker_state WHERE worker_id = ?', config.workerId)
    ?? await db.get<StateRow>('SELECT * FROM worker_state ORDER BY heartbeat_at DESC, worker_id LIMIT 1');
  const now = ctx.now().getTime();
  const ageMs = row ? Math.max(0, now - Date.parse(row.heartbeat_at)) : null;
  const staleMs = config.workerStaleMs;
  const health = healthOf(row, ageMs, staleMs);
  const alerts: Alert[] = [];
  if (health === 'paused') alerts.push({ code: 'worker_paused', message: 'SVC_WORKER_ENABLED=0: jobs run only through dispatch or /run' });
  if (health === 'stale') alerts.push({ code: 'worker_stale', message: `no heartbeat for ${Math.round(ageMs! / 1000)} s (threshold ${staleMs / 1000} s)` });
  if (health === 'stopped' || health === 'not_started') alerts.push({ code: 'worker_not_running', message: 'no worker is running on this database' });
  // The whole queue (every organization): only for the system-wide status, not for a caller's overview.
  const depth = workerOnly ? {} : Object.fromEntries((await db.all<{ status: string; n: number }>('SELECT status, count(*) AS n FROM generation_jobs GROUP BY status')).map((r) => [r.status, r.n]));
  if (!workerOnly) {
    const waiting = (await db.get<{ n: number }>(
      `SELECT count(*) AS n FROM generation_jobs j JOIN model_connectors c ON c.id = j.connector_id
        WHERE j.status = 'queued' AND (c.status <> 'ready' OR c.cost_mode <> 'local')`))!.n;
    if (waiting) alerts.push({ code: 'jobs_not_claimable', message: `${waiting} queued job(s) wait for a connector that is not ready or not local`, count: waiting });
    const oldest = (await db.get<{ t: string | null }>("SELECT min(created_at) AS t FROM generation_jobs WHERE status = 'queued'"))!.t;
    if (oldest && now - Date.parse(oldest) > OLD_WAITING_MS) alerts.push({ code: 'oldest_waiting', message: `the oldest queued job has waited ${Math.round((now - Date.parse(oldest)) / 60_000)} minutes` });
  }
  const live = workerOnly ? undefined : (await db.all<StateRow>(
    'SELECT * FROM worker_state WHERE stopped_at IS NULL AND heartbeat_at >= ? ORDER BY worker_id', new Date(now - FORGET_AFTER_MS).toISOString())).map((w) => {
    const age = Math.max(0, now - Date.parse(w.heartbeat_at));
    return {
      workerId: w.worker_id, healthStatus: healthOf(w, age, staleMs) as 'ok' | 'paused' | 'stale', heartbeatAt: w.heartbeat_at, heartbeatAgeMs: age,
      concurrency: w.concurrency, runningCount: w.running, startedAt: w.started_at,
    };
  });
  return {
    workerId: row?.worker_id ?? config.workerId,
    healthStatus: health,
    enabled: row ? row.enabled === 1 : config.workerEnabled,
    startedAt: row?.started_at ?? null,
    heartbeatAt: row?.heartbeat_at ?? null,
    heartbeatAgeMs: ageMs,
    staleThresholdMs: staleMs,
    concurrency: row?.concurrency ?? config.workerConcurrency,
    pollIntervalMs: row?.poll_ms ?? config.workerPollMs,
    leaseMs: row?.lease_ms ?? config.workerLeaseMs,
    queueDepth: { queued: 0, running: 0, blocked: 0, failed: 0, completed: 0, cancelled: 0, ...depth },
    queueAlerts: alerts,
    runningCount: row && !row.stopped_at ? row.running : 0,
    lastClaimedAt: row?.last_claimed_at ?? null,
    lastCompletedAt: row?.last_completed_at ?? null,
    lastFailedAt: row?.last_failed_at ?? null,
    lastReclaimedAt: row?.last_reclaimed_at ?? null,
    lastRetriedAt: row?.last_retried_at ?? null,
    lastError: row?.last_error ?? null,
    ...(live ? { workers: live } : {}),
  };
}
