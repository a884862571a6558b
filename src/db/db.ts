// One DatabaseSync per thread behind an asynchronous API: WAL, foreign keys, busy timeout, durable
// commits, a prepared statement cache, a read cache, and tx(fn) that nests as savepoints with
// after-commit hooks.
//
// Isolation on one connection. A transaction's statements are bound to it through the async context
// (AsyncLocalStorage): every statement issued while `fn` of `await db.tx(fn)` runs, however deep the
// calls and awaits, runs inside that transaction. Any other statement (another request, the outbox
// dispatcher, a timer) waits until the transaction ends: one connection has one transaction, so a
// stranger's read never sees uncommitted rows and a stranger's write never joins (nor is rolled back
// with) someone else's transaction. Transactions are queued first come, first served; statements
// outside a transaction run at once when none is open. Transactions here do no I/O but SQL, so the
// wait is the length of a few statements.
import { AsyncLocalStorage } from 'node:async_hooks';
import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { openShm, readShmHeader, WAL_HEADER_BYTES, type Shm } from './wal-index.ts';
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

/** An after-commit hook: it may be asynchronous (the transaction's caller waits for it). */
export type Hook = () => void | Promise<void>;

/** An open transaction (depth 1) or savepoint (depth > 1) of one Db, as seen by the async context. */
interface Frame {
  readonly db: Db;
  readonly depth: number;
  open: boolean;
  /** The outermost transaction's hooks, in order of registration. */
  readonly hooks: Hook[];
  /** Serializes this frame's savepoints when branches of one transaction run concurrently. */
  child: Promise<void>;
}

const frames = new AsyncLocalStorage<Frame>();

export class Db {
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

  /** How many prepared statements are cached (statements are prepared once per SQL text). */
  get preparedStatements(): number {
    return this.statements.size;
  }

  /** The cached statement of `sql`; with `bigInts`, a statement of its own that reads INTEGER values as bigint. */
  private prepare(sql: string, bigInts = false): StatementSync {
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
  private frame(): Frame | undefined {
    if (!this.locked) return undefined; // no transaction is open (the cheap test first)
    const f = frames.getStore();
    return f !== undefined && f.db === this && f.open ? f : undefined;
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

  run(sql: string, ...params: Param[]): Promise<{ changes: number; lastInsertRowid: number | bigint }> {
    return this.when(() => {
      this.invalidate();
      const r = this.prepare(sql).run(...params);
      return { changes: Number(r.changes), lastInsertRowid: r.lastInsertRowid };
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

  /** True when the calling async context runs inside a transaction of this Db. */
  get inTransaction(): boolean {
    return this.frame() !== undefined;
  }

  /**
   * Runs fn in a transaction: BEGIN IMMEDIATE at the outside, a SAVEPOINT when the caller already
   * runs in one (an inner failure undoes only the inner work). Every statement fn issues, through any
   * depth of calls and awaits, is bound to the transaction; statements from outside wait for its end.
   * The returned promise settles after the commit and the after-commit hooks.
   */
  async tx<T>(fn: (db: Db) => Promise<T> | T): Promise<T> {
    const parent = this.frame();
    if (parent) return await this.savepoint(parent, fn);
    const wait = this.acquire();
    if (wait) await wait;
    const frame: Frame = { db: this, depth: 1, open: true, hooks: [], child: Promise.resolve() };
    let result: T;
    try {
      this.invalidate();
      this.raw.exec('BEGIN IMMEDIATE');
      try {
        result = await frames.run(frame, () => fn(this));
      } catch (err) {
        this.raw.exec('ROLLBACK');
        throw err;
      }
      this.invalidate();
      try {
        this.raw.exec('COMMIT');
      } catch (err) {
        if (this.raw.isTransaction) this.raw.exec('ROLLBACK');
        throw err;
      }
    } finally {
      frame.open = false;
      this.release();
    }
    if (frame.hooks.length > 0) await frames.exit(() => this.runHooks(frame.hooks));
    return result;
  }

  private async savepoint<T>(parent: Frame, fn: (db: Db) => Promise<T> | T): Promise<T> {
    const before = parent.child;
    let done!: () => void;
    parent.child = new Promise<void>((resolve) => { done = resolve; });
    await before;
    const sp = `sp${parent.depth}`;
    const frame: Frame = { db: this, depth: parent.depth + 1, open: true, hooks: parent.hooks, child: Promise.resolve() };
    const hooksBefore = frame.hooks.length;
    try {
      this.invalidate();
      this.raw.exec(`SAVEPOINT ${sp}`);
      let result: T;
      try {
        result = await frames.run(frame, () => fn(this));
      } catch (err) {
        this.raw.exec(`ROLLBACK TO ${sp}`);
        this.raw.exec(`RELEASE ${sp}`);
        frame.hooks.length = hooksBefore;
        throw err;
      }
      this.raw.exec(`RELEASE ${sp}`);
      return result;
    } finally {
      frame.open = false;
      done();
    }
  }

  /**
   * Runs fn once the outermost transaction commits (the transaction's caller waits for it), or at once
   * outside a transaction. A hook's error is reported to onHookError, never to the committer.
   */
  async afterCommit(fn: Hook): Promise<void> {
    const f = this.frame();
    if (f) f.hooks.push(fn);
    else await this.runHooks([fn]);
  }

  private async runHooks(hooks: Hook[]): Promise<void> {
    for (const h of hooks) {
      try {
        await h();
      } catch (err) {
        this.onHookError(err);
      }
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
