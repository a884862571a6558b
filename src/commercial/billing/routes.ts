// Billing account and the commercial view: PATCH .../billing (billing:manage), GET .../commercial and
// its export (organization owners and admins; the system administrator too), and the session scope's
// GET /api/billing (usage:view: the account and the current period's estimated charges).
import { json, type Router, type RouteMeta } from '../../http/router.ts';
import { localDate } from '../../kernel/periods.ts';
import { BillingPatchBody } from './schema.ts';
import { commercialExport, commercialView, updateBillingAccount } from './service.ts';
import { billingView } from '../usage/service.ts';
import { BillingAccountView, BillingOverviewView, CommercialExportView, CommercialView } from '../views.ts';

const ADMINS: RouteMeta['orgRoles'] = ['org_owner', 'org_admin'];

export function bindBillingRoutes(router: Router): void {
  const r = router.module(import.meta.url);
  const tags = ['commercial'];
  r.patch('/api/organizations/:organizationId/billing', {
    summary: 'Change billing account fields; 409 seat_limit_below_reserved, clip_quota_below_usage, storage_below_usage, quota_above_plan (with { requested, minimum }), currency_locked, billing_cycle_locked or time_zone_locked (with { requested, current, ... }), changing nothing. Writes billing_account_events and billing.account.updated.',
    tags, scope: 'organization', organizationRecords: true, permission: 'billing:manage', body: BillingPatchBody, response: { description: 'the billing account', schema: BillingAccountView },
  }, async ({ ctx, params, body }) => json(200, await updateBillingAccount(ctx, params.organizationId, body)));
  r.get('/api/organizations/:organizationId/commercial', {
    summary: 'Plan, seats, workspace quotas, this month\'s usage, quota warnings, cost centers (and their split by workspace), billing history and the 31-day usage trend.',
    tags, scope: 'organization', organizationRecords: true, orgRoles: ADMINS, response: { description: 'the commercial view', schema: CommercialView },
  }, async ({ ctx, params }) => json(200, await commercialView(ctx, params.organizationId)));
  r.get('/api/organizations/:organizationId/commercial/export', {
    summary: 'The full commercial JSON for archiving (every history entry, account event, warning, usage totals by month, invoices), as an attachment.',
    tags, scope: 'organization', organizationRecords: true, orgRoles: ADMINS, response: { description: 'the commercial view with every history entry and warning, account events, usage by month and invoices (Content-Disposition: attachment)', schema: CommercialExportView },
  }, async ({ ctx, params }) => {
    const doc = await commercialExport(ctx, params.organizationId);
    const filename = `commercial-${params.organizationId}-${localDate(ctx.now(), doc.organization.timeZone)}.json`;
    return {
      status: 200,
      headers: { 'content-type': 'application/json; charset=utf-8', 'content-disposition': `attachment; filename="${filename}"` },
      raw: `${JSON.stringify(doc, null, 2)}\n`,
    };
  });
  r.get('/api/billing', {
    tags: ['usage'], scope: 'organization', permission: 'usage:view',
    summary: 'The organization\'s billing account (read view: plan, cycle, currency, prices, limits, flags) and the current billing period\'s estimated charges so far, before tax.',
    response: { description: 'the billing account, the current period and its estimated charges', schema: BillingOverviewView },
  }, async ({ ctx }) => json(200, await billingView(ctx)));
}
