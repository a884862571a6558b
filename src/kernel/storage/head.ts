// The first bytes of a stored object (for sniffMime), on any driver: one ranged read, none for an
// empty object (S3 answers a range on zero bytes with 416).
import { AppError } from '../errors.ts';
import { SNIFF_BYTES } from '../files.ts';
import type { ObjectStore } from './store.ts';

/** The first SNIFF_BYTES bytes of the object at `key` (404 not_found when missing, 422 unsafe_path for an unsafe key). */
export async function readHeadOf(store: ObjectStore, key: string): Promise<Buffer> {
  const st = await store.stat(key);
  if (!st) throw new AppError(404, 'not_found', 'the file is registered but not in storage');
  if (st.size === 0) return Buffer.alloc(0);
  const parts: Buffer[] = [];
  let length = 0;
  for await (const chunk of await store.read(key, { start: 0, end: Math.min(st.size, SNIFF_BYTES) - 1 })) {
    parts.push(chunk as Buffer);
    length += (chunk as Buffer).length;
  }
  return Buffer.concat(parts, length).subarray(0, SNIFF_BYTES);
}
