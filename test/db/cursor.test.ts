// The snapshot cursor (src/db/cursor.ts): one consistent snapshot on a private read-only connection,
// read at the caller's pace while the shared connection keeps writing; bigint columns; close().
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { openSnapshotCursor } from '../../src/db/cursor.ts';

function database(t: { after(fn: () => void): void }) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-cursor-'));
  const file = path.join(dir, 'svc.db');
  const db = new DatabaseSync(file);
  db.exec('PRAGMA journal_mode = WAL; CREATE TABLE t (n INTEGER, s TEXT)');
  const insert = db.prepare('INSERT INTO t VALUES (?, ?)');
  for (let i = 1; i <= 50; i++) insert.run(i, `row ${i}`);
  t.after(() => { db.close(); fs.rmSync(dir, { recursive: true, force: true }); });
  return { db, file };
}

test('a cursor reads one snapshot: writes made meanwhile on the shared connection are not seen, and do not wait', (t) => {
  const { db, file } = database(t);
  const cursor = openSnapshotCursor<{ n: number; s: string }>(file, 'SELECT n, s FROM t WHERE n > ? ORDER BY n', [10]);
  const first = cursor.rows.next();
  assert.deepEqual({ ...first.value }, { n: 11, s: 'row 11' });
  db.prepare('INSERT INTO t VALUES (?, ?)').run(51, 'late');
  db.prepare('DELETE FROM t WHERE n = 12').run();
  const rest: number[] = [];
  for (let r = cursor.rows.next(); !r.done; r = cursor.rows.next()) rest.push(r.value.n);
  assert.deepEqual(rest, Array.from({ length: 39 }, (_, i) => i + 12));
  cursor.close();
  cursor.close(); // twice is harmless
  assert.equal((db.prepare('SELECT count(*) AS c FROM t').get() as { c: number }).c, 50);
});

test('bigInts reads INTEGER columns as bigint; prepare() runs on the same snapshot; a bad query closes the reader', (t) => {
  const { db, file } = database(t);
  db.prepare('INSERT INTO t VALUES (?, ?)').run(2n ** 60n, 'big');
  const cursor = openSnapshotCursor<{ n: bigint }, () => number>(file, 'SELECT n FROM t WHERE s = ?', ['big'], {
    bigInts: true,
    prepare: (reader) => { const st = reader.prepare('SELECT count(*) AS c FROM t'); return () => (st.get() as { c: number }).c; },
  });
  assert.equal(cursor.rows.next().value.n, 2n ** 60n); // the snapshot starts with the first row
  db.prepare('INSERT INTO t VALUES (?, ?)').run(0, 'after');
  assert.equal(cursor.prepared(), 51, 'the second statement sees the same snapshot');
  cursor.close();
  assert.throws(() => openSnapshotCursor(file, 'SELECT nope FROM t', []), /no such column/);
});
