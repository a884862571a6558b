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
import { MISS, ReadCache } from './read-cache.ts';
import { openSqliteSnapshot, readSqliteSnapshot, rowMaker, type RowCursor, type SnapshotQuery, type SnapshotReader } from './cursor.ts';

export type { Hook } from './transactions.ts';

export type { Param, Row, Statement } from './values.ts';

export type { Db } from './engine.ts';

export interface OpenOptions {
  synchronous?: 'full' | 'normal';
  busyTimeoutMs?: number;
  readOnly?: boolean;
}

const STATEMENT_CACHE_LIMIT = 1000;

export class SqliteDb extends Transactional<DatabaseSync> implements Db {
  readonly engine = 'sqlite' as const;
  readonly dialect = SQLITE;
  private readonly raw: DatabaseSync;
  readonly path: string;
  private readonly statements = new Map<string, StatementSync>();
  /** True while a transaction (or a statement that waited for one) owns the connection. */
  private locked = false;
  private readonly waiting: Array<() => void> = [];
  private readonly cache = new ReadCache();
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

  /**
   * The cached statement of `sql` (about to run: counted, and the savepoints around it sent); with
   * `bigInts`, a statement of its own that reads INTEGER values as bigint; with `arrays`, one that
   * returns each row as an array of its values.
   */
  private prepare(sql: string, bigInts = false, arrays = false): StatementSync {
    this.statementCount++;
    this.beginning();
    const key = bigInts || arrays ? `\u0000${bigInts ? 'bigint' : ''}${arrays ? 'arrays' : ''}\u0000${sql}` : sql;
    let st = this.statements.get(key);
    if (!st) {
      st = this.raw.prepare(sql);
      if (bigInts) st.setReadBigInts(true);
      if (arrays) st.setReturnArrays(true);
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

  /** Before a statement: the savepoints around it not yet sent (Transactional.begun; synchronous here). */
  private beginning(): void {
    const f = this.frame();
    if (f && !f.begun) void this.begun(f);
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

  /**
   * Read in one synchronous pass, as all(): no other statement runs on the connection meanwhile. The
   * rows are read as arrays and made objects here (rowMaker, cursor.ts): faster than node:sqlite's
   * objects, and no old-space garbage.
   */
  eachBig<T = Row>(sql: string, params: Param[], fn: (row: T) => void): Promise<void> {
    return this.when(() => {
      const statement = this.prepare(sql, true, true);
      const make = rowMaker(statement);
      for (const values of statement.iterate(...params) as IterableIterator<unknown[]>) fn(make(values) as T);
    });
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
      this.beginning();
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
    const hit = this.cache.get(sql, params);
    if (hit !== MISS) return Promise.resolve(hit as T | undefined);
    // Read and kept in one step: no write comes between the read and the keeping.
    return this.when(() => this.cache.keepRow(sql, params, this.prepare(sql).get(...params) as T | undefined));
  }

  cachedAll<T = Row>(sql: string, ...params: Param[]): Promise<T[]> {
    if (this.frame()) return this.all<T>(sql, ...params);
    const hit = this.cache.get(sql, params);
    if (hit !== MISS) return Promise.resolve(hit as T[]);
    return this.when(() => this.cache.keepRows(sql, params, this.prepare(sql).all(...params) as T[]));
  }

  /**
   * A value derived only from cached reads (e.g. a response body), kept until the read cache is
   * emptied, i.e. until anything is written (ReadCache.derived).
   */
  cachedDerived<T>(key: string, compute: () => Promise<T>): Promise<T> {
    if (this.frame()) return compute();
    return this.cache.derived(key, compute);
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

  private invalidate(): void {
    this.cache.clear();
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
