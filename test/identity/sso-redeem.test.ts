// The one-time ticket of an SSO flow redeemed for a session or an MFA challenge, bound to the browser
// of the flow, and the return path that may only lead back into the front end.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { grant, makeUser } from '../helpers/factories.ts';
import { AppError } from '../../src/kernel/errors.ts';
import { finishSso, TICKET_TTL_MS } from '../../src/identity/sso/finish.ts';
import { safeReturnTo } from '../../src/identity/sso/return-to.ts';
import { TOTP_CONFIG, totpAt } from '../../src/identity/mfa/totp.ts';
import { setUserStatus } from '../../src/identity/users/service.ts';
import { base, FRONTEND, world, oidcBody, samlBody, create, row, fakeReq, ctxAt, audits, ticketOf, FLOW_VALUE, FLOW, CLEAR_FLOW } from './sso-setup.ts';

/** Now in whole seconds, at least `margin` seconds before the next TOTP step (waits when closer), so codes land in the step meant. */
async function steadyNow(margin = 5): Promise<number> {
  const into = (Date.now() / 1000) % TOTP_CONFIG.period;
  if (into > TOTP_CONFIG.period - margin) await new Promise((r) => setTimeout(r, (TOTP_CONFIG.period - into + 0.05) * 1000));
  return Math.floor(Date.now() / 1000);
}

test('redeem: a user with TOTP enabled gets an MFA challenge, not a session; a current code exchanges it for the session', async (t) => {
  const { s, admin, org } = await world(t);
  const p = await create(s, admin, samlBody(org.id));
  const person = await makeUser(s);
  await grant(s, person.id, 'organization', org.id, 'org_member');
  // TOTP enabled the way a person does it: a browser session, set-up, a code of the authenticator.
  const signedIn = await s.call('POST', '/api/auth/login', { body: { email: person.email, password: person.password }, headers: { origin: s.url } });
  assert.equal(signedIn.status, 200, signedIn.text);
  const jar = signedIn.headers.get('set-cookie')!.split(';')[0];
  const browser = (url: string, body?: unknown) => s.call('POST', url, { body, headers: { cookie: jar, origin: s.url } });
  const setup = await browser('/api/auth/mfa/setup');
  assert.equal(setup.status, 200, setup.text);
  const base = await steadyNow();
  const enabled = await browser('/api/auth/mfa/enable', { code: totpAt(setup.body.secret, base - TOTP_CONFIG.period) });
  assert.equal(enabled.status, 200, enabled.text);
  const sessions = async () => (await s.db.get<any>('SELECT count(*) AS n FROM sessions WHERE user_id = ?', person.id))!.n;
  const sessionsBefore = await sessions();

  const url = await finishSso(s.operator(), fakeReq, await row(s, p.id), { subject: 'totp-person', email: person.email, name: null }, '/after-mfa', FLOW.hash);
  const r = await s.call('POST', '/api/auth/sso/redeem', { body: { ticket: ticketOf(url) }, headers: { cookie: FLOW.cookie } });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(Object.keys(r.body).sort(), ['challengeToken', 'expiresAt', 'mfaRequired', 'returnTo']);
  assert.equal(r.body.mfaRequired, true);
  assert.equal(r.body.returnTo, '/after-mfa');
  assert.equal(await sessions(), sessionsBefore, 'no session before the second factor');
  assert.equal((await s.call('POST', '/api/auth/sso/redeem', { body: { ticket: ticketOf(url) }, headers: { cookie: FLOW.cookie } })).status, 401, 'the ticket is used up by the challenge');

  const done = await s.call('POST', '/api/auth/login/mfa', { body: { challengeToken: r.body.challengeToken, code: totpAt(setup.body.secret, base) } });
  assert.equal(done.status, 200, done.text);
  assert.equal(typeof done.body.token, 'string');
  assert.equal(done.body.user.id, person.id);
  assert.equal(await sessions(), sessionsBefore + 1);
  const login = (await audits(s, 'auth.login')).at(-1)!;
  assert.deepEqual([login.metadata.method, login.metadata.mfa, login.actor_user_id], ['saml', 'totp', person.id]);
});

test('redeem: a session in the bound organization with returnTo; replay, expiry and unknown tickets 401; with MFA required an enrollment challenge', async (t) => {
  const { s, admin, org } = await world(t);
  const p = await create(s, admin, oidcBody(org.id));
  const redeem = (ticket: string, headers: Record<string, string> = {}, kind?: string) =>
    s.call('POST', '/api/auth/sso/redeem', { body: { ticket, ...(kind ? { kind } : {}) }, headers: { cookie: FLOW.cookie, ...headers } });

  const url = await finishSso(s.operator(), fakeReq, await row(s, p.id), { subject: 'alice', email: 'alice@example.test', name: 'Alice' }, '/projects?tab=recent', FLOW.hash);
  const r = await redeem(ticketOf(url));
  assert.equal(r.status, 200, r.text);
  assert.equal(typeof r.body.token, 'string');
  assert.equal(r.body.user.email, 'alice@example.test');
  assert.equal(r.body.returnTo, '/projects?tab=recent');
  assert.deepEqual(r.headers.getSetCookie(), [CLEAR_FLOW], 'a Bearer session by default (no session cookie); the flow cookie is cleared');
  const context = await s.call('GET', '/api/context', { token: r.body.token });
  assert.equal(context.status, 200);
  assert.equal(context.body.organization.id, org.id);
  const login = (await audits(s, 'auth.login')).at(-1)!;
  assert.deepEqual([login.metadata.method, login.metadata.providerId, login.actor_user_id], ['oidc', p.id, r.body.user.id]);

  const replay = await redeem(ticketOf(url));
  assert.equal(replay.status, 401);
  assert.equal(replay.body.error.code, 'invalid_ticket');
  assert.equal((await redeem('never-issued')).status, 401);

  const stale = await finishSso(ctxAt(s, Date.now() - TICKET_TTL_MS - 1000), fakeReq, await row(s, p.id), { subject: 'alice', email: null, name: null }, null, FLOW.hash);
  assert.equal((await redeem(ticketOf(stale))).status, 401, 'a ticket older than 60 s');

  // A browser session only for the front end (its Origin), with the HttpOnly cookie.
  const t1 = ticketOf(await finishSso(s.operator(), fakeReq, await row(s, p.id), { subject: 'alice', email: null, name: null }, null, FLOW.hash));
  const notBrowser = await redeem(t1, {}, 'browser');
  assert.equal(notBrowser.status, 422, 'refused before the ticket is used');
  const browser = await redeem(t1, { origin: FRONTEND }, 'browser');
  assert.equal(browser.status, 200, browser.text);
  const cookies = browser.headers.getSetCookie();
  assert.equal(cookies.length, 2, cookies.join('\n'));
  assert.match(cookies[0], /HttpOnly; Secure; SameSite=Lax/);
  assert.equal(cookies[1], CLEAR_FLOW);
  assert.equal(browser.body.returnTo, null);

  // A user suspended between the provider's answer and the redemption.
  const bobUrl = await finishSso(s.operator(), fakeReq, await row(s, p.id), { subject: 'bob', email: 'bob@example.test', name: null }, null, FLOW.hash);
  const bob = (await s.db.get<any>("SELECT id FROM users WHERE email_normalized = 'bob@example.test'"))!;
  await setUserStatus(s.operator(), bob.id, 'suspended');
  const suspended = await redeem(ticketOf(bobUrl));
  assert.equal(suspended.status, 403);
  assert.equal(suspended.body.error.code, 'account_suspended');

  // With MFA required by the policy: no session, an enrollment challenge.
  assert.equal((await s.call('PATCH', '/api/system/identity/policy', { token: admin, body: { mfaRequired: true } })).status, 200);
  const mfaUrl = await finishSso(s.operator(), fakeReq, await row(s, p.id), { subject: 'alice', email: null, name: null }, '/secure', FLOW.hash);
  const challenged = await redeem(ticketOf(mfaUrl));
  assert.equal(challenged.status, 200, challenged.text);
  assert.deepEqual(Object.keys(challenged.body).sort(), ['challengeToken', 'expiresAt', 'mfaEnrollmentRequired', 'returnTo']);
  assert.equal(challenged.body.returnTo, '/secure');
  assert.equal((await redeem(ticketOf(mfaUrl))).status, 401, 'the ticket is used up by the challenge');

  const failures = (await audits(s, 'auth.sso.failed')).map((a) => a.metadata.code);
  assert.deepEqual(failures, ['invalid_ticket', 'invalid_ticket', 'invalid_ticket', 'account_suspended', 'invalid_ticket']);
  const everything = JSON.stringify(await s.db.all('SELECT metadata FROM audit_log')) + s.logs.join('\n');
  for (const secret of [r.body.token, ticketOf(url), browser.body.token]) assert.ok(!everything.includes(secret), 'no token or ticket in the audit log or the server log');
});

test('redeem is bound to the browser of the flow: without its flow cookie, or with another flow\'s, 401 sso_browser_mismatch (audited, the ticket used up); an unbound ticket needs no cookie', async (t) => {
  const { s, admin, org } = await world(t);
  const p = await create(s, admin, oidcBody(org.id));
  const redeem = (ticket: string, cookie?: string) =>
    s.call('POST', '/api/auth/sso/redeem', { body: { ticket }, headers: cookie ? { cookie } : {} });
  const issue = async (browserHash: string | null) =>
    ticketOf(await finishSso(s.operator(), fakeReq, await row(s, p.id), { subject: 'alice', email: 'alice@example.test', name: null }, null, browserHash));
  const used = async (ticket: string) => (await s.db.get<any>('SELECT used_at FROM sso_tickets WHERE ticket_hash = ?', crypto.hash('sha256', ticket, 'hex')))!.used_at;
  const otherFlow = `svc_sso_flow=${crypto.randomBytes(32).toString('base64url')}`;

  for (const cookie of [undefined, otherFlow, `svc_sso_flow=${FLOW.hash}`, `other=${FLOW_VALUE}`]) {
    const ticket = await issue(FLOW.hash);
    const r = await redeem(ticket, cookie);
    assert.equal(r.status, 401, `${cookie}: ${r.text}`);
    assert.equal(r.body.error.code, 'sso_browser_mismatch');
    assert.equal(r.body.token, undefined);
    assert.equal(r.headers.get('set-cookie'), null, 'another browser\'s flow cookie is left alone');
    assert.ok(await used(ticket), 'the ticket is used up');
    const late = await redeem(ticket, FLOW.cookie);
    assert.equal(late.status, 401, late.text);
    assert.equal(late.body.error.code, 'invalid_ticket', 'single use: its own browser cannot redeem it afterwards');
  }
  assert.equal((await s.db.get<any>("SELECT count(*) AS n FROM sessions s JOIN users u ON u.id = s.user_id WHERE u.email_normalized = 'alice@example.test'"))!.n, 0);
  const failed = await audits(s, 'auth.sso.failed');
  assert.deepEqual(failed.map((a) => a.metadata.code), Array.from({ length: 4 }, () => ['sso_browser_mismatch', 'invalid_ticket']).flat());
  assert.equal(failed[0].target_id, p.id);
  assert.match(failed[0].metadata.reason, /did not start this sign-in/);
  assert.ok(!JSON.stringify(failed).includes(FLOW_VALUE) && !JSON.stringify(failed).includes(FLOW.hash), 'neither the cookie nor its hash is audited');

  // The right cookie among others (and a second copy from another path) is found.
  const ok = await redeem(await issue(FLOW.hash), `svc_sso_flow=stale; ${FLOW.cookie}; other=1`);
  assert.equal(ok.status, 200, ok.text);
  assert.deepEqual(ok.headers.getSetCookie(), [CLEAR_FLOW]);
  // A ticket bound to no browser (browser_hash null) is redeemed without a cookie, and no cookie is touched.
  const unbound = await redeem(await issue(null));
  assert.equal(unbound.status, 200, unbound.text);
  assert.equal(unbound.headers.get('set-cookie'), null);
});

test('returnTo: only a relative path of the front end', async (t) => {
  for (const ok of ['/', '/projects/1', '/a?b=c&d=%2F#frag', '/path/with:colon']) assert.equal(safeReturnTo(ok), ok, ok);
  for (const none of [null, undefined, '']) assert.equal(safeReturnTo(none), null);
  const refused = [
    'https://evil.example.test/', 'http:/evil.example.test', '//evil.example.test', '///evil.example.test', '/\\evil.example.test',
    '\\\\evil.example.test', '/path\\to', 'javascript:alert(1)', 'JaVaScRiPt:alert(1)', 'data:text/html,x', 'projects/1', '?x=1',
    '/\t/evil.example.test', '/\n/evil', ' /projects', '/%2f/evil.example.test', '/%5Cevil.example.test', `/${'a'.repeat(2000)}`,
  ];
  for (const bad of refused) {
    assert.throws(() => safeReturnTo(bad), (err: unknown) => err instanceof AppError && err.status === 422 && 'returnTo' in (err.details!.fields as object), JSON.stringify(bad));
  }

  const { s, admin, org } = await world(t);
  const p = await create(s, admin, oidcBody(org.id));
  for (const bad of ['https://evil.example.test/', '//evil.example.test', 'javascript:alert(1)', '/\\evil.example.test']) {
    const r = await s.call('GET', `/api/auth/sso/start?providerId=${p.id}&returnTo=${encodeURIComponent(bad)}`);
    assert.equal(r.status, 422, `${bad}: ${r.text}`);
    assert.equal(r.headers.get('location'), null);
  }
  assert.equal((await s.call('GET', '/api/auth/sso/start?providerId=idp_unknown')).status, 404);
  await s.call('PATCH', `${base}/${p.id}`, { token: admin, body: { status: 'disabled' } });
  assert.equal((await s.call('GET', `/api/auth/sso/start?providerId=${p.id}`)).status, 404, 'a disabled provider cannot be started');
  assert.equal((await s.db.get<any>('SELECT count(*) AS n FROM sso_states'))!.n, 0, 'no flow state for a refused start');
});
