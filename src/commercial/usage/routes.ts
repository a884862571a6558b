// Usage: the organization's usage list with summary and facets and its streamed export (organization
// owners and admins holding usage:view; the system administrator too), and the session scope's
// GET /api/usage (usage:view). Shapes: docs/commercial.md#usage.
import { json, type Router, type RouteMeta } from '../../http/router.ts';
import { paging } from '../../kernel/validate.ts';
import { attachment } from '../../kernel/export-stream.ts';
import { ScopeUsageQuery, UsageExportQuery, UsageListQuery } from './schema.ts';
import { exportUsage, listUsage, scopeUsage } from './service.ts';
import * as o from '../../kernel/view.ts';
import { ScopeUsageView, UsageEventView, UsageListView } from '../views.ts';

const ADMINS: RouteMeta['orgRoles'] = ['org_owner', 'org_admin'];

export function bindUsageRoutes(router: Router): void {
  const r = router.module(import.meta.url);
  const tags = ['usage'];
  const admin = { tags, scope: 'organization' as const, organizationRecords: true, orgRoles: ADMINS, permission: 'usage:view' as const };
  r.get('/api/organizations/:organizationId/usage', {
    ...admin, query: UsageListQuery,
    summary: 'Usage events of the organization, newest first, filtered (default window: this local month); summary (totals by unit and overall) and facets (counts by kind, unit, workspace, project, cost center and user, top 100 each) over the whole filtered set.',
    response: { description: 'a page of usage events with summary, facets and the window read', schema: UsageListView },
  }, async ({ ctx, params, query, searchParams }) => json(200, await listUsage(ctx, params.organizationId, query, paging(searchParams))));
  r.get('/api/organizations/:organizationId/usage/export', {
    ...admin, query: UsageExportQuery,
    summary: 'Streams the filtered usage events (same filters and default window as the list), newest first, as a JSON array of list items or UTF-8 CSV with a header row (RFC 4180 quoting; cells starting with = + - @ get a leading \'), as an attachment.',
    response: { type: 'text/csv', schema: o.array(UsageEventView), description: 'a JSON array of list items or CSV, Content-Disposition: attachment' },
  }, async ({ ctx, params, query, res }) => {
    const format = query.format ?? 'json';
    const out = await exportUsage(ctx, params.organizationId, query, format);
    return attachment(res, format, out.filename, out.stream);
  });
  r.get('/api/usage', {
    tags, scope: 'organization', permission: 'usage:view', query: ScopeUsageQuery,
    summary: 'This local month\'s usage of the session\'s scope (project, workspace or organization; `level` picks one of them): events, clips, estimated cost by kind and unit, stored bytes, and the organization\'s and workspace\'s limits.',
    response: { description: 'this local month\'s usage of the scope and the limits that apply', schema: ScopeUsageView },
  }, async ({ ctx, query }) => json(200, await scopeUsage(ctx, query.level)));
}
