// Serving a stored object from the ObjectStore: real Content-Type and Content-Length, inline (or
// attachment) file name (RFC 6266 with an RFC 5987 filename*), ETag "<sha256>", If-None-Match -> 304,
// a single Range -> 206 read from the store (416 when unsatisfiable; several ranges are answered with
// the whole file). isDownload() decides which answers count as one download (counters, audit records).
import type { IncomingMessage } from 'node:http';
import type { Reply } from './router.ts';
import { AppError } from '../kernel/errors.ts';
import type { ObjectStore } from '../kernel/storage/store.ts';

/** What serving needs of a stored file (an asset version, a media artifact or one of its frames). */
export interface StoredFile { storage_path: string; content_sha256: string; mime_type: string; file_name: string }

/** The documented answer of a route that serves stored files with storedReply: the file's own media type (one of `types`), 206 for a range. */
export const fileResponse = (types: readonly string[]) =>
  ({ type: types, also: [206], description: 'the file, with its own media type (206: the requested range)' });

export type Disposition = 'inline' | 'attachment';

export function contentDisposition(fileName: string, disposition: Disposition = 'inline'): string {
  const fallback = fileName.replace(/[^\x20-\x7e]|["\\]/g, '_');
  const encoded = encodeURIComponent(fileName).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `${disposition}; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}

function etagMatches(header: string, etag: string): boolean {
  return header.split(',').map((s) => s.trim().replace(/^W\//, '')).some((t) => t === '*' || t === etag);
}

/** A single byte range of a file of `size` bytes: [start, end] inclusive, 'unsatisfiable', or null (ignore the header). */
export function parseRange(header: string, size: number): [number, number] | 'unsatisfiable' | null {
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return null;
  if (m[1] === '') {
    const n = Number(m[2]);
    if (n === 0 || size === 0) return 'unsatisfiable';
    return [Math.max(0, size - n), size - 1];
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (m[2] !== '' && Number(m[2]) < start) return null;
  if (start >= size) return 'unsatisfiable';
  return [start, end];
}

/**
 * The answer serving a stored object: 304 on a matching If-None-Match, 416 for an unsatisfiable range,
 * 206 for one range, else 200, with the bytes streamed from the store (only the requested range is read).
 */
export async function storedReply(req: IncomingMessage, store: ObjectStore, v: StoredFile, disposition: Disposition = 'inline'): Promise<Reply> {
  const etag = `"${v.content_sha256}"`;
  const common: Record<string, string> = {
    etag, 'cache-control': 'private, no-cache', 'accept-ranges': 'bytes',
    'content-disposition': contentDisposition(v.file_name, disposition), 'content-type': v.mime_type,
  };
  const inm = req.headers['if-none-match'];
  const stat = await store.stat(v.storage_path);
  if (!stat) throw new AppError(404, 'not_found', 'the file is registered but not in storage');
  if (typeof inm === 'string' && etagMatches(inm, etag)) {
    const { 'content-type': _type, 'content-disposition': _cd, ...rest } = common;
    return { status: 304, headers: rest };
  }
  const size = stat.size;
  const rangeHeader = req.headers.range;
  const ifRange = req.headers['if-range'];
  const range = typeof rangeHeader === 'string' && (ifRange === undefined || ifRange === etag) ? parseRange(rangeHeader, size) : null;
  if (range === 'unsatisfiable') {
    return { status: 416, headers: { 'content-range': `bytes */${size}`, 'accept-ranges': 'bytes', 'content-type': 'text/plain' }, raw: '' };
  }
  const [start, end] = range ?? [0, size - 1];
  const length = size === 0 ? 0 : end - start + 1;
  const headers: Record<string, string> = { ...common, 'content-length': String(length) };
  if (range) headers['content-range'] = `bytes ${start}-${end}/${size}`;
  const status = range ? 206 : 200;
  if (req.method === 'HEAD' || length === 0) return { status, headers, raw: '' };
  return { status, headers, raw: await store.read(v.storage_path, { start, end }) };
}

/**
 * Whether an answer of storedReply() is one download to count and audit: the whole file (200) or a
 * range from byte 0 (206 "bytes 0-"), never HEAD or 304, so a player's follow-up range requests do
 * not count again.
 */
export function isDownload(req: IncomingMessage, reply: Reply): { counts: boolean; range: string | null } {
  const range = reply.headers?.['content-range'];
  const r = typeof range === 'string' ? range : null;
  const counts = req.method !== 'HEAD' && (reply.status === 200 || (reply.status === 206 && r !== null && r.startsWith('bytes 0-')));
  return { counts, range: r };
}
