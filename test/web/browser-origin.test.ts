// The web console in a real browser (test/helpers/browser.ts), acceptance 3: Bearer-only clients get
// 403 browser_session_required on MFA management; the pages carry the strict CSP; a cross-origin POST
// carrying the session cookie is refused, from the API client in the browser's context and from a page
// of another origin (same site) in the same browser.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestServer } from '../helpers/server.ts';
import { member } from '../helpers/factories.ts';
import { heading, launchBrowser, onPath, openPage, problemsOf, signIn, type Browser } from '../helpers/browser.ts';

test('acceptance 3: Bearer-only clients get 403 browser_session_required on MFA management; a cross-origin POST with the cookie is refused', async (t) => {
  const browser: Browser = await launchBrowser(t);
  const s = await startTestServer(t);
  const { user, token } = await member(s, 'org_owner');
  for (const [method, p] of [['GET', '/api/auth/mfa'], ['POST', '/api/auth/mfa/setup'], ['POST', '/api/auth/mfa/enable'], ['POST', '/api/auth/mfa/setup/cancel'], ['POST', '/api/auth/mfa/disable']]) {
    const r = await s.call(method, p, { token, body: method === 'POST' ? {} : undefined });
    assert.equal(r.status, 403, `${method} ${p}: ${r.text}`);
    assert.equal(r.body.error.code, 'browser_session_required', `${method} ${p}`);
  }

  const page = await openPage(browser, t);
  const doc = await page.goto(s.url + '/login');
  const headers = doc!.headers();
  assert.match(headers['content-security-policy'] ?? '', /default-src 'none'; script-src 'self'/, 'the page is served with the strict CSP');
  assert.equal(headers['x-frame-options'], 'DENY');
  await signIn(page, user.email, user.password);
  await onPath(page, '/overview');
  await page.goto(s.url + '/');
  await onPath(page, '/overview');

  // The same cookie with a foreign Origin (an API client inside the browser's context: same jar).
  const foreign = await page.request.post(s.url + '/api/auth/mfa/setup', { headers: { origin: 'http://evil.example.test' } });
  assert.equal(foreign.status(), 403, await foreign.text());
  assert.equal((await foreign.json()).error.code, 'origin_forbidden');
  const status = await page.request.get(s.url + '/api/auth/mfa');
  assert.equal(status.status(), 200);
  assert.equal((await status.json()).pendingSetup, false, 'the refused POST changed nothing');

  // A page of another origin (same site: loopback, another port) posting a form to the service: the
  // browser sends the SameSite=Lax cookie with it, the service refuses it by its Origin.
  const evil = http.createServer((_req, res) => {
    res.setHeader('content-type', 'text/html');
    res.end(`<!doctype html><title>other origin</title><form method="post" action="${s.url}/api/auth/logout" enctype="text/plain"><button>Win a prize</button></form>`);
  });
  await new Promise<void>((r) => evil.listen(0, '127.0.0.1', r));
  t.after(() => new Promise<void>((r) => { evil.closeAllConnections(); evil.close(() => r()); }));
  const attacker = await page.context().newPage();
  await attacker.goto(`http://127.0.0.1:${(evil.address() as AddressInfo).port}/`);
  const answer = attacker.waitForResponse((r) => r.url() === `${s.url}/api/auth/logout`);
  const sent = attacker.waitForRequest((r) => r.url() === `${s.url}/api/auth/logout`);
  await attacker.getByRole('button', { name: 'Win a prize' }).click();
  const req = await sent;
  assert.match((await req.allHeaders()).cookie ?? '', /svc_session=/, 'the browser did send the session cookie');
  const refused = await answer;
  assert.equal(refused.status(), 403);
  assert.equal(JSON.parse(await refused.text()).error.code, 'origin_forbidden');
  await attacker.close();
  assert.equal((await page.request.get(s.url + '/api/auth/session')).status(), 200, 'the session was not signed out');
  await page.reload();
  await heading(page, 'Overview').waitFor();
  assert.deepEqual(problemsOf(page, s.url), []);
});
