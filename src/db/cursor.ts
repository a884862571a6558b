// The snapshot cursor of streamed exports: the rows of one query read at the client's pace from one
// consistent snapshot, on a connection of their own (src/kernel/export-stream.ts streams them), so
// that the export neither holds a read transaction open on the shared connection nor waits for it.
// Each engine opens it its own way (Db.snapshotCursor): SQLite on a private read-only connection to the
// file (openSqliteSnapshot below), PostgreSQL in a REPEATABLE READ transaction on a pooled connection
// (postgres.ts).
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import type { Param, Row } from './values.ts';
import type { RecordSource } from '../kernel/export-stream.ts';

export type RowCursor<R> = RecordSource<R>;

/** What a snapshot cursor reads. */
export interface SnapshotQuery {
  sql: string;
  params: Param[];
  /** Read 64-bit integers as bigint (money stays exact). */
  bigInts?: boolean;
  /** A second read per row, from the same snapshot (and with the same bigInts): its rows are set on the row as `name`. */
  each?: { name: string; sql: string; params: (row: Row) => Param[] };
}

/** A private read-only connection to the SQLite file `dbPath`, in a read transaction (its first read fixes the snapshot). */
function openReader(dbPath: string): DatabaseSync {
  const reader = new DatabaseSync(dbPath, { readOnly: true });
  try {
    reader.exec('PRAGMA busy_timeout = 5000');
    reader.exec('BEGIN');
    return reader;
  } catch (err) {
    reader.close();
    throw err;
  }
}

/**
 * node:sqlite's row objects each leave about 70 bytes in V8's old space (Node 24: get(), all() and
 * iterate() alike; rows read as arrays do not), so a read of a million rows grew the heap by tens of
 * MB before a full collection. The snapshot readers (and SqliteDb.eachBig) therefore read arrays
 * (setReturnArrays) and build the objects here, which die young. Returns what makes one row of
 * `statement`'s columns.
 */
export function rowMaker(statement: StatementSync): (values: unknown[]) => Row {
  statement.setReturnArrays(true);
  const names = statement.columns().map((c) => c.name);
  // As node:sqlite's rows: no prototype when a column is named __proto__ (an assignment would set it).
  const plain = !names.includes('__proto__');
  return (values) => {
    const row: Row = plain ? {} : Object.create(null) as Row;
    for (let i = 0; i < names.length; i++) row[names[i]] = values[i];
    return row;
  };
}

/** The rows of `statement`, one at a time as the caller asks, as objects (rowMaker). */
function objectRows(statement: StatementSync, params: Param[]): IterableIterator<Row> {
  const make = rowMaker(statement);
  const arrays = statement.iterate(...params) as IterableIterator<unknown[]>;
  const rows: IterableIterator<Row> = {
    next() {
      const r = arrays.next();
      return r.done ? { done: true, value: undefined } : { done: false, value: make(r.value) };
    },
    return() {
      arrays.return?.();
      return { done: true, value: undefined };
    },
    [Symbol.iterator]: () => rows,
  };
  return rows;
}

/**
 * The rows of `q` on a private read-only connection to the SQLite file `dbPath`, in one read
 * transaction (one snapshot, opened by the first read). close() must be called; it may be called twice.
 */
export function openSqliteSnapshot<R>(dbPath: string, q: SnapshotQuery): RowCursor<R> {
  const reader = openReader(dbPath);
  try {
    const statement = reader.prepare(q.sql);
    statement.setReadBigInts(q.bigInts ?? false);
    const rows = objectRows(statement, q.params);
    const each = q.each;
    let withEach: Iterator<R> = rows as Iterator<R>;
    if (each) {
      const side = reader.prepare(each.sql);
      side.setReadBigInts(q.bigInts ?? false);
      const sideRow = rowMaker(side);
      withEach = (function* () {
        for (const row of rows) yield { ...row, [each.name]: (side.all(...each.params(row)) as unknown as unknown[][]).map(sideRow) } as R;
      })();
    }
    return {
      rows: withEach,
      close() {
        if (reader.isOpen) reader.close(); // ends the statement and its read transaction
      },
    };
  } catch (err) {
    reader.close();
    throw err;
  }
}

/**
 * Several reads from one consistent snapshot (Db.readSnapshot): for what must see the whole database
 * at one instant, such as a copy of every table (src/db/copy.ts). Every integer is read as bigint.
 */
export interface SnapshotReader {
  /** The rows of `sql` as the caller asks for them; one read at a time. */
  rows<R = Row>(sql: string, ...params: Param[]): AsyncGenerator<R, void, undefined>;
}

/**
 * fn with a reader of the SQLite file `dbPath` on a private read-only connection, in one read
 * transaction: its first statement fixes the snapshot every later read sees. Closed when fn ends.
 */
export async function readSqliteSnapshot<T>(dbPath: string, fn: (read: SnapshotReader) => Promise<T>): Promise<T> {
  const reader = openReader(dbPath);
  try {
    reader.prepare('SELECT count(*) FROM sqlite_master').get(); // the snapshot starts here
    return await fn({
      async* rows<R>(sql: string, ...params: Param[]) {
        const statement = reader.prepare(sql);
        statement.setReadBigInts(true);
        yield* objectRows(statement, params) as IterableIterator<R>;
      },
    });
  } finally {
    reader.close();
  }
}

/** `c` with every row passed through `fn` (on either kind of cursor, without an extra turn on a synchronous one). */
export function mapCursor<A, B>(c: RowCursor<A>, fn: (row: A) => B): RowCursor<B> {
  const inner = c.rows;
  const step = (r: IteratorResult<A>): IteratorResult<B> => (r.done ? { done: true, value: undefined } : { done: false, value: fn(r.value) });
  const next = () => {
    const r = inner.next();
    return r instanceof Promise ? r.then(step) : step(r);
  };
  return { rows: { next } as Iterator<B> | AsyncIterator<B>, close: () => c.close() };
}
