// The web console in a real browser (test/helpers/browser.ts), acceptance 1, single sign-on part: an
// OIDC sign-in against the oidc-provider peer through the /sso/complete landing page (back to returnTo,
// the ticket gone from the address; the flow cookie the browser keeps binds the ticket to it), an invalid
// ticket's message, the MFA code step on the landing page, and MFA enrollment required by the policy
// (after SSO and after a password sign-in); screenshots (acceptance 2).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { grant, login, makeOrg, makeProject, makeUser, makeWorkspace } from '../helpers/factories.ts';
import { startOidcPeer } from '../helpers/oidc-peer.ts';
import {
  button, enrollOnPage, expectedFailure, field, heading, launchBrowser, noStoredToken, onPath, openPage,
  problemsOf, shots, signIn, steadyNow, totp, type Browser,
} from '../helpers/browser.ts';

// What the functions evaluated inside the page use (this project type-checks for Node, without the DOM library).
declare const location: { href: string };

test('OIDC sign-in against oidc-provider through /sso/complete (to returnTo), the MFA step on the landing page, enrollment required by the policy', async (t) => {
  const browser: Browser = await launchBrowser(t);
  const SECRET_REF = 'TEST_WEB_OIDC_CLIENT_SECRET';
  const secret = randomBytes(24).toString('base64url');
  process.env[SECRET_REF] = secret;
  t.after(() => { delete process.env[SECRET_REF]; });
  const s: TestServer = await startTestServer(t);
  const admin = await makeUser(s, { systemAdmin: true });
  const adminToken = await login(s, admin);
  const org = await makeOrg(s);
  const ws = await makeWorkspace(s, org.id);
  await makeProject(s, ws.id, 'Pilot');
  const peer = await startOidcPeer({
    redirectUri: `${s.url}/api/auth/sso/callback`, clientId: 'svc-web-client', clientSecret: secret,
    accounts: {
      alice: { email: 'alice@sso.example.test', name: 'Alice Peer' },
      carol: { email: 'carol@sso.example.test', name: 'Carol Peer' },
    },
  });
  t.after(() => peer.close());
  const created = await s.call('POST', '/api/system/identity/providers', {
    token: adminToken,
    body: {
      kind: 'oidc', name: 'Peer IdP', organizationId: org.id, workspaceId: ws.id, defaultRole: 'producer',
      config: { issuer: peer.issuer, clientId: 'svc-web-client', clientSecretRef: SECRET_REF, scopes: ['openid', 'email', 'profile'] },
    },
  });
  assert.equal(created.status, 201, created.text);
  const providerId = created.body.id as string;

  const page = await openPage(browser, t);
  /** At the provider: its development login form, then its consent page (on its own origin). */
  const atProvider = async (loginName: string) => {
    await page.waitForURL((u) => u.origin === peer.issuer);
    await page.locator('input[name=login]').fill(loginName);
    await page.locator('input[name=password]').fill('any password');
    await page.getByRole('button', { name: 'Sign-in' }).click();
    await page.getByRole('button', { name: 'Continue' }).click();
  };
  /**
   * Leaves the console (a blank page) and then drops the browser's cookies: a console page still
   * loading or polling would otherwise meet 401s it did not provoke.
   */
  const signedOut = async () => {
    await page.goto('about:blank');
    await page.context().clearCookies();
  };
  /** The provider's sign-in link on /login (a link: its href is what starts the flow). */
  const ssoLink = () => page.getByRole('link', { name: 'Sign in with Peer IdP', exact: true });
  const landings: string[] = [];
  page.on('framenavigated', (f) => { if (f === page.mainFrame()) landings.push(f.url()); });

  // A signed-out visit to /security goes to the sign-in page, which offers the provider and keeps returnTo.
  await page.goto(s.url + '/security');
  await page.waitForURL((u) => u.pathname === '/login' && u.searchParams.get('returnTo') === '/security');
  const link = ssoLink();
  await link.waitFor();
  await shots(page, 'login-sso');
  const href = new URL((await link.getAttribute('href'))!, s.url);
  assert.equal(href.pathname, '/api/auth/sso/start');
  assert.equal(href.searchParams.get('providerId'), providerId);
  assert.equal(href.searchParams.get('returnTo'), '/security');
  await link.click();
  await atProvider('alice');
  await onPath(page, '/security');
  await heading(page, 'Security').waitFor();
  assert.equal(new URL(page.url()).hash, '', 'the ticket is gone from the address');
  const landed = landings.find((u) => new URL(u).pathname === '/sso/complete');
  assert.ok(landed, `the browser came back through /sso/complete: ${landings.join(' ')}`);
  assert.equal(await page.evaluate(() => location.href.includes('ticket')), false);
  await noStoredToken(page);
  const alice = await s.db.get<{ id: string }>('SELECT id FROM users WHERE email = ?', 'alice@sso.example.test');
  assert.ok(alice, 'the account was created by the sign-in');
  const sessionAnswer = await page.request.get(s.url + '/api/auth/session');
  assert.equal(sessionAnswer.status(), 200, 'the browser holds a session');
  assert.equal((await sessionAnswer.json()).user.email, 'alice@sso.example.test', 'the session is Alice\'s');

  // A ticket that is not valid: the landing page says so (and offers the way back to sign in).
  const other = await openPage(browser, t);
  await other.goto(s.url + '/sso/complete#ticket=' + 'x'.repeat(43));
  await other.getByRole('alert').waitFor();
  assert.equal(new URL(other.url()).hash, '', 'the ticket is removed from the address at once');
  await shots(other, 'sso-complete-error');
  assert.deepEqual(problemsOf(other, s.url, [expectedFailure(401, '/api/auth/sso/redeem')]), []);

  // Alice turns TOTP on (the browser session's API, with the page's Origin); her next SSO sign-in asks for a code on the landing page.
  const headers = { origin: s.url };
  const setup = await (await page.request.post(s.url + '/api/auth/mfa/setup', { headers })).json();
  const base = await steadyNow();
  assert.equal((await page.request.post(s.url + '/api/auth/mfa/enable', { headers, data: { code: totp(setup.secret, base, -1) } })).status(), 200);
  await signedOut();
  await page.goto(s.url + '/login');
  await ssoLink().click();
  await atProvider('alice');
  await onPath(page, '/sso/complete');
  await field(page, 'Authentication code').waitFor();
  assert.equal(new URL(page.url()).hash, '');
  await shots(page, 'sso-complete');
  await field(page, 'Authentication code').fill(totp(setup.secret, await steadyNow()));
  await button(page, 'Verify').click();
  await onPath(page, '/overview');
  await noStoredToken(page);

  // The policy requires MFA: a new SSO account enrolls on /mfa/enroll (the challenge kept in memory), then continues.
  const policy = await s.call('PATCH', '/api/system/identity/policy', { token: adminToken, body: { mfaRequired: true } });
  assert.equal(policy.status, 200, policy.text);
  await signedOut();
  await page.goto(s.url + '/login');
  await ssoLink().click();
  await atProvider('carol');
  await onPath(page, '/mfa/enroll');
  const enroll = await enrollOnPage(page, 'mfa-enroll');
  assert.equal(enroll.length, 10);
  await onPath(page, '/overview');
  await noStoredToken(page);
  assert.equal((await s.db.get<{ mfa_enabled: number }>('SELECT mfa_enabled FROM users WHERE email = ?', 'carol@sso.example.test'))!.mfa_enabled, 1);

  // The same after a password sign-in.
  const dave = await makeUser(s);
  await grant(s, dave.id, 'organization', org.id, 'org_member');
  await signedOut();
  await page.goto(s.url + '/login');
  await signIn(page, dave.email, dave.password);
  await onPath(page, '/mfa/enroll');
  assert.equal((await enrollOnPage(page)).length, 10);
  await onPath(page, '/overview');
  // Provoked on purpose: the signed-out probe of /security (it asks for the session).
  assert.deepEqual(problemsOf(page, s.url, [expectedFailure(401, '/api/auth/session')]), []);
});
