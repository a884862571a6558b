// What a copy of a whole database (copy.ts) reads of a schema and does to it, the same on both
// engines: the plain tables with their columns, primary key, foreign keys and counter; the triggers
// with the tables their bodies write; triggers turned off and on again inside a transaction; and the
// counters (SQLite's AUTOINCREMENT, PostgreSQL's identity columns) read and moved on. Each engine
// reads its own catalogue: SQLite's PRAGMAs and sqlite_master, PostgreSQL's pg_catalog.
import type { Db } from './db.ts';
import type { SnapshotReader } from './cursor.ts';

export interface Column {
  name: string;
  notNull: boolean;
  /** The database fills it itself and refuses a value: an identity GENERATED ALWAYS, a generated column. */
  generated: boolean;
}

export interface Table {
  name: string;
  columns: Column[];
  /** The primary key's columns; none for a SQLite table keyed by its rowid alone. */
  primaryKey: string[];
  /** What identifies a row and orders the rows: the primary key, else SQLite's rowid (none on PostgreSQL). */
  key: string[];
  foreignKeys: Array<{ columns: string[]; table: string }>;
  /** The column a counter numbers (an AUTOINCREMENT key, an identity column), if any. */
  counter: string | null;
}

export interface Trigger {
  name: string;
  table: string;
  /** The tables its body inserts into, updates or deletes from. */
  writes: string[];
}

export interface Catalog {
  /** Every plain table by name (not SQLite's virtual tables and their shadows, nor svc's version table). */
  tables: Map<string, Table>;
  triggers: Trigger[];
}

/** An identifier quoted for either engine (svc's names are letters, digits and underscores). */
export const ident = (name: string): string => `"${name.replaceAll('"', '""')}"`;

const WRITES = /\b(?:INSERT\s+(?:OR\s+\w+\s+)?INTO|UPDATE(?:\s+OR\s+\w+)?|DELETE\s+FROM)\s+"?(\w+)"?/gi;

/** The names among `tables` that `body` (a trigger's statements) inserts into, updates or deletes from. */
function writesOf(body: string, tables: Set<string>): string[] {
  const names = new Set<string>();
  for (const m of body.matchAll(WRITES)) if (tables.has(m[1].toLowerCase())) names.add(m[1].toLowerCase());
  return [...names].sort();
}

interface Edition {
  catalog(db: Db): Promise<Catalog>;
  /** Inside a transaction: turns the triggers off; the function returned turns them on again, in the same transaction. */
  suspend(db: Db, triggers: Trigger[]): Promise<() => Promise<void>>;
  /** The highest value each counter has handed out, by table (none for a counter not used yet). */
  counters(read: SnapshotReader, catalog: Catalog): Promise<Map<string, bigint>>;
  /** Moves the table's counter to `n` when it is lower (n > 0). */
  advance(db: Db, table: Table, n: bigint): Promise<void>;
}

const SQLITE: Edition = {
  async catalog(db) {
    const all = await db.all<{ name: string; type: string }>("SELECT name, type FROM pragma_table_list WHERE schema = 'main' ORDER BY name");
    const plain = all.filter((t) => t.type === 'table' && !t.name.startsWith('sqlite_')).map((t) => t.name);
    const tables = new Map<string, Table>();
    for (const name of plain) {
      const cols = await db.all<{ name: string; notnull: number; pk: number; hidden: number }>(
        'SELECT name, "notnull", pk, hidden FROM pragma_table_xinfo(?) ORDER BY cid', name);
      const fks = await db.all<{ id: number; table: string; from: string }>('SELECT id, "table", "from" FROM pragma_foreign_key_list(?) ORDER BY id, seq', name);
      const sql = (await db.get<{ sql: string }>("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", name))!.sql;
      const primaryKey = cols.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk).map((c) => c.name);
      tables.set(name, {
        name,
        // hidden 2 and 3: generated columns (1 is a virtual table's hidden column; none here).
        columns: cols.map((c) => ({ name: c.name, notNull: c.notnull === 1 || c.pk > 0, generated: c.hidden >= 2 })),
        primaryKey,
        key: primaryKey.length ? primaryKey : ['rowid'],
        foreignKeys: [...new Set(fks.map((f) => f.id))].map((id) => {
          const parts = fks.filter((f) => f.id === id);
          return { columns: parts.map((p) => p.from), table: parts[0].table };
        }),
        counter: /\bAUTOINCREMENT\b/i.test(sql) ? primaryKey[0] : null,
      });
    }
    const every = new Set(all.map((t) => t.name.toLowerCase()));
    const triggers = (await db.all<{ name: string; table: string; sql: string }>(
      "SELECT name, tbl_name AS \"table\", sql FROM sqlite_master WHERE type = 'trigger' ORDER BY name"))
      .map((t) => ({ name: t.name, table: t.table, writes: writesOf(t.sql.slice(t.sql.search(/\bBEGIN\b/i)), every) }));
    return { tables, triggers };
  },
  // SQLite cannot turn a trigger off: it is dropped and created again from its own text, both inside
  // the caller's transaction (a rollback brings it back as well).
  async suspend(db, triggers) {
    const kept: string[] = [];
    for (const t of triggers) {
      kept.push((await db.get<{ sql: string }>("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?", t.name))!.sql);
      await db.exec(`DROP TRIGGER ${ident(t.name)}`);
    }
    return async () => {
      for (const sql of kept) await db.exec(sql);
    };
  },
  async counters(read, catalog) {
    const out = new Map<string, bigint>();
    if (![...catalog.tables.values()].some((t) => t.counter)) return out; // no sqlite_sequence without AUTOINCREMENT
    for await (const r of read.rows<{ name: string; seq: bigint }>('SELECT name, seq FROM sqlite_sequence')) {
      if (r.seq > 0n) out.set(r.name, r.seq);
    }
    return out;
  },
  async advance(db, table, n) {
    await db.run('UPDATE sqlite_sequence SET seq = ? WHERE name = ? AND seq < ?', n, table.name, n);
    await db.run('INSERT INTO sqlite_sequence (name, seq) SELECT ?, ? WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = ?)', table.name, n, table.name);
  },
};

const POSTGRES: Edition = {
  async catalog(db) {
    // svc_schema_version is migrate.ts's bookkeeping, not the installation's data.
    const names = (await db.all<{ name: string }>(
      "SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema() AND tablename <> 'svc_schema_version' ORDER BY tablename")).map((r) => r.name);
    const tables = new Map<string, Table>();
    for (const name of names) {
      const cols = await db.all<{ name: string; notnull: boolean; identity: string; generated: string }>(
        `SELECT attname AS name, attnotnull AS notnull, attidentity AS identity, attgenerated AS generated
           FROM pg_attribute WHERE attrelid = CAST(? AS regclass) AND attnum > 0 AND NOT attisdropped ORDER BY attnum`, ident(name));
      const primaryKey = (await db.all<{ name: string }>(
        `SELECT a.attname AS name FROM pg_index i CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n)
           JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
          WHERE i.indrelid = CAST(? AS regclass) AND i.indisprimary ORDER BY k.n`, ident(name))).map((r) => r.name);
      const fks = await db.all<{ columns: string[]; target: string }>(
        `SELECT ARRAY(SELECT attname::text FROM unnest(k.conkey) WITH ORDINALITY AS u(num, n)
                        JOIN pg_attribute ON attrelid = k.conrelid AND attnum = u.num ORDER BY n) AS columns,
                (SELECT relname::text FROM pg_class WHERE oid = k.confrelid) AS target
           FROM pg_constraint k WHERE k.conrelid = CAST(? AS regclass) AND k.contype = 'f' ORDER BY k.conname`, ident(name));
      tables.set(name, {
        name,
        columns: cols.map((c) => ({ name: c.name, notNull: c.notnull, generated: c.identity === 'a' || c.generated !== '' })),
        primaryKey,
        key: primaryKey,
        foreignKeys: fks.map((f) => ({ columns: f.columns, table: f.target })),
        counter: cols.find((c) => c.identity !== '')?.name ?? null,
      });
    }
    const every = new Set((await db.all<{ name: string }>('SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema()')).map((r) => r.name));
    const triggers = (await db.all<{ name: string; table: string; body: string }>(
      `SELECT t.tgname AS name, c.relname AS "table", p.prosrc AS body
         FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_proc p ON p.oid = t.tgfoid
        WHERE NOT t.tgisinternal AND c.relnamespace = CAST(current_schema() AS regnamespace) ORDER BY t.tgname`))
      .map((t) => ({ name: t.name, table: t.table, writes: writesOf(t.body, every) }));
    return { tables, triggers };
  },
  // ALTER TABLE ... DISABLE TRIGGER is transactional; it needs the table's owner (the role that migrated it).
  async suspend(db, triggers) {
    for (const t of triggers) await db.exec(`ALTER TABLE ${ident(t.table)} DISABLE TRIGGER ${ident(t.name)}`);
    return async () => {
      for (const t of triggers) await db.exec(`ALTER TABLE ${ident(t.table)} ENABLE TRIGGER ${ident(t.name)}`);
    };
  },
  // A sequence is outside the snapshot: its value is read as it is now (at least the snapshot's).
  async counters(read, catalog) {
    const out = new Map<string, bigint>();
    for (const t of catalog.tables.values()) {
      if (!t.counter) continue;
      for await (const r of read.rows<{ n: bigint | null }>(
        'SELECT pg_sequence_last_value(CAST(pg_get_serial_sequence(?, ?) AS regclass)) AS n', ident(t.name), t.counter)) {
        if (r.n !== null && r.n > 0n) out.set(t.name, r.n);
      }
    }
    return out;
  },
  async advance(db, table, n) {
    await db.allBig(`SELECT setval(s, greatest(CAST(? AS bigint), coalesce(pg_sequence_last_value(s), 0)))
                    FROM (SELECT CAST(pg_get_serial_sequence(?, ?) AS regclass) AS s) AS q`, n, ident(table.name), table.counter);
  },
};

const edition = (db: Db): Edition => (db.engine === 'postgres' ? POSTGRES : SQLITE);

export const readCatalog = (db: Db): Promise<Catalog> => edition(db).catalog(db);

/** Inside a transaction of `db`: the triggers off until the function returned is called (in that transaction). */
export const suspendTriggers = (db: Db, triggers: Trigger[]): Promise<() => Promise<void>> => edition(db).suspend(db, triggers);

/** From a snapshot of `db`: the highest value each table's counter has handed out (unused counters left out). */
export const readCounters = (db: Db, read: SnapshotReader, catalog: Catalog): Promise<Map<string, bigint>> => edition(db).counters(read, catalog);

/** Moves the table's counter (table.counter must be set) on to `n`, unless it is there already; n > 0. */
export const advanceCounter = (db: Db, table: Table, n: bigint): Promise<void> => edition(db).advance(db, table, n);
