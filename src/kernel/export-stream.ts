// Streamed exports in constant memory: rows are read from a cursor only when the consumer wants more
// (Readable.read() is called again once the socket drained), so memory stays constant whatever
// the size. Each record's text is written straight into a 64 KiB Buffer that is pushed when full:
// no text in flight stays on the JavaScript heap (strings waiting in stream buffers survive
// young-generation collections and make V8 grow its heap). The cursor (in the service, its own
// read-only connection: openSnapshotCursor, src/db/cursor.ts) is closed at the end, on an error,
// and when the client goes away (destroy()). The audit, usage and invoice exports use both; the
// CSV cells and lines serve the delivery package's manifest too.
import { Readable } from 'node:stream';
import type { ServerResponse } from 'node:http';

export type ExportFormat = 'json' | 'csv';

const CHUNK_BYTES = 64 * 1024;

/** Records read one at a time, and what releases them (called once the stream ends or is destroyed). */
export interface RecordSource<R> {
  /** Synchronous (SQLite's cursor) or asynchronous (PostgreSQL's, fetched in batches). */
  rows: Iterator<R> | AsyncIterator<R>;
  close(): void;
}

/** How records become text: what opens the document, one record, and what closes it. */
export interface RecordText<R> { head: string; record(r: R, first: boolean): string; tail(empty: boolean): string }

/** Characters that make a spreadsheet read a cell as a formula (OWASP: = + - @, and tab and CR). */
const FORMULA_START = /^[=+\-@\t\r]/;
const NEEDS_QUOTES = /[",\r\n]/;

/**
 * One CSV cell: a cell starting with = + - @ (or tab, CR) gets a leading apostrophe so that
 * spreadsheets show it as text; then RFC 4180 quoting (double quotes around a cell holding a comma,
 * quote, CR or LF; inner quotes doubled). null is the empty cell.
 */
export function csvCell(value: string | number | null): string {
  if (value === null) return '';
  // JSON.stringify, not String(): V8 keeps String(number) results in its number-to-string cache,
  // which makes every seq of a long export survive young-generation collections.
  if (typeof value === 'number') return JSON.stringify(value);
  const s = FORMULA_START.test(value) ? `'${value}` : value;
  return NEEDS_QUOTES.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** One CSV line of cells (csvCell each, comma separated, CRLF). */
export function csvRow(cells: ReadonlyArray<string | number | null>): string {
  let line = '';
  for (let i = 0; i < cells.length; i++) line += (i ? ',' : '') + csvCell(cells[i]);
  return line + '\r\n';
}

/** UTF-8 CSV: the header line, then one line a record. */
export const csvText = <R>(header: string, line: (r: R) => string): RecordText<R> => ({ head: header, record: line, tail: () => '' });

/** A JSON array, one presented record a line. */
export const jsonArrayText = <R>(present: (r: R) => unknown): RecordText<R> => ({
  head: '[', record: (r, first) => (first ? '\n' : ',\n') + JSON.stringify(present(r)), tail: (empty) => (empty ? ']\n' : '\n]\n'),
});

/** The text of every record of `cursor` as a byte stream read at the consumer's pace; the cursor is closed at the end, on an error and on destroy(). */
export function recordStream<R>(cursor: RecordSource<R>, t: RecordText<R>): Readable {
  let pending: string | null = t.head;
  let records = 0;
  let last = false;
  const finish = () => {
    cursor.close();
    return t.tail(records === 0);
  };
  let buf: Buffer | null = null;
  let used = 0;
  /**
   * Fills the chunk with records until it is full or the records end; a record that must first be
   * read from an asynchronous cursor ends the synchronous part with its promise (the caller resumes).
   * Returns true when the stream is done.
   */
  const fill = (stream: Readable): boolean | Promise<void> => {
    for (;;) {
      if (pending === null) {
        const next = cursor.rows.next();
        if (next instanceof Promise) {
          return next.then((r) => { take(r); });
        }
        take(next);
      }
      buf ??= Buffer.allocUnsafeSlow(CHUNK_BYTES);
      const size = Buffer.byteLength(pending!, 'utf8');
      if (size > CHUNK_BYTES - used) {
        if (used > 0) break; // full: the pending text opens the next chunk
        stream.push(Buffer.from(pending!, 'utf8')); // one record larger than a chunk, on its own
        pending = null;
        if (last) stream.push(null);
        return true;
      }
      used += buf.write(pending!, used, 'utf8');
      pending = null;
      if (last) {
        if (used > 0) stream.push(buf.subarray(0, used));
        stream.push(null);
        return true;
      }
    }
    stream.push(buf.subarray(0, used));
    buf = null;
    used = 0;
    return true;
  };
  const take = (next: IteratorResult<R>) => {
    if (next.done) {
      pending = finish();
      last = true;
    } else {
      pending = t.record(next.value, records === 0);
      records++;
    }
  };
  const fail = (stream: Readable, err: unknown) => {
    cursor.close();
    stream.destroy(err as Error);
  };
  const run = (stream: Readable): void => {
    try {
      const r = fill(stream);
      if (r instanceof Promise) r.then(() => { run(stream); }, (err: unknown) => { fail(stream, err); });
    } catch (err) {
      fail(stream, err);
    }
  };
  return new Readable({
    highWaterMark: CHUNK_BYTES,
    read() {
      run(this);
    },
    destroy(err, callback) {
      cursor.close();
      callback(err);
    },
  });
}

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
