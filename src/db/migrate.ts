// Schema management on both engines. A new database gets the current schema in one transaction:
// schema.sql on SQLite, schema.pg.sql on PostgreSQL. An older one gets the numbered steps
// (NNNN-name.sql upgrades version NNNN-1 to NNNN), each in a transaction of its own. A newer one, or
// one with tables but no svc version, is refused. The version is SQLite's PRAGMA user_version, and on
// PostgreSQL the one row of the table svc_schema_version.
//
// PostgreSQL starts at PG_BASELINE: schema.pg.sql was first written at that version, so no PostgreSQL
// database is older and the steps up to it have no PostgreSQL edition. Every later step is a pair:
// migrations/NNNN-name.sql for SQLite and its twin migrations/pg/NNNN-name.sql (same name) for
// PostgreSQL, landed together with schema.sql and schema.pg.sql at the new version. The tests hold
// both rules: test/db/migrate-postgres.test.ts (every step past the baseline has its twin) and
// test/db/schema-drift.test.ts (the two schemas agree). A twin is required even when its SQL is the
// same: one rule, no guessing which steps are portable. A PostgreSQL database that would need a
// missing twin is refused before any step runs. Each transaction first takes the migration lock and
// reads the version again, so processes that start together on one database migrate it once.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Param, Row } from './db.ts';

const SCHEMA_FILE = fileURLToPath(new URL('../../schema.sql', import.meta.url));
const PG_SCHEMA_FILE = fileURLToPath(new URL('../../schema.pg.sql', import.meta.url));
const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));
export const PG_MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/pg/', import.meta.url));

/** The schema version of schema.pg.sql's first edition: the oldest a PostgreSQL database can be. */
export const PG_BASELINE = 14;

export class SchemaVersionError extends Error {}

/** What migrate() needs of a database: Db (SQLite) and PostgresDb both fit. */
export interface Migratable {
  readonly engine: 'sqlite' | 'postgres';
  /** SQLite's file (error messages name it). */
  readonly path?: string;
  get<T = Row>(sql: string, ...params: Param[]): Promise<T | undefined>;
  exec(sql: string): Promise<void>;
  tx<T>(fn: () => Promise<T>): Promise<T>;
}

export interface Migration { version: number; file: string }

/** The numbered steps in `dir`, in order. */
export function listMigrations(dir = MIGRATIONS_DIR): Migration[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir)
    .map((file) => ({ file, m: /^(\d{4})-[\w-]+\.sql$/.exec(file) }))
    .filter((x) => x.m)
    .map((x) => ({ version: Number(x.m![1]), file: x.file }))
    .sort((a, b) => a.version - b.version);
}

/** The schema version this build writes: 1 is the first release; each migration adds one. */
export function currentSchemaVersion(): number {
  return Math.max(1, ...listMigrations().map((m) => m.version));
}

/** What differs between the engines: where the schema and the steps are, and how the version is kept. */
interface Edition {
  schemaFile: string;
  dir: string;
  /** The oldest version a database of this engine can have (0 aside: no schema yet). */
  baseline: number;
  /** How error messages name the database. */
  name(db: Migratable): Promise<string> | string;
  version(db: Migratable): Promise<number>;
  /** Records `version`; `fresh`: the schema file was just applied. */
  setVersion(db: Migratable, version: number, fresh: boolean): Promise<void>;
  hasTables(db: Migratable): Promise<boolean>;
  /** Inside a migration's transaction: waits until no other process migrates this database. */
  lock(db: Migratable): Promise<void>;
}

const SQLITE: Edition = {
  schemaFile: SCHEMA_FILE,
  dir: MIGRATIONS_DIR,
  baseline: 1,
  name: (db) => `database ${db.path ?? ''}`,
  version: async (db) => Number((await db.get<{ user_version: number }>('PRAGMA user_version'))!.user_version),
  setVersion: async (db, version) => await db.exec(`PRAGMA user_version = ${version}`),
  hasTables: async (db) => (await db.get<{ n: number }>("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table'"))!.n > 0,
  lock: async () => {}, // BEGIN IMMEDIATE holds the database's write lock already
};

const POSTGRES: Edition = {
  schemaFile: PG_SCHEMA_FILE,
  dir: PG_MIGRATIONS_DIR,
  baseline: PG_BASELINE,
  name: async (db) => `PostgreSQL database ${(await db.get<{ name: string }>('SELECT current_database() AS name'))!.name}`,
  version: async (db) => {
    const kept = await db.get<{ n: number }>("SELECT count(*) AS n FROM pg_tables WHERE schemaname = current_schema() AND tablename = 'svc_schema_version'");
    if (kept!.n === 0) return 0;
    return Number((await db.get<{ version: number }>('SELECT version FROM svc_schema_version'))?.version ?? 0);
  },
  setVersion: async (db, version, fresh) => await db.exec(fresh
    ? `CREATE TABLE svc_schema_version (id integer PRIMARY KEY CHECK (id = 1), version bigint NOT NULL);
       INSERT INTO svc_schema_version (id, version) VALUES (1, ${version})`
    : `UPDATE svc_schema_version SET version = ${version}`),
  hasTables: async (db) => (await db.get<{ n: number }>('SELECT count(*) AS n FROM pg_tables WHERE schemaname = current_schema()'))!.n > 0,
  // A transaction-level advisory lock (released at commit or rollback); the key is arbitrary, svc's own.
  lock: async (db) => { await db.get('SELECT pg_advisory_xact_lock(7370373929)'); },
};

export async function schemaVersionOf(db: Migratable): Promise<number> {
  return await (db.engine === 'postgres' ? POSTGRES : SQLITE).version(db);
}

export interface MigrationResult { from: number; to: number; applied: string[] }

/**
 * Runs `step` (which brings the database to `version`) in a transaction that first takes the migration
 * lock and reads the version again: when another process got there meanwhile, nothing is done and
 * false is returned.
 */
async function stepTo(db: Migratable, ed: Edition, version: number, step: () => Promise<void>): Promise<boolean> {
  return await db.tx(async () => {
    await ed.lock(db);
    if (await ed.version(db) >= version) return false;
    await step();
    return true;
  });
}

/** Brings the database to the current schema, or throws SchemaVersionError if it cannot. */
export async function migrate(db: Migratable): Promise<MigrationResult> {
  const ed = db.engine === 'postgres' ? POSTGRES : SQLITE;
  const target = currentSchemaVersion();
  const from = await ed.version(db);
  if (from > target) {
    throw new SchemaVersionError(
      `${await ed.name(db)} is at schema version ${from}, written by a newer version of svc; ` +
      `this build understands up to version ${target}. Run the newer svc, or restore a snapshot taken before the upgrade.`,
    );
  }
  if (from === target) return { from, to: target, applied: [] };
  if (from === 0) {
    if (await ed.hasTables(db)) {
      throw new SchemaVersionError(`${await ed.name(db)} has tables but no svc schema version; refusing to touch it`);
    }
    const done = await stepTo(db, ed, target, async () => {
      await db.exec(fs.readFileSync(ed.schemaFile, 'utf8'));
      await ed.setVersion(db, target, true);
    });
    return { from, to: target, applied: done ? [path.basename(ed.schemaFile)] : [] };
  }
  const steps = listMigrations(ed.dir).filter((x) => x.version > from && x.version <= target);
  const missing = Array.from({ length: target - from }, (_, i) => from + 1 + i).filter((v) => !steps.some((s) => s.version === v));
  if (from < ed.baseline || (ed === POSTGRES && missing.length > 0)) {
    throw new SchemaVersionError(
      `${await ed.name(db)} is at schema version ${from}, which this build cannot upgrade to ${target}` +
      (missing.length ? ` (no ${db.engine} step for version ${missing.join(', ')})` : ''),
    );
  }
  const applied: string[] = [];
  for (const m of steps) {
    const done = await stepTo(db, ed, m.version, async () => {
      await db.exec(fs.readFileSync(path.join(ed.dir, m.file), 'utf8'));
      await ed.setVersion(db, m.version, false);
    });
    if (done) applied.push(m.file); // else another process applied it
  }
  return { from, to: target, applied };
}
