// PostgreSQL behind the asynchronous API of db.ts: a pool of connections (the optional package pg),
// statements written once with `?` placeholders (numbered $1, $2... here, outside quotes and
// comments), and transactions on a pooled connection of their own, bound to the async context
// (transactions.ts). MVCC gives the isolation db.ts gets by waiting: a statement from outside a
// transaction runs on another connection, never sees its uncommitted rows and never joins it.
//
// Values come back as db.ts gives them: 64-bit integers and numeric as numbers (refused past 2^53,
// where db.ts would throw too), or as bigint through allBig(); json and jsonb as their text; bytea
// as a Buffer.
//
// The read cache (read-cache.ts, as on SQLite) keeps cached reads outside transactions. Several
// processes share the database, so a unit of work must not see a value older than a commit that
// finished before it began, whichever process made it. syncCache() only asks for a check; the first
// cached read after it awaits one that started after it (units that read nothing cached pay nothing;
// concurrent units share a check in flight when it started late enough). The check is one statement,
// `SELECT pg_current_snapshot()::text`: a commit (of a transaction that wrote, so took an xid) either
// removes its xid from the snapshot's in-progress list or moves xmax past it, so the same text as at
// the previous check means nothing was committed since, and every kept value is current; another
// text empties the cache. The snapshot is the whole cluster's: writes to other databases on the same
// server empty it too. This process's own writes empty it at once (run and exec outside a
// transaction, the end of every transaction), and a read that was in flight when the cache was
// emptied does not keep what it read (ReadCache.epoch). Reads inside a transaction bypass it.
import type { Client, Pool, PoolClient, Query, QueryConfig, QueryResult, QueryResultRow } from 'pg';
import { Transactional, TX_ATTEMPTS } from './transactions.ts';
import { POSTGRES } from './dialect.ts';
import { MISS, ReadCache } from './read-cache.ts';
import { TextWithNul } from './errors.ts';
import { eachRow, fetchBatches, numberPlaceholders, readingTypes, type Parser, type Types } from './pg-sql.ts';
import { stalePlan, StatementTexts } from './pg-statements.ts';
import { listenOn } from './pg-listen.ts';
import { UnsentControl } from './pg-control.ts';
import type { Db, Param, Row } from './db.ts';
import type { RowCursor, SnapshotQuery, SnapshotReader } from './cursor.ts';

export interface PostgresOptions {
  /** postgres://user:password@host:port/database */
  url: string;
  /** Pool size (connections); default 10. */
  max?: number;
  /** Every transaction read-only (default_transaction_read_only): for a database that must only be read. */
  readOnly?: boolean;
  /** The worker's connections: no bitmap scans (see claimSql) and generic plans (docs/architecture.md, "Two engines"). */
  workerPlans?: boolean;
}

/** True when a text parameter holds U+0000, which PostgreSQL cannot store: such a statement is refused unsent (TextWithNul). */
const holdsNul = (params: Param[]) => params.some((p) => typeof p === 'string' && p.includes('\u0000'));

/** A bound value as the driver takes it (bigint as its decimal text). */
const value = (p: Param) => (typeof p === 'bigint' ? p.toString() : p);


export class PostgresDb extends Transactional<PoolClient> implements Db {
  readonly engine = 'postgres' as const;
  readonly dialect = POSTGRES;
  private readonly texts = new StatementTexts();
  private readonly broken = new WeakSet<PoolClient>();
  /** BEGIN and RELEASEs not sent yet (pg-control.ts). */
  private readonly unsent = new UnsentControl<PoolClient>();
  private readonly types: Types;
  private readonly bigTypes: Types;

  private readonly pool: Pool;
  /** A new connection outside the pool (for LISTEN, which keeps its connection). */
  private readonly connect: () => Client;
  /** A new pg query, whose rows are read from its events (eachRow, pg-sql.ts). */
  private readonly newQuery: (config: QueryConfig) => Query<Row>;
  private readonly listeners = new Set<() => Promise<void>>();
  private readonly cache = new ReadCache();
  /** Bumped by every syncCache(): cached reads want a check that started at this generation or later. */
  private wanted = 0;
  /** The generation of the latest check whose answer was taken. */
  private checked = 0;
  /** The check in flight last started, and the generation it started at. */
  private checking: { generation: number; done: Promise<void> } | null = null;
  /** pg_current_snapshot() as the latest check read it. */
  private snapshot: string | null = null;

  constructor(pool: Pool, fallback: (oid: number) => Parser, connect: () => Client, newQuery: (config: QueryConfig) => Query<Row>) {
    super();
    this.pool = pool;
    this.connect = connect;
    this.newQuery = newQuery;
    this.types = readingTypes(false, fallback);
    this.bigTypes = readingTypes(true, fallback);
  }

  statementCount = 0;

  /**
   * Every statement with parameters goes through here: on `on`, or in the calling transaction (after
   * the savepoints around it not yet sent, Transactional.begun), or on the pool. One holding U+0000 in
   * a text is refused unsent (TextWithNul).
   */
  private query<T extends QueryResultRow>(sql: string, params: Param[], types = this.types, on?: Pool | PoolClient, attempt = 1): Promise<QueryResult<T>> {
    if (holdsNul(params)) return Promise.reject(new TextWithNul());
    this.statementCount++;
    const t = this.texts.translate(sql, params.length);
    const q = { text: t.text, name: t.name, values: params.map(value), types };
    const frame = on ? undefined : this.frame();
    const conn: Pool | PoolClient = on ?? frame?.conn ?? this.pool;
    const opening = frame ? this.unsent.opening(frame.conn, this.begun(frame)) : undefined;
    const sent = opening ? opening.then(() => conn.query<T>(q)) : conn.query<T>(q);
    // A stale plan: no name is used again. Outside a transaction a statement is a transaction of its
    // own, and one the server rolled back (retryable(): also a deadlock or a serialization failure)
    // runs again, up to TX_ATTEMPTS times in all; in a transaction the whole transaction runs again.
    return sent.catch((err: unknown) => {
      if (t.name !== undefined && stalePlan(err)) this.texts.forgetNames();
      if (conn !== this.pool || attempt >= TX_ATTEMPTS || !this.retryable(err)) throw err;
      return this.query<T>(sql, params, types, on, attempt + 1);
    });
  }

  async get<T = Row>(sql: string, ...params: Param[]): Promise<T | undefined> {
    return ((await this.query<QueryResultRow>(sql, params)).rows[0] as T | undefined);
  }

  async all<T = Row>(sql: string, ...params: Param[]): Promise<T[]> {
    return (await this.query<QueryResultRow>(sql, params)).rows as T[];
  }

  /** all() with 64-bit integers read as bigint (and integral numeric values too). */
  async allBig<T = Row>(sql: string, ...params: Param[]): Promise<T[]> {
    return (await this.query<QueryResultRow>(sql, params, this.bigTypes)).rows as T[];
  }

  /** Rows from the query's events (eachRow), in the calling transaction (its savepoints sent first) or on a pooled connection; never named. */
  async eachBig<T = Row>(sql: string, params: Param[], fn: (row: T) => void): Promise<void> {
    if (holdsNul(params)) throw new TextWithNul();
    this.statementCount++;
    const frame = this.frame();
    if (frame) await this.unsent.opening(frame.conn, this.begun(frame));
    const client = frame?.conn ?? await this.pool.connect();
    const query = this.newQuery({ text: numberPlaceholders(sql, params.length), values: params.map(value), types: this.bigTypes });
    await eachRow(client, query, fn as (row: Row) => void).finally(() => { if (!frame) client.release(); });
  }

  /** A statement that writes: outside a transaction it has committed (or failed) when it returns, so the read cache is emptied then. */
  async run(sql: string, ...params: Param[]): Promise<{ changes: number }> {
    const inTx = this.frame() !== undefined;
    try {
      return { changes: (await this.query(sql, params)).rowCount ?? 0 };
    } finally {
      if (!inTx) this.cache.clear();
    }
  }

  /** Statements without parameters, several separated by semicolons (a migration). */
  async exec(sql: string): Promise<void> {
    const frame = this.frame();
    const conn = frame?.conn;
    this.statementCount++;
    try {
      const opening = frame ? this.unsent.opening(frame.conn, this.begun(frame)) : undefined;
      if (opening) await opening;
      await (conn ?? this.pool).query(sql);
    } finally {
      if (!conn) this.cache.clear();
    }
  }

  /** The rows of `sql` one at a time; read in one query for now (a cursor comes with the large reads). */
  async *iterate<T = Row>(sql: string, ...params: Param[]): AsyncGenerator<T, void, undefined> {
    yield* await this.all<T>(sql, ...params);
  }

  /** get() through the read cache (see the top of this file); inside a transaction a plain get(). */
  async cachedGet<T = Row>(sql: string, ...params: Param[]): Promise<T | undefined> {
    if (this.frame()) return await this.get<T>(sql, ...params);
    const check = this.fresh();
    if (check) await check;
    const hit = this.cache.get(sql, params);
    if (hit !== MISS) return hit as T | undefined;
    const epoch = this.cache.epoch;
    return this.cache.keepRow(sql, params, await this.get<T>(sql, ...params), epoch);
  }

  async cachedAll<T = Row>(sql: string, ...params: Param[]): Promise<T[]> {
    if (this.frame()) return await this.all<T>(sql, ...params);
    const check = this.fresh();
    if (check) await check;
    const hit = this.cache.get(sql, params);
    if (hit !== MISS) return hit as T[];
    const epoch = this.cache.epoch;
    return this.cache.keepRows(sql, params, await this.all<T>(sql, ...params), epoch);
  }

  /** A value derived only from cached reads, kept until the read cache is emptied (ReadCache.derived). */
  async cachedDerived<T>(key: string, compute: () => Promise<T>): Promise<T> {
    if (this.frame()) return await compute();
    const check = this.fresh();
    if (check) await check;
    return await this.cache.derived(key, compute);
  }

  /** Asks the next cached read of each unit of work to await a check of the cache (see the top of this file). */
  syncCache(): void {
    this.wanted++;
  }

  /**
   * Undefined when a check that started after the latest syncCache() has answered; else that check:
   * the one in flight when it started late enough, or a new one.
   */
  private fresh(): Promise<void> | undefined {
    if (this.checked >= this.wanted) return undefined;
    if (this.checking && this.checking.generation >= this.wanted) return this.checking.done;
    const checking = { generation: this.wanted, done: this.check(this.wanted) };
    this.checking = checking;
    // A check that failed is not shared any more: the next cached read starts another.
    checking.done.catch(() => { if (this.checking === checking) this.checking = null; });
    return checking.done;
  }

  /**
   * Empties the cache when pg_current_snapshot() differs from the previous answer. Checks may overlap:
   * one that answers after a later-started one was taken is ignored (the later one covers its callers).
   */
  private async check(generation: number): Promise<void> {
    const row = (await this.query<{ s: string }>('SELECT pg_current_snapshot()::text AS s', [], this.types, this.pool)).rows[0];
    if (generation <= this.checked) return;
    this.checked = generation;
    if (row.s !== this.snapshot) {
      this.snapshot = row.s;
      this.cache.clear();
    }
  }

  /**
   * 40001 serialization_failure, 40P01 deadlock_detected: the server rolled the transaction back; it
   * may run again. So may one that met a stale plan (its statements are unnamed since).
   */
  protected override retryable(err: unknown): boolean {
    const code = (err as { code?: unknown } | null)?.code;
    return code === '40001' || code === '40P01' || stalePlan(err);
  }

  /** A transaction-scoped advisory lock on the 64-bit hash of `key` (see Db.lock). */
  async lock(key: string): Promise<void> {
    if (!this.frame()) throw new Error(`lock(${key}) outside a transaction`);
    await this.query('SELECT pg_advisory_xact_lock(hashtextextended(?, 0))', [key]);
  }

  /**
   * A cursor (DECLARE ... CURSOR) in a REPEATABLE READ, READ ONLY transaction on a pooled connection of
   * its own, fetched SNAPSHOT_BATCH (pg-sql.ts) rows at a time as the consumer reads; the `each` read runs on
   * the same connection, in the same snapshot. The connection is taken at once; close() ends the
   * transaction and gives it back (also when called before it was taken).
   */
  snapshotCursor<R>(q: SnapshotQuery): RowCursor<R> {
    const types = q.bigInts ? this.bigTypes : this.types;
    let closed = false;
    const opening = (async () => {
      const client = await this.pool.connect();
      try {
        await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
        await this.query(`DECLARE svc_snapshot NO SCROLL CURSOR FOR ${q.sql}`, q.params, types, client);
        return client;
      } catch (err) {
        client.release(true);
        throw err;
      }
    })();
    opening.catch(() => {}); // reported by the first read
    const each = q.each;
    const side = (row: Row, client: PoolClient) => this.query<Row>(each!.sql, each!.params(row), types, client);
    const fetched = (client: PoolClient) => fetchBatches(client, 'svc_snapshot', (text) => this.newQuery({ text, types }), () => closed);
    async function* rows(): AsyncGenerator<R, void, undefined> {
      const client = await opening;
      for await (const row of fetched(client)) {
        if (closed) return;
        if (each) row[each.name] = (await side(row, client)).rows;
        yield row as R;
      }
    }
    return {
      rows: rows(),
      close: () => {
        if (closed) return;
        closed = true;
        opening.then(async (client) => {
          try {
            await client.query('ROLLBACK');
            client.release();
          } catch {
            client.release(true);
          }
        }, () => {});
      },
    };
  }

  /** A REPEATABLE READ, READ ONLY transaction on a pooled connection; each read a cursor fetched SNAPSHOT_BATCH rows at a time. */
  async readSnapshot<T>(fn: (read: SnapshotReader) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    const [query, newQuery, types] = [this.query.bind(this), this.newQuery, this.bigTypes];
    let [cursors, clean] = [0, false];
    try {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY'); // the first read fixes the snapshot
      const result = await fn({
        async* rows<R>(sql: string, ...params: Param[]) {
          const name = `svc_read_${++cursors}`;
          await query(`DECLARE ${name} NO SCROLL CURSOR FOR ${sql}`, params, types, client);
          yield* fetchBatches(client, name, (text) => newQuery({ text, types })) as AsyncGenerator<R>;
          await client.query(`CLOSE ${name}`);
        },
      });
      await client.query('ROLLBACK'); // nothing was written
      clean = true;
      return result;
    } finally {
      client.release(!clean);
    }
  }

  /** A pooled connection; its BEGIN goes with the transaction's first statement (a transaction that runs none sends nothing). */
  protected async begin(): Promise<PoolClient> {
    const client = await this.pool.connect();
    this.unsent.begin(client);
    return client;
  }

  /** COMMIT, unless nothing was sent (no statement ran): then there is nothing to commit. Unsent RELEASEs are left to it. */
  protected async commit(conn: PoolClient): Promise<void> {
    if (this.unsent.idle(conn)) return;
    try {
      await conn.query('COMMIT'); // a COMMIT the server refuses ends the transaction (rolled back)
    } catch (err) {
      this.broken.add(conn);
      throw err;
    }
  }

  /** A ROLLBACK that fails (the connection is gone) leaves the caller's error to be reported, not its own. */
  protected async rollback(conn: PoolClient): Promise<void> {
    if (this.unsent.idle(conn)) return;
    try {
      await conn.query('ROLLBACK');
    } catch {
      this.broken.add(conn);
    }
  }

  /** Back to the pool; a connection whose transaction could not end cleanly is closed instead. The transaction may have written: the read cache is emptied. */
  protected end(conn: PoolClient): void {
    this.unsent.end(conn);
    this.cache.clear();
    conn.release(this.broken.delete(conn));
  }

  /** A RELEASE waits; SAVEPOINT and ROLLBACK TO carry what waits (pg-control.ts). */
  protected savepointStep(conn: PoolClient, step: 'SAVEPOINT' | 'ROLLBACK TO' | 'RELEASE', name: string): Promise<void> | void {
    return this.unsent.step(conn, step, name);
  }

  /** pg_notify: delivered to every listener when the calling transaction commits (at once outside one; never after a rollback). */
  async notify(channel: string, payload: string): Promise<void> {
    await this.query('SELECT pg_notify(?, ?)', [channel, payload]);
  }

  /** LISTEN on a connection of its own (pg-listen.ts): fn gets every payload notified on `channel` by any process. */
  async listen(channel: string, fn: (payload: string) => void): Promise<() => Promise<void>> {
    const { ready, stop } = listenOn(this.connect, channel, fn);
    const stopping = async () => {
      this.listeners.delete(stopping);
      await stop();
    };
    this.listeners.add(stopping); // also when the first attempt fails: it is tried again until close()
    await ready;
    return stopping;
  }

  async close(): Promise<void> {
    for (const stop of [...this.listeners]) await stop();
    await this.pool.end();
  }
}

/** Connects (the optional package pg must be installed) and checks the server answers. */
export async function openPostgres(opts: PostgresOptions): Promise<PostgresDb> {
  let pg: typeof import('pg').default;
  try {
    pg = (await import('pg')).default;
  } catch {
    throw new Error('PostgreSQL needs the optional package pg, which is not installed: npm install pg');
  }
  const settings = [...(opts.readOnly ? ['-c default_transaction_read_only=on'] : []), ...(opts.workerPlans ? ['-c enable_bitmapscan=off', '-c plan_cache_mode=force_generic_plan'] : [])];
  const pool = new pg.Pool({ connectionString: opts.url, max: opts.max ?? 10, ...(settings.length ? { options: settings.join(' ') } : {}) });
  // An idle connection the server drops is replaced by the pool; it must not end the process.
  pool.on('error', () => {});
  const db = new PostgresDb(pool, (oid) => pg.types.getTypeParser(oid) as Parser, () => new pg.Client({ connectionString: opts.url }), (config) => new pg.Query<Row>(config));
  try {
    await db.get('SELECT 1');
  } catch (err) {
    await pool.end();
    throw err;
  }
  return db;
}
