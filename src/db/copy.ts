// A whole installation's database copied to the other engine (svc db copy): every row of every table
// the two engines share, read from one snapshot of the source (which is only read) and written to an
// empty target in ONE transaction, verified before it commits. Generic: the tables, their columns,
// keys, foreign keys and triggers come from each engine's catalogue (catalog.ts), so a table a later
// migration adds is copied like any other.
//
// - What is copied: the plain tables both engines have. A table only one of them has is derived there
//   and kept by that engine itself (SQLite's FTS5 search_fts and its shadow tables, PostgreSQL's
//   search_fts filled by triggers from search_documents); a column the database fills itself
//   (PostgreSQL's search_documents.rid, GENERATED ALWAYS) is left to it, and rows are read in key
//   order (SQLite's rowid where there is no key) so that such numbers follow the source's order.
// - The target: given the current schema by migrate() first; refused unless every table holds what a
//   fresh schema holds (nothing, or the rows the schema itself writes, which the copy replaces).
// - Order and batches: tables in foreign-key order, rows in multi-row INSERTs. A column referencing
//   its own table (generation_jobs.depends_on) is written NULL, then set once the table's rows are in.
// - Triggers: INSERT triggers must not change copied data (a run's status following its steps, a
//   running total), so every trigger of the target is off during the copy, except those whose body
//   writes only tables that are not copied (the search index), which fill the derived tables. They
//   are on again before the transaction ends.
// - Counters: each table's counter (SQLite's AUTOINCREMENT, PostgreSQL's identity sequence) is moved
//   past the highest value the source's counter handed out and past every copied value.
// - Verified: per table, the count and an order-independent digest of the rows (each value by its
//   kind: integer, real, text, bytes or null) as read from the source and as read back from the target;
//   any difference throws CopyMismatchError and rolls the whole copy back. `beforeCommit` runs last,
//   in the same transaction (the command verifies the audit chain there and records the copy).
import { createHash } from 'node:crypto';
import { openDb, type Db, type Param, type Row } from './db.ts';
import { migrate, currentSchemaVersion, schemaVersionOf } from './migrate.ts';
import type { SnapshotReader } from './cursor.ts';
import { advanceCounter, ident, readCatalog, readCounters, suspendTriggers, type Catalog, type Table } from './catalog.ts';

export interface TableCopy {
  table: string;
  /** Rows read from the source. */
  source: number;
  /** Rows read back from the target. */
  target: number;
  /** Same count and the same rows (the digests agree). */
  same: boolean;
}

export interface CopyReport {
  schemaVersion: number;
  /** Every copied table, in the order copied (foreign-key order). */
  tables: TableCopy[];
  /** Rows copied in all. */
  rows: number;
  /** Tables of one engine only, kept by that engine itself and not copied. */
  derived: string[];
  /** True when every table is the same on both sides. */
  same: boolean;
}

/** The source's schema is not the one this build writes: nothing was read. */
export class CopySchemaError extends Error {}

/** The target holds data: nothing was written. */
export class TargetNotEmptyError extends Error {
  readonly tables: string[];
  constructor(message: string, tables: string[]) {
    super(message);
    this.tables = tables;
  }
}

/** The copy read back differs from the source: it was rolled back (the target holds the schema only). */
export class CopyMismatchError extends Error {
  readonly report: CopyReport;
  constructor(message: string, report: CopyReport) {
    super(message);
    this.report = report;
  }
}

export interface CopyOptions {
  /** Last step in the target's transaction, after the rows were verified; throwing rolls the copy back. */
  beforeCommit?: (report: CopyReport) => Promise<void>;
  /** Rows per INSERT at most (default 500; fewer for a table of many columns). */
  rowsPerInsert?: number;
}

/** Bound values per statement at most (SQLite's limit is 32766, PostgreSQL's 65535). */
const MAX_PARAMS = 30_000;
const MAX_ROWS_PER_INSERT = 500;
/** Rows per keyset page when the target is read back. */
const PAGE = 1000;

/** A multiset digest of rows: the sum of each row's hash (mod 2^128), so the order of reading does not matter. */
class Digest {
  count = 0;
  private sum = 0n;

  add(values: unknown[]): void {
    const h = createHash('sha256').update(JSON.stringify(values.map(canonical)), 'utf8').digest();
    this.sum = (this.sum + h.readBigUInt64BE(0) * 2n ** 64n + h.readBigUInt64BE(8)) % 2n ** 128n;
    this.count++;
  }

  equals(other: Digest): boolean {
    return this.count === other.count && this.sum === other.sum;
  }
}

/** A value by kind and content, the same whichever engine read it: an integral number is an integer (SQLite's REAL 3.0 reads as 3 on both). */
function canonical(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  if (typeof v === 'bigint') return `i${v}`;
  if (typeof v === 'number') return Number.isInteger(v) ? `i${v}` : `r${v}`;
  if (typeof v === 'string') return `s${v}`;
  if (v instanceof Uint8Array) return `b${Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('hex')}`;
  throw new Error(`a value of an unexpected kind: ${typeof v}`);
}

/** A value read from one engine as the other binds it (node:sqlite reads bytes as Uint8Array, pg binds a Buffer). */
function param(v: unknown): Param {
  if (v instanceof Uint8Array && !Buffer.isBuffer(v)) return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
  return v as Param;
}

interface Plan {
  table: string;
  /** The columns written, in the target's order. */
  columns: string[];
  /** Of those, the ones referencing the table itself: written NULL, then set. */
  selfRefs: string[];
  /** The source's read order (Table.key; none for a PostgreSQL table without a primary key). */
  sourceKey: string[];
  /** The target's key, by which it is read back in pages. */
  targetKey: string[];
  target: Table;
}

const list = (names: string[]) => names.map(ident).join(', ');
const written = (t: Table) => t.columns.filter((c) => !c.generated).map((c) => c.name);

/** The tables both catalogues have, each with its columns checked, in foreign-key order (parents first). */
function plan(source: Catalog, target: Catalog): Plan[] {
  const shared = [...target.tables.keys()].filter((name) => source.tables.has(name));
  const plans = new Map<string, Plan>();
  for (const name of shared) {
    const s = source.tables.get(name)!;
    const t = target.tables.get(name)!;
    const columns = written(t);
    const theirs = written(s);
    const missing = [...columns.filter((c) => !theirs.includes(c)), ...theirs.filter((c) => !columns.includes(c))];
    if (missing.length) throw new CopySchemaError(`table ${name}: the engines' schemas differ (column ${missing.join(', ')})`);
    const selfRefs = [...new Set(t.foreignKeys.filter((f) => f.table === name).flatMap((f) => f.columns))];
    const required = selfRefs.filter((c) => t.columns.find((x) => x.name === c)!.notNull);
    if (required.length) throw new CopySchemaError(`table ${name}: ${required.join(', ')} references its own table and cannot be NULL, which the copy needs`);
    if (!t.key.length) throw new CopySchemaError(`table ${name} has no primary key`);
    if (selfRefs.length && !t.primaryKey.length) throw new CopySchemaError(`table ${name} references itself and has no primary key`);
    plans.set(name, { table: name, columns, selfRefs, sourceKey: s.key, targetKey: t.key, target: t });
  }
  // Kahn's algorithm, ties by name: a table comes after every other table it references.
  const order: Plan[] = [];
  const left = new Set(plans.keys());
  while (left.size) {
    const ready = [...left].sort().find((name) => plans.get(name)!.target.foreignKeys.every((f) => f.table === name || !left.has(f.table)));
    if (!ready) throw new CopySchemaError(`the foreign keys of ${[...left].sort().join(', ')} form a cycle`);
    order.push(plans.get(ready)!);
    left.delete(ready);
  }
  return order;
}

/** The target's rows of a table read back in keyset pages (inside its transaction), as a digest. */
async function digestOf(db: Db, p: Pick<Plan, 'table' | 'columns' | 'targetKey'>): Promise<Digest> {
  const d = new Digest();
  const keys = p.targetKey.map((k, i) => `${ident(k)} AS svc_k${i}`);
  const order = list(p.targetKey);
  let after: Param[] | null = null;
  for (;;) {
    const where: string = after ? ` WHERE (${order}) > (${after.map(() => '?').join(', ')})` : '';
    const rows: Row[] = await db.allBig<Row>(`SELECT ${list(p.columns)}, ${keys.join(', ')} FROM ${ident(p.table)}${where} ORDER BY ${order} LIMIT ${PAGE}`, ...(after ?? []));
    for (const r of rows) d.add(p.columns.map((c) => r[c]));
    if (rows.length < PAGE) return d;
    const last = rows[rows.length - 1];
    after = p.targetKey.map((_, i) => param(last[`svc_k${i}`]));
  }
}

/** The rows a fresh schema of the current version holds, per table (as digests): what an empty target holds (both engines' schemas write the same rows). */
async function freshDigests(plans: Plan[]): Promise<Map<string, Digest>> {
  const fresh = openDb(':memory:');
  try {
    await migrate(fresh);
    const out = new Map<string, Digest>();
    const tables = (await readCatalog(fresh)).tables;
    for (const p of plans) {
      const d = new Digest();
      // A table the schema files do not create (added by hand, say) is empty in a fresh schema.
      const rows = tables.has(p.table) ? await fresh.allBig<Row>(`SELECT ${list(p.columns)} FROM ${ident(p.table)}`) : [];
      for (const r of rows) d.add(p.columns.map((c) => r[c]));
      out.set(p.table, d);
    }
    return out;
  } finally {
    fresh.close();
  }
}

/** Copies one table's rows from the snapshot into the target (inside its transaction): the source's digest. */
async function copyTable(read: SnapshotReader, target: Db, p: Plan, rowsPerInsert: number): Promise<Digest> {
  const digest = new Digest();
  const perInsert = Math.max(1, Math.min(rowsPerInsert, Math.floor(MAX_PARAMS / p.columns.length)));
  const rowSql = `(${p.columns.map(() => '?').join(', ')})`;
  const insert = (n: number) => `INSERT INTO ${ident(p.table)} (${list(p.columns)}) VALUES ${Array.from({ length: n }, () => rowSql).join(', ')}`;
  const self = new Set(p.selfRefs);
  let batch: Param[] = [];
  let rows = 0;
  const flush = async () => {
    if (rows) await target.run(insert(rows), ...batch);
    batch = [];
    rows = 0;
  };
  const order = list(p.sourceKey);
  for await (const r of read.rows<Row>(`SELECT ${list(p.columns)} FROM ${ident(p.table)}${order ? ` ORDER BY ${order}` : ''}`)) {
    const values = p.columns.map((c) => r[c]);
    digest.add(values);
    p.columns.forEach((c, i) => batch.push(self.has(c) ? null : param(values[i])));
    if (++rows === perInsert) await flush();
  }
  await flush();
  if (p.selfRefs.length) {
    const key = p.target.primaryKey;
    const set = `UPDATE ${ident(p.table)} SET ${p.selfRefs.map((c) => `${ident(c)} = ?`).join(', ')} WHERE ${key.map((k) => `${ident(k)} = ?`).join(' AND ')}`;
    const refs = `SELECT ${list([...p.selfRefs, ...key])} FROM ${ident(p.table)} WHERE ${p.selfRefs.map((c) => `${ident(c)} IS NOT NULL`).join(' OR ')}`;
    for await (const r of read.rows<Row>(refs)) await target.run(set, ...[...p.selfRefs, ...key].map((c) => param(r[c])));
  }
  return digest;
}

/**
 * Copies every shared table of `source` into `target` (see the top of this file) and returns what was
 * compared. Throws CopySchemaError, TargetNotEmptyError or CopyMismatchError; on any error the target
 * keeps nothing of the copy (its schema stays).
 */
export async function copyDatabase(source: Db, target: Db, opts: CopyOptions = {}): Promise<CopyReport> {
  const version = currentSchemaVersion();
  const sourceVersion = await schemaVersionOf(source);
  if (sourceVersion !== version) {
    throw new CopySchemaError(sourceVersion > version
      ? `the source is at schema version ${sourceVersion}, written by a newer svc; copy it with that version`
      : `the source is at schema version ${sourceVersion}; this build copies version ${version}: run svc migrate on it first`);
  }
  await migrate(target);
  const [from, to] = [await readCatalog(source), await readCatalog(target)];
  const plans = plan(from, to);
  const copied = new Set(plans.map((p) => p.table));
  const derived = [...new Set([...from.tables.keys(), ...to.tables.keys()])].filter((t) => !copied.has(t)).sort();

  const fresh = await freshDigests(plans);
  const seeded: string[] = [];
  const notEmpty: string[] = [];
  for (const p of plans) {
    const seeds = fresh.get(p.table)!;
    // Counted first: a table holding more rows than a fresh one is not read whole.
    const [{ n }] = await target.allBig<{ n: bigint }>(`SELECT count(*) AS n FROM ${ident(p.table)}`);
    if (Number(n) !== seeds.count || (seeds.count > 0 && !(await digestOf(target, p)).equals(seeds))) notEmpty.push(p.table);
    else if (seeds.count > 0) seeded.push(p.table);
  }
  if (notEmpty.length) {
    throw new TargetNotEmptyError(`the target is not empty: ${notEmpty.slice(0, 5).join(', ')}${notEmpty.length > 5 ? ` and ${notEmpty.length - 5} more tables` : ''} hold data; copy into an empty database`, notEmpty);
  }
  // Triggers that write a copied table are off; those that write only derived tables keep them.
  const quiet = to.triggers.filter((t) => !(t.writes.length > 0 && t.writes.every((w) => !copied.has(w))));

  return await source.readSnapshot(async (read) => {
    const counters = await readCounters(source, read, from);
    return await target.tx(async () => {
      const resume = await suspendTriggers(target, quiet);
      for (const p of [...plans].reverse()) if (seeded.includes(p.table)) await target.run(`DELETE FROM ${ident(p.table)}`);
      const sourceDigests = new Map<string, Digest>();
      for (const p of plans) sourceDigests.set(p.table, await copyTable(read, target, p, opts.rowsPerInsert ?? MAX_ROWS_PER_INSERT));
      for (const p of plans) {
        const counter = p.target.counter;
        if (!counter || !p.columns.includes(counter)) continue;
        const top = (await target.allBig<{ n: bigint | null }>(`SELECT max(${ident(counter)}) AS n FROM ${ident(p.table)}`))[0].n ?? 0n;
        const n = [top, counters.get(p.table) ?? 0n].reduce((a, b) => (a > b ? a : b));
        if (n > 0n) await advanceCounter(target, p.target, n);
      }
      await resume();
      const tables: TableCopy[] = [];
      for (const p of plans) {
        const back = await digestOf(target, p);
        const mine = sourceDigests.get(p.table)!;
        tables.push({ table: p.table, source: mine.count, target: back.count, same: back.equals(mine) });
      }
      const report: CopyReport = {
        schemaVersion: version, tables, rows: tables.reduce((n, t) => n + t.source, 0), derived, same: tables.every((t) => t.same),
      };
      if (!report.same) {
        const differ = tables.filter((t) => !t.same).map((t) => t.table);
        throw new CopyMismatchError(`the copy differs from the source in ${differ.join(', ')}; it was rolled back`, report);
      }
      await opts.beforeCommit?.(report);
      return report;
    });
  });
}
