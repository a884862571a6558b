// The read cache both engines keep for small, hot reads outside transactions (sessions, memberships,
// scope rows) and for values derived from them: SQL -> parameter key -> frozen row(s), and derived
// values under keys of their own. The engines decide when it is emptied (their writes, and commits by
// other processes that their syncCache() notices); this holds the values, the size limit and the
// epoch that tells a read begun before an emptying not to keep what it read.
import type { Param } from './values.ts';

/** Values kept at most; one more empties the cache. */
const READ_CACHE_LIMIT = 20_000;
/** The slot for derived values (no SQL text can equal it). */
const DERIVED = '\u0000derived';

/** What get() answers when nothing is kept (a kept row may be undefined: no such row). */
export const MISS: unique symbol = Symbol('miss');

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

export class ReadCache {
  private readonly cache = new Map<string, Map<string, unknown>>();
  private size = 0;
  /** Bumped by every emptying: a read begun in an earlier epoch is not kept. */
  epoch = 0;

  /** The kept row(s) of `sql` with `params`, or MISS. */
  get(sql: string, params: Param[]): unknown {
    const bySql = this.cache.get(sql);
    if (bySql === undefined) return MISS;
    const key = paramKey(params);
    return bySql.has(key) ? bySql.get(key) : MISS;
  }

  /** Freezes `row` (shared by every caller) and keeps it, unless the cache was emptied since `epoch`. */
  keepRow<T>(sql: string, params: Param[], row: T | undefined, epoch = this.epoch): T | undefined {
    if (row !== undefined) Object.freeze(row);
    if (epoch === this.epoch) this.remember(this.slot(sql), paramKey(params), row);
    return row;
  }

  /** Freezes `rows` and each row, and keeps them unless the cache was emptied since `epoch`. */
  keepRows<T>(sql: string, params: Param[], rows: T[], epoch = this.epoch): T[] {
    for (const r of rows) Object.freeze(r);
    Object.freeze(rows);
    if (epoch === this.epoch) this.remember(this.slot(sql), paramKey(params), rows);
    return rows;
  }

  /**
   * A value derived only from cached reads (e.g. a response body), kept until the cache is emptied.
   * `key` must name everything the value depends on. The promise is what is kept: callers that ask
   * while it is computed share it (after a write, many concurrent requests would otherwise all compute
   * it). A computation that fails is forgotten; one that saw the cache emptied meanwhile is not kept
   * (the emptying dropped it).
   */
  derived<T>(key: string, compute: () => Promise<T>): Promise<T> {
    const derived = this.slot(DERIVED);
    const hit = derived.get(key) as Promise<T> | undefined;
    if (hit) return hit;
    const value = compute();
    this.remember(derived, key, value);
    value.catch(() => {
      if (derived.get(key) === value) derived.delete(key);
    });
    return value;
  }

  /** Empties the cache; reads in flight will not keep what they read. */
  clear(): void {
    this.epoch++;
    if (this.size === 0) return;
    for (const m of this.cache.values()) m.clear();
    this.size = 0;
  }

  private slot(sql: string): Map<string, unknown> {
    let m = this.cache.get(sql);
    if (!m) this.cache.set(sql, (m = new Map<string, unknown>()));
    return m;
  }

  private remember(bySql: Map<string, unknown>, key: string, value: unknown): void {
    if (this.size >= READ_CACHE_LIMIT) this.clear();
    bySql.set(key, value);
    this.size++;
  }
}
