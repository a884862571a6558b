// Generation jobs of the current project, the connector dry run, and the organization's queue.
import { READ_ACCESS } from '../tenancy/reads.ts';
import { json, type Router } from '../http/router.ts';
import type { OrgRole, Permission } from '../tenancy/roles.ts';
import { presentConnector } from '../connectors/present.ts';
import { JobCreateBody, JobListQuery, JobPriorityBody, JobRetryBody, JobRunBody, QueueBatchBody } from './schema.ts';
import { presentAttempt, presentJob } from './present.ts';
import { cancel, createJob, dryRunJob, getJob, jobDetail, listJobs, reprioritize, retry, runNow } from './service.ts';
import { batch, queueOverview } from './queue.ts';

export function bindJobRoutes(r: Router): void {
  const tags = ['jobs'];
  const base = { tags, scope: 'project' as const, permission: READ_ACCESS.job as Permission | Permission[] };
  const admin = { tags: ['queue'], scope: 'organization' as const, orgRoles: ['org_owner', 'org_admin'] as OrgRole[] };

  r.get('/api/jobs', { ...base, summary: 'Jobs of the current project; filters status, kind, shotId, connector; page/pageSize.', query: JobListQuery }, ({ ctx, query }) => {
    const { rows, pagination } = listJobs(ctx, query);
    return json(200, { items: rows.map(presentJob), pagination });
  });
  r.post('/api/jobs', {
    ...base, permission: 'job:create', body: JobCreateBody, response: { status: 201, description: 'the job (queued, or blocked behind a failed dependency)' },
    summary: 'Create a job: kind checked against the connector (named, or the organization\u2019s best for the kind); shot and dependency of this project; 409 clip_quota_exceeded for videos over the monthly quota.',
  }, ({ ctx, body }) => json(201, presentJob(createJob(ctx, body))));
  r.get('/api/jobs/:jobId', { ...base, summary: 'A job with every attempt (start, end, outcome, error, latency) and its connector (no endpoint).' }, ({ ctx, params }) => {
    const { job, attempts, connector } = jobDetail(ctx, params.jobId);
    return json(200, { ...presentJob(job), attempts: attempts.map(presentAttempt), connector: connector ? presentConnector(connector, { full: false }) : null });
  });
  r.post('/api/jobs/:jobId/cancel', { ...base, summary: 'Cancel a job that has not completed; a running call is aborted; waiting descendants become blocked.' },
    ({ ctx, params }) => json(200, presentJob(cancel(ctx, getJob(ctx, params.jobId)))));
  r.post('/api/jobs/:jobId/retry', { ...base, body: JobRetryBody, summary: 'Put a failed or cancelled job back in the queue with `attempts` more attempts (default 3).' },
    ({ ctx, params, body }) => json(200, presentJob(retry(ctx, getJob(ctx, params.jobId), body.attempts))));
  r.post('/api/jobs/:jobId/priority', { ...base, body: JobPriorityBody, summary: 'Set the priority (-100..100; higher runs first) of a job still in the queue.' },
    ({ ctx, params, body }) => json(200, presentJob(reprioritize(ctx, getJob(ctx, params.jobId), body.priority))));
  r.post('/api/jobs/:jobId/run', {
    ...base, permission: 'job:create', body: JobRunBody,
    summary: 'Run the job now through the worker\u2019s code path and answer its result; `idempotent: true` with the stored result when it already completed. Mixed or cloud connectors run only here, approved, with approveExternal: true.',
  }, async ({ ctx, params, body }) => {
    const a = await runNow(ctx, params.jobId, body.approveExternal === true);
    return json(200, { idempotent: a.idempotent, job: presentJob(a.job), result: a.result, error: a.error });
  });
  r.post('/api/adapters/dry-run', {
    ...base, archivedOk: true, body: JobCreateBody,
    summary: 'The exact request the connector would receive for this job body (route, model, body; header names only). Nothing is called or stored.',
  }, ({ ctx, body }) => json(200, dryRunJob(ctx, body)));

  r.get('/api/admin/queue', { ...admin, summary: 'The organization\u2019s queue: depth by status, connector and priority, oldest waiting job, alerts.' },
    ({ ctx }) => json(200, queueOverview(ctx)));
  r.post('/api/admin/queue/batch', {
    ...admin, body: QueueBatchBody, summary: 'retry, cancel or priority over ids or a filter (at most 1000 jobs); one outcome per job.',
  }, ({ ctx, body }) => json(200, batch(ctx, body)));
}
