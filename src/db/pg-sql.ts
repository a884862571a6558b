// What PostgresDb (postgres.ts) does to a statement before the driver sends it, and to values after:
// SQLite's `?` and `?N` placeholders numbered $1, $2..., and the type parsers that read 64-bit integers,
// numeric and JSON as db.ts gives them; and rows read from a query's events as they arrive (eachRow),
// as the snapshot cursors fetch them (fetchBatches).
import type { PoolClient, Query, QueryConfig } from 'pg';
import type { Row } from './values.ts';

const INT8 = 20;
const NUMERIC = 1700;
const JSON_OID = 114;
const JSONB = 3802;

function safeNumber(text: string): number {
  const n = Number(text);
  if (Number.isInteger(n) && !Number.isSafeInteger(n)) throw new RangeError(`${text} is too large for a number: read it with allBig()`);
  return n;
}

function bigOrNumber(text: string): bigint | number {
  return /^-?\d+$/.test(text) ? BigInt(text) : Number(text);
}

export type Parser = (text: string) => unknown;
export type Types = NonNullable<QueryConfig['types']>;

function typesWith(own: Record<number, Parser>, fallback: (oid: number) => Parser): Types {
  return { getTypeParser: ((oid: number) => own[oid] ?? fallback(oid)) as Types['getTypeParser'] };
}

/**
 * The parsers of a query: int8 and numeric as numbers (refused past 2^53) or, with `big`, as bigint
 * (numeric with a fraction as a number); json and jsonb as their text; every other type as `fallback`.
 */
export function readingTypes(big: boolean, fallback: (oid: number) => Parser): Types {
  const text = (t: string) => t;
  return big
    ? typesWith({ [INT8]: BigInt, [NUMERIC]: bigOrNumber, [JSON_OID]: text, [JSONB]: text }, fallback)
    : typesWith({ [INT8]: safeNumber, [NUMERIC]: safeNumber, [JSON_OID]: text, [JSONB]: text }, fallback);
}

/**
 * `sql` with its `?` and `?N` placeholders numbered ($1, $2...) as SQLite numbers them; a `?` inside a
 * quoted string or identifier, a comment or a dollar-quoted string is left alone. Throws when the
 * number of parameters differs from `params`.
 */
export function numberPlaceholders(sql: string, params: number): string {
  let out = '';
  let n = 0;
  let i = 0;
  while (i < sql.length) {
    const c = sql[i];
    let end = i + 1;
    if (c === "'" || c === '"') {
      end = sql.indexOf(c, i + 1);
      while (end >= 0 && sql[end + 1] === c) end = sql.indexOf(c, end + 2); // '' and "" escape the quote
      end = end < 0 ? sql.length : end + 1;
    } else if (c === '-' && sql[i + 1] === '-') {
      end = sql.indexOf('\n', i);
      if (end < 0) end = sql.length;
    } else if (c === '/' && sql[i + 1] === '*') {
      end = sql.indexOf('*/', i + 2);
      end = end < 0 ? sql.length : end + 2;
    } else if (c === '$') {
      const tag = /^\$[A-Za-z_]*\$/.exec(sql.slice(i, i + 64))?.[0];
      if (tag) {
        end = sql.indexOf(tag, i + tag.length);
        end = end < 0 ? sql.length : end + tag.length;
      }
    } else if (c === '?') {
      // ?N is SQLite's numbered parameter (it may repeat); a bare ? is the one after the largest so far.
      const digits = /^\d{1,4}/.exec(sql.slice(i + 1, i + 5))?.[0];
      const k = digits ? Number(digits) : ++n;
      if (k > n) n = k;
      out += `$${k}`;
      i += 1 + (digits?.length ?? 0);
      continue;
    }
    out += sql.slice(i, end);
    i = end;
  }
  if (n !== params) throw new Error(`the statement has ${n} parameter(s) and ${params} value(s): ${sql}`);
  return out;
}

/**
 * Runs `query` on `client` and hands each row to `fn` as it arrives (pg's row events); resolves when
 * the query has ended, rejects with its error or the first throw of `fn` (later rows are skipped).
 * Not client.query()'s result: rows that pg gathers in its own result array survive V8's young
 * collections (about two thirds of what a FETCH of usage events allocates; Node 24, pg 8.23), so an
 * export of 1,000,000 usage events grew the process by some 200 MB.
 */
export function eachRow(client: PoolClient, query: Query<Row>, fn: (row: Row) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    let failed: Error | null = null;
    query.on('row', (row: Row) => {
      if (failed !== null) return;
      try {
        fn(row);
      } catch (err) {
        failed = err instanceof Error ? err : new Error(String(err));
      }
    });
    query.on('end', () => { if (failed === null) resolve(); else reject(failed); });
    query.on('error', reject);
    client.query(query);
  });
}

/**
 * Rows a snapshot cursor fetches at a time. The batch in hand is alive at every young collection of
 * V8, and what survives those makes V8 grow its young generation: exporting 1,000,000 usage events
 * grew the server by about 60 MB with 500 rows a fetch, 30 MB with 200 (as on SQLite).
 */
export const SNAPSHOT_BATCH = 200;

/** The rows of the declared cursor `name` on `client`, fetched SNAPSHOT_BATCH at a time (queries of `fetch`) as the caller asks; no fetch once `stopped()`. */
export async function* fetchBatches(client: PoolClient, name: string, fetch: (text: string) => Query<Row>, stopped = () => false): AsyncGenerator<Row, void, undefined> {
  for (let n = SNAPSHOT_BATCH; n === SNAPSHOT_BATCH && !stopped();) {
    const batch: Row[] = [];
    await eachRow(client, fetch(`FETCH ${SNAPSHOT_BATCH} FROM ${name}`), (row) => { batch.push(row); });
    yield* batch;
    n = batch.length;
  }
}
