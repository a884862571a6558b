// The snapshot cursor (Db.snapshotCursor, src/db/cursor.ts and postgres.ts) on both engines: one
// consistent snapshot on a connection of its own, read at the caller's pace while the shared
// connection keeps writing; bigint columns; a second read per row from the same snapshot; close().
// And Db.readSnapshot: several reads, of several tables, from one snapshot. A long read leaves nothing
// behind in V8's old space (node:sqlite's own row objects made a 1,000,000-row export grow by 80 MB).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import v8 from 'node:v8';
import type { Db } from '../../src/db/db.ts';
import type { RowCursor } from '../../src/db/cursor.ts';
import { ENGINES } from '../helpers/postgres.ts';

async function database(t: TestContext, engine: string): Promise<Db> {
  const db = await ENGINES[engine](t);
  await db.exec(`CREATE TABLE t (n ${engine === 'postgres' ? 'BIGINT' : 'INTEGER'}, s TEXT)`);
  await db.tx(async () => { for (let i = 1; i <= 1200; i++) await db.run('INSERT INTO t VALUES (?, ?)', i, `row ${i}`); });
  return db;
}

async function next<R>(c: RowCursor<R>): Promise<IteratorResult<R>> {
  return await c.rows.next();
}

async function drain<R>(c: RowCursor<R>): Promise<R[]> {
  const out: R[] = [];
  for (let r = await next(c); !r.done; r = await next(c)) out.push(r.value);
  return out;
}

for (const engine of Object.keys(ENGINES)) {
  test(`${engine}: a cursor reads one snapshot: writes made meanwhile are not seen, and do not wait`, async (t) => {
    const db = await database(t, engine);
    const cursor = db.snapshotCursor<{ n: number; s: string }>({ sql: 'SELECT n, s FROM t WHERE n > ? ORDER BY n', params: [10] });
    assert.deepEqual({ ...(await next(cursor)).value }, { n: 11, s: 'row 11' });
    await db.run('INSERT INTO t VALUES (?, ?)', 5000, 'late');
    await db.run('DELETE FROM t WHERE n = 12');
    const rest = (await drain(cursor)).map((r) => r.n);
    assert.deepEqual(rest, Array.from({ length: 1189 }, (_, i) => i + 12), 'past several fetch batches, the deleted row still there and the late one absent');
    cursor.close();
    cursor.close(); // twice is harmless
    assert.equal((await db.get<{ c: number }>('SELECT count(*) AS c FROM t'))!.c, 1200);
  });

  test(`${engine}: bigInts reads integers as bigint; each() reads from the same snapshot; a bad query fails`, async (t) => {
    const db = await database(t, engine);
    await db.run('INSERT INTO t VALUES (?, ?)', 2n ** 60n, 'big');
    const cursor = db.snapshotCursor<{ n: bigint; s: string; same: Array<{ c: bigint }> }>({
      sql: "SELECT n, s FROM t WHERE s IN ('big', 'row 1') ORDER BY s", params: [], bigInts: true,
      each: { name: 'same', sql: 'SELECT count(*) AS c FROM t WHERE s = ?', params: (row) => [row.s as string] },
    });
    const first = (await next(cursor)).value;
    assert.equal(first.n, 2n ** 60n);
    assert.deepEqual(first.same.map((r: { c: bigint }) => r.c), [1n]);
    await db.run("INSERT INTO t VALUES (0, 'row 1')"); // after the snapshot: the second row's side read does not see it
    const second = (await next(cursor)).value;
    assert.deepEqual([second.s, second.same.map((r: { c: bigint }) => r.c)], ['row 1', [1n]]);
    assert.equal((await next(cursor)).done, true);
    cursor.close();
    await assert.rejects(async () => {
      const bad = db.snapshotCursor({ sql: 'SELECT nope FROM t', params: [] });
      try {
        await next(bad);
      } finally {
        bad.close();
      }
    }, /nope|no such column/);
  });
}

for (const engine of Object.keys(ENGINES)) {
  test(`${engine}: readSnapshot reads every table as it was when its first read began, integers as bigint`, async (t) => {
    const db = await database(t, engine);
    await db.exec('CREATE TABLE u (n BIGINT)');
    await db.run('INSERT INTO u VALUES (?)', 2n ** 62n);
    const seen = await db.readSnapshot(async (read) => {
      const first: Array<{ n: bigint }> = [];
      for await (const r of read.rows<{ n: bigint }>('SELECT n FROM t WHERE n <= ? ORDER BY n', 600)) {
        first.push({ ...r });
        if (first.length === 1) {
          // Written after the snapshot began, by the shared connection: neither table shows it.
          await db.run('DELETE FROM t WHERE n = 2');
          await db.run('INSERT INTO u VALUES (1)');
        }
      }
      const u: Array<{ n: bigint }> = [];
      for await (const r of read.rows<{ n: bigint }>('SELECT n FROM u')) u.push({ ...r });
      return { first: first.length, second: first[1], u };
    });
    assert.deepEqual(seen, { first: 600, second: { n: 2n }, u: [{ n: 2n ** 62n }] });
    assert.equal((await db.get<{ c: number }>('SELECT count(*) AS c FROM u'))!.c, 2);
    await assert.rejects(db.readSnapshot(async (read) => { for await (const r of read.rows('SELECT nope FROM u')) void r; }), /nope|no such column/);
  });
}

for (const engine of Object.keys(ENGINES)) {
  test(`${engine}: the rows read leave nothing in the old generation, so a long export stays in constant memory`, async (t) => {
    // node:sqlite's own row objects each leave about 70 bytes in V8's old space, which then grows by tens
    // of MB before a full collection; the rows a cursor builds from arrays die young. Measured as what
    // the old space gains over each 250 rows read; the median leaves out one-off gains (code compiled
    // and optimized) and what a young collection promotes now and then.
    const db = await ENGINES[engine](t);
    await db.exec('CREATE TABLE wide (a INTEGER, b TEXT, c TEXT, d REAL, e TEXT)');
    await db.exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40000)
      INSERT INTO wide SELECT i, 'row ' || i, 'use_' || (i * 7919 % 100003), i / 7.0, NULL FROM n`);
    const oldSpace = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'old_space')!.space_used_size;
    const cursor = db.snapshotCursor<{ a: number; b: string }>({ sql: 'SELECT * FROM wide ORDER BY a', params: [] });
    const gains: number[] = [];
    let [rows, sum, last] = [0, 0, oldSpace()];
    for (let r = await next(cursor); !r.done; r = await next(cursor)) {
      sum += r.value.a;
      if (++rows % 250 === 0) {
        const now = oldSpace();
        gains.push(Math.max(0, now - last));
        last = now;
      }
    }
    cursor.close();
    assert.equal(rows, 40_000);
    assert.equal(sum, (40_000 * 40_001) / 2);
    const median = gains.toSorted((a, b) => a - b)[gains.length >> 1];
    assert.ok(median / 250 < 16, `the old space gained ${Math.round(median / 250)} bytes a row read (median of ${gains.length} windows)`);
  });
}

test('postgres: a cursor closed before it is read gives its connection back', async (t) => {
  const db = await database(t, 'postgres');
  for (let i = 0; i < 30; i++) db.snapshotCursor({ sql: 'SELECT n FROM t', params: [] }).close(); // more than the pool holds
  const c = db.snapshotCursor<{ n: number }>({ sql: 'SELECT n FROM t WHERE n <= 3 ORDER BY n', params: [] });
  assert.deepEqual((await drain(c)).map((r) => r.n), [1, 2, 3]);
  c.close();
});
