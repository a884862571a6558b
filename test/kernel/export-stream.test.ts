// The export streams (src/kernel/export-stream.ts) on in-memory record sources: CSV cells and
// lines, JSON array text, 64 KiB chunks read at the consumer's pace, the source closed exactly once
// whichever way the stream ends, export stamps and attachment answers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import {
  attachment, csvCell, csvRow, csvText, exportStamp, jsonArrayText, recordStream, type RecordSource,
} from '../../src/kernel/export-stream.ts';

function source<R>(rows: R[], fail?: number): RecordSource<R> & { closed: number; read: number } {
  const s = {
    closed: 0,
    read: 0,
    rows: {
      next(): IteratorResult<R> {
        if (s.read === fail) throw new Error('the disk is gone');
        return s.read < rows.length ? { done: false, value: rows[s.read++] } : { done: true, value: undefined };
      },
    },
    close() { s.closed++; },
  };
  return s;
}

const collect = async (stream: Readable) => {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return chunks;
};

test('CSV cells: RFC 4180 quoting, a leading apostrophe against formulas, null empty', () => {
  assert.deepEqual(['x', 'a,b', 'a"b', '=x', '+x', '-x', '@x', '\tx', '', null].map(csvCell),
    ['x', '"a,b"', '"a""b"', "'=x", "'+x", "'-x", "'@x", "'\tx", '', '']);
  assert.equal(csvCell('\rx'), `"'\rx"`);
  assert.equal(csvCell('line\nbreak'), '"line\nbreak"');
  assert.equal(csvCell(-12.5), '-12.5', 'a number is not guarded');
  assert.equal(csvCell(0), '0');
  assert.equal(csvRow(['a', 1, null, '=b', 'c,d']), `a,1,,'=b,"c,d"\r\n`);
  assert.equal(csvRow([]), '\r\n');
});

test('CSV and JSON array text of a record stream; the source closed once at the end', async () => {
  const rows = [{ n: 1, s: 'a' }, { n: 2, s: 'b,c' }];
  const csv = source(rows);
  const text = Buffer.concat(await collect(recordStream(csv, csvText('n,s\r\n', (r: { n: number; s: string }) => csvRow([r.n, r.s]))))).toString();
  assert.equal(text, 'n,s\r\n1,a\r\n2,"b,c"\r\n');
  assert.equal(csv.closed >= 1, true);
  const json = source(rows);
  const body = Buffer.concat(await collect(recordStream(json, jsonArrayText((r: { n: number }) => ({ n: r.n }))))).toString();
  assert.equal(body, '[\n{"n":1},\n{"n":2}\n]\n');
  assert.deepEqual(JSON.parse(body), [{ n: 1 }, { n: 2 }]);
  const none = Buffer.concat(await collect(recordStream(source([]), jsonArrayText((r: unknown) => r)))).toString();
  assert.equal(none, '[]\n');
  assert.deepEqual(JSON.parse(none), []);
});

test('records are packed into 64 KiB chunks; a record larger than a chunk goes on its own; multi-byte text stays whole', async () => {
  const line = 'é'.repeat(499) + '\n'; // 999 bytes
  const rows = Array.from({ length: 200 }, () => line);
  const chunks = await collect(recordStream(source(rows), csvText('', (r: string) => r)));
  assert.ok(chunks.length >= 3);
  for (const c of chunks.slice(0, -1)) assert.ok(c.length <= 64 * 1024 && c.length > 64 * 1024 - 999, String(c.length));
  assert.equal(Buffer.concat(chunks).toString('utf8'), line.repeat(200));
  const big = 'x'.repeat(100 * 1024);
  const parts = await collect(recordStream(source(['a', big, 'b']), csvText('', (r: string) => r)));
  assert.deepEqual(parts.map((p) => p.length), [1, 100 * 1024, 1]);
});

test('reading is paced by the consumer, and the source is closed on destroy and on an error', async () => {
  const rows = Array.from({ length: 100_000 }, (_, i) => i);
  const paced = source(rows);
  const stream = recordStream(paced, csvText('', (n: number) => `${n}\r\n`));
  await new Promise((resolve) => stream.once('readable', resolve));
  assert.ok(paced.read < rows.length, 'not everything was read ahead');
  stream.destroy();
  await new Promise((resolve) => stream.once('close', resolve));
  assert.ok(paced.closed >= 1);

  const failing = source(rows, 10);
  await assert.rejects(collect(recordStream(failing, csvText('', (n: number) => `${n}\r\n`))), /the disk is gone/);
  assert.ok(failing.closed >= 1);
});

test('export stamps and attachment answers', () => {
  assert.equal(exportStamp(new Date('2024-05-01T12:30:00.123Z')), '2024-05-01T12-30-00Z');
  const res = new EventEmitter() as unknown as ServerResponse;
  const stream = Readable.from(['x']);
  const answer = attachment(res, 'csv', 'audit-1.csv', stream);
  assert.deepEqual(answer.headers, { 'content-type': 'text/csv; charset=utf-8', 'content-disposition': 'attachment; filename="audit-1.csv"' });
  assert.equal(answer.status, 200);
  assert.equal(answer.raw, stream);
  assert.equal(attachment(new EventEmitter() as unknown as ServerResponse, 'json', 'a.json', Readable.from([])).headers['content-type'], 'application/json; charset=utf-8');
  (res as unknown as EventEmitter).emit('close');
  assert.equal(stream.destroyed, true, 'the stream is destroyed when the client goes away');
});
