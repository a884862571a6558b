// The database layer: pragmas, nested transactions with after-commit hooks, migrations, append-only audit.
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

function fresh(t: any, opts = {}) {
  const db = openDb(path.join(tempDir(t), 'svc.db'), opts);
  t.after(() => db.close());
  migrate(db);
  return db;
}

test('opens with WAL, foreign keys, a busy timeout and durable commits by default', (t) => {
  const db = fresh(t);
  assert.equal(db.get<any>('PRAGMA journal_mode')!.journal_mode, 'wal');
  assert.equal(db.get<any>('PRAGMA foreign_keys')!.foreign_keys, 1);
  assert.equal(db.get<any>('PRAGMA synchronous')!.synchronous, 2, 'FULL');
  assert.equal(db.get<any>('PRAGMA busy_timeout')!.timeout, 5000);
  const normal = fresh(t, { synchronous: 'normal' });
  assert.equal(normal.get<any>('PRAGMA synchronous')!.synchronous, 1, 'NORMAL');
  assert.throws(() => db.run("INSERT INTO workspaces (id, organization_id, name, created_at) VALUES ('w', 'missing', 'n', 'now')"), /FOREIGN KEY/);
});

test('prepared statements are cached by their SQL', (t) => {
  const db = fresh(t);
  assert.equal(db.prepare('SELECT 1 AS x'), db.prepare('SELECT 1 AS x'));
  assert.notEqual(db.prepare('SELECT 1 AS x'), db.prepare('SELECT 2 AS x'));
});

test('tx nests as savepoints: an inner failure undoes only the inner work', (t) => {
  const db = fresh(t);
  const insert = (id: string) => db.run("INSERT INTO organizations (id, name, created_at) VALUES (?, 'n', 'now')", id);
  const ids = () => db.all<{ id: string }>('SELECT id FROM organizations ORDER BY id').map((r) => r.id);
  db.tx(() => {
    insert('a');
    assert.throws(() => db.tx(() => { insert('b'); throw new Error('inner'); }), /inner/);
    db.tx(() => insert('c'));
  });
  assert.deepEqual(ids(), ['a', 'c']);
  assert.throws(() => db.tx(() => { insert('d'); db.tx(() => insert('e')); throw new Error('outer'); }), /outer/);
  assert.deepEqual(ids(), ['a', 'c']);
  assert.equal(db.inTransaction, false);
});

test('after-commit hooks run once after the outermost commit and never after a rollback', (t) => {
  const db = fresh(t);
  const seen: string[] = [];
  db.tx(() => {
    db.afterCommit(() => seen.push('outer'));
    db.tx(() => db.afterCommit(() => seen.push('inner')));
    assert.throws(() => db.tx(() => { db.afterCommit(() => seen.push('rolled back')); throw new Error('x'); }));
    assert.deepEqual(seen, [], 'nothing before commit');
  });
  assert.deepEqual(seen, ['outer', 'inner']);
  assert.throws(() => db.tx(() => { db.afterCommit(() => seen.push('never')); throw new Error('y'); }));
  db.afterCommit(() => seen.push('now'));
  assert.deepEqual(seen, ['outer', 'inner', 'now']);
  const errors: unknown[] = [];
  db.onHookError = (e) => errors.push(e);
  db.tx(() => db.afterCommit(() => { throw new Error('hook failed'); }));
  assert.equal(errors.length, 1, 'a failing hook is reported, the commit stands');
});

test('a transaction function must be synchronous', (t) => {
  const db = fresh(t);
  assert.throws(() => db.tx((async () => {})), /synchronous/);
  assert.equal(db.inTransaction, false);
});

test('migrate applies schema.sql once and records the version', (t) => {
  const db = openDb(path.join(tempDir(t), 'svc.db'));
  t.after(() => db.close());
  const first = migrate(db);
  assert.deepEqual(first, { from: 0, to: currentSchemaVersion(), applied: ['schema.sql'] });
  assert.equal(db.get<any>('PRAGMA user_version')!.user_version, currentSchemaVersion());
  assert.deepEqual(migrate(db).applied, []);
});

/** Every table's columns and every index and trigger, in a comparable form. */
function shape(db: ReturnType<typeof openDb>) {
  const objects = db.all<{ type: string; name: string; tbl_name: string }>(
    "SELECT type, name, tbl_name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name");
  return objects.map((o) => ({
    ...o,
    columns: o.type === 'table' ? db.all<{ name: string; type: string; notnull: number; dflt_value: unknown; pk: number }>(`PRAGMA table_info(${o.name})`)
      .map((c) => `${c.name} ${c.type} ${c.notnull} ${String(c.dflt_value)} ${c.pk}`) : [],
  }));
}

test('a version 1 database (the first release) migrates to exactly the current schema, keeping its rows', (t) => {
  const db = openDb(path.join(tempDir(t), 'svc.db'));
  t.after(() => db.close());
  db.exec(fs.readFileSync(new URL('../fixtures/schema-v1.sql', import.meta.url), 'utf8'));
  db.exec('PRAGMA user_version = 1');
  db.run("INSERT INTO organizations (id, name, created_at) VALUES ('org_1', 'Old studio', '2026-01-01T00:00:00.000Z')");
  const result = migrate(db);
  assert.deepEqual(result, { from: 1, to: currentSchemaVersion(), applied: ['0002-generation.sql', '0003-identity.sql', '0004-media.sql', '0005-workflows.sql', '0006-commercial.sql', '0007-system.sql', '0008-review.sql', '0009-operations.sql', '0010-sso.sql', '0011-attempt-limits.sql', '0012-delivery-link-export.sql', '0013-qa-gate-decisions.sql', '0014-event-outbox.sql'] });
  assert.equal(db.get<{ name: string }>("SELECT name FROM organizations WHERE id = 'org_1'")!.name, 'Old studio');
  assert.deepEqual(shape(db), shape(fresh(t)));
});

test('a database written by a newer version is refused with a clear message', (t) => {
  const db = fresh(t);
  db.exec(`PRAGMA user_version = ${currentSchemaVersion() + 1}`);
  assert.throws(() => migrate(db), (e: unknown) => e instanceof SchemaVersionError && /newer version of svc/.test(e.message));
});

test('a database with foreign tables and no version is left alone', (t) => {
  const db = openDb(path.join(tempDir(t), 'other.db'));
  t.after(() => db.close());
  db.exec('CREATE TABLE something (x)');
  assert.throws(() => migrate(db), /no svc schema version/);
});

test('the audit log is append-only', (t) => {
  const db = fresh(t);
  record(createContext({ db, config: loadConfig({}, {}), log: createLogger('silent') }), { action: 'x' });
  assert.throws(() => db.run("INSERT INTO audit_log (id, created_at, actor_type, action, result) VALUES ('aud_2', 'now', 'system', 'x', 'success')"), /NOT NULL/, 'a row outside the chain is refused');
  assert.throws(() => db.run("UPDATE audit_log SET action = 'y'"), /append-only/);
  assert.throws(() => db.run('DELETE FROM audit_log'), /append-only/);
  assert.equal(db.get<any>('SELECT action FROM audit_log')!.action, 'x');
});

test('the read cache sees this connection\'s writes at once and other connections\' commits after syncCache', (t) => {
  const dir = tempDir(t);
  const a = openDb(path.join(dir, 'svc.db'));
  t.after(() => a.close());
  migrate(a);
  const b = openDb(path.join(dir, 'svc.db'));
  t.after(() => b.close());
  const name = (db = a) => db.cachedGet<{ name: string }>('SELECT name FROM organizations WHERE id = ?', 'o')?.name;
  a.syncCache();
  assert.equal(name(), undefined);
  a.run("INSERT INTO organizations (id, name, created_at) VALUES ('o', 'one', 'now')");
  assert.equal(name(), 'one', 'own write empties the cache');
  b.run("UPDATE organizations SET name = 'two' WHERE id = 'o'");
  assert.equal(name(), 'one', 'another connection\'s commit is not seen before syncCache');
  a.syncCache();
  assert.equal(name(), 'two');
  a.syncCache();
  assert.equal(name(), 'two', 'a quiet database keeps its cache');
  // Inside a transaction the cache is bypassed, and a rollback leaves nothing behind.
  assert.throws(() => a.tx(() => {
    a.run("UPDATE organizations SET name = 'three' WHERE id = 'o'");
    assert.equal(name(), 'three', 'reads its own uncommitted write');
    throw new Error('roll back');
  }));
  assert.equal(name(), 'two');
  const rows = a.cachedAll<{ id: string }>('SELECT id FROM organizations');
  assert.ok(Object.isFrozen(rows) && Object.isFrozen(rows[0]), 'cached rows are shared, so frozen');
});

test('the read cache also works without a WAL shared-memory file (PRAGMA data_version)', (t) => {
  const db = openDb(':memory:');
  t.after(() => db.close());
  migrate(db);
  db.syncCache();
  db.run("INSERT INTO organizations (id, name, created_at) VALUES ('o', 'one', 'now')");
  assert.equal(db.cachedGet<{ name: string }>('SELECT name FROM organizations WHERE id = ?', 'o')?.name, 'one');
  db.syncCache();
  assert.equal(db.cachedGet<{ name: string }>('SELECT name FROM organizations WHERE id = ?', 'o')?.name, 'one');
});
