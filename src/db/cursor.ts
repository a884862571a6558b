// The snapshot cursor of streamed exports: rows of one query read at the client's pace from one
// consistent snapshot, on a private read-only connection (src/kernel/export-stream.ts streams them).
import { DatabaseSync } from 'node:sqlite';
import type { Param } from './db.ts';
import type { RecordSource } from '../kernel/export-stream.ts';

export type RowCursor<R> = RecordSource<R>;

export interface SnapshotOptions<X> {
  /** Read INTEGER columns as bigint (money stays exact). */
  bigInts?: boolean;
  /** Prepares more on the same reader (same snapshot), e.g. a second statement; its result is the cursor's `prepared`. */
  prepare?: (reader: DatabaseSync) => X;
}

/**
 * The rows of `sql` on a private read-only connection: the export reads one consistent snapshot at
 * the client's pace without holding a read transaction open on the shared connection (whose other
 * requests would see that old snapshot and whose writes would fail against it). close() must be called.
 */
export function openSnapshotCursor<R, X = undefined>(
  dbPath: string, sql: string, params: Param[], opts: SnapshotOptions<X> = {},
): RowCursor<R> & { prepared: X } {
  const reader = new DatabaseSync(dbPath, { readOnly: true });
  try {
    reader.exec('PRAGMA busy_timeout = 5000');
    const prepared = opts.prepare?.(reader) as X;
    const statement = reader.prepare(sql);
    if (opts.bigInts) statement.setReadBigInts(true);
    const rows = statement.iterate(...params) as Iterator<R>;
    return {
      rows,
      prepared,
      close() {
        if (reader.isOpen) reader.close(); // ends the statement and its read snapshot
      },
    };
  } catch (err) {
    reader.close();
    throw err;
  }
}
