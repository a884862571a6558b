// @ts-check
// The console's pages by path: one table for the router in the browser (app.js, which maps each
// route's name to its page module) and for the service (src/http/static.ts answers index.html for a
// path that matches a route and the console's 404 for any other; src/kernel/links.ts builds every link
// the service writes from these patterns). No DOM here: the service imports this file too.
// A pattern is a path whose `:name` segments each match one id-like segment (letters, digits, "_",
// "-", ".", "~"; at most 200 characters).

/**
 * @typedef {{ name: string, pattern: string, signedIn: boolean }} ConsoleRoute
 * name: the page's key in app.js; signedIn: the page needs a session (without one the console goes
 * to /login?returnTo=<path>).
 */

/** @type {ReadonlyArray<ConsoleRoute>} */
export const CONSOLE_ROUTES = Object.freeze([
  { name: 'home', pattern: '/', signedIn: false },
  { name: 'login', pattern: '/login', signedIn: false },
  { name: 'sso', pattern: '/sso/complete', signedIn: false },
  { name: 'enroll', pattern: '/mfa/enroll', signedIn: false },
  { name: 'invitation', pattern: '/invitations/accept', signedIn: false },
  { name: 'security', pattern: '/security', signedIn: true },
  { name: 'overview', pattern: '/overview', signedIn: true },
  { name: 'job', pattern: '/jobs/:jobId', signedIn: true },
  { name: 'review', pattern: '/reviews/:reviewId', signedIn: true },
  { name: 'task', pattern: '/tasks/:taskId', signedIn: true },
  { name: 'delivery', pattern: '/deliveries/:deliveryId', signedIn: true },
  // The path notifications written before the plural one carry (kept so that their links still open).
  { name: 'delivery', pattern: '/delivery/:deliveryId', signedIn: true },
  { name: 'shot', pattern: '/production/shots/:shotId', signedIn: true },
  { name: 'commercial', pattern: '/organizations/:organizationId/commercial', signedIn: true },
].map((r) => Object.freeze(r)));

const SEGMENT = /^[A-Za-z0-9_.~-]{1,200}$/;

/**
 * The route of a path (no query) and its parameters, or null when no console page has that path.
 * @param {string} pathname
 * @returns {{ route: ConsoleRoute, params: Record<string, string> } | null}
 */
export function matchRoute(pathname) {
  const parts = pathname.split('/');
  for (const route of CONSOLE_ROUTES) {
    const want = route.pattern.split('/');
    if (want.length !== parts.length) continue;
    /** @type {Record<string, string>} */
    const params = {};
    let ok = true;
    for (let i = 0; i < want.length && ok; i++) {
      if (want[i].startsWith(':')) {
        if (SEGMENT.test(parts[i]) && parts[i] !== '.' && parts[i] !== '..') params[want[i].slice(1)] = parts[i];
        else ok = false;
      } else if (want[i] !== parts[i]) ok = false;
    }
    if (ok) return { route, params };
  }
  return null;
}

const BASE = 'http://console.invalid';

/**
 * The route a link opens when it is a plain path of this console ("/jobs/job_1?project=prj_1"), else
 * null: an absolute or protocol-relative URL, a backslash, a control or space character, or a path
 * that is no console page. Every link the service writes passes; a link from elsewhere (a task's
 * linkedPage) is shown as a link only when it does.
 * @param {unknown} link
 * @returns {ConsoleRoute | null}
 */
export function routeOfLink(link) {
  // eslint-disable-next-line no-control-regex -- it refuses control characters on purpose
  if (typeof link !== 'string' || link.length > 2000 || !link.startsWith('/') || link.startsWith('//') || /[\\\s\u0000-\u001f\u007f]/.test(link)) return null;
  const url = new URL(link, BASE);
  if (url.origin !== BASE) return null;
  return matchRoute(url.pathname)?.route ?? null;
}

/**
 * A console path from a pattern and its parameters (each must be id-like), with an optional query.
 * @param {string} pattern
 * @param {Record<string, string>} params
 * @param {Record<string, string | null | undefined>} [query] entries with a null or undefined value are left out
 * @returns {string}
 */
export function consolePath(pattern, params, query = {}) {
  const path = pattern.split('/').map((seg) => {
    if (!seg.startsWith(':')) return seg;
    const value = params[seg.slice(1)];
    if (typeof value !== 'string' || !SEGMENT.test(value)) throw new Error(`consolePath: ${seg} of ${pattern} is not an id: ${String(value)}`);
    return value;
  }).join('/');
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== null && v !== undefined) q.set(k, v);
  const search = q.toString();
  return search ? `${path}?${search}` : path;
}
