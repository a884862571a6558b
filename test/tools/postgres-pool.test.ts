// The pool of reused PostgreSQL databases the test servers run on (test/helpers/postgres-pool.ts): a
// claimed database has the schema and none of an earlier test's rows, its seeded rows and sequences
// as new; one whose schema a test changed is dropped instead of reused; a held one is never handed out twice.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { DatabasePool } from '../helpers/postgres-pool.ts';
import { testPostgresUrl } from '../helpers/postgres.ts';

async function on<T>(pool: DatabasePool, name: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: pool.urlOf(name) });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

const state = async (c: pg.Client) => ({
  organizations: Number((await c.query('SELECT count(*) AS n FROM organizations')).rows[0].n),
  head: (await c.query('SELECT seq, hash FROM audit_chain_head')).rows.map((r) => ({ ...r })),
  sequence: await (async () => {
    const seq = (await c.query("SELECT pg_get_serial_sequence('audit_log', 'seq') AS s")).rows[0].s as string;
    return { ...(await c.query(`SELECT last_value, is_called FROM ${seq}`)).rows[0] };
  })(),
});

test('a claimed database is as new: no rows of the test before, the seeded head row, sequences from the start', async () => {
  const pool = new DatabasePool(testPostgresUrl);
  const first = await pool.claim();
  const fresh = await on(pool, first, state);
  assert.equal(fresh.organizations, 0);
  assert.equal(fresh.head.length, 1);
  await on(pool, first, async (c) => {
    await c.query("INSERT INTO organizations (id, name, created_at) VALUES ('org_pool', 'left behind', '2026-01-01T00:00:00.000Z')");
    await c.query("UPDATE audit_chain_head SET seq = 41, hash = 'x'");
    await c.query("SELECT nextval(pg_get_serial_sequence('audit_log', 'seq'))");
  });
  const second = await pool.claim();
  assert.notEqual(second, first, 'a held database is never handed out again');
  await pool.release(second);
  await pool.release(first);
  // Whichever comes back first (another test process may hold some), every claim is emptied.
  const names = [await pool.claim(), await pool.claim()];
  assert.ok(names.includes(first) || names.includes(second));
  for (const name of names) {
    const now = await on(pool, name, state);
    assert.deepEqual(now, fresh);
    await pool.release(name);
  }
});

test('a database whose schema a test changed is dropped, not handed out again', async () => {
  const pool = new DatabasePool(testPostgresUrl);
  const name = await pool.claim();
  await on(pool, name, (c) => c.query('CREATE TABLE left_by_a_test (x int)'));
  await pool.release(name);
  const others: string[] = [];
  // Claim until the pool would make a new database: the changed one is never among them.
  for (;;) {
    const next = await pool.claim();
    others.push(next);
    assert.notEqual(next, name);
    const exists = await on(pool, next, async (c) => (await c.query("SELECT to_regclass('left_by_a_test') AS t")).rows[0].t);
    assert.equal(exists, null);
    if (others.length > 8) break;
    const gone = await on(pool, next, async (c) => (await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount === 0);
    if (gone) break;
  }
  for (const n of others) await pool.release(n);
  const left = await on(pool, others[0], async (c) => (await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount);
  assert.equal(left, 0, 'the changed database was dropped');
});
