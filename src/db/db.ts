// One DatabaseSync per thread: WAL, foreign keys, busy timeout, durable commits, a prepared
// statement cache, and tx(fn) that nests as savepoints with after-commit hooks.
import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

export type Param = SQLInputValue;
export type Row = Record<string, unknown>;

export interface OpenOptions {
  synchronous?: 'full' | 'normal';
  busyTimeoutMs?: number;
  readOnly?: boolean;
}

const STATEMENT_CACHE_LIMIT = 1000;
const READ_CACHE_LIMIT = 20_000;
/** The read cache's slot for derived values (no SQL text can equal it). */
const DERIVED = '\u0000derived';

/** Both 48-byte copies of the WAL-index header at the start of the -shm file. */
const WAL_HEADER_BYTES = 96;

interface Shm { fd: number; last: Buffer; next: Buffer }

function openShm(dbPath: string): Shm | null {
  if (dbPath === ':memory:') return null;
  try {
    return { fd: fs.openSync(`${dbPath}-shm`, 'r'), last: Buffer.alloc(WAL_HEADER_BYTES), next: Buffer.alloc(WAL_HEADER_BYTES) };
  } catch {
    return null;
  }
}

function readShmHeader(fd: number, into: Buffer): number {
  try {
    return fs.readSync(fd, into, 0, WAL_HEADER_BYTES, 0);
  } catch {
    return -1;
  }
}

// String() of a byte array is its comma-joined bytes: a distinct key. (A DataView would give
// "[object DataView]"; none is ever bound.)
/* eslint-disable @typescript-eslint/no-base-to-string -- see above */
function paramKey(params: Param[]): string {
  if (params.length === 1) return typeof params[0] === 'string' ? params[0] : `\u0001${String(params[0])}`;
  let key = '';
  for (const p of params) key += `\u0000${typeof p === 'string' ? '' : '\u0001'}${String(p)}`;
  return key;
}
/* eslint-enable @typescript-eslint/no-base-to-string */

export class Db {
  readonly raw: DatabaseSync;
  readonly path: string;
  private readonly statements = new Map<string, StatementSync>();
  private depth = 0;
  private pending: Array<() => void> = [];
  /** SQL -> parameter key -> frozen row(s). */
  private readonly cache = new Map<string, Map<string, unknown>>();
  private cached = 0;
  private dataVersion = -1;
  private shm: Shm | null | undefined;
  /** Called with errors thrown by after-commit hooks (they must never undo a commit). */
  onHookError: (err: unknown) => void = (err) => { console.error(err); };

  constructor(file: string, opts: OpenOptions = {}) {
    if (file !== ':memory:') fs.mkdirSync(path.dirname(file), { recursive: true });
    this.path = file;
    this.raw = new DatabaseSync(file, { enableForeignKeyConstraints: true, readOnly: opts.readOnly ?? false });
    this.raw.exec(`PRAGMA busy_timeout = ${Math.trunc(opts.busyTimeoutMs ?? 5000)}`);
    if (!opts.readOnly) this.raw.exec('PRAGMA journal_mode = WAL');
    this.raw.exec(`PRAGMA synchronous = ${opts.synchronous === 'normal' ? 'NORMAL' : 'FULL'}`);
    this.raw.exec('PRAGMA foreign_keys = ON');
    this.raw.exec('PRAGMA temp_store = MEMORY');
    // svc_sha256(text): lowercase hex SHA-256 of the text's UTF-8 bytes (NULL for NULL); the audit
    // log's single-INSERT hash chain needs it on every connection (src/platform/audit/store.ts).
    this.raw.function('svc_sha256', { deterministic: true },
      (text) => (text === null ? null : createHash('sha256').update(typeof text === 'string' ? text : String(text), 'utf8').digest('hex')));
  }

  /** The cached statement of `sql`; with `bigInts`, a statement of its own that reads INTEGER values as bigint. */
  prepare(sql: string, bigInts = false): StatementSync {
    const key = bigInts ? `\u0000bigint\u0000${sql}` : sql;
    let st = this.statements.get(key);
    if (!st) {
      st = this.raw.prepare(sql);
      if (bigInts) st.setReadBigInts(true);
      if (this.statements.size >= STATEMENT_CACHE_LIMIT) {
        this.statements.delete(this.statements.keys().next().value!);
      }
      this.statements.set(key, st);
    }
    return st;
  }

  get<T = Row>(sql: string, ...params: Param[]): T | undefined {
    return this.prepare(sql).get(...params) as T | undefined;
  }

  all<T = Row>(sql: string, ...params: Param[]): T[] {
    return this.prepare(sql).all(...params) as T[];
  }

  /**
   * all() with every INTEGER value read as bigint (REAL stays number): for money sums, which node:sqlite
   * refuses to read as a number above 2^53. Counts come back as bigint too.
   */
  allBig<T = Row>(sql: string, ...params: Param[]): T[] {
    return this.prepare(sql, true).all(...params) as T[];
  }

  run(sql: string, ...params: Param[]): { changes: number; lastInsertRowid: number | bigint } {
    this.invalidate();
    const r = this.prepare(sql).run(...params);
    return { changes: Number(r.changes), lastInsertRowid: r.lastInsertRowid };
  }

  iterate<T = Row>(sql: string, ...params: Param[]): IterableIterator<T> {
    return this.prepare(sql).iterate(...params) as IterableIterator<T>;
  }

  exec(sql: string): void {
    this.invalidate();
    this.raw.exec(sql);
  }

  /**
   * Read-through cache for small, hot reads (sessions, memberships, scope rows) outside
   * transactions. Rows are frozen and shared. Any write through this connection empties it, and
   * so does a commit by another connection or process, which syncCache() notices through
   * PRAGMA data_version: call it once at the start of each unit of work (each request).
   */
  cachedGet<T = Row>(sql: string, ...params: Param[]): T | undefined {
    if (this.depth > 0) return this.get<T>(sql, ...params);
    const bySql = this.cacheFor(sql);
    const key = paramKey(params);
    if (bySql.has(key)) return bySql.get(key) as T | undefined;
    const row = this.get<T>(sql, ...params);
    this.remember(bySql, key, row === undefined ? undefined : Object.freeze(row));
    return row;
  }

  cachedAll<T = Row>(sql: string, ...params: Param[]): T[] {
    if (this.depth > 0) return this.all<T>(sql, ...params);
    const bySql = this.cacheFor(sql);
    const key = paramKey(params);
    const hit = bySql.get(key) as T[] | undefined;
    if (hit) return hit;
    const rows = Object.freeze(this.all<T>(sql, ...params).map((r) => Object.freeze(r))) as T[];
    this.remember(bySql, key, rows);
    return rows;
  }

  /**
   * A value derived only from cached reads (e.g. a response body), kept until the read cache is
   * emptied, i.e. until anything is written. `key` must name everything the value depends on.
   */
  cachedDerived<T>(key: string, compute: () => T): T {
    if (this.depth > 0) return compute();
    const derived = this.cacheFor(DERIVED);
    if (derived.has(key)) return derived.get(key) as T;
    const value = compute();
    this.remember(derived, key, value);
    return value;
  }

  private cacheFor(sql: string): Map<string, unknown> {
    let m = this.cache.get(sql);
    if (!m) this.cache.set(sql, (m = new Map<string, unknown>()));
    return m;
  }

  /**
   * Empties the read cache when another connection (another thread or process) committed since
   * the last call. The cheap check reads the two copies of the WAL-index header from the -shm file
   * (SQLite's documented wal-index format: every commit increments iChange and moves mxFrame); a
   * changed header, a torn read or a missing file all count as "changed". Without a -shm file (not
   * WAL) it falls back to PRAGMA data_version, which costs a read transaction.
   */
  syncCache(): void {
    if (this.shm === undefined) this.shm = openShm(this.path);
    if (this.shm) {
      const n = readShmHeader(this.shm.fd, this.shm.next);
      if (n === WAL_HEADER_BYTES && this.shm.next.equals(this.shm.last)) return;
      if (n !== WAL_HEADER_BYTES) this.shm.last.fill(0);
      else this.shm.next.copy(this.shm.last);
      this.invalidate();
      return;
    }
    const v = Number((this.prepare('PRAGMA data_version').get() as { data_version: number }).data_version);
    if (v !== this.dataVersion) {
      this.dataVersion = v;
      this.invalidate();
    }
  }

  private remember(bySql: Map<string, unknown>, key: string, value: unknown): void {
    if (this.cached >= READ_CACHE_LIMIT) this.invalidate();
    bySql.set(key, value);
    this.cached++;
  }

  private invalidate(): void {
    if (this.cached === 0) return;
    for (const m of this.cache.values()) m.clear();
    this.cached = 0;
  }

  get inTransaction(): boolean {
    return this.depth > 0;
  }

  /**
   * Runs fn in a transaction (BEGIN IMMEDIATE at the outside, SAVEPOINT when nested). fn must be
   * synchronous: an await inside would let other requests interleave on this connection.
   */
  tx<T>(fn: () => T): T {
    const outer = this.depth === 0;
    const sp = `sp${this.depth}`;
    const hooksBefore = this.pending.length;
    this.invalidate();
    this.raw.exec(outer ? 'BEGIN IMMEDIATE' : `SAVEPOINT ${sp}`);
    this.depth++;
    let result: T;
    try {
      result = fn();
      if (result instanceof Promise) {
        throw new Error('db.tx(fn): fn returned a Promise; transactions must be synchronous');
      }
    } catch (err) {
      this.depth--;
      if (outer) {
        this.raw.exec('ROLLBACK');
        this.pending = [];
      } else {
        this.raw.exec(`ROLLBACK TO ${sp}`);
        this.raw.exec(`RELEASE ${sp}`);
        this.pending.length = hooksBefore;
      }
      throw err;
    }
    this.depth--;
    this.invalidate();
    if (outer) {
      try {
        this.raw.exec('COMMIT');
      } catch (err) {
        if (this.raw.isTransaction) this.raw.exec('ROLLBACK');
        this.pending = [];
        throw err;
      }
      this.flushHooks();
    } else {
      this.raw.exec(`RELEASE ${sp}`);
    }
    return result;
  }

  /** Runs fn once the outermost transaction commits (at once outside a transaction). */
  afterCommit(fn: () => void): void {
    if (this.depth === 0) this.runHook(fn);
    else this.pending.push(fn);
  }

  private flushHooks(): void {
    const hooks = this.pending;
    this.pending = [];
    for (const h of hooks) this.runHook(h);
  }

  private runHook(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.onHookError(err);
    }
  }

  close(): void {
    if (this.shm) fs.closeSync(this.shm.fd);
    this.shm = null;
    if (!this.raw.isOpen) return;
    this.statements.clear();
    this.raw.close();
  }
}

export function openDb(file: string, opts: OpenOptions = {}): Db {
  return new Db(file, opts);
}
