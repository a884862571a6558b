// One DatabaseSync per thread: WAL, foreign keys, busy timeout, durable commits, a prepared
// statement cache, and tx(fn) that nests as savepoints with after-commit hooks.
import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
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

export class Db {
  readonly raw: DatabaseSync;
  readonly path: string;
  private readonly statements = new Map<string, StatementSync>();
  private depth = 0;
  private pending: Array<() => void> = [];
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
  }

  prepare(sql: string): StatementSync {
    let st = this.statements.get(sql);
    if (!st) {
      st = this.raw.prepare(sql);
      if (this.statements.size >= STATEMENT_CACHE_LIMIT) {
        this.statements.delete(this.statements.keys().next().value!);
      }
      this.statements.set(sql, st);
    }
    return st;
  }

  get<T = Row>(sql: string, ...params: Param[]): T | undefined {
    return this.prepare(sql).get(...params) as T | undefined;
  }

  all<T = Row>(sql: string, ...params: Param[]): T[] {
    return this.prepare(sql).all(...params) as T[];
  }

  run(sql: string, ...params: Param[]): { changes: number; lastInsertRowid: number | bigint } {
    const r = this.prepare(sql).run(...params);
    return { changes: Number(r.changes), lastInsertRowid: r.lastInsertRowid };
  }

  iterate<T = Row>(sql: string, ...params: Param[]): IterableIterator<T> {
    return this.prepare(sql).iterate(...params) as IterableIterator<T>;
  }

  exec(sql: string): void {
    this.raw.exec(sql);
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
    if (!this.raw.isOpen) return;
    this.statements.clear();
    this.raw.close();
  }
}

export function openDb(file: string, opts: OpenOptions = {}): Db {
  return new Db(file, opts);
}
