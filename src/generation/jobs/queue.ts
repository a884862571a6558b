// The organization's queue for administrators: depth by status, connector and priority, the oldest
// waiting job, alerts; and batch actions (retry, cancel, priority) over ids or a filter, answering
// one outcome per job. A system administrator without an organization in scope sees every one.
import { mapSeq } from '../../kernel/seq.ts';
import type { Ctx } from '../../directory/context.ts';
import { AppError, validationFailed } from '../../kernel/errors.ts';
import type { Infer } from '../../kernel/validate.ts';
import { withScope } from '../../directory/context.ts';
import type { QueueBatchBody } from './schema.ts';
import { cancel, reprioritize, retry } from './service.ts';
import type { JobRow } from './store.ts';
import { OLD_WAITING_MS, workerStatus } from '../dispatch/status.ts';
import { assertProjectWritable } from '../../directory/tenancy/guard.ts';

const BATCH_LIMIT = 1000;

const orgFilter = (orgId: string | null) => (orgId ? { sql: 'j.organization_id = ?', args: [orgId] } : { sql: '1 = 1', args: [] as string[] });

export async function queueOverview(ctx: Ctx) {
  const { db } = ctx;
  const f = orgFilter(ctx.scope.organizationId);
  const byStatus = Object.fromEntries((await db.all<{ status: string; n: number }>(
    `SELECT status, count(*) AS n FROM generation_jobs j WHERE ${f.sql} GROUP BY status`, ...f.args)).map((r) => [r.status, r.n]));
  const byConnector = await db.all<{ connector_id: string | null; label: string | null; cost_mode: string | null; connector_status: string | null; queued: number; running: number; blocked: number }>(
    `SELECT j.connector_id, c.label, c.cost_mode, c.status AS connector_status,
        count(*) FILTER (WHERE j.status = 'queued') AS queued, count(*) FILTER (WHERE j.status = 'running') AS running,
        count(*) FILTER (WHERE j.status = 'blocked') AS blocked
       FROM generation_jobs j LEFT JOIN model_connectors c ON c.id = j.connector_id
      WHERE ${f.sql} AND j.status IN ('queued', 'running', 'blocked')
      GROUP BY j.connector_id, c.label, c.cost_mode, c.status ORDER BY queued DESC, j.connector_id NULLS FIRST`, ...f.args);
  const byPriority = await db.all<{ priority: number; n: number }>(
    `SELECT priority, count(*) AS n FROM generation_jobs j WHERE ${f.sql} AND status = 'queued' GROUP BY priority ORDER BY priority DESC`, ...f.args);
  const oldest = await db.get<{ id: string; created_at: string; kind: string; project_id: string }>(
    `SELECT id, created_at, kind, project_id FROM generation_jobs j WHERE ${f.sql} AND status = 'queued' ORDER BY created_at, id LIMIT 1`, ...f.args);
  const now = ctx.now().getTime();
  const worker = await workerStatus(ctx, true);
  const alerts: Array<{ code: string; message: string; count?: number }> = [];
  // Compose jobs have no connector: the worker runs them itself.
  const stuck = byConnector.filter((c) => c.queued > 0 && c.connector_id !== null && (c.connector_status !== 'ready' || c.cost_mode !== 'local'));
  for (const c of stuck) {
    alerts.push(c.cost_mode !== 'local'
      ? { code: 'external_jobs_waiting', message: `${c.queued} job(s) on ${c.cost_mode} connector ${c.label} run only through POST /api/jobs/:jobId/run with approval`, count: c.queued }
      : { code: 'connector_not_ready', message: `${c.queued} job(s) wait for connector ${c.label ?? c.connector_id}, which is ${c.connector_status ?? 'missing'}`, count: c.queued });
  }
  if (oldest && now - Date.parse(oldest.created_at) > OLD_WAITING_MS) {
    alerts.push({ code: 'oldest_waiting', message: `the oldest queued job has waited ${Math.round((now - Date.parse(oldest.created_at)) / 60_000)} minutes` });
  }
  if ((byStatus.blocked ?? 0) > 0) alerts.push({ code: 'blocked_jobs', message: `${byStatus.blocked} job(s) are blocked by a failed dependency`, count: byStatus.blocked });
  alerts.push(...worker.queueAlerts);
  return {
    depth: { queued: 0, running: 0, blocked: 0, failed: 0, completed: 0, cancelled: 0, ...byStatus },
    byConnector: byConnector.map((c) => ({
      connectorId: c.connector_id, label: c.label, costMode: c.cost_mode, status: c.connector_status, queued: c.queued, running: c.running, blocked: c.blocked,
    })),
    byPriority: byPriority.map((p) => ({ priority: p.priority, queued: p.n })),
    oldestWaiting: oldest ? { jobId: oldest.id, kind: oldest.kind, projectId: oldest.project_id, createdAt: oldest.created_at, ageMs: now - Date.parse(oldest.created_at) } : null,
    alerts,
    // The worker serves every organization: its health, not its (global) counts.
    worker: { workerId: worker.workerId, healthStatus: worker.healthStatus },
  };
}

type Batch = Infer<typeof QueueBatchBody>;
export interface BatchOutcome { id: string; outcome: 'retried' | 'cancelled' | 'updated' | 'skipped' | 'not_found'; status?: string; reason?: string }

async function targets(ctx: Ctx, b: Batch): Promise<Array<{ id: string; job: JobRow | undefined }>> {
  const orgId = ctx.scope.organizationId;
  const f = orgFilter(orgId);
  if (b.ids) {
    return await mapSeq([...new Set(b.ids)], async (id) => ({ id, job: await ctx.db.get<JobRow>(`SELECT * FROM generation_jobs j WHERE ${f.sql} AND id = ?`, ...f.args, id) }));
  }
  const q = b.filter!;
  return (await ctx.db.all<JobRow>(
    `SELECT * FROM generation_jobs j WHERE ${f.sql} AND (status = ?1 OR ?1 IS NULL) AND (kind = ?2 OR ?2 IS NULL)
       AND (connector_id = ?3 OR ?3 IS NULL) AND (project_id = ?4 OR ?4 IS NULL) ORDER BY created_at, id LIMIT ${BATCH_LIMIT + 1}`
      .replace(/\?(\d)/g, (_, n: string) => `?${Number(n) + f.args.length}`),
    ...f.args, q.status ?? null, q.kind ?? null, q.connectorId ?? null, q.projectId ?? null,
  )).map((job) => ({ id: job.id, job }));
}

export async function batch(ctx: Ctx, b: Batch): Promise<{ action: Batch['action']; results: BatchOutcome[]; summary: Record<string, number> }> {
  if (!b.ids === !b.filter) throw validationFailed({ ids: 'give either ids or filter' });
  if (b.action === 'priority' && b.priority === undefined) throw validationFailed({ priority: 'is required for action priority' });
  const list = await targets(ctx, b);
  if (list.length > BATCH_LIMIT) throw validationFailed({ filter: `matches more than ${BATCH_LIMIT} jobs; narrow it` });
  const results = await mapSeq(list, async ({ id, job }): Promise<BatchOutcome> => {
    if (!job) return { id, outcome: 'not_found' };
    const scoped = withScope(ctx, { organizationId: job.organization_id, workspaceId: job.workspace_id, projectId: job.project_id });
    try {
      // Cancelling stops work; retrying or reprioritizing is a production write, refused on an archived project.
      if (b.action !== 'cancel') await assertProjectWritable(ctx.db, job.project_id);
      if (b.action === 'retry') return { id, outcome: 'retried', status: (await retry(scoped, job)).status };
      if (b.action === 'cancel') return { id, outcome: 'cancelled', status: (await cancel(scoped, job)).status };
      return { id, outcome: 'updated', status: (await reprioritize(scoped, job, b.priority!)).status };
    } catch (err) {
      if (err instanceof AppError) return { id, outcome: 'skipped', status: job.status, reason: err.code };
      throw err;
    }
  });
  const summary: Record<string, number> = {};
  for (const r of results) summary[r.outcome] = (summary[r.outcome] ?? 0) + 1;
  return { action: b.action, results, summary };
}
