// The audit log: list with facets, one record with its related and account-security events, and a
// streamed export. Access: audit:view; what the caller sees is its audit reach (scope.ts).
import { json, type Router } from '../../http/router.ts';
import { paging } from '../../kernel/validate.ts';
import { attachment } from '../../kernel/export-stream.ts';
import * as o from '../../kernel/view.ts';
import { AuditRecordView, presentAudit } from './present.ts';
import { AuditExportQuery, AuditListQuery } from './schema.ts';
import { auditDetail, exportAudit, listAudit } from './service.ts';
import type { AuditReach } from './scope.ts';

const facet = o.object({ value: o.nullable(o.text()), count: o.int() });

export const AuditPageView = o.named('AuditPage', o.object({
  auditLog: o.array(AuditRecordView),
  pagination: o.Pagination,
  facets: o.object({
    action: o.array(facet), targetType: o.array(facet), result: o.array(facet),
    actor: o.array(o.object({ value: o.nullable(o.text({ description: 'the actor\'s user id' })), count: o.int(), type: o.text(), name: o.nullable(o.text()) })),
  }, 'counts over the filtered records, top 100 each'),
  scope: o.object({
    kind: o.oneOf(['system', 'organization', 'workspace', 'project']),
    organizationId: o.nullable(o.text()), workspaceId: o.nullable(o.text()), projectId: o.nullable(o.text()),
    includesOrganizationEvents: o.bool('a workspace or project reach also shows its organization\'s own events'),
  }, 'the caller\'s audit scope'),
}));

const AuditDetailView = o.named('AuditRecordDetail', o.extend(AuditRecordView, {
  related: o.array(AuditRecordView, 'other records of the same target (at most 50, newest first)'),
  securityEvents: o.array(AuditRecordView, 'auth.* and user.* records of the same user account (at most 50, newest first)'),
}));

const presentReach = (r: AuditReach) => ({
  kind: r.kind,
  organizationId: r.organizationId,
  workspaceId: r.workspaceId,
  projectId: r.projectId,
  includesOrganizationEvents: r.kind === 'workspace' || r.kind === 'project',
});

export function bindAuditRoutes(router: Router): void {
  const r = router.module(import.meta.url);
  // Scope 'none': the route reads the session's scope itself, so that a system administrator
  // without any organization and organization-level holders both get in; audit:view is checked
  // in that scope as usual.
  const meta = { tags: ['audit'], scope: 'none' as const, permission: 'audit:view' as const };

  r.get('/api/audit', {
    ...meta, query: AuditListQuery,
    summary: 'Audit records in the caller\'s audit scope, newest first, filtered; with facets (counts by action, targetType, result and actor over the filtered records, top 100 each) and the scope shown. A filter outside the scope is 403 scope_forbidden.',
    response: { description: '{ auditLog, pagination: { page, pageSize, total }, facets: { action, targetType, result, actor }, scope: { kind, organizationId, workspaceId, projectId, includesOrganizationEvents } }', schema: AuditPageView },
  }, async ({ ctx, query, searchParams }) => {
    const { page, pageSize, offset } = paging(searchParams);
    const p = await listAudit(ctx, query, { limit: pageSize, offset });
    return json(200, {
      auditLog: p.rows.map(presentAudit),
      pagination: { page, pageSize, total: p.total },
      facets: p.facets,
      scope: presentReach(p.reach),
    });
  });

  r.get('/api/audit/export', {
    ...meta, query: AuditExportQuery,
    summary: 'Streams the matching audit records, newest first (with page and pageSize: the list\'s page), as a JSON array or UTF-8 CSV with a header row (RFC 4180 quoting; cells starting with = + - @ are prefixed with \'), as an attachment. Writes audit.exported.',
    response: { description: 'a JSON array of audit records, or CSV (format=csv); Content-Disposition: attachment', schema: o.array(AuditRecordView), type: 'text/csv' },
  }, async ({ ctx, query, searchParams, res }) => {
    const page = searchParams.has('pageSize') ? paging(searchParams) : undefined;
    const out = await exportAudit(ctx, query, query.format ?? 'json', page && { limit: page.pageSize, offset: page.offset });
    return attachment(res, out.format, out.filename, out.stream);
  });

  r.get('/api/audit/:auditId', {
    ...meta,
    summary: 'One audit record in the caller\'s audit scope (404 otherwise) with related (other records of the same target) and securityEvents (auth.* and user.* records of the same user account), both in scope, newest first, at most 50.',
    response: { description: '{ ...record, related: [...], securityEvents: [...] }', schema: AuditDetailView },
  }, async ({ ctx, params }) => {
    const d = await auditDetail(ctx, params.auditId);
    return json(200, { ...presentAudit(d.row), related: d.related.map(presentAudit), securityEvents: d.securityEvents.map(presentAudit) });
  });
}
