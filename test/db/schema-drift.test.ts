// The two editions of the schema agree: a fresh SQLite database (schema.sql) and a fresh PostgreSQL
// database (schema.pg.sql) have, table by table, the same columns in the same order (name, NOT NULL,
// a type class, the default), primary keys, unique constraints and indexes, indexes by name (columns,
// order, partial or not), foreign keys (columns, target, ON DELETE), number of CHECKs, and triggers
// (name, timing, event, WHEN, the message of a refusing trigger). The differences by design are
// asserted as such: search_fts (FTS5 there, a trigram-indexed table here) and search_documents.rid,
// and the TRUNCATE guards PostgreSQL adds. Then the PostgreSQL functions that keep statements
// portable (svc_sha256, ifnull, instr, scalar max and min) answer as SQLite does. Without a test
// PostgreSQL server (test/helpers/postgres.ts) these tests fail, as every PostgreSQL test does.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import util from 'node:util';
import { createHash } from 'node:crypto';
import { openDb, type Db } from '../../src/db/db.ts';
import { migrate } from '../../src/db/migrate.ts';
import type { PostgresDb } from '../../src/db/postgres.ts';
import { tempDir } from '../helpers/server.ts';
import { freshPostgres } from '../helpers/postgres.ts';


async function freshSqlite(t: TestContext): Promise<Db> {
  const db = openDb(path.join(tempDir(t), 'svc.db'));
  t.after(() => db.close());
  await migrate(db);
  return db;
}

async function freshPgSchema(t: TestContext): Promise<PostgresDb> {
  const db = await freshPostgres(t);
  assert.deepEqual((await migrate(db)).applied, ['schema.pg.sql']);
  return db;
}

interface TableShape {
  /** "name class notnull default" in column order. */
  columns: string[];
  primaryKey: string[];
  /** Column lists of unique constraints and unique indexes (the primary key aside). */
  uniques: string[];
  /** "name: [UNIQUE ]col, col DESC[ WHERE predicate]" of each index made by CREATE INDEX. */
  indexes: string[];
  /** "col, col -> table(col, col) ON DELETE action". */
  foreignKeys: string[];
  checks: number;
  /** "name: BEFORE UPDATE OF a, b[ WHEN][ refuses 'message']". */
  triggers: string[];
}
type Shape = Record<string, TableShape>;

const sorted = (xs: string[]) => [...xs].sort();
const squash = (s: string) => s.replace(/\s+/g, ' ').trim();

function typeClass(declared: string): string {
  const t = declared.toLowerCase();
  if (t === '') return 'none';
  if (/int/.test(t)) return 'integer';
  if (/real|double|float/.test(t)) return 'real';
  if (/blob|bytea/.test(t)) return 'blob';
  if (/text|char/.test(t)) return 'text';
  return `other(${t})`;
}

/** A partial index's predicate, as SQLite keeps it or pg_get_indexdef deparses it, in one spelling. */
function predicate(definition: string | null): string {
  const where = /\bWHERE\b(.*)$/is.exec(definition ?? '')?.[1];
  if (where === undefined) return '';
  return ` WHERE ${squash(where.replace(/::[a-z]+/g, '').replace(/= ANY \(ARRAY\[(.*?)\]\)/g, 'IN ($1)').replace(/[()]/g, ''))}`;
}

/** The trigger's description from its definition (SQLite's CREATE TRIGGER text or pg_get_triggerdef). */
function describeTrigger(name: string, definition: string): string {
  const def = squash(definition.replace(/--[^\n]*/g, ''));
  const m = /^CREATE TRIGGER \w+ (BEFORE|AFTER) (INSERT|DELETE|TRUNCATE|UPDATE(?: OF [\w, ]+?)?) ON [\w.]+ (.*)$/i.exec(def);
  assert.ok(m, `trigger ${name}: ${def}`);
  const when = /^(FOR EACH ROW )?WHEN\b/i.test(m[3]) ? ' WHEN' : '';
  const message = /RAISE\(ABORT, '([^']*)'\)|svc_refuse\('([^']*)'\)/.exec(m[3]);
  return `${name}: ${m[1].toUpperCase()} ${m[2].replace(/^\w+/, (w) => w.toUpperCase())}${when}${message ? ` refuses '${message[1] ?? message[2]}'` : ''}`;
}

async function sqliteShape(db: Db): Promise<Shape> {
  const objects = await db.all<{ type: string; name: string; tbl_name: string; sql: string }>(
    "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name");
  const virtual = objects.filter((o) => o.type === 'table' && /^CREATE VIRTUAL TABLE/i.test(o.sql)).map((o) => o.name);
  const shadow = (name: string) => virtual.some((v) => ['data', 'idx', 'content', 'docsize', 'config'].some((s) => name === `${v}_${s}`));
  const shape: Shape = {};
  for (const table of objects.filter((o) => o.type === 'table' && !shadow(o.name))) {
    const cols = await db.all<{ name: string; type: string; notnull: number; dflt_value: string | null; pk: number }>(`PRAGMA table_info(${table.name})`);
    const indexList = await db.all<{ name: string; unique: number; origin: string; partial: number }>(`PRAGMA index_list(${table.name})`);
    const where = (index: string) => predicate(objects.find((o) => o.type === 'index' && o.name === index)?.sql ?? null);
    const indexCols = async (index: string) => (await db.all<{ seqno: number; cid: number; name: string | null; desc: number; key: number }>(`PRAGMA index_xinfo(${index})`))
      .filter((c) => c.key === 1).map((c) => `${c.cid === -2 ? 'expr' : c.name!}${c.desc ? ' DESC' : ''}`);
    const fks = await db.all<{ id: number; seq: number; table: string; from: string; to: string; on_delete: string }>(`PRAGMA foreign_key_list(${table.name})`);
    const uniques: string[] = [];
    const indexes: string[] = [];
    for (const ix of indexList) {
      const on = (await indexCols(ix.name)).join(', ');
      assert.equal(where(ix.name) !== '', ix.partial === 1, `${ix.name}: its predicate is read`);
      if (ix.unique && ix.origin !== 'pk') uniques.push(`${on}${where(ix.name)}`);
      if (ix.origin === 'c') indexes.push(`${ix.name}: ${ix.unique ? 'UNIQUE ' : ''}${on}${where(ix.name)}`);
    }
    shape[table.name] = {
      // SQLite lets a primary key column that is not an INTEGER PRIMARY KEY hold NULL (a legacy quirk
      // that nothing relies on); PostgreSQL never does: such a column counts as NOT NULL.
      columns: cols.map((c) => `${c.name} ${typeClass(c.type)} ${c.notnull || c.pk ? 1 : 0} ${c.dflt_value ?? 'null'}`),
      primaryKey: cols.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk).map((c) => c.name),
      uniques: sorted(uniques),
      indexes: sorted(indexes),
      foreignKeys: sorted([...new Set(fks.map((f) => f.id))].map((id) => {
        const parts = fks.filter((f) => f.id === id).sort((a, b) => a.seq - b.seq);
        return `${parts.map((p) => p.from).join(', ')} -> ${parts[0].table}(${parts.map((p) => p.to).join(', ')}) ON DELETE ${parts[0].on_delete}`;
      })),
      checks: table.sql.replace(/--[^\n]*/g, '').match(/\bCHECK\s*\(/gi)?.length ?? 0,
      triggers: sorted(objects.filter((o) => o.type === 'trigger' && o.tbl_name === table.name).map((o) => describeTrigger(o.name, o.sql))),
    };
  }
  return shape;
}

const PG_ON_DELETE: Record<string, string> = { a: 'NO ACTION', r: 'RESTRICT', c: 'CASCADE', n: 'SET NULL', d: 'SET DEFAULT' };

async function pgShape(db: PostgresDb): Promise<Shape> {
  const tables = (await db.all<{ name: string }>(
    "SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema() AND tablename <> 'svc_schema_version' ORDER BY tablename")).map((r) => r.name);
  const shape: Shape = {};
  for (const table of tables) {
    const cols = await db.all<{ name: string; type: string; notnull: boolean; dflt: string | null }>(
      `SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull AS notnull, pg_get_expr(d.adbin, d.adrelid) AS dflt
         FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        WHERE a.attrelid = ?::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, table);
    const indexes = await db.all<{ name: string; unique: boolean; primary: boolean; def: string; constraint: boolean; cols: string[] }>(
      `SELECT c.relname AS name, i.indisunique AS unique, i.indisprimary AS primary, pg_get_indexdef(i.indexrelid) AS def,
              EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid AND k.contype IN ('p', 'u')) AS constraint,
              ARRAY(SELECT CASE WHEN k.attnum = 0 THEN 'expr' ELSE (SELECT attname FROM pg_attribute WHERE attrelid = i.indrelid AND attnum = k.attnum) END
                        || CASE WHEN (i.indoption[k.n - 1] & 1) = 1 THEN ' DESC' ELSE '' END
                      FROM unnest(i.indkey) WITH ORDINALITY AS k(attnum, n) WHERE k.n <= i.indnkeyatts ORDER BY k.n) AS cols
         FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = ?::regclass`, table);
    const fks = await db.all<{ cols: string[]; target: string; target_cols: string[]; on_delete: string }>(
      `SELECT ARRAY(SELECT attname::text FROM unnest(k.conkey) WITH ORDINALITY AS u(num, n) JOIN pg_attribute ON attrelid = k.conrelid AND attnum = u.num ORDER BY n) AS cols,
              k.confrelid::regclass::text AS target,
              ARRAY(SELECT attname::text FROM unnest(k.confkey) WITH ORDINALITY AS u(num, n) JOIN pg_attribute ON attrelid = k.confrelid AND attnum = u.num ORDER BY n) AS target_cols,
              k.confdeltype AS on_delete
         FROM pg_constraint k WHERE k.conrelid = ?::regclass AND k.contype = 'f'`, table);
    const checks = (await db.get<{ n: number }>("SELECT count(*) AS n FROM pg_constraint WHERE conrelid = ?::regclass AND contype = 'c'", table))!.n;
    const triggers = await db.all<{ name: string; def: string }>(
      'SELECT tgname AS name, pg_get_triggerdef(oid) AS def FROM pg_trigger WHERE tgrelid = ?::regclass AND NOT tgisinternal', table);
    const primary = indexes.find((i) => i.primary);
    shape[table] = {
      columns: cols.map((c) => `${c.name} ${typeClass(c.type)} ${c.notnull ? 1 : 0} ${c.dflt?.replace(/::[a-z ]+$/, '') ?? 'null'}`),
      primaryKey: primary ? primary.cols : [],
      uniques: sorted(indexes.filter((i) => i.unique && !i.primary).map((i) => `${i.cols.join(', ')}${predicate(i.def)}`)),
      indexes: sorted(indexes.filter((i) => !i.constraint).map((i) => `${i.name}: ${i.unique ? 'UNIQUE ' : ''}${i.cols.join(', ')}${predicate(i.def)}`)),
      foreignKeys: sorted(fks.map((f) => `${f.cols.join(', ')} -> ${f.target}(${f.target_cols.join(', ')}) ON DELETE ${PG_ON_DELETE[f.on_delete]}`)),
      checks,
      triggers: sorted(triggers.map((tr) => describeTrigger(tr.name, tr.def))),
    };
  }
  return shape;
}

test('schema.pg.sql has the tables, columns, keys, indexes, constraints and triggers of schema.sql', async (t) => {
  const lite = await sqliteShape(await freshSqlite(t));
  const pg = await pgShape(await freshPgSchema(t));
  assert.deepEqual(Object.keys(pg).sort(), Object.keys(lite).sort(), 'the same tables');
  assert.ok(Object.keys(lite).length >= 70, 'the shape read every table');

  // By design: search_fts is SQLite's FTS5 index (untyped columns, shadow tables) and here a plain
  // table keyed by the document's rid with a trigram index per column; search_documents gains rid,
  // the stand-in for the rowid, as its last column and key.
  assert.deepEqual(pg.search_fts.columns, ['rid integer 1 null', 'title text 0 null', 'subtitle text 0 null', 'body text 0 null']);
  assert.deepEqual(lite.search_fts.columns.map((c) => c.split(' ')[0]), ['title', 'subtitle', 'body']);
  assert.deepEqual(pg.search_fts.primaryKey, ['rid']);
  assert.deepEqual(pg.search_fts.indexes, ['search_fts_body: body', 'search_fts_subtitle: subtitle', 'search_fts_title: title']);
  delete pg.search_fts;
  delete lite.search_fts;
  assert.deepEqual(pg.search_documents.columns.at(-1), 'rid integer 1 null');
  assert.deepEqual(pg.search_documents.primaryKey, ['rid']);
  assert.deepEqual(lite.search_documents.primaryKey, []);
  pg.search_documents.columns.pop();
  pg.search_documents.primaryKey = [];

  // By design: TRUNCATE skips DELETE triggers, so each table whose DELETE is refused refuses TRUNCATE
  // too, with the same message.
  for (const [table, s] of Object.entries(pg)) {
    const guards = s.triggers.filter((d) => / BEFORE TRUNCATE /.test(d));
    const deletes = lite[table].triggers.filter((d) => / BEFORE DELETE refuses /.test(d));
    assert.deepEqual(guards.map((d) => d.replace(/^\w+?_no_truncate: BEFORE TRUNCATE/, '')), deletes.map((d) => d.replace(/^\w+: BEFORE DELETE/, '')), `${table}: TRUNCATE guards`);
    assert.ok(guards.every((d) => d.startsWith(`${table}_no_truncate:`)), `${table}: ${guards.join('; ')}`);
    s.triggers = s.triggers.filter((d) => !guards.includes(d));
  }

  const differ = Object.keys(lite).filter((table) => !util.isDeepStrictEqual(pg[table], lite[table]));
  for (const table of differ) assert.deepEqual(pg[table], lite[table], `table ${table} (and ${differ.length - 1} more: ${differ.join(', ')})`);
  assert.equal(Object.values(lite).reduce((n, s) => n + s.triggers.length, 0), 25, 'the 25 triggers are compared');
});

test('the PostgreSQL functions that keep statements portable exist', async (t) => {
  const pg = await freshPgSchema(t);
  const functions = (await pg.all<{ f: string }>(
    `SELECT p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ') ' || p.provolatile::text AS f
       FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace AND p.prokind = 'f' AND p.prorettype <> 'trigger'::regtype ORDER BY 1`)).map((r) => r.f);
  assert.deepEqual(functions.filter((f) => !/^(gin_|gtrgm_|set_limit|show_limit|show_trgm|similarity|word_similarity|strict_word_similarity)/.test(f)), [
    'ifnull(anycompatible, anycompatible) i',
    'instr(text, text) i',
    'max(anycompatible, anycompatible) i',
    'min(anycompatible, anycompatible) i',
    'svc_sha256(text) i',
  ]);
  assert.ok(functions.some((f) => f.startsWith('similarity(')), 'pg_trgm is installed');
});

/** Each statement's result (its first row) on one engine, or the error's message. */
async function outcomes(db: Db | PostgresDb, statements: string[]): Promise<unknown[]> {
  const out: unknown[] = [];
  for (const sql of statements) {
    try {
      const row = await db.get(sql);
      out.push(row && { ...row });
    } catch (err) {
      out.push(`error: ${(err as Error).message}`);
    }
  }
  return out;
}

test('svc_sha256, ifnull, instr, max(a, b) and min(a, b) give SQLite\'s results on PostgreSQL', async (t) => {
  const sha = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');
  const statements = [
    "SELECT svc_sha256('') AS h, svc_sha256('abc') AS a, svc_sha256('héllo ✓ 𝄞') AS u, svc_sha256(NULL) AS n",
    "SELECT ifnull(NULL, '') AS a, ifnull('x', '') AS b, ifnull(NULL, 5) AS c, ifnull(3, 5) AS d, ifnull(NULL, NULL) AS e",
    "SELECT instr('abcabc', 'c') AS a, instr('abc', 'z') AS b, instr('abc', '') AS c, instr('héllo', 'l') AS d, instr(NULL, 'a') AS e, instr('a', NULL) AS f",
    "SELECT instr('a' || ' ' || 'XYZ', 'Y') AS a, instr('ABC', 'b') AS b",
    "SELECT max(1, 2) AS a, max(3, 2) AS b, max('2026-01-02', '2026-01-10') AS c, max(NULL, 1) AS d, min(1, 2) AS e, min('b', 'a') AS f, min(1, NULL) AS g",
  ];
  const [lite, pg] = await Promise.all([freshSqlite(t), freshPgSchema(t)]);
  const expected = [
    { h: sha(''), a: sha('abc'), u: sha('héllo ✓ 𝄞'), n: null },
    { a: '', b: 'x', c: 5, d: 3, e: null },
    { a: 3, b: 0, c: 1, d: 3, e: null, f: null },
    { a: 4, b: 0 },
    { a: 2, b: 3, c: '2026-01-10', d: null, e: 1, f: 'a', g: null },
  ];
  assert.deepEqual(await outcomes(lite, statements), expected, 'SQLite');
  assert.deepEqual(await outcomes(pg, statements), expected, 'PostgreSQL');
  // On columns, as src/ uses them: ifnull in the index workflow_templates_key and its lookup, scalar
  // max over a bigint column and an integer, a parameter typed by the column.
  for (const db of [lite, pg]) {
    await db.run("INSERT INTO workflow_templates (id, scope, organization_id, workspace_id, template_key, version, created_at, updated_at) VALUES ('t1', 'global', NULL, NULL, 'k', 1, 'now', 'now')");
    await assert.rejects(async () => await db.run("INSERT INTO workflow_templates (id, scope, organization_id, workspace_id, template_key, version, created_at, updated_at) VALUES ('t2', 'global', NULL, NULL, 'k', 1, 'now', 'now')"), /UNIQUE|duplicate key/, db.engine);
    assert.deepEqual({ ...await db.get("SELECT id, max(version, 1 + 1) AS v, max(version, ?) AS p FROM workflow_templates WHERE scope = 'global' AND ifnull(organization_id, '') = ifnull(?, '') AND template_key = ?", 0, null, 'k') },
      { id: 't1', v: 2, p: 1 }, db.engine);
  }
});

/** A project with one of each row the refusing triggers guard, written with the same SQL on both engines. */
const WORLD = [
  "INSERT INTO organizations (id, name, created_at) VALUES ('o1', 'Org', 'now')",
  "INSERT INTO workspaces (id, organization_id, name, created_at) VALUES ('w1', 'o1', 'Ws', 'now')",
  "INSERT INTO projects (id, organization_id, workspace_id, name, created_at, updated_at) VALUES ('p1', 'o1', 'w1', 'P', 'now', 'now')",
  "INSERT INTO series (id, organization_id, workspace_id, project_id, title, created_at) VALUES ('s1', 'o1', 'w1', 'p1', 'S', 'now')",
  "INSERT INTO seasons (id, organization_id, workspace_id, project_id, series_id, number, title, position, created_at, updated_at) VALUES ('se1', 'o1', 'w1', 'p1', 's1', 1, 'S1', 0, 'now', 'now')",
  "INSERT INTO episodes (id, organization_id, workspace_id, project_id, season_id, number, title, position, created_at, updated_at) VALUES ('e1', 'o1', 'w1', 'p1', 'se1', 1, 'E1', 0, 'now', 'now')",
  "INSERT INTO script_revisions (id, organization_id, workspace_id, project_id, document_id, revision, author_name, created_at, content, content_sha256, item_count) VALUES ('sr1', 'o1', 'w1', 'p1', 'e1', 1, 'A', 'now', '{}', 'h', 0)",
  "INSERT INTO bible_revisions (id, organization_id, workspace_id, project_id, document_id, revision, author_name, created_at, content, content_sha256, item_count) VALUES ('br1', 'o1', 'w1', 'p1', 'p1', 1, 'A', 'now', '{}', 'h', 0)",
  "INSERT INTO audit_log (id, created_at, actor_type, action, result, prev_hash, hash) VALUES ('aud1', 'now', 'system', 'x', 'success', '0', '1')",
  "INSERT INTO invoices (id, organization_id, period_start, period_end, status, number, currency, tax_rate, due_days, subtotal_minor, tax_minor, total_minor, snapshot, created_at, updated_at) VALUES ('i1', 'o1', 'a', 'b', 'issued', 'N1', 'EUR', '0', 30, 0, 0, 0, '{}', 'now', 'now')",
  "INSERT INTO invoices (id, organization_id, period_start, period_end, status, number, currency, tax_rate, due_days, subtotal_minor, tax_minor, total_minor, snapshot, created_at, updated_at) VALUES ('i2', 'o1', 'b', 'c', 'draft', NULL, 'EUR', '0', 30, 0, 0, 0, '{}', 'now', 'now')",
  "INSERT INTO invoice_lines (invoice_id, position, kind, description, quantity, unit, unit_price_e4, price_unit, amount_exact, amount_minor) VALUES ('i1', 0, 'seat', 'Seats', '1', 'seat', 0, 'seat', '0', 0)",
  "INSERT INTO generation_jobs (id, organization_id, workspace_id, project_id, kind, status, created_at, updated_at) VALUES ('j1', 'o1', 'w1', 'p1', 'video', 'completed', 'now', 'now')",
  "INSERT INTO media_artifacts (id, organization_id, workspace_id, project_id, job_id, kind, source, storage_path, file_name, mime_type, file_size, content_sha256, has_video, has_audio, created_at) VALUES ('a1', 'o1', 'w1', 'p1', 'j1', 'video', 'generation', 'outputs/j1/a.mp4', 'a.mp4', 'video/mp4', 1, 'h', 1, 0, 'now')",
  "INSERT INTO assets (id, organization_id, workspace_id, project_id, kind, name, created_at, updated_at) VALUES ('as1', 'o1', 'w1', 'p1', 'image', 'I', 'now', 'now')",
  "INSERT INTO asset_versions (id, asset_id, organization_id, workspace_id, project_id, number, file_name, mime_type, file_size, content_sha256, storage_path, created_at) VALUES ('av1', 'as1', 'o1', 'w1', 'p1', 1, 'i.png', 'image/png', 1, 'h', 'assets/h', 'now')",
  "INSERT INTO reviews (id, organization_id, workspace_id, project_id, target_kind, episode_id, artifact_kind, artifact_id, artifact_sha256, title, created_at, updated_at) VALUES ('rv1', 'o1', 'w1', 'p1', 'cut', 'e1', 'video', 'a1', 'h', 'R', 'now', 'now')",
  "INSERT INTO review_decisions (id, review_id, artifact_id, artifact_sha256, decision, created_at) VALUES ('rd1', 'rv1', 'a1', 'h', 'approve', 'now')",
  "INSERT INTO workflow_templates (id, scope, template_key, version, created_at, updated_at) VALUES ('t1', 'global', 'k', 1, 'now', 'now')",
  "INSERT INTO workflow_template_versions (template_id, version, name, category, status, description, steps, gates, created_at) VALUES ('t1', 1, 'T', 'c', 'active', '', '[]', '[]', 'now')",
];

async function world(t: TestContext): Promise<Array<Db | PostgresDb>> {
  const dbs = await Promise.all([freshSqlite(t), freshPgSchema(t)]);
  for (const db of dbs) for (const sql of WORLD) await db.run(sql);
  return dbs;
}

/** Each statement's number of changed rows on one engine, or the error's message. */
async function changes(db: Db | PostgresDb, statements: string[]): Promise<Array<number | string>> {
  const out: Array<number | string> = [];
  for (const sql of statements) {
    try {
      out.push((await db.run(sql)).changes);
    } catch (err) {
      out.push((err as Error).message);
    }
  }
  return out;
}

test('each refusing trigger refuses on PostgreSQL what it refuses on SQLite, with the same message', async (t) => {
  const cases: Array<[string, number | string]> = [
    ["UPDATE audit_log SET action = 'y'", 'audit_log is append-only'],
    ['DELETE FROM audit_log', 'audit_log is append-only'],
    ["UPDATE script_revisions SET content = '{\"x\":1}'", 'script revisions are immutable'],
    ['DELETE FROM script_revisions', 'script revisions are immutable'],
    ["UPDATE bible_revisions SET author_name = 'B'", 'bible revisions are immutable'],
    ['DELETE FROM bible_revisions', 'bible revisions are immutable'],
    ["UPDATE workflow_template_versions SET name = 'U'", 'workflow template versions are immutable'],
    ['UPDATE invoice_lines SET amount_minor = 1', 'invoice lines are immutable'],
    ['DELETE FROM invoice_lines', 'invoice lines are immutable'],
    ["UPDATE invoices SET snapshot = '{}' WHERE id = 'i1'", 'an invoice snapshot is immutable'], // set, though unchanged
    ["UPDATE invoices SET period_end = 'z', total_minor = 1 WHERE id = 'i1'", 'an invoice snapshot is immutable'],
    ["UPDATE invoices SET number = 'N2' WHERE id = 'i1'", 'an invoice number is given once'],
    ["UPDATE invoices SET number = NULL WHERE id = 'i1'", 'an invoice number is given once'],
    ["UPDATE invoices SET snapshot = '{}', number = 'N2' WHERE id = 'i1'", 'an invoice number is given once'], // the first to fire
    ["UPDATE invoices SET number = 'N1', status = 'paid' WHERE id = 'i1'", 1], // the same number
    ["UPDATE invoices SET number = 'N3' WHERE id = 'i2'", 1], // given once, at issue
    ["UPDATE invoices SET number = 'N4' WHERE id = 'i2'", 'an invoice number is given once'],
    ["DELETE FROM invoices WHERE id = 'i1'", 'invoices are never deleted'],
    ['DELETE FROM asset_versions', 'asset_versions rows are never deleted'],
    ['DELETE FROM media_artifacts', 'media_artifacts rows are never deleted'],
    ["UPDATE review_decisions SET note = 'n'", 'review decisions are immutable'],
    ["UPDATE review_decisions SET note = 'n' WHERE id = 'none'", 0], // no row, no trigger
  ];
  const [lite, pg] = await world(t);
  const expected = cases.map((c) => c[1]);
  assert.deepEqual(await changes(lite, cases.map((c) => c[0])), expected, 'SQLite');
  assert.deepEqual(await changes(pg, cases.map((c) => c[0])), expected, 'PostgreSQL');
  // PostgreSQL only: TRUNCATE, which skips DELETE triggers, is refused on the same tables.
  assert.deepEqual(await changes(pg, ['TRUNCATE audit_log', 'TRUNCATE invoices CASCADE', 'TRUNCATE media_artifacts CASCADE']),
    ['audit_log is append-only', 'invoices are never deleted', 'media_artifacts rows are never deleted']);
  for (const db of [lite, pg]) {
    assert.deepEqual({ ...await db.get("SELECT (SELECT count(*) FROM audit_log) AS a, (SELECT count(*) FROM invoice_lines) AS l, (SELECT number FROM invoices WHERE id = 'i1') AS n FROM organizations") },
      { a: 1, l: 1, n: 'N1' }, `${db.engine}: nothing refused was written`);
    const error = await db.run('DELETE FROM audit_log').catch((e: unknown) => e as Error & { code: unknown });
    assert.equal(error instanceof Error, true);
    if (db.engine === 'postgres') assert.equal((error as { code: unknown }).code, '23000', 'an integrity constraint violation, as SQLite\'s constraint failure');
  }
});

test('a workflow run\'s status follows its steps, jobs and gates on PostgreSQL as on SQLite', async (t) => {
  const run = (id: string, mode: string, status = 'queued') =>
    `INSERT INTO workflow_runs (id, organization_id, workspace_id, project_id, template_id, template_version, mode, status, priority, approve_external, created_at) VALUES ('${id}', 'o1', 'w1', 'p1', 't1', 1, '${mode}', '${status}', 0, 0, 'now')`;
  const job = (id: string, runId: string | null) => `INSERT INTO generation_jobs (id, organization_id, workspace_id, project_id, kind, status, created_at, updated_at, workflow_run_id)
    VALUES ('${id}', 'o1', 'w1', 'p1', 'video', 'queued', 'now', 'now', ${runId ? `'${runId}'` : 'NULL'})`;
  const step = (runId: string, position: number, jobId: string | null) =>
    `INSERT INTO workflow_run_steps (run_id, position, step_key, label, job_kind, job_id, preview, blockers) VALUES ('${runId}', ${position}, 's${position}', 'S', 'video', ${jobId ? `'${jobId}'` : 'NULL'}, '{}', '[]')`;
  // Each statement, then the status of r1 to r4.
  const statements = [
    run('r1', 'queue'), job('ja', 'r1'), job('jb', 'r1'), step('r1', 0, 'ja'), step('r1', 1, 'jb'),
    "UPDATE generation_jobs SET attempt = 1 WHERE id = 'ja'",
    "UPDATE generation_jobs SET status = 'completed' WHERE id = 'ja'",
    "INSERT INTO workflow_run_gates (run_id, gate_key, label, blocking) VALUES ('r1', 'qa', 'QA', 1)",
    "UPDATE generation_jobs SET status = 'completed' WHERE id = 'jb'",
    "UPDATE workflow_run_gates SET status = 'failed'",
    "UPDATE workflow_run_gates SET status = 'passed'",
    "UPDATE generation_jobs SET status = 'failed' WHERE id = 'jb'",
    "UPDATE generation_jobs SET status = 'cancelled' WHERE id = 'jb'",
    "UPDATE generation_jobs SET status = 'queued', attempt = 0 WHERE id IN ('ja', 'jb')",
    "UPDATE workflow_runs SET status = 'blocked' WHERE id = 'r1'", // revision untouched: nothing derives
    "UPDATE generation_jobs SET updated_at = 'later' WHERE id = 'ja'", // neither status nor attempt: nothing follows
    "UPDATE generation_jobs SET status = status WHERE id = 'ja'", // set though unchanged: the run follows
    job('jc', null), "UPDATE generation_jobs SET status = 'running', attempt = 1 WHERE id = 'jc'", // of no run: nothing follows
    "UPDATE workflow_runs SET status = 'blocked' WHERE id = 'r1'", "UPDATE generation_jobs SET status = 'completed' WHERE id = 'jc'",
    run('r2', 'queue', 'running'), "UPDATE workflow_runs SET revision = revision + 1 WHERE id = 'r2'", // no steps: queued
    run('r3', 'plan', 'running'), step('r3', 0, null),
    run('r4', 'queue', 'running'), step('r4', 0, null), // a step without a job yet
  ];
  const trail = async (db: Db | PostgresDb) => {
    const out: string[] = [];
    for (const sql of statements) {
      await db.run(sql);
      out.push((await db.all<{ s: string }>("SELECT id || '=' || status AS s FROM workflow_runs ORDER BY id")).map((r) => r.s).join(' '));
    }
    return out;
  };
  const [lite, pg] = await world(t);
  const expected = [
    'r1=queued', 'r1=queued', 'r1=queued', 'r1=queued', 'r1=queued',
    'r1=running', 'r1=running', 'r1=running', 'r1=awaiting_qa', 'r1=failed', 'r1=completed', 'r1=blocked', 'r1=cancelled', 'r1=queued',
    'r1=blocked', 'r1=blocked', 'r1=queued',
    'r1=queued', 'r1=queued', 'r1=blocked', 'r1=blocked',
    'r1=blocked r2=running', 'r1=blocked r2=queued',
    'r1=blocked r2=queued r3=running', 'r1=blocked r2=queued r3=planned',
    'r1=blocked r2=queued r3=planned r4=running', 'r1=blocked r2=queued r3=planned r4=queued',
  ];
  assert.deepEqual(await trail(lite), expected, 'SQLite');
  assert.deepEqual(await trail(pg), expected, 'PostgreSQL');
});

test('storage_added counts the stored files\' bytes on PostgreSQL as on SQLite; the chain head follows audit_log', async (t) => {
  const [lite, pg] = await world(t);
  const frames = "INSERT INTO media_artifacts (id, organization_id, workspace_id, project_id, job_id, kind, source, storage_path, file_name, mime_type, file_size, content_sha256, has_video, has_audio, created_at, first_frame_path, first_frame_size, last_frame_path, last_frame_size) VALUES ('a2', 'o1', 'w1', 'p1', 'j1', 'video', 'generation', 'outputs/j1/b.mp4', 'b.mp4', 'video/mp4', 100, 'h', 1, 0, 'now', 'f.png', 10, 'l.png', 5)";
  for (const db of [lite, pg]) {
    await db.run(frames);
    await db.run("INSERT INTO workspaces (id, organization_id, name, created_at) VALUES ('w2', 'o1', 'Ws2', 'now')");
    await db.run("INSERT INTO asset_versions (id, asset_id, organization_id, workspace_id, project_id, number, file_name, mime_type, file_size, content_sha256, storage_path, created_at) VALUES ('av2', 'as1', 'o1', 'w2', 'p1', 2, 'i.png', 'image/png', 7, 'h', 'assets/h', 'now')");
    assert.deepEqual((await db.all('SELECT organization_id, workspace_id, bytes FROM storage_added ORDER BY workspace_id')).map((r) => ({ ...r })),
      [{ organization_id: 'o1', workspace_id: 'w1', bytes: 1 + 1 + 115 }, { organization_id: 'o1', workspace_id: 'w2', bytes: 7 }], db.engine);
    // WORLD's audit row was written by hand (seq 1): the head moved to it; a lower seq does not move it back.
    assert.deepEqual({ ...await db.get('SELECT seq, hash FROM audit_chain_head') }, { seq: 1, hash: '1' }, db.engine);
    await db.run("INSERT INTO audit_log (seq, id, created_at, actor_type, action, result, prev_hash, hash) VALUES (0, 'aud0', 'now', 'system', 'x', 'success', '0', '2')");
    assert.deepEqual({ ...await db.get('SELECT seq, hash FROM audit_chain_head') }, { seq: 1, hash: '1' }, db.engine);
  }
});

test('search_fts follows search_documents on PostgreSQL as the FTS5 index does on SQLite', async (t) => {
  const upsert = (title: string) => `INSERT INTO search_documents (doc_key, type, target_id, organization_id, title, subtitle, body, target_tab, updated_at)
    VALUES ('shot:1', 'shot', '1', 'o1', '${title}', 'Sub', 'Body text', 'shots', 'now')
    ON CONFLICT (doc_key) DO UPDATE SET title = excluded.title, updated_at = excluded.updated_at`;
  const statements = [upsert('Alpha one'), upsert('Alpha one'), upsert('Beta two'), "UPDATE search_documents SET status = 'done'", 'DELETE FROM search_documents'];
  const found = async (db: Db | PostgresDb, term: string) => db.engine === 'sqlite'
    ? (await db.get<{ n: number }>('SELECT count(*) AS n FROM search_fts WHERE search_fts MATCH ?', `"${term}"`))!.n
    : (await db.get<{ n: number }>('SELECT count(*) AS n FROM search_fts f JOIN search_documents d ON d.rid = f.rid WHERE f.title ILIKE ?1 OR f.subtitle ILIKE ?1 OR f.body ILIKE ?1', `%${term}%`))!.n;
  const trail = async (db: Db | PostgresDb) => {
    const out: string[] = [];
    for (const sql of statements) {
      await db.run(sql);
      out.push(`alpha ${await found(db, 'alpha')} beta ${await found(db, 'beta')} text ${await found(db, 'text')}`);
    }
    return out;
  };
  const [lite, pg] = await Promise.all([freshSqlite(t), freshPgSchema(t)]);
  const expected = ['alpha 1 beta 0 text 1', 'alpha 1 beta 0 text 1', 'alpha 0 beta 1 text 1', 'alpha 0 beta 1 text 1', 'alpha 0 beta 0 text 0'];
  assert.deepEqual(await trail(lite), expected, 'SQLite');
  // PostgreSQL: the row keeps its rid through the upsert, and only a change of the text rewrites its
  // search_fts row (xmin: the transaction that wrote the row version).
  const rows = async () => await pg.all<{ rid: number; title: string; xmin: string }>('SELECT rid, title, xmin::text AS xmin FROM search_fts');
  await pg.run(statements[0]);
  const [first] = await rows();
  assert.equal(first.rid, (await pg.get<{ rid: number }>('SELECT rid FROM search_documents'))!.rid);
  await pg.run(statements[1]);
  assert.deepEqual(await rows(), [first], 'the same text: search_fts untouched');
  await pg.run(statements[3]);
  assert.deepEqual(await rows(), [first], 'a status change: search_fts untouched');
  await pg.run(statements[2]);
  assert.deepEqual((await rows()).map((r) => [r.rid, r.title]), [[first.rid, 'Beta two']]);
  await pg.run(statements[4]);
  assert.deepEqual(await rows(), []);
  const again = await freshPgSchema(t);
  assert.deepEqual(await trail(again), expected, 'PostgreSQL');
});
