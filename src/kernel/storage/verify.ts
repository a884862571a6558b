// Reading a stored object back against the SHA-256 (and size) it was recorded with, on any driver:
// the service's own hash is the integrity source (S3 gives no whole-object SHA-256 for multipart
// uploads). Successful verifications are remembered by the object's version (VerifiedFiles), so an
// unchanged object is hashed once.
import crypto from 'node:crypto';
import { pipeline } from 'node:stream/promises';
import { AppError } from '../errors.ts';
import type { ObjectStore } from './store.ts';

/** What a stored file holds against the SHA-256 (and size) it was recorded with. */
export type StoredState = 'ok' | 'missing' | 'changed' | 'unsafe' | 'unreadable';

/**
 * Successful verifications remembered by the object's identity (its store, key and version: see
 * StoredObject.version) and the expected hash, the oldest forgotten past `limit`: an object is hashed
 * again only once its version changes.
 */
export class VerifiedFiles {
  private readonly seen = new Map<string, true>();
  readonly limit: number;
  constructor(limit = 256) {
    this.limit = limit;
  }

  has(key: string): boolean {
    if (!this.seen.delete(key)) return false;
    this.seen.set(key, true);
    return true;
  }

  add(key: string): void {
    this.seen.delete(key);
    this.seen.set(key, true);
    while (this.seen.size > this.limit) this.seen.delete(this.seen.keys().next().value!);
  }
}

export interface VerifiedObject {
  state: StoredState;
  /** What was measured (null when nothing could be read); on a cache hit, the recorded values. */
  sha256: string | null;
  size: number | null;
  /** True when a remembered verification answered without hashing. */
  fromCache: boolean;
}

/** SHA-256 and size of a stored object, streamed (404 not_found when missing). */
export async function hashObject(store: ObjectStore, key: string): Promise<{ size: number; sha256: string }> {
  const hash = crypto.createHash('sha256');
  let size = 0;
  await pipeline(await store.read(key), async function (chunks: AsyncIterable<Buffer>) {
    for await (const c of chunks) {
      size += c.length;
      hash.update(c);
    }
  });
  return { size, sha256: hash.digest('hex') };
}

/**
 * Hashes a stored object and compares it with its recorded SHA-256 and, when `expected.size` is given,
 * its size: 'ok', 'changed', 'missing', 'unsafe' (an unsafe key) or 'unreadable'. With `cache`, an
 * object verified before and unchanged since (same version) is not hashed again.
 */
export async function verifyObject(
  store: ObjectStore, key: string, expected: { sha256: string; size?: number }, cache?: VerifiedFiles,
): Promise<VerifiedObject> {
  const none = { sha256: null, size: null, fromCache: false };
  const identity = async (): Promise<{ id: string; size: number } | null> => {
    const st = await store.stat(key);
    return st ? { id: [store.location, key, expected.sha256, expected.size ?? '', st.version].join('\0'), size: st.size } : null;
  };
  let before: { id: string; size: number } | null;
  try {
    before = await identity();
  } catch (err) {
    return { ...none, state: err instanceof AppError && err.status === 422 ? 'unsafe' : 'unreadable' };
  }
  if (!before) return { ...none, state: 'missing' };
  if (cache?.has(before.id)) return { state: 'ok', sha256: expected.sha256, size: before.size, fromCache: true };
  let got: { size: number; sha256: string };
  try {
    got = await hashObject(store, key);
  } catch (err) {
    if (err instanceof AppError && err.status === 404) return { ...none, state: 'missing' };
    if (err instanceof AppError && err.status === 422) return { ...none, state: 'unsafe' };
    return { ...none, state: 'unreadable' };
  }
  const ok = got.sha256 === expected.sha256 && (expected.size === undefined || got.size === expected.size);
  // Remembered only when the object did not change while it was read.
  if (ok && cache && (await identity().catch(() => null))?.id === before.id) cache.add(before.id);
  return { state: ok ? 'ok' : 'changed', sha256: got.sha256, size: got.size, fromCache: false };
}
