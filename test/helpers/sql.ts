// The few statements tests write straight to the database that SQLite and PostgreSQL spell
// differently: a trigger that refuses a write (a real database error where a test needs one), a
// member set in a JSON text column, a counter key for a table a test creates, and every table.
import type { Db } from '../../src/db/db.ts';

/** An SQL string literal of `text`. */
const literal = (text: string): string => `'${text.replaceAll("'", "''")}'`;

export interface Refusal {
  /** The trigger's name (letters, digits and _). */
  name: string;
  table: string;
  event: 'INSERT' | 'UPDATE' | 'DELETE';
  /** The error's message. */
  message: string;
  /** An SQL condition on NEW (or OLD) that limits the refusal to some rows; every row when absent. */
  when?: string;
}

/**
 * A trigger that refuses `event` on `table` with `message` (SQLite's RAISE(ABORT); on PostgreSQL the
 * schema's svc_refuse()), seen by every connection of the database (a worker's too). Resolves to the
 * function that drops it.
 */
export async function refuseWrites(db: Db, r: Refusal): Promise<() => Promise<void>> {
  if (!/^\w+$/.test(r.name) || !/^\w+$/.test(r.table)) throw new RangeError(`not a plain name: ${r.name} on ${r.table}`);
  if (db.engine === 'postgres') {
    await db.exec(`CREATE TRIGGER ${r.name} BEFORE ${r.event} ON ${r.table} FOR EACH ROW ${r.when ? `WHEN (${r.when}) ` : ''}EXECUTE FUNCTION svc_refuse(${literal(r.message)})`);
  } else {
    await db.exec(`CREATE TRIGGER ${r.name} BEFORE ${r.event} ON ${r.table} ${r.when ? `WHEN ${r.when} ` : ''}BEGIN SELECT RAISE(ABORT, ${literal(r.message)}); END`);
  }
  return async () => await db.exec(dropTrigger(db.engine, r.name, r.table));
}

/** The statement that drops the trigger `name` of `table` (PostgreSQL names the table, SQLite may not). */
export const dropTrigger = (engine: Db['engine'], name: string, table: string): string =>
  (engine === 'postgres' ? `DROP TRIGGER ${name} ON ${table}` : `DROP TRIGGER ${name}`);

/**
 * An expression of the JSON object text `column` with its member `key` set to the string `value`
 * (an SQL expression of text, e.g. `?`), as text again: SQLite's json_set, PostgreSQL's jsonb_set.
 */
export function jsonSetText(db: Db, column: string, key: string, value: string): string {
  if (!/^\w+$/.test(key)) throw new RangeError(`not a plain JSON key: ${key}`);
  return db.engine === 'postgres'
    ? `CAST(jsonb_set(CAST(${column} AS jsonb), '{${key}}', to_jsonb(CAST(${value} AS text))) AS text)`
    : `json_set(${column}, '$.${key}', ${value})`;
}

/** The column definition of an integer key the database numbers in insertion order (SQLite's rowid alias, an identity column). */
export const counterKey = (db: Db): string =>
  (db.engine === 'postgres' ? 'bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY' : 'INTEGER PRIMARY KEY');

/** The name of every table of the database (on SQLite its virtual tables and their shadow tables too), in order. */
export async function tableNames(db: Db): Promise<string[]> {
  const rows = db.engine === 'postgres'
    ? await db.all<{ name: string }>('SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename')
    : await db.all<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name");
  return rows.map((r) => r.name);
}

/**
 * Every text and blob value stored in every table, as bytes (text as UTF-8): to show that a secret
 * is stored nowhere, neither as text nor as raw bytes.
 */
export async function storedValues(db: Db): Promise<Buffer[]> {
  const out: Buffer[] = [];
  for (const name of await tableNames(db)) {
    for (const row of await db.all<Record<string, unknown>>(`SELECT * FROM ${name}`)) {
      for (const v of Object.values(row)) {
        if (typeof v === 'string') out.push(Buffer.from(v, 'utf8'));
        else if (v instanceof Uint8Array) out.push(Buffer.from(v));
      }
    }
  }
  return out;
}
