// A real browser for the web console's tests (test/web/browser-*.test.ts, one scenario each):
// playwright-core driving the headless Chromium that the dev dependency @sparticuz/chromium brings
// (test/helpers/chromium.ts unpacks it once; no system package needed); SVC_PLAYWRIGHT_CHROMIUM or
// CHROMIUM_PATH name another binary, Debian's /usr/bin/chromium for one. One
// headless browser per test file, a fresh context (cookie jar, storage) per scenario. Contexts reach
// loopback only: any other host is aborted, so a page that would load something from the internet (a
// font, a script) cannot hang or pass by accident. Every console error, page error and refused request
// (a CSP violation shows up as one of those) is kept on the page's `problems` for the test to assert
// empty, less the failed requests the scenario provokes on purpose (expectedFailure()). Screenshots go to
// test-output/screenshots/. Below: the locators and steps the scenario files share.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { TOTP_CONFIG, totpAt } from '../../src/identity/mfa/totp.ts';
import { chromiumLaunch } from './chromium.ts';

export type { Browser, BrowserContext, Page } from 'playwright-core';

// What the functions evaluated inside the page use (this project type-checks for Node, without the DOM library).
declare const document: any;
declare const requestAnimationFrame: (fn: () => void) => number;

/** Where the tests write a screenshot of each page at desktop and phone width (gitignored; docs/console.md names it). */
export const SCREENSHOT_DIR = path.resolve(import.meta.dirname, '../../test-output/screenshots');

export const DESKTOP = { width: 1280, height: 800 };
export const PHONE = { width: 390, height: 844 };

/** Launches the headless browser of a test file (chromiumLaunch() says which); it is closed when `t` ends. */
export async function launchBrowser(t: TestContext): Promise<Browser> {
  const { executablePath, env } = await chromiumLaunch();
  // playwright-core starts Chromium without its sandbox unless asked (chromiumSandbox); CI runs as root.
  const browser = await chromium.launch({ executablePath, env, headless: true });
  t.after(() => browser.close());
  return browser;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** A page that records what went wrong in it (console errors, uncaught errors, failed requests). */
export interface WatchedPage extends Page {
  /** What went wrong, with the origin of the document it happened in. */
  problems: { origin: string; text: string }[];
}

/** A new context (own cookies and storage) and one page in it, at desktop width unless told; closed when `t` ends. */
export async function openPage(browser: Browser, t: TestContext, viewport = DESKTOP): Promise<WatchedPage> {
  const context: BrowserContext = await browser.newContext({ viewport, locale: 'en-US', timezoneId: 'UTC' });
  t.after(() => context.close());
  context.setDefaultTimeout(10_000);
  await context.route((url) => !LOOPBACK.has(url.hostname) && url.protocol !== 'data:' && url.protocol !== 'blob:', (route) => route.abort());
  const page = (await context.newPage()) as WatchedPage;
  page.problems = [];
  const keep = (text: string) => page.problems.push({ origin: new URL(page.url()).origin, text });
  page.on('console', (m) => { if (m.type() === 'error') keep(`console: ${m.text()} (${m.location().url})`); });
  page.on('pageerror', (e) => keep(`page error: ${e.message}`));
  return page;
}

/**
 * The problems the console's documents (at `origin`) met in a page, less the expected ones (`allow`:
 * patterns of messages a scenario provokes on purpose, such as the 401 of a wrong password). Documents
 * of other origins (an identity provider's pages, which want a web font from the internet) are not the console's.
 */
export function problemsOf(page: WatchedPage, origin: string, allow: RegExp[] = []): string[] {
  return page.problems.filter((p) => p.origin === origin && !allow.some((re) => re.test(p.text))).map((p) => p.text);
}

/**
 * Screenshots of the current page at 1280 px and 390 px wide (full page), named `<name>-1280.png` and
 * `<name>-390.png`; at phone width it also checks that nothing scrolls sideways. The viewport is put back.
 */
export async function screenshots(page: Page, name: string): Promise<{ phoneOverflow: number }> {
  fs.mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const before = page.viewportSize() ?? DESKTOP;
  await page.setViewportSize(DESKTOP);
  await settle(page);
  await page.screenshot({ path: path.join(SCREENSHOT_DIR, `${name}-1280.png`), fullPage: true });
  await page.setViewportSize(PHONE);
  await settle(page);
  await page.screenshot({ path: path.join(SCREENSHOT_DIR, `${name}-390.png`), fullPage: true });
  const phoneOverflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  await page.setViewportSize(before);
  return { phoneOverflow };
}

/** Lets a resize re-layout and pending images finish (images that never load are the test's business). */
async function settle(page: Page): Promise<void> {
  await page.evaluate(() => Promise.all([...document.images].filter((img: any) => !img.complete).map((img: any) => new Promise((r) => { img.onload = img.onerror = r; }))));
  await page.evaluate(() => new Promise<void>((r) => requestAnimationFrame(() => requestAnimationFrame(() => r()))));
}

/**
 * The current time in whole seconds, at least `margin` seconds before the next TOTP step boundary
 * (waits when closer), so that a code computed now is still the current one when the server checks it.
 */
export async function steadyNow(margin = 5): Promise<number> {
  const step = TOTP_CONFIG.period;
  const into = (Date.now() / 1000) % step;
  if (into > step - margin) await new Promise((r) => setTimeout(r, (step - into + 0.05) * 1000));
  return Math.floor(Date.now() / 1000);
}

/** The TOTP code of a base32 secret `k` steps from `epochSeconds` (an authenticator app's answer). */
export const totp = (secret: string, epochSeconds: number, k = 0): string => totpAt(secret, epochSeconds + k * TOTP_CONFIG.period);

/** The base32 TOTP secret shown as text on the page (160 bits: 32 characters, possibly grouped by spaces). */
export async function secretShown(page: Page): Promise<string> {
  const text = await page.locator('body').innerText();
  const m = /(?:^|[^A-Z2-7])((?:[A-Z2-7]{4}[ \u00a0-]?){7}[A-Z2-7]{4})(?![A-Z2-7])/.exec(text);
  if (!m) throw new Error(`no TOTP secret shown on the page:\n${text}`);
  return m[1].replace(/[^A-Z2-7]/g, '');
}

/** The session cookie as the browser holds it (HttpOnly, so no script of the page can read it). */
export async function sessionCookie(page: Page) {
  return (await page.context().cookies()).find((c) => c.name === 'svc_session');
}

// ---- What the scenario files (test/web/browser-*.test.ts) share ----

declare const localStorage: Record<string, string>;
declare const sessionStorage: Record<string, string>;

export const RECOVERY_CODE = /^[0-9a-z]{4}(?:-[0-9a-z]{4}){3}$/;
export const QR_ALT = 'QR code for your authenticator app';

/**
 * The console message of one failed request a scenario makes on purpose: `status` from `apiPath` (a path of
 * the service; any query). Chromium logs "Failed to load resource: the server responded with a status of
 * <status> (<text>)" with the request's URL as the message's location (kept by openPage()).
 */
export function expectedFailure(status: number, apiPath: string): RegExp {
  const escaped = apiPath.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`^console: Failed to load resource: the server responded with a status of ${status} \\([^)]*\\) \\(https?://[^/]+${escaped}(?:\\?[^)]*)?\\)$`);
}

export const heading = (page: Page, name: string | RegExp) => page.getByRole('heading', { name, exact: typeof name === 'string' ? true : undefined });
/** The section (or other container) holding a heading: the accessibility contract names sections by their headings. */
export const section = (page: Page, name: string | RegExp) => page.locator('section').filter({ has: heading(page, name) }).last();
export const button = (page: Page, name: string) => page.getByRole('button', { name, exact: true });
export const field = (page: Page, name: string) => page.getByLabel(name, { exact: true });
export const pathOf = (page: Page) => { const u = new URL(page.url()); return u.pathname + u.search; };
export const onPath = (page: Page, p: string) => page.waitForURL((u) => u.pathname === p);

/** Nothing of the session in Web Storage (the cookie is HttpOnly and the only credential the pages hold). */
export async function noStoredToken(page: Page): Promise<void> {
  const stored = await page.evaluate(() => ({ local: { ...localStorage }, session: { ...sessionStorage } }));
  assert.deepEqual(stored, { local: {}, session: {} }, 'no Web Storage is used');
  const cookie = await sessionCookie(page);
  assert.ok(cookie, 'the svc_session cookie is set');
  assert.equal(cookie.httpOnly, true);
  assert.equal(cookie.sameSite, 'Lax');
}

/** Screenshots at both widths (screenshots()), and no sideways scrolling at phone width. */
export async function shots(page: Page, name: string): Promise<void> {
  const { phoneOverflow } = await screenshots(page, name);
  assert.ok(phoneOverflow <= 0, `${name}: no horizontal scrolling at 390 px (overflow ${phoneOverflow} px)`);
}

/** The recovery codes on the page: items of a list shown under the heading "Recovery codes". */
export async function recoveryCodesShown(page: Page): Promise<string[]> {
  await heading(page, 'Recovery codes').waitFor();
  const items = await page.getByRole('listitem').allInnerTexts();
  return items.map((s) => s.trim()).filter((s) => RECOVERY_CODE.test(s));
}

/** Fills the sign-in form and presses "Sign in". */
export async function signIn(page: Page, email: string, password: string): Promise<void> {
  await field(page, 'E-mail').fill(email);
  await field(page, 'Password').fill(password);
  await button(page, 'Sign in').click();
}

/** The enrollment page: QR code and secret, the code, Confirm, recovery codes, Continue. Answers the codes shown. */
export async function enrollOnPage(page: Page, screenshot?: string): Promise<string[]> {
  const img = page.getByRole('img', { name: QR_ALT, exact: true });
  await img.waitFor();
  const secret = await secretShown(page);
  if (screenshot) await shots(page, screenshot);
  await field(page, 'Authentication code').fill(totp(secret, await steadyNow()));
  await button(page, 'Confirm').click();
  const codes = await recoveryCodesShown(page);
  if (screenshot) await shots(page, `${screenshot}-recovery-codes`);
  await button(page, 'Continue').click();
  return codes;
}

/** Polls `check` every 100 ms until it holds; fails with `what` after `timeoutMs`. */
export async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 5_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) assert.fail(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
