// @ts-check
// The console's router (History API) and frame: a top bar, one <main>, and the page of the path.
// The paths are the route table of routes.js (shared with the service, which answers index.html for
// them); pages live in page-<name>.js and export render(root, url, params); they are imported statically here.
// Each render gets a fresh container inside <main>: when the person navigates away it is detached,
// so a page's timers can stop when `!root.isConnected` (or register a cleanup with onLeave()).
import { api, errorText } from './api.js';
import { h, clear, notice } from './dom.js';
import * as loginPage from './page-login.js';
import * as ssoPage from './page-sso.js';
import * as enrollPage from './page-enroll.js';
import * as securityPage from './page-security.js';
import * as overviewPage from './page-overview.js';
import * as invitationPage from './page-invitation.js';
import * as objectPages from './page-objects.js';
import { matchRoute } from './routes.js';

export const APP_NAME = 'svc console';

/** @typedef {(root: HTMLElement, url: URL, params: Record<string, string>) => Promise<void> | void} Page */

/**
 * Route name (routes.js) -> page. "home" ("/") is not a page: it goes to /overview when signed in,
 * else to /login. A route's signedIn pages need a session: without one the console goes to
 * /login?returnTo=<path>.
 * @type {Record<string, Page>}
 */
export const pages = {
  login: loginPage.render,
  sso: ssoPage.render,
  enroll: enrollPage.render,
  invitation: invitationPage.render,
  security: securityPage.render,
  overview: overviewPage.render,
  job: objectPages.job,
  review: objectPages.review,
  task: objectPages.task,
  delivery: objectPages.delivery,
  shot: objectPages.shot,
  commercial: objectPages.commercial,
};

/** @type {Array<() => void>} */
let leaving = [];
let generation = 0;
/** The path and query last rendered (a change of the fragment alone re-renders nothing). */
let rendered = '';
let firstRender = true;

/**
 * Registers a cleanup (stop a timer, abort a fetch) run when the current page is left.
 * @param {() => void} fn
 */
export function onLeave(fn) {
  leaving.push(fn);
}

/**
 * Goes to a console path ("/overview", "/login?returnTo=%2Fsecurity") without reloading the page.
 * @param {string} path
 * @param {{ replace?: boolean }} [opts] replace: no new history entry (redirects)
 */
export function navigate(path, opts = {}) {
  const url = new URL(path, location.origin);
  if (url.origin !== location.origin) throw new Error(`not a console path: ${path}`);
  const target = url.pathname + url.search + url.hash;
  if (opts.replace) history.replaceState(null, '', target);
  else history.pushState(null, '', target);
  void route();
}

/**
 * The signed-in user ({ id, email, name, ... }) or null; asked of the service on every page change
 * (the session lives in an HttpOnly cookie the script cannot see).
 * @returns {Promise<any>}
 */
export async function currentUser() {
  try {
    const s = await api('GET', '/api/auth/session');
    return s?.user ?? null;
  } catch {
    return null;
  }
}

async function signOut() {
  try {
    await api('POST', '/api/auth/logout');
  } catch {
    // the session may already be gone; the cookie is cleared either way on success
  }
  navigate('/login', { replace: true });
}

/**
 * @param {any} user
 * @param {string} path
 */
function topBar(user, path) {
  const bar = /** @type {HTMLElement} */ (document.getElementById('topbar'));
  /** @param {string} href @param {string} text */
  const link = (href, text) => h('a', { href, 'aria-current': path === href ? 'page' : null }, text);
  bar.replaceChildren(h('a', { class: 'brand', href: user ? '/overview' : '/login' }, APP_NAME));
  if (user) {
    bar.append(h('nav', { class: 'topnav', 'aria-label': 'Main' },
      link('/overview', 'Overview'),
      link('/security', 'Security'),
      h('span', { class: 'whoami' }, user.name || user.email),
      h('button', { type: 'button', class: 'secondary', onclick: signOut }, 'Sign out')));
  }
}

/** Renders the page of location.pathname. */
export async function route() {
  const mine = ++generation;
  for (const fn of leaving.splice(0)) {
    try { fn(); } catch { /* a cleanup never stops navigation */ }
  }
  leaving = [];
  const url = new URL(location.href);
  const path = url.pathname;
  rendered = path + url.search;
  const main = /** @type {HTMLElement} */ (document.getElementById('main'));
  const match = matchRoute(path);
  const name = match?.route.name;
  // The sign-in pages do not ask for the session (no 401 in the console when signed out); "/" and the
  // signed-in pages do. (The invitation page asks itself, once it knows the invitation is valid.)
  const user = !match || name === 'home' || match.route.signedIn ? await currentUser() : null;
  if (mine !== generation) return;
  if (name === 'home') return navigate(user ? '/overview' : '/login', { replace: true });
  if (match?.route.signedIn && !user) {
    return navigate(`/login?returnTo=${encodeURIComponent(path + url.search)}`, { replace: true });
  }
  topBar(user, path);
  const root = h('div', { class: 'page' });
  clear(main).append(root);
  const page = name ? pages[name] : undefined;
  if (!page || !match) {
    root.append(h('h1', {}, 'Page not found'), h('p', {}, h('a', { href: '/' }, 'Go to the console')));
  } else {
    try {
      await page(root, url, match.params);
    } catch (err) {
      if (mine === generation) root.append(notice('error', errorText(err)));
    }
  }
  if (mine !== generation) return;
  const heading = root.querySelector('h1');
  document.title = heading?.textContent ? `${heading.textContent} · ${APP_NAME}` : APP_NAME;
  // After an in-page navigation, move focus to the new page (unless the page focused a field itself).
  const active = document.activeElement;
  if (!firstRender && heading && (!active || active === document.body || !active.isConnected || !root.contains(active))) {
    heading.setAttribute('tabindex', '-1');
    heading.focus();
  }
  firstRender = false;
}

/** Same-origin console links navigate in place; API links (SSO start) and other origins load normally. */
document.addEventListener('click', (ev) => {
  if (ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
  const a = ev.target instanceof Element ? ev.target.closest('a[href]') : null;
  if (!(a instanceof HTMLAnchorElement) || a.target || a.hasAttribute('download')) return;
  const href = a.getAttribute('href') ?? '';
  if (!href.startsWith('/') || href.startsWith('//')) return;
  const url = new URL(href, location.origin);
  if (!matchRoute(url.pathname)) return;
  ev.preventDefault();
  navigate(url.pathname + url.search + url.hash);
});

window.addEventListener('popstate', () => {
  if (location.pathname + location.search !== rendered) void route();
});

void route();
