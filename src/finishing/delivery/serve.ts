// Serving a delivered file to whoever downloads it (a client delivery link, an export download).
// When the store gives short-lived signed URLs (the s3 driver), a download is answered 302 with
// Location: that URL (carrying the file's Content-Disposition and type) and cache-control: no-store,
// so the bytes go from the bucket to the client without the service; on the local driver (no URLs)
// the service streams them as storedReply() does. The service still answers itself what needs no
// bytes: HEAD (the headers: length, ETag, type, disposition), a matching If-None-Match (304) and an
// unsatisfiable Range (416). A GET with a satisfiable Range is redirected too: the client sends the
// Range again to the URL, which answers 206. Whether it counts as one download is decided as
// isDownload() does for a streamed answer (no Range, or a range from byte 0).
import type { IncomingMessage } from 'node:http';
import { contentDisposition, isDownload, parseRange, storedReply, type Disposition, type StoredFile } from '../../http/content.ts';
import type { Reply } from '../../http/router.ts';
import type { ObjectStore } from '../../kernel/storage/store.ts';

/** How the routes serving downloads document their redirect (the OpenAPI 302 answer). */
export const DOWNLOAD_REDIRECT = 'Only on the s3 storage driver: the download is counted and audited first, then answered 302 (cache-control: no-store) '
  + 'with Location: a short-lived signed URL of the stored object, which answers the same bytes with the same Content-Disposition and Content-Type. '
  + 'A GET with a Range is redirected too (the client sends the Range again to the URL: 206 there); it counts as a download only from byte 0. '
  + 'HEAD (the headers, ETag = SHA-256), a matching If-None-Match (304) and an unsatisfiable Range (416) are answered by the service, never redirected. '
  + 'On the local driver the service streams the bytes and never redirects.';

/** An answer, whether it is one download to count and audit, and the range it covers ("bytes 0-99/1000", or null for all). */
export interface Served { reply: Reply; counts: boolean; range: string | null }

const etagMatches = (header: string, etag: string) =>
  header.split(',').map((s) => s.trim().replace(/^W\//, '')).some((t) => t === '*' || t === etag);

/** The redirect for a GET that the store can answer with a signed URL, or null when the service answers itself. */
async function redirectOf(req: IncomingMessage, store: ObjectStore, file: StoredFile, disposition: Disposition): Promise<Served | null> {
  if (req.method !== 'GET') return null;
  const etag = `"${file.content_sha256}"`;
  const inm = req.headers['if-none-match'];
  if (typeof inm === 'string' && etagMatches(inm, etag)) return null;
  const url = await store.signedUrl(file.storage_path, { contentDisposition: contentDisposition(file.file_name, disposition), contentType: file.mime_type });
  if (url === null) return null;
  const stat = await store.stat(file.storage_path);
  if (!stat) return null;
  const rangeHeader = req.headers.range;
  const ifRange = req.headers['if-range'];
  const range = typeof rangeHeader === 'string' && (ifRange === undefined || ifRange === etag) ? parseRange(rangeHeader, stat.size) : null;
  if (range === 'unsatisfiable') return null;
  return {
    reply: { status: 302, headers: { location: url, 'cache-control': 'no-store', etag, 'accept-ranges': 'bytes' } },
    counts: range === null || range[0] === 0,
    range: range ? `bytes ${range[0]}-${range[1]}/${stat.size}` : null,
  };
}

/** A download of a stored file: a redirect to a signed URL on s3, the bytes on local (see above). */
export async function deliveryReply(req: IncomingMessage, store: ObjectStore, file: StoredFile, disposition: Disposition = 'inline'): Promise<Served> {
  const redirect = await redirectOf(req, store, file, disposition);
  if (redirect) return redirect;
  const reply = await storedReply(req, store, file, disposition);
  return { reply, ...isDownload(req, reply) };
}
