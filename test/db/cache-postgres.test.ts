// PostgresDb's read cache on a real server: hits run no statement, syncCache() costs one check at the
// first cached read after it, a commit by another process (a second pool on the same database) is
// seen by the next unit of work, own writes empty the cache at once, a read in flight when it is
// emptied keeps nothing, and a derived value is computed once for concurrent callers.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { migrate } from '../../src/db/migrate.ts';
import { openPostgres, type PostgresDb } from '../../src/db/postgres.ts';
import { freshDatabaseUrl } from '../helpers/postgres.ts';

const NAME = 'SELECT name FROM organizations WHERE id = ?';

/** Two PostgresDb on one new migrated database (two processes), with organization 'o' named 'one'. */
async function twoProcesses(t: TestContext): Promise<[PostgresDb, PostgresDb]> {
  const opened: PostgresDb[] = [];
  const url = await freshDatabaseUrl(t, async () => { for (const db of opened) await db.close(); });
  const a = await openPostgres({ url });
  opened.push(a);
  await migrate(a);
  const b = await openPostgres({ url });
  opened.push(b);
  await a.run("INSERT INTO organizations (id, name, created_at) VALUES ('o', 'one', 'now')");
  return [a, b];
}

const nameOf = async (db: PostgresDb, sql = NAME) => (await db.cachedGet<{ name: string }>(sql, 'o'))?.name;

/**
 * True once `unit` answers true, tried up to 20 times: the check reads the snapshot of the whole
 * cluster, which other databases' writes (other tests) change too, emptying the cache.
 */
async function onceQuiet(unit: () => Promise<boolean>): Promise<boolean> {
  for (let i = 0; i < 20; i++) if (await unit()) return true;
  return false;
}

/** The statements `fn` runs on `db`, and its result. */
async function counted<T>(db: PostgresDb, fn: () => Promise<T>): Promise<[number, T]> {
  const before = db.statementCount;
  const result = await fn();
  return [db.statementCount - before, result];
}

test('a hit runs no statement; syncCache() costs one check at the next cached read', async (t) => {
  const [a] = await twoProcesses(t);
  a.syncCache();
  assert.deepEqual(await counted(a, () => nameOf(a)), [2, 'one'], 'the check and the read');
  assert.deepEqual(await counted(a, () => nameOf(a)), [0, 'one'], 'a hit');
  assert.deepEqual(await counted(a, async () => await a.cachedAll('SELECT id FROM organizations')), [1, [{ id: 'o' }]]);
  assert.ok(await onceQuiet(async () => {
    a.syncCache();
    a.syncCache();
    const [n, name] = await counted(a, () => nameOf(a));
    const [m, rows] = await counted(a, async () => await a.cachedAll('SELECT id FROM organizations'));
    assert.deepEqual([name, rows], ['one', [{ id: 'o' }]]);
    return n + m === 1;
  }), 'the check only when nothing was committed');
  const rows = await a.cachedAll<{ id: string }>('SELECT id FROM organizations');
  assert.ok(Object.isFrozen(rows) && Object.isFrozen(rows[0]), 'cached rows are shared, so frozen');
  a.syncCache();
  assert.equal(await counted(a, async () => await a.get('SELECT 1')).then(([n]) => n), 1, 'a unit that reads nothing cached pays no check');
});

test('a commit by another process is seen by the next unit of work after syncCache()', async (t) => {
  const [a, b] = await twoProcesses(t);
  a.syncCache();
  assert.equal(await nameOf(a), 'one');
  await b.run("UPDATE organizations SET name = 'two' WHERE id = 'o'");
  assert.equal(await nameOf(a), 'one', 'within the unit of work the cache is kept');
  a.syncCache();
  assert.equal(await nameOf(a), 'two');
  await b.tx(async () => { await b.run("UPDATE organizations SET name = 'three' WHERE id = 'o'"); });
  a.syncCache();
  assert.equal(await nameOf(a), 'three', 'a transaction\'s commit');
  // Concurrent units share the check in flight; all see the commit.
  await b.run("UPDATE organizations SET name = 'four' WHERE id = 'o'");
  a.syncCache();
  const [n, names] = await counted(a, async () => await Promise.all([nameOf(a), nameOf(a), a.cachedDerived('d', async () => await nameOf(a))]));
  assert.deepEqual(names, ['four', 'four', 'four']);
  assert.ok(n <= 4, `one check shared, then at most one read each (${n} statements)`);
});

test('own writes empty the cache at once; reads in a transaction bypass it', async (t) => {
  const [a] = await twoProcesses(t);
  a.syncCache();
  assert.equal(await nameOf(a), 'one');
  await a.run("UPDATE organizations SET name = 'two' WHERE id = 'o'");
  assert.equal(await nameOf(a), 'two', 'run() outside a transaction');
  await a.exec("UPDATE organizations SET name = 'three' WHERE id = 'o'");
  assert.equal(await nameOf(a), 'three', 'exec() outside a transaction');
  await assert.rejects(async () => await a.tx(async () => {
    await a.run("UPDATE organizations SET name = 'four' WHERE id = 'o'");
    assert.equal(await nameOf(a), 'four', 'reads its own uncommitted write');
    throw new Error('roll back');
  }));
  assert.equal(await nameOf(a), 'three', 'a rollback leaves nothing behind');
  await a.tx(async () => { await a.run("UPDATE organizations SET name = 'five' WHERE id = 'o'"); });
  assert.equal(await nameOf(a), 'five', 'a commit empties the cache');
});

test('a cached read in flight when the cache is emptied does not keep what it read', async (t) => {
  const [a, b] = await twoProcesses(t);
  a.syncCache();
  assert.equal(await nameOf(a), 'one');
  // The read takes its snapshot, then waits for an advisory lock b holds while a writes.
  const slow = 'SELECT name FROM organizations, (SELECT pg_advisory_xact_lock_shared(7)) l WHERE id = ?';
  let release!: () => void;
  const held = new Promise<void>((resolve) => { release = resolve; });
  let locked!: () => void;
  const holding = new Promise<void>((resolve) => { locked = resolve; });
  const holder = b.tx(async () => {
    await b.get('SELECT pg_advisory_xact_lock(7)');
    locked();
    await held;
  });
  await holding;
  const read = nameOf(a, slow);
  for (let i = 0; !(await b.get<{ n: number }>("SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"))!.n; i++) {
    assert.ok(i < 500, 'the read waits for the lock');
    await new Promise((r) => setTimeout(r, 10));
  }
  await a.run("UPDATE organizations SET name = 'two' WHERE id = 'o'");
  release();
  await holder;
  assert.equal(await read, 'one', 'the read\'s snapshot came before the write');
  assert.equal(await nameOf(a, slow), 'two', 'and what it read was not kept');
});

test('a derived value is computed once for concurrent callers and kept until the cache is emptied', async (t) => {
  const [a, b] = await twoProcesses(t);
  let computed = 0;
  const derive = () => a.cachedDerived('name-of-o', async () => {
    computed++;
    await new Promise((r) => setTimeout(r, 20));
    return `${await nameOf(a)}!`;
  });
  a.syncCache();
  assert.deepEqual(await Promise.all([derive(), derive(), derive()]), ['one!', 'one!', 'one!']);
  assert.equal(computed, 1);
  assert.ok(await onceQuiet(async () => {
    a.syncCache();
    const [n, value] = await counted(a, derive);
    assert.equal(value, 'one!');
    return n === 1;
  }), 'kept (the check only) when nothing was committed');
  computed = 1;
  await b.run("UPDATE organizations SET name = 'two' WHERE id = 'o'");
  a.syncCache();
  assert.deepEqual(await Promise.all([derive(), derive()]), ['two!', 'two!']);
  assert.equal(computed, 2);
  await assert.rejects(a.cachedDerived('fails', async () => { throw new Error('no'); }));
  assert.equal(await a.cachedDerived('fails', async () => 'again'), 'again', 'a failed computation is forgotten');
});
