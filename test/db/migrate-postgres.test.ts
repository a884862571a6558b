// Migrations on PostgreSQL (src/db/migrate.ts): a fresh database gets schema.pg.sql and the version in
// one transaction, a current one is left as it is, one with foreign tables or a newer or too old
// version is refused, and two processes starting at once on a fresh database migrate it once. And the
// rule for the steps after PG_BASELINE: each SQLite step has its PostgreSQL twin of the same name.
// The PostgreSQL cases need the test server (test/helpers/postgres.ts) and fail without it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { currentSchemaVersion, listMigrations, migrate, PG_BASELINE, PG_MIGRATIONS_DIR, schemaVersionOf, SchemaVersionError } from '../../src/db/migrate.ts';
import { openPostgres } from '../../src/db/postgres.ts';
import { freshDatabaseUrl, freshPostgres } from '../helpers/postgres.ts';


test('every SQLite step after the PostgreSQL baseline has its PostgreSQL twin, and no twin is alone', () => {
  const lite = listMigrations();
  const pg = listMigrations(PG_MIGRATIONS_DIR);
  assert.ok(lite.length > 0 && currentSchemaVersion() >= PG_BASELINE, 'schema.pg.sql was first written at a version this build has');
  assert.deepEqual(pg.map((m) => m.file), lite.filter((m) => m.version > PG_BASELINE).map((m) => m.file),
    `each src/db/migrations/NNNN-name.sql past version ${PG_BASELINE} needs src/db/migrations/pg/NNNN-name.sql (and nothing else is there)`);
  if (fs.existsSync(PG_MIGRATIONS_DIR)) {
    const strays = fs.readdirSync(PG_MIGRATIONS_DIR).filter((f) => f.endsWith('.sql') && !pg.some((m) => m.file === f));
    assert.deepEqual(strays, [], 'a .sql file whose name is not NNNN-name.sql is never applied');
  }
  assert.ok(fs.existsSync(path.join(import.meta.dirname, '../../schema.pg.sql')));
});

test('postgres: a fresh database gets schema.pg.sql and the version in one step, then nothing', async (t) => {
  const db = await freshPostgres(t);
  assert.equal(await schemaVersionOf(db), 0);
  assert.deepEqual(await migrate(db), { from: 0, to: currentSchemaVersion(), applied: ['schema.pg.sql'] });
  assert.equal(await schemaVersionOf(db), currentSchemaVersion());
  assert.deepEqual(await db.all('SELECT id, version FROM svc_schema_version'), [{ id: 1, version: currentSchemaVersion() }]);
  assert.deepEqual(await migrate(db), { from: currentSchemaVersion(), to: currentSchemaVersion(), applied: [] });
  await assert.rejects(async () => await db.run('INSERT INTO svc_schema_version (id, version) VALUES (2, 1)'), /check constraint/, 'one row');
});

test('postgres: a schema that fails leaves the database as it was (one transaction)', async (t) => {
  const db = await freshPostgres(t);
  await db.exec("CREATE FUNCTION svc_sha256(text) RETURNS text LANGUAGE sql AS $$ SELECT 'taken' $$"); // schema.pg.sql creates it
  await assert.rejects(async () => await migrate(db), /already exists/);
  assert.equal(await schemaVersionOf(db), 0);
  assert.equal((await db.get<{ n: number }>('SELECT count(*) AS n FROM pg_tables WHERE schemaname = current_schema()'))!.n, 0);
});

test('postgres: a database with foreign tables and no version is left alone', async (t) => {
  const db = await freshPostgres(t);
  await db.exec('CREATE TABLE something (x integer)');
  await assert.rejects(async () => await migrate(db), (e: unknown) => e instanceof SchemaVersionError && /^PostgreSQL database t_\w+ has tables but no svc schema version/.test(e.message));
  assert.deepEqual((await db.all<{ t: string }>('SELECT tablename AS t FROM pg_tables WHERE schemaname = current_schema()')).map((r) => r.t), ['something']);
});

test('postgres: a database written by a newer version, or older than schema.pg.sql\'s first edition, is refused', async (t) => {
  const db = await freshPostgres(t);
  await migrate(db);
  await db.run('UPDATE svc_schema_version SET version = ?', currentSchemaVersion() + 1);
  await assert.rejects(async () => await migrate(db), (e: unknown) => e instanceof SchemaVersionError && /newer version of svc/.test(e.message));
  await db.run('UPDATE svc_schema_version SET version = ?', PG_BASELINE - 1);
  await assert.rejects(async () => await migrate(db), (e: unknown) => e instanceof SchemaVersionError && new RegExp(`at schema version ${PG_BASELINE - 1}, which this build cannot upgrade`).test(e.message));
  assert.equal(await schemaVersionOf(db), PG_BASELINE - 1, 'left alone');
});

test('postgres: two processes migrating a fresh database at once apply the schema once', async (t) => {
  const dbs: Array<Awaited<ReturnType<typeof openPostgres>>> = [];
  const url = await freshDatabaseUrl(t, async () => { for (const db of dbs) await db.close(); });
  dbs.push(await openPostgres({ url }), await openPostgres({ url }));
  const results = await Promise.all(dbs.map(async (db) => await migrate(db)));
  assert.deepEqual(results.map((r) => r.applied).sort(), [[], ['schema.pg.sql']]);
  assert.equal(await schemaVersionOf(dbs[0]), currentSchemaVersion());
});
