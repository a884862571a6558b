// One page of a project's records, newest first (created_at, then id), optionally narrowed by one
// column's value, with the total: the list shape of deliveries and exports.
import type { Db } from './db.ts';

/**
 * A LIMIT that keeps every row, on both engines: SQLite reads a negative LIMIT as none, PostgreSQL
 * refuses it.
 */
export const ALL_ROWS = Number.MAX_SAFE_INTEGER;

/** Tables and the one column each list may filter by (names are never taken from input). */
const FILTERABLE = { deliveries: 'status', exports: 'delivery_id' } as const;
type Table = keyof typeof FILTERABLE;

export async function newestPageOfProject<T>(db: Db, table: Table, projectId: string, value: string | null, limit: number, offset: number): Promise<{ rows: T[]; total: number }> {
  const where = `project_id = ?1 AND (${FILTERABLE[table]} = ?2 OR ?2 IS NULL)`;
  const total = (await db.get<{ n: number }>(`SELECT count(*) AS n FROM ${table} WHERE ${where}`, projectId, value))!.n;
  const rows = await db.all<T>(`SELECT * FROM ${table} WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT ?3 OFFSET ?4`, projectId, value, limit, offset);
  return { rows, total };
}
