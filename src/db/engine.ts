// The business database as every service sees it (Db), apart from either engine's class.
import type { Param, Row } from './values.ts';
import type { Dialect } from './dialect.ts';
import type { RowCursor, SnapshotQuery, SnapshotReader } from './cursor.ts';
import type { Hook } from './transactions.ts';

/**
 * The business database as every service sees it, whichever engine runs it: SqliteDb (db.ts, the
 * embedded default) or PostgresDb (postgres.ts). SQL is written once, with `?` or `?N` placeholders;
 * what differs between the engines is behind db.engine and the seams of src/db.
 */
export interface Db {
  readonly engine: 'sqlite' | 'postgres';
  /** The fragments of SQL this engine spells its own way. */
  readonly dialect: Dialect;
  get<T = Row>(sql: string, ...params: Param[]): Promise<T | undefined>;
  all<T = Row>(sql: string, ...params: Param[]): Promise<T[]>;
  /** all() with 64-bit integers read as bigint. */
  allBig<T = Row>(sql: string, ...params: Param[]): Promise<T[]>;
  /**
   * allBig()'s rows handed to `fn` one at a time as they are read, none kept: for folding many rows
   * (an array of them lives through V8's young collections, and what survives those makes V8 grow its
   * young generation). Resolves once every row was handed over; a throw of `fn` stops the read and rejects.
   */
  eachBig<T = Row>(sql: string, params: Param[], fn: (row: T) => void): Promise<void>;
  run(sql: string, ...params: Param[]): Promise<{ changes: number }>;
  /** Statements without parameters, several separated by semicolons. */
  exec(sql: string): Promise<void>;
  iterate<T = Row>(sql: string, ...params: Param[]): AsyncGenerator<T, void, undefined>;
  cachedGet<T = Row>(sql: string, ...params: Param[]): Promise<T | undefined>;
  cachedAll<T = Row>(sql: string, ...params: Param[]): Promise<T[]>;
  cachedDerived<T>(key: string, compute: () => Promise<T>): Promise<T>;
  /** Called once at the start of each unit of work: drops cached reads another process made stale. */
  syncCache(): void;
  /** fn in a transaction (a savepoint when already in one); see transactions.ts. */
  tx<T>(fn: (db: this) => Promise<T> | T): Promise<T>;
  afterCommit(fn: Hook): Promise<void>;
  readonly inTransaction: boolean;
  /**
   * Serializes the rest of the calling transaction with every other transaction that locks `key`,
   * until it ends: for a check then a write that must not interleave (a count against a limit, the
   * next number of a sequence). SQLite's writers are serialized already (BEGIN IMMEDIATE); PostgreSQL
   * takes a transaction-scoped advisory lock, and the statements after it see what the previous
   * holder committed (READ COMMITTED). Only inside tx().
   */
  lock(key: string): Promise<void>;
  /**
   * The rows of `q` read at the consumer's pace from one consistent snapshot, on a connection of
   * the cursor's own (cursor.ts): for streamed exports. Opens at once; close() must be called.
   */
  snapshotCursor<R>(q: SnapshotQuery): RowCursor<R>;
  /**
   * fn with a reader of one consistent snapshot of the whole database (cursor.ts), on a read-only
   * connection of its own that nothing else uses: SQLite's read transaction, PostgreSQL's REPEATABLE
   * READ, READ ONLY transaction. For a copy of every table (copy.ts).
   */
  readSnapshot<T>(fn: (read: SnapshotReader) => Promise<T>): Promise<T>;
  /**
   * Tells every process listening on `channel` (see listen): on PostgreSQL a NOTIFY, delivered when
   * the calling transaction commits (at once outside one, never after a rollback). On SQLite nothing
   * leaves the process: callers keep their in-process path, and other processes their poll.
   */
  notify(channel: string, payload: string): Promise<void>;
  /**
   * fn gets every payload any process notifies on `channel` (PostgreSQL: LISTEN on a connection of
   * its own, opened again when lost); on SQLite never. Resolves, once listening, to the stop function.
   */
  listen(channel: string, fn: (payload: string) => void): Promise<() => Promise<void>>;
  /** Statements run so far by this handle (cached reads that hit run none): for the benchmarks' statements per request. */
  readonly statementCount: number;
  onHookError: (err: unknown) => void;
  close(): void | Promise<void>;
}
