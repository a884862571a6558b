// One DatabaseSync per thread behind an asynchronous API: WAL, foreign keys, busy timeout, durable
// commits, a prepared statement cache, a read cache, and tx(fn) that nests as savepoints with
// after-commit hooks.
//
// Isolation on one connection. A transaction's statements are bound to it through the async context
// (AsyncLocalStorage, src/db/transactions.ts, shared with the PostgreSQL engine): every statement issued while `fn` of `await db.tx(fn)` runs, however deep the
// calls and awaits, runs inside that transaction. Any other statement (another request, the outbox
// dispatcher, a timer) waits until the transaction ends: one connection has one transaction, so a
// stranger's read never sees uncommitted rows and a stranger's write never joins (nor is rolled back
// with) someone else's transaction. Transactions are queued first come, first served; statements
// outside a transaction run at once when none is open. Transactions here do no I/O but SQL, so the
// wait is the length of a few statements.
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import type { Param, Row } from './values.ts';
import type { Db } from './engine.ts';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { openShm, readShmHeader, WAL_HEADER_BYTES, type Shm } from './wal-index.ts';
import path from 'node:path';
import { Transactional, type Frame } from './transactions.ts';
import { SQLITE } from './dialect.ts';
import { openSqliteSnapshot, readSqliteSnapshot, type RowCursor, type SnapshotQuery, type SnapshotReader } from './cursor.ts';

export type { Hook } from './transactions.ts';

export type { Param, Row } from './values.ts';

export type { Db } from './engine.ts';

export interface OpenOptions {
  synchronous?: 'full' | 'normal';
  busyTimeoutMs?: number;
  readOnly?: boolean;
}

const STATEMENT_CACHE_LIMIT = 1000;
const READ_CACHE_LIMIT = 20_000;
/** The read cache's slot for derived values (no SQL text can equal it). */
const DERIVED = '\u0000derived';

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

export class SqliteDb extends Transactional<DatabaseSync> implements Db {
  readonly engine = 'sqlite' as const;
  readonly dialect = SQLITE;
  private readonly raw: DatabaseSync;
  readonly path: string;
  private readonly statements = new Map<string, StatementSync>();
  /** True while a transaction (or a statement that waited for one) owns the connection. */
  private locked = false;
  private readonly waiting: Array<() => void> = [];
  /** SQL -> parameter key -> frozen row(s). */
  private readonly cache = new Map<string, Map<string, unknown>>();
  private cached = 0;
  private dataVersion = -1;
  private shm: Shm | null | undefined;
  constructor(file: string, opts: OpenOptions = {}) {
    super();
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

  /** How many prepared statements are cached (statements are prepared once per SQL text). */
  get preparedStatements(): number {
    return this.statements.size;
  }

  statementCount = 0;

  /** The cached statement of `sql` (about to run: counted); with `bigInts`, a statement of its own that reads INTEGER values as bigint. */
  private prepare(sql: string, bigInts = false): StatementSync {
    this.statementCount++;
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

  /** The transaction of this Db the calling async context runs in, if any. */
  protected override frame(): Frame<DatabaseSync> | undefined {
    return this.locked ? super.frame() : undefined; // no transaction is open: the cheap test first
  }

  /** Resolves when the connection is this caller's: at once inside its transaction or when idle. */
  private turn(): Promise<void> | undefined {
    if (!this.locked || this.frame()) return undefined;
    return this.acquire()!.then(() => { this.release(); });
  }

  /** Takes the connection: at once when it is free, else a promise of the turn (handed over by release()). */
  private acquire(): Promise<void> | undefined {
    if (!this.locked) {
      this.locked = true;
      return undefined;
    }
    return new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  /** Hands the connection to the next in line (it stays locked), or frees it. */
  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.locked = false;
  }

  /**
   * Runs `step` (synchronous SQL) when the connection is this caller's: at once when it is (no async
   * function, no extra turn of the event loop), or after the open transaction ends.
   */
  private when<T>(step: () => T): Promise<T> {
    const wait = this.turn();
    if (wait) return wait.then(step);
    try {
      return Promise.resolve(step());
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
  }

  get<T = Row>(sql: string, ...params: Param[]): Promise<T | undefined> {
    return this.when(() => this.prepare(sql).get(...params) as T | undefined);
  }

  all<T = Row>(sql: string, ...params: Param[]): Promise<T[]> {
    return this.when(() => this.prepare(sql).all(...params) as T[]);
  }

  /**
   * all() with every INTEGER value read as bigint (REAL stays number): for money sums, which node:sqlite
   * refuses to read as a number above 2^53. Counts come back as bigint too.
   */
  allBig<T = Row>(sql: string, ...params: Param[]): Promise<T[]> {
    return this.when(() => this.prepare(sql, true).all(...params) as T[]);
  }

  run(sql: string, ...params: Param[]): Promise<{ changes: number }> {
    return this.when(() => {
      this.invalidate();
      return { changes: Number(this.prepare(sql).run(...params).changes) };
    });
  }

  /**
   * The rows of `sql`, read one at a time as the caller asks (for large reads kept out of memory).
   * Between rows other statements may run on the connection; a caller that needs one snapshot reads
   * inside a transaction or uses a snapshot cursor (cursor.ts).
   */
  async *iterate<T = Row>(sql: string, ...params: Param[]): AsyncGenerator<T, void, undefined> {
    await this.turn();
    yield* this.prepare(sql).iterate(...params) as IterableIterator<T>;
  }

  exec(sql: string): Promise<void> {
    return this.when(() => {
      this.invalidate();
      this.statementCount++;
      this.raw.exec(sql);
    });
  }

  /**
   * Read-through cache for small, hot reads (sessions, memberships, scope rows) outside
   * transactions. Rows are frozen and shared. Any write through this connection empties it, and
   * so does a commit by another connection or process, which syncCache() notices through
   * PRAGMA data_version: call it once at the start of each unit of work (each request).
   */
  cachedGet<T = Row>(sql: string, ...params: Param[]): Promise<T | undefined> {
    if (this.frame()) return this.get<T>(sql, ...params);
    const bySql = this.cacheFor(sql);
    const key = paramKey(params);
    if (bySql.has(key)) return Promise.resolve(bySql.get(key) as T | undefined);
    return this.when(() => {
      // Read and kept in one step: no write comes between the read and the keeping.
      const row = this.prepare(sql).get(...params) as T | undefined;
      this.remember(bySql, key, row === undefined ? undefined : Object.freeze(row));
      return row;
    });
  }

  cachedAll<T = Row>(sql: string, ...params: Param[]): Promise<T[]> {
    if (this.frame()) return this.all<T>(sql, ...params);
    const bySql = this.cacheFor(sql);
    const key = paramKey(params);
    const hit = bySql.get(key) as T[] | undefined;
    if (hit) return Promise.resolve(hit);
    return this.when(() => {
      const rows = Object.freeze((this.prepare(sql).all(...params) as T[]).map((r) => Object.freeze(r))) as T[];
      this.remember(bySql, key, rows);
      return rows;
    });
  }

  /**
   * A value derived only from cached reads (e.g. a response body), kept until the read cache is
   * emptied, i.e. until anything is written. `key` must name everything the value depends on. The
   * promise is what is kept: callers that ask while it is computed share it (after a write, many
   * concurrent requests would otherwise all compute it). A computation that fails is forgotten; one
   * that saw the cache emptied meanwhile is not kept (the emptying dropped it).
   */
  cachedDerived<T>(key: string, compute: () => Promise<T>): Promise<T> {
    if (this.frame()) return compute();
    const derived = this.cacheFor(DERIVED);
    const hit = derived.get(key) as Promise<T> | undefined;
    if (hit) return hit;
    const value = compute();
    this.remember(derived, key, value);
    value.catch(() => {
      if (derived.get(key) === value) derived.delete(key);
    });
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
    if (this.locked) return; // a transaction is open: it empties the cache when it ends
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

  snapshotCursor<R>(q: SnapshotQuery): RowCursor<R> {
    return openSqliteSnapshot<R>(this.path, q);
  }

  readSnapshot<T>(fn: (read: SnapshotReader) => Promise<T>): Promise<T> {
    return readSqliteSnapshot(this.path, fn);
  }

  /** Nothing leaves the process on SQLite (see Db.notify). */
  notify(_channel: string, _payload: string): Promise<void> {
    return Promise.resolve();
  }

  listen(_channel: string, _fn: (payload: string) => void): Promise<() => Promise<void>> {
    return Promise.resolve(() => Promise.resolve());
  }

  /** Nothing to take: this transaction holds SQLite's write lock since its BEGIN IMMEDIATE. */
  lock(key: string): Promise<void> {
    if (!this.frame()) return Promise.reject(new Error(`lock(${key}) outside a transaction`));
    return Promise.resolve();
  }

  /** BEGIN IMMEDIATE once the connection is this transaction's (transactions queue first come, first served). */
  protected begin(): Promise<DatabaseSync> | DatabaseSync {
    const wait = this.acquire();
    return wait ? wait.then(() => this.beginNow()) : this.beginNow();
  }

  private beginNow(): DatabaseSync {
    try {
      this.invalidate();
      this.raw.exec('BEGIN IMMEDIATE');
      return this.raw;
    } catch (err) {
      this.release();
      throw err;
    }
  }

  protected commit(conn: DatabaseSync): void {
    this.invalidate();
    try {
      conn.exec('COMMIT');
    } catch (err) {
      if (conn.isTransaction) conn.exec('ROLLBACK');
      throw err;
    }
  }

  protected rollback(conn: DatabaseSync): void {
    conn.exec('ROLLBACK');
  }

  protected end(): void {
    this.release();
  }

  protected savepointStep(conn: DatabaseSync, step: 'SAVEPOINT' | 'ROLLBACK TO' | 'RELEASE', name: string): void {
    if (step === 'SAVEPOINT') this.invalidate();
    conn.exec(`${step} ${name}`);
  }

  close(): void {
    if (this.shm) fs.closeSync(this.shm.fd);
    this.shm = null;
    if (!this.raw.isOpen) return;
    this.statements.clear();
    this.raw.close();
  }
}

export function openDb(file: string, opts: OpenOptions = {}): SqliteDb {
  return new SqliteDb(file, opts);
}
