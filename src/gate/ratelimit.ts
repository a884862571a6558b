// Attempt limits, kept in the database (table attempt_limits) so that every process on the database
// file shares them and a restart does not reset them. A limit allows `max` attempts per key (an e-mail
// address, a client address, a client id, a user id) within a sliding window.
//
// An attempt whose check awaits (scrypt) RESERVES its slot first (reserveAttempt): in one write
// transaction that first locks its keys (lockSlots: serialized across connections and processes) the
// key's rows within the window are counted; at the limit the attempt is refused with 429 `rate_limited`
// and Retry-After without being evaluated, else a row is inserted. A concurrent burst therefore gets
// at most `max` evaluations. The outcome then settles the reservation: a failure keeps its row (it counts), a success
// releases it (deletes it) or clears the key (deletes every row of the key), a refusal unrelated to the
// guessed secret releases it. A reservation nobody settles (the process died) counts as a failure
// until the window passes.
// A quick check (a token lookup, a hash comparison: SQL and CPU only, no I/O) runs INSIDE that one write transaction
// instead (checkAttempt): count, check and the failure's row are one step for every process, and a
// success writes nothing (a few tens of microseconds instead of two durable commits).
// Keys are stored as SHA-256, never in clear. Expired rows are pruned.
import { mapSeq } from '../kernel/seq.ts';
import type { Db } from '../db/db.ts';
import { rateLimited } from '../kernel/errors.ts';
import { sha256Hex } from '../kernel/ids.ts';

/** A limit: its bucket name (rows of different buckets never count against each other), size and window. */
export interface AttemptLimit { bucket: string; max: number; windowMs: number }

/** One slot to reserve: a limit and the key it limits. */
export interface Slot { limit: AttemptLimit; key: string }

/** How often (at most) one process deletes every expired row of every key. */
const PRUNE_EVERY_MS = 60_000;
const lastPrune = new WeakMap<Db, number>();

const keyHash = (key: string): string => sha256Hex(key);

/** Seconds until the key has a free slot; 0 when it has one now. Inside the caller's transaction. */
async function waitFor(db: Db, slot: Slot, nowMs: number): Promise<number> {
  const { bucket, max, windowMs } = slot.limit;
  // The max-th most recent attempt in the window: while it is in the window, the key is full.
  const row = await db.get<{ at_ms: number }>(
    `SELECT at_ms FROM attempt_limits WHERE bucket = ? AND key_hash = ? AND at_ms > ?
      ORDER BY at_ms DESC, id DESC LIMIT 1 OFFSET ?`, bucket, keyHash(slot.key), nowMs - windowMs, max - 1);
  return row ? Math.max(1, Math.ceil((row.at_ms + windowMs - nowMs) / 1000)) : 0;
}

/**
 * Locks each slot's (bucket, key) for the rest of the caller's transaction, in one order (sorted) so
 * that two attempts sharing keys never wait for each other crosswise: a count then an insert of one key
 * never interleaves with another's, on SQLite (writers take turns already) as on PostgreSQL (an
 * advisory lock each; the count after it sees what the previous holder committed).
 */
async function lockSlots(db: Db, slots: Slot[]): Promise<void> {
  const keys = [...new Set(slots.map((s) => `attempt_limits:${s.limit.bucket}:${keyHash(s.key)}`))].sort();
  for (const key of keys) await db.lock(key);
}

async function prune(db: Db, nowMs: number): Promise<void> {
  const last = lastPrune.get(db);
  if (last !== undefined && nowMs - last < PRUNE_EVERY_MS && nowMs >= last) return;
  lastPrune.set(db, nowMs);
  await db.run('DELETE FROM attempt_limits WHERE expires_at_ms <= ?', nowMs);
}

/** The rows of one reservation; settle it once the outcome is known. */
export class Reservation {
  private readonly db: Db;
  private readonly rows: Array<{ id: number; slot: Slot }>;

  constructor(db: Db, rows: Array<{ id: number; slot: Slot }>) {
    this.db = db;
    this.rows = rows;
  }

  /** The attempt did not count (a success, or a refusal unrelated to the secret): its slots are freed. */
  async release(): Promise<void> {
    if (this.rows.length === 0) return;
    const ids = this.rows.splice(0).map((r) => r.id);
    await this.db.run(`DELETE FROM attempt_limits WHERE id IN (${ids.map(() => '?').join(', ')})`, ...ids);
  }

  /**
   * A success that forgives the earlier failures of some of its keys (e.g. a correct password clears
   * the e-mail's count): every row of those slots' keys goes, and this reservation's other slots are
   * released.
   */
  async clear(...limits: AttemptLimit[]): Promise<void> {
    await this.db.tx(async () => {
      await clearKeys(this.db, this.rows.map((r) => r.slot), limits);
      await this.release();
    });
  }

  /** The attempt failed: its rows stay and count until the window passes (stated for the reader). */
  fail(): void {
    this.rows.length = 0;
  }
}

async function insertRows(db: Db, slots: Slot[], nowMs: number): Promise<Array<{ id: number; slot: Slot }>> {
  return await mapSeq(slots, async (slot) => ({
    slot,
    id: Number((await db.get<{ id: number | bigint }>('INSERT INTO attempt_limits (bucket, key_hash, at_ms, expires_at_ms) VALUES (?, ?, ?, ?) RETURNING id',
      slot.limit.bucket, keyHash(slot.key), nowMs, nowMs + slot.limit.windowMs))!.id),
  }));
}

async function clearKeys(db: Db, slots: Slot[], limits: AttemptLimit[]): Promise<void> {
  for (const slot of slots) {
    if (limits.includes(slot.limit)) await db.run('DELETE FROM attempt_limits WHERE bucket = ? AND key_hash = ?', slot.limit.bucket, keyHash(slot.key));
  }
}

/**
 * Reserves one slot of every given limit for an attempt, all or none, in one write transaction. When
 * any key is at its limit nothing is written: `onRefused` (e.g. an audit record) runs with the wait in
 * seconds and 429 rate_limited is thrown with Retry-After.
 */
export async function reserveAttempt(db: Db, slots: Slot[], nowMs: number, onRefused?: (retryAfterSeconds: number) => void | Promise<void>): Promise<Reservation> {
  const outcome = await db.tx(async (): Promise<Reservation | number> => {
    await lockSlots(db, slots);
    await prune(db, nowMs);
    const wait = Math.max(0, ...await mapSeq(slots, (s) => waitFor(db, s, nowMs)));
    if (wait > 0) return wait;
    return new Reservation(db, await insertRows(db, slots, nowMs));
  });
  if (typeof outcome === 'number') {
    await onRefused?.(outcome);
    throw rateLimited(outcome);
  }
  return outcome;
}

/** Forgets every counted attempt of one key (a success that forgives earlier failures), in the caller's transaction if any. */
export async function clearAttempts(db: Db, limit: AttemptLimit, key: string): Promise<void> {
  await clearKeys(db, [{ limit, key }], [limit]);
}

export interface CheckOptions {
  /** Runs (e.g. an audit record) with the wait in seconds before 429 is thrown. */
  onRefused?: (retryAfterSeconds: number) => void | Promise<void>;
  /** Limits whose keys a success clears (e.g. the right client secret forgives the client id's failures). */
  clears?: AttemptLimit[];
}

/**
 * Runs a check of a guessable secret under the given limits, in one write transaction: at
 * any limit, 429 rate_limited (after onRefused) and the check does not run; a check that throws is a
 * failure: one row per limit is written and committed with whatever the check wrote (its audit
 * records), then its error is thrown; a check that returns is a success and writes nothing (but
 * `clears`). Nested in a caller's transaction it becomes part of it: call it outside one.
 */
export async function checkAttempt<T>(db: Db, slots: Slot[], nowMs: number, check: () => T | Promise<T>, opts: CheckOptions = {}): Promise<T> {
  const outcome = await db.tx(async (): Promise<{ value: T } | { failed: unknown } | { wait: number }> => {
    await lockSlots(db, slots);
    const wait = Math.max(0, ...await mapSeq(slots, (s) => waitFor(db, s, nowMs)));
    if (wait > 0) return { wait };
    let value: T;
    try {
      value = await check();
    } catch (failed) {
      await prune(db, nowMs);
      await insertRows(db, slots, nowMs);
      return { failed };
    }
    if (opts.clears) await clearKeys(db, slots, opts.clears);
    return { value };
  });
  if ('wait' in outcome) {
    await opts.onRefused?.(outcome.wait);
    throw rateLimited(outcome.wait);
  }
  if ('failed' in outcome) throw outcome.failed;
  return outcome.value;
}
