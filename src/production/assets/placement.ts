// Putting an uploaded file at its content-addressed key before it is registered, and undoing that
// when the registration fails. The store may be remote and slow, so the object is placed before
// the transaction that registers it, never inside it (a transaction holds only SQL).
//
// Why this is safe:
// - A key names its bytes (assets/<organization>/<xx>/<sha256>), and the bytes of a pending write
//   hash to that very key, so *replacing* what is at the key is never harmful: a copy that is missing,
//   of the wrong size, or referenced by a version that failed verification (corrupt) is replaced; an
//   intact-looking one is reused and this write is only kept until the registration is settled.
// - Only *removing* can harm another version, so a failed registration removes an object only when
//   this upload placed it and no version references the key afterwards. The corrupt-version replace
//   case therefore keeps the object (referenced by the corrupt version): it now holds the right bytes.
// - Two concurrent uploads of the same bytes in one process are serialized per key from placing to
//   settling (keyLock), so the second sees the first one's outcome: its version or a removed object.
// - Across processes (two API processes on one bucket) the lock does not reach: an upload that reused
//   an object keeps its own bytes until its version is committed, then checks that the object is
//   still there and places its own bytes if a failing upload elsewhere removed it meanwhile.
import type { Logger } from '../../kernel/log.ts';
import type { ObjectStore, PendingWrite } from '../../kernel/storage/store.ts';

const busy = new Map<string, Promise<void>>();

/** Runs `fn` once every earlier holder of `key` in this store (in this thread) is done. */
export async function keyLock<T>(store: ObjectStore, key: string, fn: () => Promise<T>): Promise<T> {
  const id = `${store.location}\0${key}`;
  const before = busy.get(id) ?? Promise.resolve();
  let release!: () => void;
  const mine = new Promise<void>((resolve) => { release = resolve; });
  const chain = before.then(() => mine);
  busy.set(id, chain);
  await before;
  try {
    return await fn();
  } finally {
    release();
    if (busy.get(id) === chain) busy.delete(id);
  }
}

export interface Placement {
  /** True when this write's bytes were moved to the key (false: an object already there is reused). */
  readonly placed: boolean;
  /** After a failed registration: removes the object if this write placed it and `referenced()` is false. */
  undo(referenced: () => Promise<boolean>): Promise<void>;
  /** After a committed registration: makes sure the reused object is still there (else places this write). */
  settle(log: Logger): Promise<void>;
}

/**
 * Places `pending` at `key`, or reuses the object there when it has the same size and `replace` is
 * false (`replace`: a version that references the key failed verification). Call in keyLock.
 */
export async function placeAt(store: ObjectStore, pending: PendingWrite, key: string, replace: boolean): Promise<Placement> {
  const there = await store.stat(key);
  const reuse = there !== null && there.size === pending.size && !replace;
  const placed = reuse ? false : await pending.place(key, { replace: there !== null });
  return {
    placed,
    undo: async (referenced) => {
      if (placed && !(await referenced())) await store.delete(key);
    },
    settle: async (log) => {
      if (placed) return;
      try {
        if (!(await store.stat(key))) await pending.place(key);
      } catch (err) {
        log.warn('asset.settle_failed', { key, error: String(err) });
      }
    },
  };
}
