// The data layer's contract on both engines: the same asynchronous API over SQLite (db.ts) and a real
// PostgreSQL server (postgres.ts, tools/pg/pg.sh): transactions bound to the async context, savepoints,
// after-commit hooks, isolation from statements outside the transaction, and the values read back.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { openDb } from '../../src/db/db.ts';
import { openPostgres } from '../../src/db/postgres.ts';
import { numberPlaceholders } from '../../src/db/pg-sql.ts';
import type { Dialect } from '../../src/db/dialect.ts';
import { newId } from '../../src/kernel/ids.ts';
import { TextWithNul, isUniqueViolation } from '../../src/db/errors.ts';
import { tempDir } from '../helpers/server.ts';
import { ENGINES, freshPostgres } from '../helpers/postgres.ts';

interface Engine {
  get<T>(sql: string, ...p: Array<string | number | bigint | null | Uint8Array>): Promise<T | undefined>;
  all<T>(sql: string, ...p: Array<string | number | bigint | null | Uint8Array>): Promise<T[]>;
  run(sql: string, ...p: Array<string | number | bigint | null | Uint8Array>): Promise<{ changes: number }>;
  exec(sql: string): Promise<void>;
  tx<T>(fn: () => Promise<T>): Promise<T>;
  afterCommit(fn: () => void | Promise<void>): Promise<void>;
  readonly inTransaction: boolean;
  onHookError: (err: unknown) => void;
  lock(key: string): Promise<void>;
  readonly dialect: Dialect;
}


async function withItems(t: TestContext, engine: string): Promise<{ db: Engine; insert: (id: string) => Promise<unknown>; ids: () => Promise<string[]> }> {
  const db = await ENGINES[engine](t);
  await db.exec('CREATE TABLE items (id TEXT PRIMARY KEY, n INTEGER)');
  return {
    db,
    insert: async (id: string) => await db.run('INSERT INTO items (id) VALUES (?)', id),
    ids: async () => (await db.all<{ id: string }>('SELECT id FROM items ORDER BY id')).map((r) => r.id),
  };
}

for (const engine of Object.keys(ENGINES)) {
  test(`${engine}: tx nests as savepoints: an inner failure undoes only the inner work`, async (t) => {
    const { db, insert, ids } = await withItems(t, engine);
    await db.tx(async () => {
      await insert('a');
      await assert.rejects(async () => await db.tx(async () => { await insert('b'); throw new Error('inner'); }), /inner/);
      await db.tx(async () => await insert('c'));
      assert.equal(db.inTransaction, true);
    });
    assert.deepEqual(await ids(), ['a', 'c']);
    await assert.rejects(async () => await db.tx(async () => { await insert('d'); await db.tx(async () => await insert('e')); throw new Error('outer'); }), /outer/);
    assert.deepEqual(await ids(), ['a', 'c']);
    assert.equal(db.inTransaction, false);
  });

  test(`${engine}: a statement that fails inside a savepoint leaves the transaction usable`, async (t) => {
    const { db, insert, ids } = await withItems(t, engine);
    await db.tx(async () => {
      await insert('a');
      await assert.rejects(async () => await db.tx(async () => await insert('a')), /UNIQUE|duplicate key/);
      await insert('b');
    });
    assert.deepEqual(await ids(), ['a', 'b']);
  });

  test(`${engine}: a savepoint is sent with its first statement; nested ones that begin together share it and each failure undoes only its own work`, async (t) => {
    const { db, insert, ids } = await withItems(t, engine);
    // The savepoint steps the engine sends (the engine's own method, recorded and called on).
    const steps: string[] = [];
    const raw = db as unknown as { savepointStep: (conn: unknown, step: string, name: string) => unknown };
    const send = raw.savepointStep.bind(db);
    raw.savepointStep = (conn, step, name) => { steps.push(`${step} ${name}`); return send(conn, step, name); };
    const fails = (fn: () => Promise<unknown>) => assert.rejects(async () => await db.tx(fn), /inner|UNIQUE|duplicate key/);
    await db.tx(async () => {
      await db.tx(async () => {}); // no statement: nothing sent
      await db.tx(async () => await db.tx(async () => {}));
      assert.deepEqual(steps, []);
      // A inside nothing-yet, B inside A: one SAVEPOINT, B's failure rolls back to it and A goes on.
      await db.tx(async () => {
        await fails(async () => { await insert('b1'); throw new Error('inner'); });
        await insert('a1');
      });
      assert.deepEqual(steps, ['SAVEPOINT sp1', 'ROLLBACK TO sp1', 'RELEASE sp1']);
      // A failing statement in a shared savepoint leaves the transaction usable (PostgreSQL: rolled back to it).
      await db.tx(async () => {
        await fails(async () => await db.tx(async () => await insert('a1')));
        await insert('a2');
      });
      // B succeeds, then A fails: B's rows go with A's.
      await fails(async () => { await db.tx(async () => await insert('b3')); await insert('a3'); throw new Error('inner'); });
      // Three deep: C fails inside B, B goes on then fails inside A, A goes on.
      await db.tx(async () => {
        await fails(async () => {
          await fails(async () => { await insert('c4'); throw new Error('inner'); });
          await insert('b4');
          throw new Error('inner');
        });
        await insert('a4');
        // A has run statements: its next savepoint is one of its own.
        steps.length = 0;
        await fails(async () => { await insert('b5'); throw new Error('inner'); });
        assert.deepEqual(steps, ['SAVEPOINT sp2', 'ROLLBACK TO sp2', 'RELEASE sp2']);
        await insert('a5');
      });
    });
    assert.deepEqual(await ids(), ['a1', 'a2', 'a4', 'a5']);
  });

  test(`${engine}: a text parameter holding U+0000: kept on SQLite; on PostgreSQL the statement is refused unsent (TextWithNul, 422) and the transaction goes on`, async (t) => {
    const { db, insert, ids } = await withItems(t, engine);
    if (engine === 'sqlite') {
      await insert('a\u0000b');
      assert.deepEqual(await ids(), ['a\u0000b']);
      return;
    }
    await db.tx(async () => {
      await insert('a');
      for (const attempt of [() => insert('b\u0000'), () => db.get('SELECT 1 AS x FROM items WHERE id = ?', '\u0000'), () => db.all('SELECT ? AS x', 'x\u0000')]) {
        await assert.rejects(attempt, (err: unknown) => err instanceof TextWithNul && err.status === 422 && err.code === 'validation_failed'
          && (err.details?.fields as Record<string, string>).request === 'must not contain the NUL character (U+0000)');
      }
      await insert('c');
    });
    assert.deepEqual(await ids(), ['a', 'c']);
  });

  test(`${engine}: after-commit hooks run once after the outermost commit and never after a rollback`, async (t) => {
    const { db } = await withItems(t, engine);
    const seen: string[] = [];
    await db.tx(async () => {
      await db.afterCommit(() => { seen.push('outer'); });
      await db.tx(async () => await db.afterCommit(() => { seen.push('inner'); }));
      await assert.rejects(async () => await db.tx(async () => { await db.afterCommit(() => { seen.push('rolled back'); }); throw new Error('x'); }));
      assert.deepEqual(seen, [], 'nothing before commit');
    });
    assert.deepEqual(seen, ['outer', 'inner']);
    await assert.rejects(async () => await db.tx(async () => { await db.afterCommit(() => { seen.push('never'); }); throw new Error('y'); }));
    await db.afterCommit(() => { seen.push('now'); });
    assert.deepEqual(seen, ['outer', 'inner', 'now']);
    const errors: unknown[] = [];
    db.onHookError = (e) => errors.push(e);
    await db.tx(async () => await db.afterCommit(() => { throw new Error('hook failed'); }));
    assert.equal(errors.length, 1, 'a failing hook is reported, the commit stands');
  });

  test(`${engine}: a stranger's read never sees a transaction's uncommitted rows and its write never joins it`, async (t) => {
    const { db, insert, ids } = await withItems(t, engine);
    let release!: () => void;
    const paused = new Promise<void>((resolve) => { release = resolve; });
    let inside!: () => void;
    const opened = new Promise<void>((resolve) => { inside = resolve; });
    const failing = db.tx(async () => {
      await insert('uncommitted');
      inside();
      await paused;
      assert.ok((await ids()).includes('uncommitted'), 'its own statements see its rows, however deep the awaits');
      throw new Error('rolled back');
    });
    await opened;
    const read = ids();
    const write = insert('stranger');
    try {
      assert.equal(db.inTransaction, false, 'outside the transaction\'s async context');
      if (engine === 'postgres') {
        // Another connection: the stranger does not wait for the transaction.
        assert.ok(!(await read).includes('uncommitted'), 'the read did not see the uncommitted row');
        await write;
      }
    } finally {
      release();
    }
    await assert.rejects(failing, /rolled back/);
    assert.ok(!(await read).includes('uncommitted'), 'the read never saw the uncommitted row');
    await write;
    assert.deepEqual(await ids(), ['stranger'], 'the stranger\'s write did not join the transaction (not rolled back with it)');
  });

  test(`${engine}: values read back as numbers, text and bytes; placeholders inside quotes stay text`, async (t) => {
    const { db } = await withItems(t, engine);
    await db.exec(`CREATE TABLE v (i INTEGER, big ${engine === 'postgres' ? 'BIGINT' : 'INTEGER'}, r REAL, s TEXT, b ${engine === 'postgres' ? 'BYTEA' : 'BLOB'})`);
    await db.run('INSERT INTO v (i, big, r, s, b) VALUES (?, ?, ?, ?, ?)', 7, 2 ** 40, 1.5, 'it\'s ? here', new Uint8Array([1, 2, 3]));
    const row = (await db.get<{ i: number; big: number; r: number; s: string; b: Uint8Array; n: number; q: string }>(
      "SELECT i, big, r, s, b, (SELECT count(*) FROM v) AS n, '?' AS q FROM v WHERE s = ?", 'it\'s ? here'))!;
    assert.deepEqual({ ...row, b: [...row.b] }, { i: 7, big: 2 ** 40, r: 1.5, s: 'it\'s ? here', b: [1, 2, 3], n: 1, q: '?' });
    assert.equal(await db.get('SELECT i FROM v WHERE s = ?', 'none'), undefined);
  });

  test(`${engine}: statementCount counts every statement run`, async (t) => {
    const { db, insert } = await withItems(t, engine);
    const counted = db as unknown as { statementCount: number };
    const before = counted.statementCount;
    await insert('a');
    await db.get('SELECT id FROM items');
    await db.tx(async () => { await insert('b'); });
    assert.equal(counted.statementCount - before, 3, 'two inserts and a read (BEGIN and COMMIT are not statements of the caller)');
  });

  test(`${engine}: lock(key) serializes a read-then-write between concurrent transactions`, async (t) => {
    const { db } = await withItems(t, engine);
    await db.run("INSERT INTO items (id, n) VALUES ('counter', 0)");
    // Each transaction reads the counter, yields, and writes it back plus one: without the lock,
    // transactions on PostgreSQL's pooled connections would read the same value and lose increments.
    const bump = () => db.tx(async () => {
      await db.lock('items:counter');
      const { n } = (await db.get<{ n: number }>("SELECT n FROM items WHERE id = 'counter'"))!;
      await new Promise((r) => setTimeout(r, 5));
      await db.run("UPDATE items SET n = ? WHERE id = 'counter'", n + 1);
    });
    await Promise.all(Array.from({ length: 8 }, bump));
    assert.equal((await db.get<{ n: number }>("SELECT n FROM items WHERE id = 'counter'"))!.n, 8);
    await assert.rejects(async () => await db.lock('items:counter'), /outside a transaction/);
  });

  test(`${engine}: isUniqueViolation knows a primary key, a unique column or a unique partial index refusing a write, and nothing else`, async (t) => {
    const { db } = await withItems(t, engine);
    await db.exec("CREATE TABLE u (id TEXT PRIMARY KEY, k TEXT UNIQUE, s TEXT, open INTEGER NOT NULL CHECK (open IN (0, 1)), item TEXT REFERENCES items(id))");
    await db.exec('CREATE UNIQUE INDEX u_one_open ON u(s) WHERE open = 1');
    await db.run("INSERT INTO u (id, k, s, open) VALUES ('a', 'x', 's', 1)");
    const refusal = async (sql: string): Promise<unknown> => await db.run(sql).then(() => assert.fail(`${sql} was written`), (err: unknown) => err);
    for (const sql of ["INSERT INTO u (id, k, s, open) VALUES ('a', 'y', 't', 0)", "INSERT INTO u (id, k, s, open) VALUES ('b', 'x', 't', 0)",
      "INSERT INTO u (id, k, s, open) VALUES ('b', 'y', 's', 1)"]) {
      assert.equal(isUniqueViolation(await refusal(sql)), true, sql);
    }
    for (const sql of ["INSERT INTO u (id, k, s, open) VALUES ('b', 'y', 's', NULL)", "INSERT INTO u (id, k, s, open) VALUES ('b', 'y', 's', 2)",
      "INSERT INTO u (id, k, s, open, item) VALUES ('b', 'y', 's', 0, 'none')", 'SELECT nothing FROM u']) {
      assert.equal(isUniqueViolation(await refusal(sql)), false, sql);
    }
    await db.run("INSERT INTO u (id, k, s, open) VALUES ('b', 'y', 's', 0)"); // a closed one is not in the partial index
    assert.equal(isUniqueViolation(new Error('UNIQUE constraint failed: u.k')), false, 'a message is not a code');
    assert.equal(isUniqueViolation(undefined), false);
  });

  test(`${engine}: dialect.jsonValues reads the text values of a JSON array parameter`, async (t) => {
    const { db, insert } = await withItems(t, engine);
    for (const id of ['a', 'b', 'c']) await insert(id);
    const rows = await db.all<{ id: string }>(`SELECT id FROM items WHERE id IN (SELECT value FROM ${db.dialect.jsonValues('?')}) ORDER BY id`, JSON.stringify(['c', 'a', 'x']));
    assert.deepEqual(rows.map((r) => r.id), ['a', 'c']);
  });

  test(`${engine}: dialect JSON fragments walk arrays of a column or a parameter and read members as text`, async (t) => {
    const { db } = await withItems(t, engine);
    const d = db.dialect;
    await db.exec('CREATE TABLE docs (id TEXT PRIMARY KEY, body TEXT)');
    for (const [id, body] of [['a', '{"files":[{"path":"x","size":3000000000},{"path":"y"}],"n":7}'], ['b', '{"files":[]}'], ['c', '{"other":true}'], ['d', null]]) {
      await db.run('INSERT INTO docs (id, body) VALUES (?, ?)', id, body);
    }
    const plain = <T>(rows: T[]) => rows.map((r) => ({ ...r }));
    assert.deepEqual(plain(await db.all(
      `SELECT j.id, ${d.jsonText('f.value', 'path')} AS path, CAST(${d.jsonText('f.value', 'size')} AS BIGINT) AS size
         FROM docs j, ${d.jsonEach(d.jsonGet('j.body', 'files'), 'f')} ORDER BY j.id, path`)),
    [{ id: 'a', path: 'x', size: 3000000000 }, { id: 'a', path: 'y', size: null }], 'the elements of a member of each row; none for an empty array, a missing member, NULL');
    assert.deepEqual(plain(await db.all(`SELECT ${d.jsonText('e.value', 0)} AS k, ${d.jsonText('e.value', 1)} AS v FROM ${d.jsonEach('?', 'e')} ORDER BY k`,
      JSON.stringify([['k', 'v'], ['a', null]]))), [{ k: 'a', v: null }, { k: 'k', v: 'v' }], 'arrays of a parameter, by index; JSON null is NULL');
    assert.deepEqual(plain(await db.all(`SELECT id FROM docs WHERE CAST(${d.jsonText('body', 'n')} AS BIGINT) = ?`, 7)), [{ id: 'a' }], 'a number compared once CAST');
    assert.throws(() => d.jsonText('body', "x') OR ('1"), RangeError, 'a key is a plain name, never SQL');
  });

  test(`${engine}: dialect.jsonArrayAgg aggregates in the order given, [] for no rows`, async (t) => {
    const { db, insert } = await withItems(t, engine);
    for (const id of ['a', 'c', 'b']) await insert(id);
    const agg = async (where: string) => JSON.parse((await db.get<{ a: string }>(`SELECT ${db.dialect.jsonArrayAgg('id', 'id DESC')} AS a FROM items WHERE ${where}`))!.a) as string[];
    assert.deepEqual(await agg('1 = 1'), ['c', 'b', 'a']);
    assert.deepEqual(await agg('id = \'x\''), []);
  });

  test(`${engine}: dialect.likeAnyCase ignores the case of ASCII letters only; roundHalfAway rounds halves as SQLite's round()`, async (t) => {
    const { db } = await withItems(t, engine);
    const d = db.dialect;
    const like = async (value: string, pattern: string) => (await db.get<{ m: number }>(`SELECT CASE WHEN ? ${d.likeAnyCase} ? ESCAPE '\\' THEN 1 ELSE 0 END AS m`, value, pattern))!.m;
    assert.deepEqual([await like('INV-0001', '%inv-%'), await like('École', 'école'), await like('École', 'École'), await like('a_b', 'a\\_b'), await like('axb', 'a\\_b')], [1, 0, 1, 1, 0]);
    const round = async (x: number) => Number((await db.get<{ r: number }>(
      `SELECT CAST(${d.roundHalfAway('v.x')} AS BIGINT) AS r FROM (SELECT CAST(? AS DOUBLE PRECISION) AS x) AS v`, x))!.r);
    // 0.49999999999999994 + 0.5 is 1 in doubles: SQLite's round() says 1, and so must PostgreSQL's spelling.
    assert.deepEqual(await Promise.all([2.5, -2.5, 4.5, 0.5, 1.4999999999999998, 0.49999999999999994, 2000000.5].map(round)), [3, -3, 5, 1, 1, 1, 2000001]);
  });

  test(`${engine}: dialect.rowKey orders rows with newId ids by insertion`, async (t) => {
    const { db, insert } = await withItems(t, engine);
    const ids = Array.from({ length: 20 }, () => newId('itm'));
    for (const id of ids) await insert(id);
    const read = await db.all<{ id: string }>(`SELECT id FROM items WHERE ${db.dialect.rowKey} IN (SELECT ${db.dialect.rowKey} FROM items ORDER BY ${db.dialect.rowKey} DESC LIMIT 5) ORDER BY ${db.dialect.rowKey} DESC`);
    assert.deepEqual(read.map((r) => r.id), ids.slice(-5).reverse());
  });

  test(`${engine}: eachBig hands over allBig's rows one at a time; a throw stops it; inside tx() it reads the transaction's rows`, async (t) => {
    const db = await ENGINES[engine](t);
    await db.exec('CREATE TABLE m (k TEXT, cents BIGINT)');
    await db.tx(async () => { for (let i = 1; i <= 700; i++) await db.run('INSERT INTO m VALUES (?, ?)', `k${i}`, i === 1 ? 2n ** 60n : BigInt(i)); });
    const seen: Array<{ k: string; cents: bigint }> = [];
    await db.eachBig<{ k: string; cents: bigint }>('SELECT k, cents FROM m WHERE cents > ? ORDER BY cents', [1], (r) => { seen.push({ ...r }); });
    assert.deepEqual([seen.length, seen[0], seen.at(-1)], [700, { k: 'k2', cents: 2n }, { k: 'k1', cents: 2n ** 60n }]);
    let handed = 0;
    await assert.rejects(db.eachBig('SELECT k FROM m', [], () => { if (++handed === 3) throw new Error('enough'); }), /enough/);
    assert.equal(handed, 3, 'no row after the throw');
    await assert.rejects(db.eachBig('SELECT nope FROM m', [], () => {}), /nope/);
    await db.tx(async () => {
      await db.run("INSERT INTO m VALUES ('late', 1)");
      let late = 0;
      await db.eachBig<{ k: string }>('SELECT k FROM m WHERE cents = ?', [1], (r) => { if (r.k === 'late') late++; });
      assert.equal(late, 1);
    });
    assert.equal((await db.get<{ n: number }>('SELECT count(*) AS n FROM m'))!.n, 701, 'the connection is still good');
  });
}

test('postgres: allBig reads 64-bit integers and integral sums as bigint; all() refuses what a number cannot hold', async (t) => {
  const db = await freshPostgres(t);
  await db.exec('CREATE TABLE m (cents BIGINT)');
  await db.run('INSERT INTO m (cents) VALUES (?), (?)', 9007199254740993n, 10n);
  assert.deepEqual(await db.allBig('SELECT sum(cents) AS total, count(*) AS n FROM m'), [{ total: 9007199254741003n, n: 2n }]);
  await assert.rejects(async () => await db.all('SELECT cents FROM m'), RangeError);
  assert.deepEqual(await db.all('SELECT count(*) AS n, sum(cents) FILTER (WHERE cents < 100) AS small FROM m'), [{ n: 2, small: 10 }]);
});

test('postgres: json and jsonb come back as their text', async (t) => {
  const db = await freshPostgres(t);
  assert.deepEqual(await db.get(`SELECT '{"a": 1}'::json AS j, '{"a": 1}'::jsonb AS jb`), { j: '{"a": 1}', jb: '{"a": 1}' });
});

test('postgres: concurrent transactions each run on their own connection and commit alone', async (t) => {
  const db = await freshPostgres(t, 4);
  await db.exec('CREATE TABLE items (id TEXT PRIMARY KEY)');
  const work = async (id: string) => await db.tx(async () => {
    await db.run('INSERT INTO items (id) VALUES (?)', id);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const own = (await db.all<{ id: string }>('SELECT id FROM items ORDER BY id')).map((r) => r.id);
    assert.ok(own.includes(id), 'each sees its own row');
    if (id === 'b') throw new Error('b fails');
  });
  const results = await Promise.allSettled([work('a'), work('b'), work('c')]);
  assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled']);
  assert.deepEqual((await db.all<{ id: string }>('SELECT id FROM items ORDER BY id')).map((r) => r.id), ['a', 'c']);
});

test('postgres: a server that does not answer is a clear error at open', async () => {
  await assert.rejects(async () => await openPostgres({ url: 'postgres://svc@127.0.0.1:1/postgres' }), /ECONNREFUSED/);
});

test('numberPlaceholders numbers ? outside quotes, identifiers, comments and dollar quotes', () => {
  assert.equal(numberPlaceholders('SELECT ? , \'?\', "a?b", ? -- ?\n, ? /* ? */ FROM t WHERE x = $$?$$ AND y = ?', 4),
    'SELECT $1 , \'?\', "a?b", $2 -- ?\n, $3 /* ? */ FROM t WHERE x = $$?$$ AND y = $4');
  assert.equal(numberPlaceholders("SELECT 'it''s ?', ?", 1), "SELECT 'it''s ?', $1");
  assert.throws(() => numberPlaceholders('SELECT ?', 2), /1 parameter\(s\) and 2 value\(s\)/);
  // SQLite's numbered form: ?N may repeat; a bare ? takes the number after the largest so far.
  assert.equal(numberPlaceholders('SELECT ?2, ?1, ?12 WHERE a = ?1', 12), 'SELECT $2, $1, $12 WHERE a = $1');
  assert.equal(numberPlaceholders('SELECT ?, ?3, ?', 4), 'SELECT $1, $3, $4');
});

test('postgres: notify reaches a listener of another pool at commit, never after a rollback', async (t) => {
  const { freshDatabaseUrl } = await import('../helpers/postgres.ts');
  const dbs: Array<Awaited<ReturnType<typeof openPostgres>>> = [];
  const url = await freshDatabaseUrl(t, async () => { for (const d of dbs) await d.close(); });
  const [a, b] = [await openPostgres({ url }), await openPostgres({ url })];
  dbs.push(a, b);
  const heard: string[] = [];
  let arrived: () => void = () => {};
  const stop = await b.listen('svc_test', (p) => { heard.push(p); arrived(); });
  const next = () => new Promise<void>((resolve) => { arrived = resolve; });
  let got = next();
  await a.tx(async () => {
    await a.notify('svc_test', 'in-tx');
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(heard, [], 'nothing before the commit');
  });
  await got;
  await assert.rejects(async () => await a.tx(async () => { await a.notify('svc_test', 'rolled-back'); throw new Error('undo'); }), /undo/);
  got = next();
  await a.notify('svc_test', 'outside');
  await got;
  assert.deepEqual(heard, ['in-tx', 'outside']);
  await stop();
  await a.notify('svc_test', 'after-stop');
  await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(heard, ['in-tx', 'outside']);
});

test('sqlite: notify keeps to the process and listen never hears', async (t) => {
  const db = openDb(path.join(tempDir(t), 'svc.db'));
  t.after(() => db.close());
  let heard = 0;
  const stop = await db.listen('svc_test', () => { heard++; });
  await db.notify('svc_test', 'x');
  await stop();
  assert.equal(heard, 0);
});

test('postgres: a listener whose connection the server ends listens again', async (t) => {
  const { freshDatabaseUrl } = await import('../helpers/postgres.ts');
  const dbs: Array<Awaited<ReturnType<typeof openPostgres>>> = [];
  const url = await freshDatabaseUrl(t, async () => { for (const d of dbs) await d.close(); });
  const db = await openPostgres({ url });
  dbs.push(db);
  const heard: string[] = [];
  await db.listen('svc_again', (p) => heard.push(p));
  const killed = await db.all<{ ok: boolean }>(
    "SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%'");
  assert.equal(killed.length, 1);
  for (let i = 0; i < 50 && !heard.includes('back'); i++) {
    await db.notify('svc_again', 'back');
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.ok(heard.includes('back'), 'heard again after the connection was replaced');
});

test('postgres: a transaction the server rolls back for a deadlock runs again, and only its last attempt\'s hooks run', async (t) => {
  const db = await freshPostgres(t);
  await db.exec("CREATE TABLE items (id TEXT PRIMARY KEY, n INTEGER); INSERT INTO items VALUES ('a', 0), ('b', 0)");
  let attempts = 0;
  const hooks: string[] = [];
  // Each locks one row, waits until the other holds its row, then wants the other's: a deadlock, which
  // PostgreSQL breaks by rolling one back (40P01); that one runs again and both commit.
  let ready = 0;
  const bothHold = () => new Promise<void>((resolve) => {
    ready++;
    const wait = () => (ready >= 2 ? resolve() : setTimeout(wait, 5));
    wait();
  });
  const cross = (first: string, second: string) => db.tx(async () => {
    attempts++;
    await db.run('UPDATE items SET n = n + 1 WHERE id = ?', first);
    await bothHold();
    await db.run('UPDATE items SET n = n + 1 WHERE id = ?', second);
    await db.afterCommit(() => { hooks.push(first); });
  });
  await Promise.all([cross('a', 'b'), cross('b', 'a')]);
  assert.equal(attempts, 3, 'one of the two ran twice');
  assert.deepEqual(hooks.sort(), ['a', 'b'], 'one hook per committed transaction');
  assert.deepEqual((await db.all<{ n: number }>('SELECT n FROM items ORDER BY id')).map((r) => r.n), [2, 2]);
});

test('postgres: a statement outside any transaction that the server rolls back for a deadlock runs again', async (t) => {
  const db = await freshPostgres(t);
  await db.exec("CREATE TABLE items (id TEXT PRIMARY KEY, n INTEGER); INSERT INTO items VALUES ('a', 0), ('b', 0)");
  // A transaction holds b. The statement (a transaction of its own) takes a, then waits for b; the
  // transaction then wants a. The statement waited first, so its deadlock check finds the cycle and
  // the server rolls it back (40P01): it runs again, once the transaction has committed.
  const held = Promise.withResolvers<void>();
  const wanted = Promise.withResolvers<void>();
  const other = db.tx(async () => {
    await db.run("UPDATE items SET n = n + 1 WHERE id = 'b'");
    held.resolve();
    await wanted.promise;
    await db.run("UPDATE items SET n = n + 1 WHERE id = 'a'");
  });
  await held.promise;
  const statement = db.all(`WITH first AS (UPDATE items SET n = n + 10 WHERE id = 'a' RETURNING id)
    UPDATE items SET n = n + 10 WHERE id = 'b' AND EXISTS (SELECT 1 FROM first) RETURNING id`);
  while ((await db.get<{ n: number }>("SELECT count(*) AS n FROM pg_locks WHERE NOT granted AND locktype = 'transactionid'"))!.n === 0) {
    await new Promise((r) => setTimeout(r, 10));
  }
  wanted.resolve();
  assert.deepEqual(await statement, [{ id: 'b' }]);
  await other;
  assert.deepEqual((await db.all<{ n: number }>('SELECT n FROM items ORDER BY id')).map((r) => r.n), [11, 11]);
});

test('postgres: a statement run often is prepared by name on its connection, and a table changing shape under it is no error', async (t) => {
  const db = await freshPostgres(t, 1); // one connection: every statement below meets the same prepared ones
  await db.exec("CREATE TABLE shapes (id TEXT PRIMARY KEY); INSERT INTO shapes VALUES ('a')");
  const read = () => db.all<Record<string, unknown>>('SELECT * FROM shapes WHERE id <> ?', 'z');
  for (let i = 0; i < 4; i++) assert.deepEqual(await read(), [{ id: 'a' }]);
  const prepared = await db.all<{ name: string; statement: string }>('SELECT name, statement FROM pg_prepared_statements WHERE statement LIKE ?', '%FROM shapes%');
  assert.equal(prepared.length, 1, 'prepared once, by name');
  assert.match(prepared[0].name, /^svc\d+_\d+$/);
  // A migration while the process runs: the prepared plan's result type is stale (0A000 on the server).
  await db.exec('ALTER TABLE shapes ADD COLUMN label TEXT');
  assert.deepEqual(await read(), [{ id: 'a', label: null }], 'outside a transaction: run again unnamed');
  await db.exec('ALTER TABLE shapes ADD COLUMN size INTEGER');
  for (let i = 0; i < 4; i++) await read(); // named again, in the next generation
  await db.exec('ALTER TABLE shapes DROP COLUMN size');
  let attempts = 0;
  const inTx = await db.tx(async () => {
    attempts++;
    return await read();
  });
  assert.deepEqual(inTx, [{ id: 'a', label: null }]);
  assert.equal(attempts, 2, 'in a transaction: the transaction runs again');
});
