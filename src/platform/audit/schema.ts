// Input of the audit routes: the list's paging, filters and scope narrowing; the export's format.
import * as v from '../../kernel/validate.ts';

const id = (description: string) => v.optional(v.string({ max: 64, description }));
const text = (description: string) => v.optional(v.string({ max: 200, description }));
const day = (description: string) => v.optional(v.string({ format: 'date', description }));

export const AUDIT_RESULTS = ['success', 'failure', 'denied'] as const;

const filterShape = {
  query: text('case-insensitive substring of the action, target type, target id, actor name or metadata'),
  action: text('exact action, e.g. auth.login'),
  targetType: text('exact target type, e.g. project'),
  targetId: text('exact target id; naming an organization, workspace, project or user outside the caller\'s audit scope (with that targetType, or without one; unknown ids too when the targetType is one of those): 403 scope_forbidden'),
  result: v.optional(v.oneOf(AUDIT_RESULTS)),
  actorUserId: id('records done by this user; a user outside the caller\'s audit scope (no membership there and no record there) or an unknown id: 403 scope_forbidden'),
  from: day('first day, YYYY-MM-DD (UTC, inclusive)'),
  to: day('last day, YYYY-MM-DD (UTC, inclusive)'),
  organizationId: id('narrow to this organization; outside the caller\'s audit scope: 403 scope_forbidden'),
  workspaceId: id('narrow to this workspace; outside the caller\'s audit scope: 403 scope_forbidden'),
  projectId: id('narrow to this project; outside the caller\'s audit scope: 403 scope_forbidden'),
};

export const AuditListQuery = v.object({
  page: v.optional(v.int({ description: 'page number from 1' })),
  pageSize: v.optional(v.int({ description: 'records per page, default 50, clamped to 1..200' })),
  ...filterShape,
}, { allowUnknown: true });

export const AuditExportQuery = v.object({
  format: v.optional(v.oneOf(['json', 'csv'] as const, { description: 'json (default): a JSON array; csv: UTF-8 CSV with a header row' })),
  page: v.optional(v.int({ description: 'with pageSize: export only this page (from 1)' })),
  pageSize: v.optional(v.int({ description: 'export only one page of this many records (clamped to 1..200); without it every matching record' })),
  ...filterShape,
}, { allowUnknown: true });

export type AuditFilters = Pick<v.Infer<typeof AuditListQuery>, keyof typeof filterShape>;
export const FILTER_NAMES = Object.keys(filterShape) as Array<keyof AuditFilters>;
