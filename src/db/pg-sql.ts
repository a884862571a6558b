// What PostgresDb (postgres.ts) does to a statement before the driver sends it, and to values after:
// SQLite's `?` and `?N` placeholders numbered $1, $2..., and the type parsers that read 64-bit integers,
// numeric and JSON as db.ts gives them.
import type { QueryConfig } from 'pg';

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
