// Input of the usage routes: the list's paging and filters, the export's format, and the level of
// GET /api/usage. `from`/`to` are local days (YYYY-MM-DD, in the organization's time zone, both
// inclusive) or ISO 8601 instants; their meaning is decided in usage.ts (usageWindow).
import * as v from '../../kernel/validate.ts';
import { USAGE_LEVELS } from '../vocabulary.ts';

/** A local day or an ISO 8601 instant with a zone ("2025-03-30", "2025-03-30T01:30:00Z", "...+02:00"). */
const DAY_OR_INSTANT = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2}))?$/;

const when = (description: string) => v.optional(v.string({ max: 40, pattern: DAY_OR_INSTANT, description }));
const exact = (description: string) => v.optional(v.string({ min: 1, max: 100, description }));

export const filterShape = {
  from: when('first local day YYYY-MM-DD (inclusive, the organization\'s time zone) or an ISO 8601 instant (inclusive); default: the start of the local month of `to` (or of now)'),
  to: when('last local day YYYY-MM-DD (inclusive) or an ISO 8601 instant (inclusive); default: no upper bound'),
  workspaceId: exact('events of this workspace'),
  projectId: exact('events of this project'),
  userId: exact('events recorded for this user (actorUserId)'),
  kind: exact('exact event kind, e.g. clip'),
  unitName: exact('exact unit name, e.g. second'),
  costCenter: exact('a cost center id or code'),
  query: v.optional(v.string({ min: 1, max: 100, description: 'case-insensitive substring of the kind, unit, metadata (JSON text), or the name of the project, workspace or cost center (or its code)' })),
};

export const UsageListQuery = v.object({
  page: v.optional(v.int({ description: 'page number from 1' })),
  pageSize: v.optional(v.int({ description: 'events per page, default 50, clamped to 1..200' })),
  ...filterShape,
}, { allowUnknown: true });

export const UsageExportQuery = v.object({
  format: v.optional(v.oneOf(['json', 'csv'] as const, { description: 'json (default): a JSON array of list items; csv: UTF-8 CSV with a header row' })),
  ...filterShape,
}, { allowUnknown: true });

export type UsageFilters = Pick<v.Infer<typeof UsageListQuery>, keyof typeof filterShape>;


export const ScopeUsageQuery = v.object({
  level: v.optional(v.oneOf(USAGE_LEVELS, { description: 'report this level of the session\'s scope (default: its most specific one); usage:view is checked there' })),
}, { allowUnknown: true });
