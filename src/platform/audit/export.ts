// Streamed exports in constant memory: rows are read from a cursor only when the consumer wants more
// (Readable.read() is called again once the socket drained), so memory stays constant whatever
// the size. Each record's text is written straight into a 64 KiB Buffer that is pushed when full:
// no text in flight stays on the JavaScript heap (strings waiting in stream buffers survive
// young-generation collections and make V8 grow its heap). The cursor (its own read-only
// connection, openSnapshotCursor) is closed at the end, on an error, and when the client goes away
// (destroy()). The audit, usage (commercial/usage.ts) and invoice (commercial/invoice-routes.ts) exports use both.
import { DatabaseSync } from 'node:sqlite';
import { Readable } from 'node:stream';
import type { Param } from '../../db/db.ts';
import type { ServerResponse } from 'node:http';
import { CSV_HEADER, csvCell, csvLine, presentAudit } from './present.ts';
import type { AuditRow } from './store.ts';

export type ExportFormat = 'json' | 'csv';

const CHUNK_BYTES = 64 * 1024;

export interface RowCursor<R> { rows: Iterator<R>; close(): void }

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

/** How records become text: what opens the document, one record, and what closes it. */
export interface RecordText<R> { head: string; record(r: R, first: boolean): string; tail(empty: boolean): string }

/** UTF-8 CSV: the header line, then one line a record. */
export const csvText = <R>(header: string, line: (r: R) => string): RecordText<R> => ({ head: header, record: line, tail: () => '' });

/** One CSV line of cells (csvCell each, comma separated, CRLF). */
export function csvRow(cells: ReadonlyArray<string | number | null>): string {
  let line = '';
  for (let i = 0; i < cells.length; i++) line += (i ? ',' : '') + csvCell(cells[i]);
  return line + '\r\n';
}

/** A JSON array, one presented record a line. */
export const jsonArrayText = <R>(present: (r: R) => unknown): RecordText<R> => ({
  head: '[', record: (r, first) => (first ? '\n' : ',\n') + JSON.stringify(present(r)), tail: (empty) => (empty ? ']\n' : '\n]\n'),
});

export function recordStream<R>(cursor: RowCursor<R>, t: RecordText<R>): Readable {
  let pending: string | null = t.head;
  let records = 0;
  let last = false;
  const finish = () => {
    cursor.close();
    return t.tail(records === 0);
  };
  return new Readable({
    highWaterMark: CHUNK_BYTES,
    read() {
      const buf = Buffer.allocUnsafeSlow(CHUNK_BYTES);
      let used = 0;
      try {
        for (;;) {
          if (pending === null) {
            const next = cursor.rows.next();
            if (next.done) {
              pending = finish();
              last = true;
            } else {
              pending = t.record(next.value, records === 0);
              records++;
            }
          }
          const size = Buffer.byteLength(pending, 'utf8');
          if (size > CHUNK_BYTES - used) {
            if (used > 0) break; // full: the pending text opens the next chunk
            this.push(Buffer.from(pending, 'utf8')); // one record larger than a chunk, on its own
            pending = null;
            if (last) this.push(null);
            return;
          }
          used += buf.write(pending, used, 'utf8');
          pending = null;
          if (last) {
            if (used > 0) this.push(buf.subarray(0, used));
            this.push(null);
            return;
          }
        }
      } catch (err) {
        cursor.close();
        this.destroy(err as Error);
        return;
      }
      this.push(buf.subarray(0, used));
    },
    destroy(err, callback) {
      cursor.close();
      callback(err);
    },
  });
}

export const exportStream = (cursor: RowCursor<AuditRow>, format: ExportFormat): Readable =>
  recordStream(cursor, format === 'csv' ? csvText(CSV_HEADER, csvLine) : jsonArrayText(presentAudit));

/** An export file name's timestamp: the instant to the second, UTC, with "-" for ":" ("2024-05-01T12-30-00Z"). */
export const exportStamp = (now: Date): string => now.toISOString().replace(/\.\d+Z$/, 'Z').replace(/:/g, '-');

const CONTENT_TYPE = { csv: 'text/csv; charset=utf-8', json: 'application/json; charset=utf-8' } as const;

/** A 200 answer streaming `stream` as the attachment `filename`; the stream is destroyed when the client goes away. */
export function attachment(res: ServerResponse, format: ExportFormat, filename: string, stream: Readable) {
  res.once('close', () => stream.destroy());
  return {
    status: 200,
    headers: { 'content-type': CONTENT_TYPE[format], 'content-disposition': `attachment; filename="${filename}"` },
    raw: stream,
  };
}
