// Schema management: a new database gets schema.sql; an older one gets the numbered steps in
// migrations/ (NNNN-name.sql upgrades version NNNN-1 to NNNN); a newer one is refused.
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Db } from './db.ts';

const SCHEMA_FILE = fileURLToPath(new URL('../../schema.sql', import.meta.url));
const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));

export class SchemaVersionError extends Error {}

interface Migration { version: number; file: string }

function listMigrations(): Migration[] {
  if (!fs.existsSync(MIGRATIONS_DIR)) return [];
  return fs.readdirSync(MIGRATIONS_DIR)
    .map((file) => ({ file, m: /^(\d{4})-[\w-]+\.sql$/.exec(file) }))
    .filter((x) => x.m)
    .map((x) => ({ version: Number(x.m![1]), file: x.file }))
    .sort((a, b) => a.version - b.version);
}

/** The schema version this build writes: 1 is the first release; each migration adds one. */
export function currentSchemaVersion(): number {
  return Math.max(1, ...listMigrations().map((m) => m.version));
}

export async function schemaVersionOf(db: Db): Promise<number> {
  return Number((await db.get<{ user_version: number }>('PRAGMA user_version'))!.user_version);
}

export interface MigrationResult { from: number; to: number; applied: string[] }

/** Brings the database to the current schema, or throws SchemaVersionError if it cannot. */
export async function migrate(db: Db): Promise<MigrationResult> {
  const target = currentSchemaVersion();
  const from = await schemaVersionOf(db);
  if (from > target) {
    throw new SchemaVersionError(
      `database ${db.path} is at schema version ${from}, written by a newer version of svc; ` +
      `this build understands up to version ${target}. Run the newer svc, or restore a snapshot taken before the upgrade.`,
    );
  }
  if (from === target) return { from, to: target, applied: [] };
  if (from === 0) {
    const tables = (await db.get<{ n: number }>("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table'"))!.n;
    if (tables > 0) {
      throw new SchemaVersionError(`database ${db.path} has tables but no svc schema version; refusing to touch it`);
    }
    await db.tx(async () => {
      await db.exec(fs.readFileSync(SCHEMA_FILE, 'utf8'));
      await db.exec(`PRAGMA user_version = ${target}`);
    });
    return { from, to: target, applied: ['schema.sql'] };
  }
  const applied: string[] = [];
  for (const m of listMigrations().filter((x) => x.version > from && x.version <= target)) {
    await db.tx(async () => {
      await db.exec(fs.readFileSync(MIGRATIONS_DIR + m.file, 'utf8'));
      await db.exec(`PRAGMA user_version = ${m.version}`);
    });
    applied.push(m.file);
  }
  return { from, to: target, applied };
}
