// The worker's status and a manual claim.
import { json, type Router } from '../../http/router.ts';
import { conflict } from '../../kernel/errors.ts';
import { workerOf } from '../dispatch/control.ts';
import * as o from '../../kernel/view.ts';
import { WorkerStatusView, workerStatus } from '../dispatch/status.ts';

export function bindWorkerRoutes(router: Router): void {
  const r = router.module(import.meta.url);
  const tags = ['system', 'worker'];
  r.get('/api/system/worker', { summary: 'Worker status: id, health, heartbeat age, thresholds, queue depth and alerts, running count, last times, last error.', tags, systemAdmin: true, scope: 'none', response: { description: 'the worker status', schema: WorkerStatusView } },
    async ({ ctx }) => json(200, await workerStatus(ctx)));
  r.post('/api/system/worker/dispatch', {
    summary: 'Trigger one claim now (also when SVC_WORKER_ENABLED=0), limited to the current organization; a system administrator with no organization in scope claims from any organization. Answers the claimed job id or null.',
    // Scope 'none': an organization owner or admin needs its organization in scope (the orgRoles
    // check); the system administrator passes without one and then claims from any organization.
    tags, scope: 'none', orgRoles: ['org_owner', 'org_admin'],
    response: { description: 'whether a job was claimed', schema: o.object({ dispatched: o.constant(true), claimed: o.nullable(o.text({ description: 'the claimed job id; null when none could be claimed' })) }) },
  }, async ({ ctx }) => {
    const worker = workerOf(ctx.db);
    if (!worker) throw conflict('worker_unavailable', 'no worker runs in this process');
    const jobId = await worker.dispatch(ctx.scope.organizationId);
    return json(200, { dispatched: true as const, claimed: jobId });
  });
}
