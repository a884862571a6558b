// The built-in web console (web/ at the repository root): the one HTML page for the console's
// client-side routes, its assets from web/assets/ (a flat folder, strict names), and a 404 for any
// other non-API path, every answer with the console's security headers. No build step: the files
// are served as they are (read again when they change on disk).
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { IncomingHttpHeaders } from 'node:http';
import type { Reply } from './router.ts';
import { methodNotAllowed, notFound } from '../kernel/errors.ts';
import { matchRoute } from '../../web/assets/routes.js';

/** The folder holding index.html and assets/. */
export const WEB_DIR = fileURLToPath(new URL('../../web/', import.meta.url));

/** Whether a path is one of the console's client-side routes (web/assets/routes.js): each answers web/index.html. */
export const isConsolePage = (urlPath: string): boolean => matchRoute(urlPath) !== null;

export const CONTENT_SECURITY_POLICY = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
  + "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/** On every console answer (page, asset, 304, 404). */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
});

const ASSET_NAME = /^[a-z0-9-]+\.(js|css|svg|png)$/;
const TYPES: Record<string, string> = {
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  svg: 'image/svg+xml',
  png: 'image/png',
};

interface Cached { mtimeMs: number; size: number; bytes: Buffer; etag: string }
const cache = new Map<string, Cached>();

/** The file's bytes and strong ETag (sha256), cached until its size or mtime changes; null when missing. */
function load(file: string): Cached | null {
  let st: fs.Stats;
  try {
    st = fs.statSync(file);
  } catch {
    return null;
  }
  if (!st.isFile()) return null;
  const hit = cache.get(file);
  if (hit && hit.mtimeMs === st.mtimeMs && hit.size === st.size) return hit;
  const bytes = fs.readFileSync(file);
  const entry = { mtimeMs: st.mtimeMs, size: st.size, bytes, etag: `"${crypto.createHash('sha256').update(bytes).digest('hex')}"` };
  cache.set(file, entry);
  return entry;
}

/** Whether If-None-Match names this ETag (a list, weak forms and * included). */
function matches(ifNoneMatch: string | string[] | undefined, etag: string): boolean {
  if (typeof ifNoneMatch !== 'string') return false;
  return ifNoneMatch.split(',').some((t) => {
    const tag = t.trim();
    return tag === '*' || tag === etag || tag === `W/${etag}`;
  });
}

const NOT_FOUND_HTML = '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">'
  + '<title>Not found · svc console</title><link rel="stylesheet" href="/assets/app.css"></head>'
  + '<body><main id="main"><h1>Page not found</h1><p><a href="/">Go to the console</a></p></main></body></html>\n';

/**
 * A 404 with the console's headers: a small HTML page when the client asks for HTML (a browser's
 * navigation), else the contract's JSON error body (404 not_found), as for an unknown API path.
 */
function consoleNotFound(urlPath: string, headers: IncomingHttpHeaders): Reply {
  if (wantsHtml(headers)) {
    return { status: 404, raw: NOT_FOUND_HTML, headers: { ...SECURITY_HEADERS, 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' } };
  }
  const err = notFound(`no route for ${urlPath}`);
  return { status: 404, body: err.body(), headers: { ...SECURITY_HEADERS, 'cache-control': 'no-store' } };
}

/** Whether a request asks for HTML (a browser's navigation sends text/html in Accept; fetch() and curl send *\/*). */
export function wantsHtml(headers: IncomingHttpHeaders): boolean {
  return String(headers.accept ?? '').includes('text/html');
}

/** The client delivery page's policy: the console's, plus media from the service itself (its <video> and <audio>). */
export const CLIENT_PAGE_POLICY = `${CONTENT_SECURITY_POLICY}; media-src 'self'`;

/**
 * The client page's policy when its files are answered by redirects to another origin (the signed
 * URLs of an s3 store): pictures and media from that origin too.
 */
export function clientPagePolicy(mediaOrigins: readonly string[] = []): string {
  if (mediaOrigins.length === 0) return CLIENT_PAGE_POLICY;
  const more = mediaOrigins.join(' ');
  return `${CONTENT_SECURITY_POLICY.replace("img-src 'self' data: blob:", `img-src 'self' data: blob: ${more}`)}; media-src 'self' ${more}`;
}

const INVALID_LINK_HTML = '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">'
  + '<meta name="referrer" content="no-referrer"><title>Link not valid · svc</title><link rel="stylesheet" href="/assets/app.css"></head>'
  + '<body><main id="main" class="client-delivery"><h1>This delivery link is not valid</h1>'
  + '<p>It is unknown, was revoked or has expired. Ask the studio that sent it for a new link.</p></main></body></html>\n';

/**
 * The page a client delivery link opens in a browser (web/client-delivery.html, which reads the
 * delivery with its own script), or, for a link that does not open (unknown, revoked, expired),
 * a 401 page saying so; both with the console's headers (its CSP plus media-src 'self', and the
 * origin of the store's signed URLs in `mediaOrigins`), no-store.
 */
export function clientDeliveryPage(valid: boolean, webDir = WEB_DIR, mediaOrigins: readonly string[] = []): Reply<never> {
  const headers = {
    ...SECURITY_HEADERS, 'content-security-policy': clientPagePolicy(mediaOrigins),
    'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', vary: 'accept',
  };
  const page = valid ? load(path.join(webDir, 'client-delivery.html')) : null;
  if (valid && !page) throw notFound('the client delivery page is missing from web/');
  return valid ? { status: 200, raw: page!.bytes, headers } : { status: 401, raw: INVALID_LINK_HTML, headers };
}

/** True for the API's paths (/api, /api/..., /scim, /scim/...): never the console's. */
export function isApiPath(urlPath: string): boolean {
  return /^\/(api|scim)(\/|$)/.test(urlPath);
}

/**
 * The console's answer for a path no API route matched, or null to let the API answer (its 404 or
 * 405): GET/HEAD of a console page is web/index.html (Cache-Control: no-store); GET/HEAD of
 * /assets/<name> is the asset (no-cache + ETag; 304 on If-None-Match) or 404; another method on a
 * console path is 405 (Allow: GET, HEAD, with the security headers); any other GET/HEAD is the console's 404.
 */
export function consoleReply(method: string, urlPath: string, headers: IncomingHttpHeaders, webDir = WEB_DIR): Reply | null {
  if (isApiPath(urlPath)) return null;
  const isAsset = urlPath.startsWith('/assets/');
  if (method !== 'GET' && method !== 'HEAD') {
    if (!isConsolePage(urlPath) && !isAsset) return null;
    // Answered here (not thrown to errorReply) so that the 405 carries the console's headers too.
    const err = methodNotAllowed(['GET', 'HEAD']);
    return { status: 405, body: err.body(), headers: { ...SECURITY_HEADERS, ...err.headers, 'cache-control': 'no-store' } };
  }
  if (isConsolePage(urlPath)) {
    const page = load(path.join(webDir, 'index.html'));
    if (!page) return consoleNotFound(urlPath, headers);
    return { status: 200, raw: page.bytes, headers: { ...SECURITY_HEADERS, 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' } };
  }
  if (isAsset) {
    const name = urlPath.slice('/assets/'.length);
    const m = ASSET_NAME.exec(name);
    const file = m ? load(path.join(webDir, 'assets', name)) : null;
    if (!m || !file) return consoleNotFound(urlPath, headers);
    const cacheHeaders = { ...SECURITY_HEADERS, 'cache-control': 'no-cache', etag: file.etag };
    if (matches(headers['if-none-match'], file.etag)) return { status: 304, headers: cacheHeaders };
    return { status: 200, raw: file.bytes, headers: { ...cacheHeaders, 'content-type': TYPES[m[1]] } };
  }
  return consoleNotFound(urlPath, headers);
}
