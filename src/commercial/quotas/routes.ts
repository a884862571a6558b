// Workspace quotas and cost centers of an organization (PATCH; the commercial view lists them).
import { json, type Router } from '../../http/router.ts';
import { CostCenterPatchBody, QuotaPatchBody } from './schema.ts';
import { updateCostCenter, updateQuota } from './service.ts';
import { CostCenterView, WorkspaceQuotaView } from '../views.ts';

export function bindQuotaRoutes(router: Router): void {
  const r = router.module(import.meta.url);
  const tags = ['commercial'];
  r.patch('/api/organizations/:organizationId/quotas/:quotaId', {
    summary: 'Set a workspace\u2019s own clip and storage quota (null: none); 409 quota_above_plan, 409 quota_below_usage.',
    tags, scope: 'organization', organizationRecords: true, permission: 'quota:manage', body: QuotaPatchBody,
    response: { description: 'the workspace quota', schema: WorkspaceQuotaView },
  }, async ({ ctx, params, body }) => json(200, await updateQuota(ctx, params.organizationId, params.quotaId, body)));
  r.patch('/api/organizations/:organizationId/cost-centers/:costCenterId', {
    summary: 'Rename a cost center or set its budget per billing period (null: none).',
    tags, scope: 'organization', organizationRecords: true, permission: 'billing:manage', body: CostCenterPatchBody,
    response: { description: 'the cost center', schema: CostCenterView },
  }, async ({ ctx, params, body }) => json(200, await updateCostCenter(ctx, params.organizationId, params.costCenterId, body)));
}
