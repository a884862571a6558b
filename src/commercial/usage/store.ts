// SQL of usage events: the idempotent insert, the filtered page (newest first), the one grouped pass
// behind the list's summary and facets, the export's cursor, and the month's sums of a scope. Every
// statement names the organization; names come from the organization's own rows.
import type { Db, Param } from '../../db/db.ts';
import type { Dialect } from '../../db/dialect.ts';
import { and, type Where } from '../../platform/audit/store.ts';
import type { RowCursor } from '../../db/cursor.ts';
import { likePattern } from '../../db/like.ts';

export interface NewUsageRow {
  id: string; organization_id: string; workspace_id: string | null; project_id: string | null; actor_user_id: string | null;
  kind: string; unit: string; quantity: number; unit_price_e4: number; estimated_cost_e4: number; currency: string; cost_center_id: string | null;
  job_id: string | null; metadata: string; created_at: string; event_key: string;
}

/** Inserts once per (organization, event_key) (and job): true when the row is new. Without a cost center, the workspace's. */
export async function insertUsageEvent(db: Db, r: NewUsageRow): Promise<boolean> {
  return (await db.run(
    `INSERT INTO usage_events (id, organization_id, workspace_id, project_id, actor_user_id, kind, unit, quantity, unit_price_e4, estimated_cost_e4,
       currency, cost_center_id, job_id, metadata, created_at, event_key)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11,
       coalesce(?12, (SELECT id FROM cost_centers WHERE organization_id = ?2 AND workspace_id = ?3)), ?13, ?14, ?15, ?16)
     ON CONFLICT DO NOTHING`,
    r.id, r.organization_id, r.workspace_id, r.project_id, r.actor_user_id, r.kind, r.unit, r.quantity, r.unit_price_e4, r.estimated_cost_e4,
    r.currency, r.cost_center_id, r.job_id, r.metadata, r.created_at, r.event_key)).changes === 1;
}

/** The list's filters, resolved: instants of the window [from, to), exact values and the query term's matches. */
export interface UsageWhere {
  organizationId: string; from: string; to: string | null; workspaceId?: string; projectId?: string; userId?: string;
  kind?: string; unit?: string; costCenterId?: string; query?: QueryMatch;
}

/**
 * The query term, resolved before the scan: the organization's kinds and units (null: too many to
 * list, compared per row), projects, workspaces and cost centers it matches. Only the metadata is
 * compared row by row.
 */
export interface QueryMatch { like: string; kinds: string[] | null; units: string[] | null; projectIds: string[]; workspaceIds: string[]; costCenterIds: string[] }

/** A comparison with a likePattern (after a column), ASCII letters in any case as SQLite's LIKE. */
const like = (d: Dialect) => `${d.likeAnyCase} ? ESCAPE '\\'`;
const eq = (column: string, value: string | undefined): Where | null => (value === undefined ? null : { sql: `e.${column} = ?`, params: [value] });
const inList = (d: Dialect, column: string, values: string[]): Where | null =>
  (values.length === 0 ? null : { sql: `e.${column} IN (SELECT value FROM ${d.jsonValues('?')})`, params: [JSON.stringify(values)] });

/** Values a kind or unit walk may list before the term is compared row by row instead. */
const MATCH_VALUES = 2000;

/** What a query term (case-insensitive substring, ASCII case folding as SQL LIKE) matches besides metadata. */
export async function resolveQuery(db: Db, organizationId: string, q: string): Promise<QueryMatch> {
  const pattern = likePattern(q);
  const d = db.dialect;
  const matching = async (values: string[] | null) => (values === null ? null
    : (await db.all<{ value: string }>(`SELECT value FROM ${d.jsonValues('?')} WHERE value ${like(d)}`, JSON.stringify(values), pattern)).map((r) => r.value));
  const ids = async (table: string, columns: string[]) => (await db.all<{ id: string }>(
    `SELECT id FROM ${table} WHERE organization_id = ? AND (${columns.map((c) => `${c} ${like(d)}`).join(' OR ')})`, organizationId, ...columns.map(() => pattern),
  )).map((r) => r.id);
  return {
    like: pattern,
    kinds: await matching(await distinctValues(db, organizationId, 'kind', MATCH_VALUES)),
    units: await matching(await distinctValues(db, organizationId, 'unit', MATCH_VALUES)),
    projectIds: await ids('projects', ['name']),
    workspaceIds: await ids('workspaces', ['name']),
    costCenterIds: await ids('cost_centers', ['code', 'name']),
  };
}

function queryWhere(d: Dialect, m: QueryMatch | undefined): Where | null {
  if (!m) return null;
  const parts = [
    { sql: `e.metadata ${like(d)}`, params: [m.like] },
    m.kinds === null ? { sql: `e.kind ${like(d)}`, params: [m.like] } : inList(d, 'kind', m.kinds),
    m.units === null ? { sql: `e.unit ${like(d)}`, params: [m.like] } : inList(d, 'unit', m.units),
    inList(d, 'project_id', m.projectIds), inList(d, 'workspace_id', m.workspaceIds), inList(d, 'cost_center_id', m.costCenterIds),
  ].filter((x): x is Where => x !== null);
  return { sql: parts.map((x) => x.sql).join(' OR '), params: parts.flatMap((x) => x.params) };
}

/** The WHERE of a filtered set (alias e) in the dialect of the database it is for. */
export function usageWhere(d: Dialect, f: UsageWhere): Where {
  return and(
    { sql: 'e.organization_id = ? AND e.created_at >= ?', params: [f.organizationId, f.from] },
    f.to === null ? null : { sql: 'e.created_at < ?', params: [f.to] },
    eq('workspace_id', f.workspaceId), eq('project_id', f.projectId), eq('actor_user_id', f.userId), eq('kind', f.kind),
    eq('unit', f.unit), eq('cost_center_id', f.costCenterId), queryWhere(d, f.query),
  );
}

export interface UsageRow {
  id: string; created_at: string; workspace_id: string | null; workspace_name: string | null; project_id: string | null;
  project_name: string | null; actor_user_id: string | null; actor_name: string | null; kind: string; unit: string; quantity: number;
  estimated_cost_e4: number; currency: string; cost_center_id: string | null; cost_center_code: string | null;
  cost_center_name: string | null; job_id: string | null; metadata: string;
}

const ITEM_SELECT = `SELECT e.id, e.created_at, e.workspace_id, w.name AS workspace_name, e.project_id, p.name AS project_name,
    e.actor_user_id, u.name AS actor_name, e.kind, e.unit, e.quantity, e.estimated_cost_e4, e.currency, e.cost_center_id,
    c.code AS cost_center_code, c.name AS cost_center_name, e.job_id, e.metadata
  FROM usage_events e
  LEFT JOIN workspaces w ON w.id = e.workspace_id AND w.organization_id = e.organization_id
  LEFT JOIN projects p ON p.id = e.project_id AND p.organization_id = e.organization_id
  LEFT JOIN cost_centers c ON c.id = e.cost_center_id AND c.organization_id = e.organization_id
  LEFT JOIN users u ON u.id = e.actor_user_id`;
const newestFirst = (d: Dialect) => `ORDER BY e.created_at DESC, e.${d.rowKey} DESC`;

/** One page, newest first: the page's row keys (Dialect.rowKey) are found first, so that names are joined for those rows only. */
export function pageUsage(db: Db, w: Where, limit: number, offset: number): Promise<UsageRow[]> {
  const d = db.dialect;
  return db.all<UsageRow>(
    `${ITEM_SELECT} WHERE e.${d.rowKey} IN (SELECT e.${d.rowKey} FROM usage_events e WHERE ${w.sql} ${newestFirst(d)} LIMIT ? OFFSET ?) ${newestFirst(d)}`,
    ...w.params, limit, offset);
}

/** Every matching event, newest first, with names, from a snapshot on a connection of its own. */
export const openUsageCursor = (db: Db, w: Where): RowCursor<UsageRow> =>
  db.snapshotCursor<UsageRow>({ sql: `${ITEM_SELECT} WHERE ${w.sql} ${newestFirst(db.dialect)}`, params: w.params });

/** Events of one combination of actor, project, cost center, workspace, kind and unit, with their sums (cost e4 exact, a bigint). */
export interface UsageCombo { u: string | null; p: string | null; c: string | null; w: string | null; kind: string; unit: string; n: number; q: number; e4: bigint }

/**
 * The filtered set in one grouped pass, each combination handed to `fn` as it is read: summary and
 * facets are folded from them. Not gathered in an array: a query term over a year of 1,000,000 events
 * has some 13,000 combinations (about 10 MB), whose array made V8 grow the server's young generation to
 * 64 MB, which the next large export then filled (RSS +63 MB). SQLite groups with a sort of the
 * matching rows; the column with the most values comes first, so that most comparisons end at the
 * first column.
 */
export const eachUsageCombo = (db: Db, w: Where, fn: (c: UsageCombo) => void): Promise<void> => db.eachBig<Omit<UsageCombo, 'n'> & { n: bigint }>(
  `SELECT e.actor_user_id AS u, e.project_id AS p, e.cost_center_id AS c, e.workspace_id AS w, e.kind AS kind, e.unit AS unit,
          count(*) AS n, CAST(coalesce(sum(e.quantity), 0) AS DOUBLE PRECISION) AS q, sum(e.estimated_cost_e4) AS e4
     FROM usage_events e WHERE ${w.sql} GROUP BY 1, 2, 3, 4, 5, 6`, w.params, (r) => { fn({ ...r, n: Number(r.n) }); });

// A window without other filters: each facet from its own index (organization_id, column, created_at), by a
// loose index scan: one seek to each distinct value of the organization, then one range count of the
// window. No table row is read and nothing is sorted; the cost is the window's events per facet plus
// two seeks per distinct value. The totals by unit come from the covering index usage_events_org_unit.

export const FACET_INDEXES = {
  kind: 'usage_events_org_kind', workspace_id: 'usage_events_org_workspace', project_id: 'usage_events_org_project',
  cost_center_id: 'usage_events_org_cost_center', actor_user_id: 'usage_events_org_user', unit: 'usage_events_org_unit',
} as const;
export type FacetColumn = keyof typeof FACET_INDEXES;
const OPEN_END = '9999-12-31T23:59:59.999Z';

export interface WindowSum { value: string | null; n: number; q: number; e4: bigint }

/** The organization's distinct values of a facet column, ascending, one index seek each; null when there are more than `maxValues`. */
export async function distinctValues(db: Db, organizationId: string, column: FacetColumn, maxValues: number): Promise<string[] | null> {
  const next = (op: '>' | '>=') =>
    `SELECT ${column} AS v FROM usage_events ${db.dialect.indexedBy(FACET_INDEXES[column])} WHERE organization_id = ? AND ${column} ${op} ? ORDER BY ${column} LIMIT 1`;
  const values: string[] = [];
  for (let v = (await db.get<{ v: string }>(next('>='), organizationId, ''))?.v; v !== undefined; v = (await db.get<{ v: string }>(next('>'), organizationId, v))?.v) {
    if (values.length === maxValues) return null;
    values.push(v);
  }
  return values;
}

/**
 * The window's events by each value of `column` (null included), or null when the organization has
 * more than `maxValues` distinct values of it (the caller then groups the window instead).
 */
export async function windowSums(db: Db, organizationId: string, column: FacetColumn, from: string, to: string | null, maxValues: number): Promise<WindowSum[] | null> {
  const values = await distinctValues(db, organizationId, column, maxValues);
  if (!values) return null;
  const sums = column === 'unit' ? 'CAST(coalesce(sum(quantity), 0) AS DOUBLE PRECISION) AS q, coalesce(sum(estimated_cost_e4), 0) AS e4'
    : 'CAST(0 AS DOUBLE PRECISION) AS q, CAST(0 AS BIGINT) AS e4';
  const count = (test: string) => `SELECT count(*) AS n, ${sums} FROM usage_events ${db.dialect.indexedBy(FACET_INDEXES[column])}
    WHERE organization_id = ? AND ${test} AND created_at >= ? AND created_at < ?`;
  const end = to ?? OPEN_END;
  const out: WindowSum[] = [];
  type Sum = { n: bigint; q: number; e4: bigint };
  for (const value of [null, ...values]) {
    const [r] = value === null ? await db.allBig<Sum>(count(`${column} IS NULL`), organizationId, from, end)
      : await db.allBig<Sum>(count(`${column} = ?`), organizationId, value, from, end);
    if (r.n > 0n) out.push({ n: Number(r.n), q: r.q, e4: r.e4, value });
  }
  return out;
}
export interface NameRow { id: string; name: string; code?: string }

/** Names of the organization's workspaces, projects and cost centers, and of users, for the given ids. */
export async function namesOf(db: Db, organizationId: string, table: 'workspaces' | 'projects' | 'cost_centers' | 'users', ids: string[]): Promise<Map<string, NameRow>> {
  if (ids.length === 0) return new Map();
  const cols = table === 'cost_centers' ? 'id, name, code' : 'id, name';
  const tenant = table === 'users' ? '' : 'organization_id = ? AND';
  const params: Param[] = table === 'users' ? [JSON.stringify(ids)] : [organizationId, JSON.stringify(ids)];
  const rows = await db.all<NameRow>(`SELECT ${cols} FROM ${table} WHERE ${tenant} id IN (SELECT value FROM ${db.dialect.jsonValues('?')})`, ...params);
  return new Map(rows.map((r) => [r.id, r]));
}

export const costCenterByIdOrCode = (db: Db, organizationId: string, idOrCode: string) =>
  db.get<{ id: string }>('SELECT id FROM cost_centers WHERE organization_id = ? AND (id = ?2 OR code = ?2) ORDER BY id = ?2 DESC LIMIT 1',
    organizationId, idOrCode);

export interface KindSumRow { kind: string; unit: string; events: number; quantity: number; e4: bigint }

/** Sums of a scope (organization, optionally one workspace or project) in [start, end) by kind and unit. */
export async function scopeSums(db: Db, s: { organizationId: string; workspaceId: string | null; projectId: string | null }, start: string, end: string): Promise<KindSumRow[]> {
  const w = and(
    { sql: 'organization_id = ? AND created_at >= ? AND created_at < ?', params: [s.organizationId, start, end] },
    s.workspaceId ? { sql: 'workspace_id = ?', params: [s.workspaceId] } : null,
    s.projectId ? { sql: 'project_id = ?', params: [s.projectId] } : null,
  );
  return (await db.allBig<Omit<KindSumRow, 'events'> & { events: bigint }>(
    `SELECT kind, unit, count(*) AS events, CAST(coalesce(sum(quantity), 0) AS DOUBLE PRECISION) AS quantity, sum(estimated_cost_e4) AS e4
       FROM usage_events WHERE ${w.sql} GROUP BY kind, unit ORDER BY kind, unit`, ...w.params)).map((r) => ({ ...r, events: Number(r.events) }));
}

