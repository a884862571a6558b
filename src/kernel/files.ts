// Files on disk for the local driver (src/kernel/storage/local.ts): receiving a stream into a new
// file while hashing and counting (limits enforced as the bytes arrive), resolving stored relative
// paths safely (inside the storage root, no "..", not absolute, realpath inside too); and for every
// driver: where an organization keeps a content hash, and the MIME type sniffed from the first bytes.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import v8 from 'node:v8';
import vm from 'node:vm';
import { AppError } from './errors.ts';

// Every chunk read from a socket is a fresh off-heap buffer; V8 reclaims them only when a
// collection runs, which external memory alone triggers late (around 64 MB). A young-generation
// collection every COLLECT_EVERY bytes received keeps an upload's memory flat whatever its size.
const COLLECT_EVERY = 16 * 1024 * 1024;
let minorGc: (() => void) | null | undefined;
function collectGarbage(): void {
  if (minorGc === undefined) {
    try {
      v8.setFlagsFromString('--expose-gc');
      const gc = vm.runInNewContext('gc') as (o?: { type: 'minor' | 'major'; execution?: 'sync' }) => void;
      minorGc = () => gc({ type: 'minor' });
    } catch {
      minorGc = null;
    }
  }
  minorGc?.();
}

export const SNIFF_BYTES = 512;

const ORGANIZATION_SEGMENT = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * assets/<organization id>/<first two hex digits>/<sha256>: where an organization keeps a content
 * hash. Identical bytes are stored once per organization, never shared with another one: whether a
 * file is already there (the upload's `deduplicated`, its quota cost, how long it takes) depends on
 * that organization's own uploads only.
 */
export function assetPathOf(organizationId: string, sha256: string): string {
  if (!ORGANIZATION_SEGMENT.test(organizationId)) throw new Error(`organization id unfit for a storage path: ${JSON.stringify(organizationId)}`);
  return `assets/${organizationId}/${sha256.slice(0, 2)}/${sha256}`;
}

/** assets/<first two hex digits>/<sha256>: where uploads went before files were kept per organization (shared by every organization then). */
export const legacyAssetPathOf = (sha256: string): string => `assets/${sha256.slice(0, 2)}/${sha256}`;

export interface Received { size: number; sha256: string; head: Buffer }

/**
 * A pass-through stage for stream.pipeline that counts, hashes SHA-256 and keeps the first SNIFF_BYTES
 * bytes of what flows through it; `check(total)` runs on every chunk before it goes on (throw to abort).
 * `measured()` is the result once the pipeline is done. Used by every driver's write.
 */
export function measuring(check: (total: number) => void): { stage: (chunks: AsyncIterable<Buffer>) => AsyncGenerator<Buffer>; measured: () => Received } {
  const hash = crypto.createHash('sha256');
  const headParts: Buffer[] = [];
  let headLen = 0;
  let size = 0;
  return {
    async *stage(chunks) {
      for await (const chunk of chunks) {
        if (Math.floor(size / COLLECT_EVERY) !== Math.floor((size + chunk.length) / COLLECT_EVERY)) collectGarbage();
        size += chunk.length;
        check(size);
        hash.update(chunk);
        if (headLen < SNIFF_BYTES) {
          const part = chunk.subarray(0, SNIFF_BYTES - headLen);
          headParts.push(Buffer.from(part));
          headLen += part.length;
        }
        yield chunk;
      }
    },
    measured: () => ({ size, sha256: hash.digest('hex'), head: Buffer.concat(headParts, headLen) }),
  };
}

/**
 * Streams `source` into the new file `tmpPath` (which must not exist) with backpressure, hashing as it
 * goes. `check(total)` runs on every chunk before it is written and throws to abort (413, 409). On any
 * failure the file is removed and the error rethrown.
 */
export async function receiveInto(tmpPath: string, source: Readable | AsyncIterable<Buffer>, check: (total: number) => void): Promise<Received> {
  const m = measuring(check);
  const out = fs.createWriteStream(tmpPath, { flags: 'wx', highWaterMark: 1 << 20, flush: true });
  try {
    await pipeline(source, m.stage, out);
  } catch (err) {
    // The stream may still be opening the file: remove it only once it is closed.
    if (!out.closed) await new Promise<void>((resolve) => out.once('close', () => resolve()));
    fs.rmSync(tmpPath, { force: true });
    throw err;
  }
  return m.measured();
}

export const unsafePath = (reason: string) => new AppError(422, 'unsafe_path', `the stored file path is unsafe: ${reason}`);

/**
 * Why a stored relative path is unsafe (empty, NUL or backslash, absolute, a ".." segment), or null.
 * `plain` also refuses empty and "." segments: paths about to be written, or named by a person.
 */
export function storedPathProblem(rel: string, plain = false): string | null {
  if (!rel || rel.includes('\0') || rel.includes('\\')) return 'empty or invalid characters';
  if (path.isAbsolute(rel) || path.win32.isAbsolute(rel)) return 'absolute';
  const segments = rel.split('/');
  if (segments.includes('..')) return 'parent segment';
  if (plain && segments.some((seg) => seg === '' || seg === '.')) return 'empty or "." segment';
  return null;
}

/** The absolute path of a stored relative path, checked lexically (the file need not exist), or 422 unsafe_path. */
export function storedTarget(storageDir: string, rel: string, plain = false): string {
  const problem = storedPathProblem(rel, plain);
  if (problem) throw unsafePath(problem);
  const root = path.resolve(storageDir);
  const abs = path.resolve(root, rel);
  if (!abs.startsWith(root + path.sep)) throw unsafePath('outside the storage root');
  return abs;
}

/**
 * The absolute path of a stored relative path, or 422 unsafe_path (absolute, "..", NUL, outside the
 * storage root, or a symbolic link leading outside it), or 404 when the file is registered but not on disk.
 */
export function resolveStored(storageDir: string, rel: string): string {
  const abs = storedTarget(storageDir, rel);
  let real: string;
  try {
    real = fs.realpathSync(abs);
  } catch {
    throw new AppError(404, 'not_found', 'the file is registered but not on disk');
  }
  const realRoot = fs.realpathSync(path.resolve(storageDir));
  if (!real.startsWith(realRoot + path.sep)) throw unsafePath('resolves outside the storage root');
  return real;
}

const ascii = (b: Buffer, at: number, s: string) => b.length >= at + s.length && b.toString('latin1', at, at + s.length) === s;

/** Every type sniffMime answers (its return type holds it to this list). */
export const SNIFFED_TYPES = [
  'application/octet-stream', 'image/png', 'image/jpeg', 'image/gif', 'image/webp', 'audio/wav', 'video/quicktime', 'audio/mp4', 'video/mp4',
  'video/webm', 'video/x-matroska', 'audio/ogg', 'audio/flac', 'application/pdf', 'audio/mpeg', 'application/json', 'text/plain; charset=utf-8',
] as const;
export type SniffedType = (typeof SNIFFED_TYPES)[number];

/** Media types without their parameters, once each (the keys of an OpenAPI answer's content). */
export const bareTypes = (types: readonly string[]): string[] => [...new Set(types.map((t) => t.split(';')[0].trim()))];

/** The MIME type from the first bytes of the content (never from the client). */
export function sniffMime(b: Buffer): SniffedType {
  if (b.length === 0) return 'application/octet-stream';
  if (b.length >= 8 && b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'image/png';
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'image/jpeg';
  if (ascii(b, 0, 'GIF87a') || ascii(b, 0, 'GIF89a')) return 'image/gif';
  if (ascii(b, 0, 'RIFF') && ascii(b, 8, 'WEBP')) return 'image/webp';
  if (ascii(b, 0, 'RIFF') && ascii(b, 8, 'WAVE')) return 'audio/wav';
  if (ascii(b, 4, 'ftyp')) {
    const brand = b.toString('latin1', 8, 12);
    if (brand === 'qt  ') return 'video/quicktime';
    if (brand === 'M4A ' || brand === 'M4B ') return 'audio/mp4';
    return 'video/mp4';
  }
  if (b.length >= 4 && b.readUInt32BE(0) === 0x1a45dfa3) return b.includes('webm', 0, 'latin1') ? 'video/webm' : 'video/x-matroska';
  if (ascii(b, 0, 'OggS')) return 'audio/ogg';
  if (ascii(b, 0, 'fLaC')) return 'audio/flac';
  if (ascii(b, 0, '%PDF-')) return 'application/pdf';
  if (ascii(b, 0, 'ID3') || (b.length >= 2 && b[0] === 0xff && (b[1] & 0xe0) === 0xe0 && (b[1] & 0x06) !== 0)) return 'audio/mpeg';
  return textType(b);
}

function textType(b: Buffer): SniffedType {
  for (const c of b) if ((c < 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d && c !== 0x0c) || c === 0x7f) return 'application/octet-stream';
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(b, { stream: true });
  } catch {
    return 'application/octet-stream';
  }
  const t = text.replace(/^\uFEFF/, '').trimStart();
  return t.startsWith('{') || t.startsWith('[') ? 'application/json' : 'text/plain; charset=utf-8';
}
