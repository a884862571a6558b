// SQL of the append-only, hash-chained audit log: the one-statement append to the chain's head, the scoped and filtered
// reads behind the list, facets, detail and export, and the chain walk of `svc audit verify`.
import type { Db, Param } from '../../db/db.ts';
import type { RowCursor } from '../../db/cursor.ts';
import { POSTGRES, SQLITE } from '../../db/dialect.ts';

export interface AuditRow {
  seq: number;
  id: string;
  created_at: string;
  actor_type: string;
  actor_user_id: string | null;
  actor_name: string | null;
  organization_id: string | null;
  workspace_id: string | null;
  project_id: string | null;
  action: string;
  target_type: string | null;
  target_id: string | null;
  result: 'success' | 'failure' | 'denied';
  metadata: string;
  ip: string | null;
  user_agent: string | null;
  request_id: string | null;
  prev_hash: string | null;
  hash: string | null;
}

export type NewAuditRow = Omit<AuditRow, 'seq' | 'prev_hash' | 'hash'>;

/** The prev_hash of the first row. */
export const GENESIS_HASH = '0'.repeat(64);

/** The hashed fields, in the order of the canonical serialization (prev_hash comes last). */
export const HASHED_FIELDS = [
  'id', 'created_at', 'actor_type', 'actor_user_id', 'actor_name', 'organization_id', 'workspace_id', 'project_id',
  'action', 'target_type', 'target_id', 'result', 'metadata', 'ip', 'user_agent', 'request_id',
] as const satisfies ReadonlyArray<keyof NewAuditRow>;

/**
 * Appends one row in ONE statement, the same on both engines: the new values, the head's seq + 1 and
 * its hash as prev_hash, and as hash svc_sha256 of the canonical text (schema.sql): JSON.stringify of
 * the values and prev_hash, written here without its end and completed in SQL with the head's hash
 * (64 hex digits, a JSON string without escapes). The head is read FOR UPDATE on PostgreSQL (SQLite's
 * writers take turns already), so an append waits for the transaction of the one before to end and
 * chains to what it committed, one seq after it: seq is gap-free and in commit order. The trigger
 * audit_log_head moves the head to the new row.
 */
const INSERT_SQL = `INSERT INTO audit_log (seq, ${HASHED_FIELDS.join(', ')}, prev_hash, hash)
SELECT h.seq + 1, ${HASHED_FIELDS.map((f) => `CAST(? AS TEXT) AS ${f}`).join(', ')}, h.hash,
       svc_sha256(CAST(? AS TEXT) || ',"' || h.hash || '"]')
  FROM audit_chain_head h WHERE h.id = 1`;
/** INSERT_SQL with each engine's lock of the head row, made once. */
const INSERT_SQL_OF = { sqlite: INSERT_SQL + SQLITE.forUpdate, postgres: INSERT_SQL + POSTGRES.forUpdate };

/** A value as the database stores it: a lone surrogate (not UTF-8) becomes U+FFFD, as the drivers write it. */
const stored = (v: string | null): string | null => (v === null ? null : v.toWellFormed());

export async function insertAudit(db: Db, r: NewAuditRow): Promise<void> {
  const values = HASHED_FIELDS.map((f) => stored(r[f]));
  const text = JSON.stringify(values).slice(0, -1); // the canonical text up to ,"<prev_hash>"]
  const appended = await db.run(INSERT_SQL_OF[db.engine], ...values, text);
  if (appended.changes !== 1) throw new Error('the audit log has no chain head (table audit_chain_head): nothing was appended');
}

/** A WHERE clause with its parameters. */
export interface Where { sql: string; params: Param[] }

export const and = (...parts: Array<Where | null>): Where => {
  const p = parts.filter((x): x is Where => x !== null);
  return p.length === 0 ? { sql: '1 = 1', params: [] } : { sql: p.map((x) => `(${x.sql})`).join(' AND '), params: p.flatMap((x) => x.params) };
};

/** A page, newest first. */
export function pageAudit(db: Db, w: Where, limit: number, offset: number): Promise<AuditRow[]> {
  return db.all<AuditRow>(`SELECT * FROM audit_log WHERE ${w.sql} ORDER BY seq DESC LIMIT ? OFFSET ?`, ...w.params, limit, offset);
}

export function auditById(db: Db, id: string, scope: Where): Promise<AuditRow | undefined> {
  return db.get<AuditRow>(`SELECT * FROM audit_log WHERE id = ? AND (${scope.sql})`, id, ...scope.params);
}

export const FACET_LIMIT = 100;

export interface FacetValue { value: string | null; count: number }
export interface ActorFacetValue extends FacetValue { type: string; name: string | null }
export interface Facets { action: FacetValue[]; targetType: FacetValue[]; result: FacetValue[]; actor: ActorFacetValue[] }

/**
 * The number of matching rows and their counts by action, target type, result and actor (the
 * FACET_LIMIT most frequent values of each), in two grouped passes: one by (action, target type,
 * result), whose few combinations are added up here (their sum is the total), and one by actor
 * (users by id; the operator, the system and anonymous callers by type and name).
 */
export async function facetsOf(db: Db, w: Where): Promise<{ total: number; facets: Facets }> {
  const action = new Map<string, number>();
  const targetType = new Map<string | null, number>();
  const result = new Map<string, number>();
  const add = <K>(m: Map<K, number>, k: K, n: number) => m.set(k, (m.get(k) ?? 0) + n);
  const combos = await db.all<{ action: string; target_type: string | null; result: string; n: number }>(
    `SELECT action, target_type, result, count(*) AS n FROM audit_log WHERE ${w.sql} GROUP BY action, target_type, result`, ...w.params);
  let total = 0;
  for (const c of combos) {
    total += c.n;
    add(action, c.action, c.n);
    add(targetType, c.target_type, c.n);
    add(result, c.result, c.n);
  }
  const top = <K extends string | null>(m: Map<K, number>): FacetValue[] => [...m]
    .map(([value, count]) => ({ value, count }))
    .sort((a, b) => b.count - a.count || String(a.value ?? '').localeCompare(String(b.value ?? '')))
    .slice(0, FACET_LIMIT);
  const actor = await db.all<ActorFacetValue>(
    `SELECT max(actor_user_id) AS value, min(actor_type) AS type, max(actor_name) AS name, count(*) AS count FROM audit_log WHERE ${w.sql}
      GROUP BY coalesce('u:' || actor_user_id, 't:' || actor_type || ':' || coalesce(actor_name, ''))
      ORDER BY count DESC, value NULLS FIRST, name NULLS FIRST LIMIT ${FACET_LIMIT}`, ...w.params);
  return { total, facets: { action: top(action), targetType: top(targetType), result: top(result), actor } };
}

export const RELATED_LIMIT = 50;

/** Other records of the same target, newest first. */
export async function relatedAudit(db: Db, row: AuditRow, scope: Where): Promise<AuditRow[]> {
  if (row.target_type === null || row.target_id === null) return [];
  return await db.all<AuditRow>(
    `SELECT * FROM audit_log WHERE target_type = ? AND target_id = ? AND id <> ? AND (${scope.sql})
      ORDER BY seq DESC LIMIT ${RELATED_LIMIT}`, row.target_type, row.target_id, row.id, ...scope.params);
}

/** Account-security events (auth.*, user.*) done by or to a user account, newest first. */
export function securityEventsOf(db: Db, userId: string, exceptId: string, scope: Where): Promise<AuditRow[]> {
  return db.all<AuditRow>(
    `SELECT * FROM audit_log
      WHERE (actor_user_id = ? OR (target_type = 'user' AND target_id = ?))
        AND (action LIKE 'auth.%' OR action LIKE 'user.%') AND id <> ? AND (${scope.sql})
      ORDER BY seq DESC LIMIT ${RELATED_LIMIT}`, userId, userId, exceptId, ...scope.params);
}

/** Every matching row (or one page), newest first like the list, from a snapshot on a connection of its own (export.ts). */
export function openAuditCursor(db: Db, w: Where, limit?: { limit: number; offset: number }): RowCursor<AuditRow> {
  const sql = `SELECT * FROM audit_log WHERE ${w.sql} ORDER BY seq DESC${limit ? ' LIMIT ? OFFSET ?' : ''}`;
  return db.snapshotCursor<AuditRow>({ sql, params: [...w.params, ...(limit ? [limit.limit, limit.offset] : [])] });
}

export interface ChainRow extends Pick<AuditRow, 'seq' | 'prev_hash' | 'hash'>, NewAuditRow {}

/** Every row in chain order (streamed). */
export function iterateChain(db: Db): AsyncGenerator<ChainRow, void, undefined> {
  return db.iterate<ChainRow>(`SELECT seq, prev_hash, hash, ${HASHED_FIELDS.join(', ')} FROM audit_log ORDER BY seq`);
}

/** The seq of the chain's head: the highest ever appended (0 when none). */
export async function highestSeqIssued(db: Db): Promise<number> {
  return Number((await db.get<{ seq: number }>('SELECT seq FROM audit_chain_head WHERE id = 1'))?.seq ?? 0);
}

/** True when a user appears in a record of the scope, as its actor or as its target. */
export async function userAppearsIn(db: Db, userId: string, scope: Where): Promise<boolean> {
  return !!await db.get(`SELECT 1 AS x FROM audit_log WHERE actor_user_id = ? AND (${scope.sql}) LIMIT 1`, userId, ...scope.params)
    || !!await db.get(`SELECT 1 AS x FROM audit_log WHERE target_type = 'user' AND target_id = ? AND (${scope.sql}) LIMIT 1`, userId, ...scope.params);
}
