// Generation jobs of the current project, the connector dry run, and the organization's queue.
import { READ_ACCESS } from '../../directory/tenancy/reads.ts';
import { json, type Router } from '../../http/router.ts';
import type { OrgRole, Permission } from '../../directory/roles.ts';
import { ConnectorSummaryView, presentConnector } from '../connectors/present.ts';
import * as o from '../../kernel/view.ts';
import { JobCreateBody, JobListQuery, JobPriorityBody, JobRetryBody, JobRunBody, QueueBatchBody } from './schema.ts';
import { JobAttemptView, JobView, presentAttempt, presentJob } from './present.ts';
import { cancel, createJob, dryRunJob, getJob, jobDetail, listJobs, reprioritize, retry, runNow } from './service.ts';
import { batch, queueOverview } from './queue.ts';

const JobDetailView = o.named('JobDetail', o.extend(JobView, {
  attempts: o.array(JobAttemptView), connector: o.nullable(ConnectorSummaryView),
}));

const JobRunView = o.named('JobRun', o.object({
  idempotent: o.bool('true: the job had already completed and this is its stored result'), job: JobView,
  result: o.nullable(o.anyObject('the job\'s output')), error: o.nullable(o.text()),
}));

const DryRunView = o.named('ConnectorDryRun', o.object({
  method: o.constant('POST'), url: o.text({ description: 'the full URL the connector would be called at' }), route: o.text(), model: o.nullable(o.text()),
  headers: o.array(o.text(), 'header names only, never values'), contentType: o.oneOf(['application/json', 'multipart/form-data'] as const),
  body: o.anything('the request body (multipart: the form fields, a file described as { fileName, mimeType, fileSize })'),
}, 'the exact request the connector would receive'));

const count = o.int();
const QueueOverviewView = o.named('QueueOverview', o.object({
  depth: o.object({ queued: count, running: count, blocked: count, failed: count, completed: count, cancelled: count }, 'jobs by status'),
  byConnector: o.array(o.object({
    connectorId: o.nullable(o.text({ description: 'null: jobs without a connector (compose)' })), label: o.nullable(o.text()),
    costMode: o.nullable(o.text()), status: o.nullable(o.text()), queued: count, running: count, blocked: count,
  })),
  byPriority: o.array(o.object({ priority: o.int(), queued: count })),
  oldestWaiting: o.nullable(o.object({ jobId: o.text(), kind: o.text(), projectId: o.text(), createdAt: o.time(), ageMs: o.int() })),
  alerts: o.array(o.object({ code: o.text(), message: o.text(), count: o.optional(o.int()) })),
  worker: o.object({ workerId: o.text(), healthStatus: o.oneOf(['ok', 'paused', 'stale', 'stopped', 'not_started'] as const) }),
}));

const QueueBatchView = o.named('QueueBatchResult', o.object({
  action: o.oneOf(['retry', 'cancel', 'priority'] as const),
  results: o.array(o.object({
    id: o.text(), outcome: o.oneOf(['retried', 'cancelled', 'updated', 'skipped', 'not_found'] as const),
    status: o.optional(o.text({ description: 'the job\'s status after the action' })), reason: o.optional(o.text({ description: 'skipped: the error code' })),
  })),
  summary: o.record(o.int(), 'jobs by outcome'),
}));

export function bindJobRoutes(router: Router): void {
  const r = router.module(import.meta.url);
  const tags = ['jobs'];
  const base = { tags, scope: 'project' as const, permission: READ_ACCESS.job as Permission | Permission[] };
  const admin = { tags: ['queue'], scope: 'organization' as const, orgRoles: ['org_owner', 'org_admin'] as OrgRole[] };

  r.get('/api/jobs', { ...base, summary: 'Jobs of the current project; filters status, kind, shotId, connector; page/pageSize.', query: JobListQuery,
    response: { description: 'a page of jobs', schema: o.page(JobView) } }, async ({ ctx, query }) => {
    const { rows, pagination } = await listJobs(ctx, query);
    return json(200, { items: rows.map(presentJob), pagination });
  });
  r.post('/api/jobs', {
    ...base, permission: 'job:create', body: JobCreateBody, response: { status: 201, description: 'the job (queued, or blocked behind a failed dependency)', schema: JobView },
    summary: 'Create a job: kind checked against the connector (named, or the organization\u2019s best for the kind); shot and dependency of this project; 409 clip_quota_exceeded for videos over the monthly quota.',
  }, async ({ ctx, body }) => json(201, presentJob(await createJob(ctx, body))));
  r.get('/api/jobs/:jobId', { ...base, summary: 'A job with every attempt (start, end, outcome, error, latency) and its connector (no endpoint).',
    response: { description: 'the job with its attempts and connector', schema: JobDetailView } }, async ({ ctx, params }) => {
    const { job, attempts, connector } = await jobDetail(ctx, params.jobId);
    return json(200, { ...presentJob(job), attempts: attempts.map(presentAttempt), connector: connector ? presentConnector(connector, { full: false }) : null });
  });
  r.post('/api/jobs/:jobId/cancel', { ...base, summary: 'Cancel a job that has not completed; a running call is aborted; waiting descendants become blocked.', response: { description: 'the job', schema: JobView } },
    async ({ ctx, params }) => json(200, presentJob(await cancel(ctx, await getJob(ctx, params.jobId)))));
  r.post('/api/jobs/:jobId/retry', { ...base, body: JobRetryBody, summary: 'Put a failed or cancelled job back in the queue with `attempts` more attempts (default 3).', response: { description: 'the job', schema: JobView } },
    async ({ ctx, params, body }) => json(200, presentJob(await retry(ctx, await getJob(ctx, params.jobId), body.attempts))));
  r.post('/api/jobs/:jobId/priority', { ...base, body: JobPriorityBody, summary: 'Set the priority (-100..100; higher runs first) of a job still in the queue.', response: { description: 'the job', schema: JobView } },
    async ({ ctx, params, body }) => json(200, presentJob(await reprioritize(ctx, await getJob(ctx, params.jobId), body.priority))));
  r.post('/api/jobs/:jobId/run', {
    ...base, permission: 'job:create', body: JobRunBody,
    summary: 'Run the job now through the worker\u2019s code path and answer its result; `idempotent: true` with the stored result when it already completed. Mixed or cloud connectors run only here, approved, with approveExternal: true.',
    response: { description: 'the job and its result', schema: JobRunView },
  }, async ({ ctx, params, body }) => {
    const a = await runNow(ctx, params.jobId, body.approveExternal === true);
    return json(200, { idempotent: a.idempotent, job: presentJob(a.job), result: a.result, error: a.error });
  });
  r.post('/api/adapters/dry-run', {
    ...base, archivedOk: true, body: JobCreateBody,
    summary: 'The exact request the connector would receive for this job body (route, model, body; header names only). Nothing is called or stored.',
    response: { description: 'the request', schema: DryRunView },
  }, async ({ ctx, body }) => json(200, await dryRunJob(ctx, body)));

  r.get('/api/admin/queue', { ...admin, summary: 'The organization\u2019s queue: depth by status, connector and priority, oldest waiting job, alerts.', response: { description: 'the queue overview', schema: QueueOverviewView } },
    async ({ ctx }) => json(200, await queueOverview(ctx)));
  r.post('/api/admin/queue/batch', {
    ...admin, body: QueueBatchBody, summary: 'retry, cancel or priority over ids or a filter (at most 1000 jobs); one outcome per job.', response: { description: 'one outcome per job and their counts', schema: QueueBatchView },
  }, async ({ ctx, body }) => json(200, await batch(ctx, body)));
}
