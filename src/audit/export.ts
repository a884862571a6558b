// The export as a stream: rows are read from a cursor only when the consumer wants more
// (Readable.read() is called again once the socket drained), so memory stays constant whatever
// the size. Each record's text is written straight into a 64 KiB Buffer that is pushed when full:
// no text in flight stays on the JavaScript heap (strings waiting in stream buffers survive
// young-generation collections and make V8 grow its heap). The cursor (its own read-only
// connection) is closed at the end, on an error, and when the client goes away (destroy()).
import { Readable } from 'node:stream';
import { CSV_HEADER, csvLine, presentAudit } from './present.ts';
import type { AuditRow } from './store.ts';

export type ExportFormat = 'json' | 'csv';

const CHUNK_BYTES = 64 * 1024;

export function exportStream(cursor: { rows: Iterator<AuditRow>; close(): void }, format: ExportFormat): Readable {
  let pending: string | null = format === 'csv' ? CSV_HEADER : '[';
  let records = 0;
  let last = false;
  const text = (r: AuditRow) => (format === 'csv' ? csvLine(r) : (records === 0 ? '\n' : ',\n') + JSON.stringify(presentAudit(r)));
  const finish = () => {
    cursor.close();
    return format === 'json' ? (records === 0 ? ']\n' : '\n]\n') : '';
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
              pending = text(next.value);
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
