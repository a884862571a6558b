// The database layer: pragmas, nested transactions with after-commit hooks, migrations, append-only audit.
import { mapSeq } from '../../src/kernel/seq.ts';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { openDb } from '../../src/db/db.ts';
import { currentSchemaVersion, migrate, SchemaVersionError } from '../../src/db/migrate.ts';
import { tempDir } from '../helpers/server.ts';
import { record } from '../../src/platform/audit/service.ts';
import { createContext } from '../../src/directory/context.ts';
import { loadConfig } from '../../src/kernel/config.ts';
import { createLogger } from '../../src/kernel/log.ts';

async function fresh(t: any, opts = {}) {
  const db = openDb(path.join(tempDir(t), 'svc.db'), opts);
  t.after(() => db.close());
  await migrate(db);
  return db;
}

test('opens with WAL, foreign keys, a busy timeout and durable commits by default', async (t) => {
  const db = await fresh(t);
  assert.equal((await db.get<any>('PRAGMA journal_mode'))!.journal_mode, 'wal');
  assert.equal((await db.get<any>('PRAGMA foreign_keys'))!.foreign_keys, 1);
  assert.equal((await db.get<any>('PRAGMA synchronous'))!.synchronous, 2, 'FULL');
  assert.equal((await db.get<any>('PRAGMA busy_timeout'))!.timeout, 5000);
  const normal = await fresh(t, { synchronous: 'normal' });
  assert.equal((await normal.get<any>('PRAGMA synchronous'))!.synchronous, 1, 'NORMAL');
  await assert.rejects(async () => await db.run("INSERT INTO workspaces (id, organization_id, name, created_at) VALUES ('w', 'missing', 'n', 'now')"), /FOREIGN KEY/);
});

test('prepared statements are cached by their SQL', async (t) => {
  const db = await fresh(t);
  const before = db.preparedStatements;
  await db.get('SELECT 1 AS x');
  await db.get('SELECT 1 AS x');
  assert.equal(db.preparedStatements, before + 1, 'the same SQL is prepared once');
  await db.get('SELECT 2 AS x');
  assert.equal(db.preparedStatements, before + 2, 'another SQL text is another statement');
});

// Savepoints and after-commit hooks: test/db/engines.test.ts (the same contract on SQLite and PostgreSQL).

test('a transaction\'s statements are bound to it; a stranger\'s read and write wait for its end', async (t) => {
  const db = await fresh(t);
  const names = async () => (await db.all<{ id: string }>('SELECT id FROM organizations ORDER BY id')).map((r) => r.id);
  const insert = async (id: string) => await db.run("INSERT INTO organizations (id, name, created_at) VALUES (?, 'n', 'now')", id);
  let release!: () => void;
  const paused = new Promise<void>((resolve) => { release = resolve; });
  let inside!: () => void;
  const opened = new Promise<void>((resolve) => { inside = resolve; });
  const events: string[] = [];
  // A transaction that writes, then waits (as a request would on I/O), then fails: rolled back.
  const failing = db.tx(async () => {
    await insert('uncommitted');
    inside();
    await paused;
    assert.deepEqual(await names(), ['uncommitted'], 'its own statements see its rows, however deep the awaits');
    events.push('tx ends');
    throw new Error('rolled back');
  });
  await opened;
  assert.equal(db.inTransaction, false, 'outside the transaction\'s async context');
  const read = names().then((r) => { events.push('read'); return r; });
  const write = insert('stranger').then(() => { events.push('write'); });
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.deepEqual(events, [], 'neither runs while the transaction is open');
  release();
  await assert.rejects(failing, /rolled back/);
  assert.deepEqual(await read, [], 'the read never saw the uncommitted row');
  await write;
  assert.deepEqual([events[0], [...events.slice(1)].sort()], ['tx ends', ['read', 'write']], 'both ran after the transaction ended');
  assert.deepEqual(await names(), ['stranger'], 'the stranger\'s write did not join the transaction (not rolled back with it)');
});

test('concurrent transactions run one after the other, each with its own statements', async (t) => {
  const db = await fresh(t);
  const log: string[] = [];
  const work = async (id: string) => await db.tx(async () => {
    log.push(`begin ${id}`);
    await db.run("INSERT INTO organizations (id, name, created_at) VALUES (?, 'n', 'now')", id);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const n = (await db.get<{ n: number }>('SELECT count(*) AS n FROM organizations'))!.n;
    log.push(`end ${id} ${n}`);
    if (id === 'b') throw new Error('b fails');
  });
  const results = await Promise.allSettled([work('a'), work('b'), work('c')]);
  assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled']);
  assert.deepEqual(log, ['begin a', 'end a 1', 'begin b', 'end b 2', 'begin c', 'end c 2']);
  assert.deepEqual((await db.all<{ id: string }>('SELECT id FROM organizations ORDER BY id')).map((r) => r.id), ['a', 'c']);
});

test('migrate applies schema.sql once and records the version', async (t) => {
  const db = openDb(path.join(tempDir(t), 'svc.db'));
  t.after(() => db.close());
  const first = await migrate(db);
  assert.deepEqual(first, { from: 0, to: currentSchemaVersion(), applied: ['schema.sql'] });
  assert.equal((await db.get<any>('PRAGMA user_version'))!.user_version, currentSchemaVersion());
  assert.deepEqual((await migrate(db)).applied, []);
});

/** Every table's columns and every index and trigger, in a comparable form. */
async function shape(db: Awaited<ReturnType<typeof openDb>>) {
  const objects = await db.all<{ type: string; name: string; tbl_name: string }>(
    "SELECT type, name, tbl_name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name");
  return await mapSeq(objects, async (o) => ({
    ...o,
    columns: o.type === 'table' ? (await db.all<{ name: string; type: string; notnull: number; dflt_value: unknown; pk: number }>(`PRAGMA table_info(${o.name})`))
      .map((c) => `${c.name} ${c.type} ${c.notnull} ${String(c.dflt_value)} ${c.pk}`) : [],
  }));
}

test('a version 1 database (the first release) migrates to exactly the current schema, keeping its rows', async (t) => {
  const db = openDb(path.join(tempDir(t), 'svc.db'));
  t.after(() => db.close());
  await db.exec(fs.readFileSync(new URL('../fixtures/schema-v1.sql', import.meta.url), 'utf8'));
  await db.exec('PRAGMA user_version = 1');
  await db.run("INSERT INTO organizations (id, name, created_at) VALUES ('org_1', 'Old studio', '2026-01-01T00:00:00.000Z')");
  const result = await migrate(db);
  assert.deepEqual(result, { from: 1, to: currentSchemaVersion(), applied: ['0002-generation.sql', '0003-identity.sql', '0004-media.sql', '0005-workflows.sql', '0006-commercial.sql', '0007-system.sql', '0008-review.sql', '0009-operations.sql', '0010-sso.sql', '0011-attempt-limits.sql', '0012-delivery-link-export.sql', '0013-qa-gate-decisions.sql', '0014-event-outbox.sql', '0015-audit-head-storage-added.sql', '0016-jobs-name-their-workflow-run.sql'] });
  assert.equal((await db.get<{ name: string }>("SELECT name FROM organizations WHERE id = 'org_1'"))!.name, 'Old studio');
  assert.deepEqual(await shape(db), await shape(await fresh(t)));
});

test('a database written by a newer version is refused with a clear message', async (t) => {
  const db = await fresh(t);
  await db.exec(`PRAGMA user_version = ${currentSchemaVersion() + 1}`);
  await assert.rejects(async () => await migrate(db), (e: unknown) => e instanceof SchemaVersionError && /newer version of svc/.test(e.message));
});

test('a database with foreign tables and no version is left alone', async (t) => {
  const db = openDb(path.join(tempDir(t), 'other.db'));
  t.after(() => db.close());
  await db.exec('CREATE TABLE something (x)');
  await assert.rejects(async () => await migrate(db), /no svc schema version/);
});

test('the audit log is append-only', async (t) => {
  const db = await fresh(t);
  await record(createContext({ db, config: loadConfig({}, {}), log: createLogger('silent') }), { action: 'x' });
  await assert.rejects(async () => await db.run("INSERT INTO audit_log (id, created_at, actor_type, action, result) VALUES ('aud_2', 'now', 'system', 'x', 'success')"), /NOT NULL/, 'a row outside the chain is refused');
  await assert.rejects(async () => await db.run("UPDATE audit_log SET action = 'y'"), /append-only/);
  await assert.rejects(async () => await db.run('DELETE FROM audit_log'), /append-only/);
  assert.equal((await db.get<any>('SELECT action FROM audit_log'))!.action, 'x');
});

test('the read cache sees this connection\'s writes at once and other connections\' commits after syncCache', async (t) => {
  const dir = tempDir(t);
  const a = openDb(path.join(dir, 'svc.db'));
  t.after(() => a.close());
  await migrate(a);
  const b = openDb(path.join(dir, 'svc.db'));
  t.after(() => b.close());
  const name = async (db = a) => (await db.cachedGet<{ name: string }>('SELECT name FROM organizations WHERE id = ?', 'o'))?.name;
  a.syncCache();
  assert.equal(await name(), undefined);
  await a.run("INSERT INTO organizations (id, name, created_at) VALUES ('o', 'one', 'now')");
  assert.equal(await name(), 'one', 'own write empties the cache');
  await b.run("UPDATE organizations SET name = 'two' WHERE id = 'o'");
  assert.equal(await name(), 'one', 'another connection\'s commit is not seen before syncCache');
  a.syncCache();
  assert.equal(await name(), 'two');
  a.syncCache();
  assert.equal(await name(), 'two', 'a quiet database keeps its cache');
  // Inside a transaction the cache is bypassed, and a rollback leaves nothing behind.
  await assert.rejects(async () => await a.tx(async () => {
    await a.run("UPDATE organizations SET name = 'three' WHERE id = 'o'");
    assert.equal(await name(), 'three', 'reads its own uncommitted write');
    throw new Error('roll back');
  }));
  assert.equal(await name(), 'two');
  const rows = await a.cachedAll<{ id: string }>('SELECT id FROM organizations');
  assert.ok(Object.isFrozen(rows) && Object.isFrozen(rows[0]), 'cached rows are shared, so frozen');
});

test('the read cache also works without a WAL shared-memory file (PRAGMA data_version)', async (t) => {
  const db = openDb(':memory:');
  t.after(() => db.close());
  await migrate(db);
  db.syncCache();
  await db.run("INSERT INTO organizations (id, name, created_at) VALUES ('o', 'one', 'now')");
  assert.equal((await db.cachedGet<{ name: string }>('SELECT name FROM organizations WHERE id = ?', 'o'))?.name, 'one');
  db.syncCache();
  assert.equal((await db.cachedGet<{ name: string }>('SELECT name FROM organizations WHERE id = ?', 'o'))?.name, 'one');
});
