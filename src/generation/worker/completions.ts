// The worker's group commit on PostgreSQL, for chat completions: a completion is written at once
// when no other is being written; those that end meanwhile wait and go together in the next
// statement (completeChats: one round trip and one commit for all of them, with the worker's claim
// for the slots they free riding on it). A statement does not block the worker's thread on
// PostgreSQL, so a batch is what ended while the server was writing the one before, not what ended in
// one turn of the event loop as on SQLite (loop.ts). One statement at a time was measured against
// two (docs/benchmarks.md): at concurrency 8 the batches are larger and the server's CPU per job
// less than half of one statement per job.
import type { Db } from '../../db/db.ts';
import type { ClaimRide } from '../jobs/claim.ts';
import { completeChats } from '../jobs/settle.ts';
import type { Completion } from '../jobs/store.ts';

/** A claim riding on a statement of completions; `end` gives back what it reserved, if `taken` did not. */
export interface BatchRide extends ClaimRide { end(): void }

/** A completion waiting for its statement, with what gives back its job's slot when a claim rides on it. */
interface Waiting { chat: Completion; free: () => void; resolve: (released: string[] | null) => void; reject: (err: unknown) => void }

/**
 * The completer of the worker's chat jobs. `ride(n, free)` is the claim for the worker's free slots
 * and the `n` that the completions free (`free` gives those back once the claim has answered), or
 * null when the worker claims nothing now.
 */
export function batchedCompletions(db: Db, ride: (n: number, free: () => void) => BatchRide | null) {
  let waiting: Waiting[] = [];
  let writing = false;

  async function write(batch: Waiting[]): Promise<void> {
    writing = true;
    const r = ride(batch.length, () => { for (const w of batch) w.free(); });
    try {
      const released = await completeChats(db, batch.map((w) => w.chat), r);
      batch.forEach((w, i) => { w.resolve(released[i]); });
    } catch (err) {
      if (batch.length === 1) batch[0].reject(err);
      // One completion that cannot be written must not fail the others: each is tried alone.
      else {
        for (const w of batch) {
          try {
            w.resolve((await completeChats(db, [w.chat]))[0]);
          } catch (one) {
            w.reject(one);
          }
        }
      }
    } finally {
      r?.end();
      writing = false;
      next();
    }
  }

  function next(): void {
    if (waiting.length === 0 || writing) return;
    const batch = waiting;
    waiting = [];
    void write(batch);
  }

  /** Writes a chat completion; `free` gives back its job's slot when a claim rides on it. */
  return (chat: Completion, free: () => void) => new Promise<string[] | null>((resolve, reject) => {
    waiting.push({ chat, free, resolve, reject });
    next();
  });
}
