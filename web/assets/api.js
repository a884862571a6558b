// @ts-check
// The one way the console talks to the service: same-origin fetch with the session cookie (never a
// token in script), JSON in and out, the contract's error body as an ApiError.
import { navigate } from './app.js';

export class ApiError extends Error {
  /**
   * @param {number} status HTTP status (0: the service could not be reached)
   * @param {string} code the contract's error code (e.g. "invalid_credentials")
   * @param {string} message
   * @param {Record<string, unknown> | undefined} [details]
   */
  constructor(status, code, message, details) {
    super(message);
    this.name = 'ApiError';
    /** @type {number} */
    this.status = status;
    /** @type {string} */
    this.code = code;
    /** @type {Record<string, unknown> | undefined} */
    this.details = details;
  }
}

/** Routes whose 401 is an answer for the page itself (a wrong password, no session yet), not a lost session. */
const AUTH_ROUTE = /^\/api\/auth\/(login|session$|sso\/|mfa\/enroll\/)/;

/**
 * Calls the service: `body` (when given) is sent as JSON. Resolves to the parsed JSON answer, or
 * null for 204 (or an empty answer). Throws ApiError with the contract's { error: { code, message,
 * details } }. A 401 on any route but the sign-in ones means the session is gone: the console goes
 * to /login?returnTo=<this page> (and the call still throws).
 * `opts.signal`: a page's AbortSignal (aborted when the page is left): an aborted call sends nothing
 * (or stops waiting), never navigates, and throws ApiError code "aborted" (see isAborted()).
 * `opts.scope`: the scope of this call only (the Svc-Scope header, e.g. "project=prj_..."; the
 * session's current scope is not changed).
 * @param {string} method
 * @param {string} path same-origin path, e.g. "/api/auth/session"
 * @param {unknown} [body]
 * @param {{ signal?: AbortSignal, scope?: string }} [opts]
 * @returns {Promise<any>}
 */
export async function api(method, path, body, opts = {}) {
  const { signal } = opts;
  /** @type {Record<string, string>} */
  const headers = { accept: 'application/json' };
  if (opts.scope) headers['svc-scope'] = opts.scope;
  /** @type {RequestInit} */
  const init = { method, headers, credentials: 'same-origin', cache: 'no-store', redirect: 'error' };
  if (signal) init.signal = signal;
  if (body !== undefined) {
    headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const aborted = () => new ApiError(0, 'aborted', 'The page was left before the service answered.');
  if (signal?.aborted) throw aborted();
  let res;
  let text;
  try {
    res = await fetch(path, init);
    text = res.status === 204 ? '' : await res.text();
  } catch {
    if (signal?.aborted) throw aborted();
    throw new ApiError(0, 'network_error', 'The service could not be reached. Check the connection and try again.');
  }
  if (signal?.aborted) throw aborted();
  if (res.status === 204) return null;
  /** @type {any} */
  let data = null;
  if (text && (res.headers.get('content-type') ?? '').includes('json')) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!res.ok) {
    const e = data && typeof data === 'object' && data.error ? data.error : {};
    const err = new ApiError(res.status, typeof e.code === 'string' ? e.code : `http_${res.status}`,
      typeof e.message === 'string' ? e.message : `${res.status} ${res.statusText}`, e.details);
    if (res.status === 401 && !AUTH_ROUTE.test(path) && location.pathname !== '/login') {
      navigate(`/login?returnTo=${encodeURIComponent(location.pathname + location.search)}`, { replace: true });
    }
    throw err;
  }
  return data;
}

/**
 * A person-readable message for an error thrown by api() (or anything else).
 * @param {unknown} err
 * @returns {string}
 */
export function errorText(err) {
  if (err instanceof ApiError) {
    const msg = err.message.charAt(0).toUpperCase() + err.message.slice(1);
    return /[.!?]$/.test(msg) ? msg : `${msg}.`;
  }
  return 'Something went wrong. Try again.';
}

/**
 * True for the error of a call whose page was left (api() with an aborted signal).
 * @param {unknown} err
 */
export const isAborted = (err) => err instanceof ApiError && err.code === 'aborted';

/**
 * Whether the caller's permissions (of the current scope) include any of `any`.
 * @param {string[]} permissions
 * @param {string[]} any
 */
export const holds = (permissions, any) => any.some((p) => permissions.includes(p));

/**
 * Every item of a paged list route (`?page=&pageSize=`, answering { items, pagination: { total } }),
 * in order; at most `maxPages` pages of `pageSize`.
 * @param {string} path
 * @param {{ pageSize?: number, maxPages?: number, signal?: AbortSignal }} [opts]
 * @returns {Promise<any[]>}
 */
export async function listAll(path, opts = {}) {
  const { pageSize = 200, maxPages = 10, signal } = opts;
  const items = [];
  const sep = path.includes('?') ? '&' : '?';
  for (let page = 1; page <= maxPages; page++) {
    const res = await api('GET', `${path}${sep}page=${page}&pageSize=${pageSize}`, undefined, { signal });
    items.push(...res.items);
    if (items.length >= res.pagination.total || res.items.length === 0) break;
  }
  return items;
}
