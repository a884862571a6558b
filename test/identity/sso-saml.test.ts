// SAML 2.0 single sign-on against a samlify identity provider on loopback: the HTTP-Redirect
// AuthnRequest, the SP metadata, the HTTP-POST assertion consumer end to end (relay state preserved,
// account and membership created, ticket redeemed for a session). The browser keeps the service's
// cookies: the flow cookie of the start goes back to the assertion consumer and to redeem, and a post
// or a redemption without it (login CSRF) is refused. Forged responses that must fail closed are in
// test/identity/sso-saml-forged.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sha256Hex } from '../../src/kernel/ids.ts';
import { ATTRIBUTE_NAMES, IDP_CERT, IDP_KEY, certBody, fillResponse, responseValues, signElement } from '../helpers/saml-peer.ts';
import { CERT_REF, PUBLIC_URL, IDP_ENTITY, SP_ENTITY, Browser, type Env, setup, person, start, viaIdp, ticketOf, count, postAcs, refused, failures, forge } from './sso-saml-setup.ts';

test('SAML sign-in end to end against the samlify IdP: AuthnRequest, relay state preserved, member created, ticket redeemed once', async (t) => {
  const e = await setup(t);
  const user = person();
  const { redirect, form, acs } = await viaIdp(e, user, '/projects/p1?tab=shots');

  // The HTTP-Redirect AuthnRequest: deflated, to the IdP's SSO URL, naming this SP and its ACS.
  assert.ok(redirect.location.startsWith(`${e.peer.ssoUrl}?`));
  assert.match(redirect.xml, /^<samlp:AuthnRequest /);
  assert.match(redirect.xml, new RegExp(`Destination="${e.peer.ssoUrl}"`));
  assert.match(redirect.xml, new RegExp(`AssertionConsumerServiceURL="${e.acsUrl}"`));
  assert.match(redirect.xml, new RegExp(`<saml:Issuer>${SP_ENTITY}</saml:Issuer>`));
  assert.match(redirect.id, /^_[0-9a-f]{40}$/);
  assert.equal(e.peer.requests.length, 1);
  // The IdP posted to the ACS the relay state the service issued, unchanged.
  assert.equal(form.action, e.acsUrl);
  assert.equal(form.fields.RelayState, redirect.relayState);
  assert.ok(redirect.relayState.length >= 32);

  // The flow cookie (plain http: SameSite=Lax, not Secure), sent back to the ACS and kept for redeem, whose answer clears it.
  assert.match(redirect.setCookie, /^svc_sso_flow=[A-Za-z0-9_-]{43}; Path=\/api\/auth\/sso; HttpOnly; SameSite=Lax; Max-Age=600$/);

  assert.equal(acs.status, 302, acs.text);
  const ticket = ticketOf(acs.headers.location);
  assert.equal(acs.headers['cache-control'], 'no-store');
  assert.equal(acs.headers['set-cookie'], undefined);
  const flowCookie = e.browser.flowCookie;
  assert.ok(flowCookie, 'kept: redeem requires it');
  assert.equal((await e.s.db.get<{ browser_hash: string }>('SELECT browser_hash FROM sso_tickets WHERE ticket_hash = ?', sha256Hex(ticket)))!.browser_hash,
    sha256Hex(flowCookie), 'the ticket is bound to the flow cookie (its hash only)');

  // The account and memberships in the bound organization and workspace.
  const account = (await e.s.db.get<{ id: string; name: string; password_hash: string | null }>('SELECT * FROM users WHERE email = ?', user.email))!;
  assert.ok(account);
  assert.equal(account.name, user.name);
  assert.equal(account.password_hash, null);
  const memberships = (await e.s.db.all<{ level: string; scope_id: string; role: string }>('SELECT level, scope_id, role FROM memberships WHERE user_id = ? ORDER BY level', account.id))
    .map((m) => ({ ...m }));
  assert.deepEqual(memberships, [
    { level: 'organization', scope_id: e.organizationId, role: 'org_member' },
    { level: 'workspace', scope_id: e.workspaceId, role: 'writer' },
  ]);
  const identity = (await e.s.db.get<{ subject: string; user_id: string }>('SELECT subject, user_id FROM sso_identities WHERE provider_id = ?', e.providerId))!;
  assert.deepEqual({ ...identity }, { subject: user.nameId, user_id: account.id });

  // Redeem: a session, and the return path given at start.
  const redeemed = await e.browser.go('POST', `${PUBLIC_URL}/api/auth/sso/redeem`, { json: { ticket } });
  assert.equal(redeemed.status, 200, redeemed.text);
  assert.equal(redeemed.body.returnTo, '/projects/p1?tab=shots');
  assert.equal(redeemed.body.user.email, user.email);
  assert.equal(redeemed.headers['set-cookie'], 'svc_sso_flow=; Path=/api/auth/sso; HttpOnly; SameSite=Lax; Max-Age=0');
  assert.equal(e.browser.flowCookie, undefined);
  const me = await e.s.call('GET', '/api/auth/session', { token: redeemed.body.token });
  assert.equal(me.status, 200, me.text);
  // The ticket is single use.
  const again = await e.browser.go('POST', `${PUBLIC_URL}/api/auth/sso/redeem`, { json: { ticket } });
  assert.equal(again.status, 401);
  assert.equal(again.body.error.code, 'invalid_ticket');

  // The audit names provider, subject and user, and no secret.
  const verified = (await e.s.db.get<{ metadata: string }>("SELECT metadata FROM audit_log WHERE action = 'auth.sso.verified'"))!;
  assert.deepEqual(JSON.parse(verified.metadata).subject, user.nameId);

  // A second sign-in of the same person finds the same account by the NameID.
  const second = await viaIdp(e, user);
  assert.equal(second.acs.status, 302, second.acs.text);
  assert.equal(await count(e.s, 'users'), 2);
  const r2 = await e.browser.go('POST', `${PUBLIC_URL}/api/auth/sso/redeem`, { json: { ticket: ticketOf(second.acs.headers.location) } });
  assert.equal(r2.body.user.id, account.id);
  assert.equal(r2.body.returnTo, null);

  // Acceptance 4: no answer of the service (but the redeem answers, whose job it is), no URL, no log
  // line, no audit record carries a session token or the certificate body.
  const tokens = [redeemed.body.token, r2.body.token];
  const body = certBody(IDP_CERT);
  const ours = e.browser.seen.filter((x) => x.url.startsWith(PUBLIC_URL) && !x.url.endsWith('/api/auth/sso/redeem'));
  assert.equal(ours.length, 5); // metadata, and start + ACS twice
  const haystacks = [
    ...ours.map((x) => `${x.url}\n${JSON.stringify(x.headers)}\n${x.text}`),
    ...e.browser.seen.map((x) => x.url),
    ...e.s.logs,
    ...(await e.s.db.all<{ action: string; target_id: string | null; metadata: string; actor_name: string | null }>('SELECT action, target_id, metadata, actor_name FROM audit_log'))
      .map((a) => JSON.stringify([a.action, a.target_id, a.metadata, a.actor_name])),
  ];
  for (const h of haystacks) {
    for (const tk of tokens) assert.ok(!h.includes(tk), 'no session token');
    assert.ok(!h.includes(body) && !h.includes(body.slice(0, 64)), 'no certificate body');
    assert.ok(!h.includes('BEGIN CERTIFICATE'));
  }
});

test('SP metadata names the entity id and the HTTP-POST assertion consumer; unknown provider 404', async (t) => {
  const e = await setup(t);
  const r = await e.browser.go('GET', `${PUBLIC_URL}/api/auth/sso/saml/${e.providerId}/metadata`);
  assert.equal(r.status, 200);
  assert.match(r.headers['content-type'], /^application\/samlmetadata\+xml/);
  assert.match(r.text, new RegExp(`entityID="${SP_ENTITY}"`));
  assert.match(r.text, new RegExp(`Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${e.acsUrl}"`));
  assert.match(r.text, /WantAssertionsSigned="true"/);
  assert.equal((await e.browser.go('GET', `${PUBLIC_URL}/api/auth/sso/saml/idp_nope/metadata`)).status, 404);
  // A disabled provider has no metadata either (404), until enabled again.
  const setStatus = async (status: string) => {
    const p = await e.s.call('PATCH', `/api/system/identity/providers/${e.providerId}`, { token: e.adminToken, body: { status } });
    assert.equal(p.status, 200, p.text);
  };
  await setStatus('disabled');
  const off = await e.browser.go('GET', `${PUBLIC_URL}/api/auth/sso/saml/${e.providerId}/metadata`);
  assert.equal(off.status, 404, off.text);
  assert.doesNotMatch(off.text, /EntityDescriptor/);
  await setStatus('active');
  assert.equal((await e.browser.go('GET', `${PUBLIC_URL}/api/auth/sso/saml/${e.providerId}/metadata`)).status, 200);
});

test('login CSRF: an ACS post without the flow cookie, or with another flow\'s, is 401 sso_browser_mismatch; the request is used up all the same', async (t) => {
  const e = await setup(t);
  const code = async () => (await failures(e)).at(-1)!.metadata.code;
  // A genuine response for a request started in e.browser, posted by a browser without any flow cookie.
  const stranger = new Browser(e.s);
  const f = await forge(e);
  await refused(e, () => postAcs(e, f.signed, f.pending.relayState, false, stranger), 401, /browser that did not start this sign-in/);
  assert.equal(await code(), 'sso_browser_mismatch');
  // Single use either way: the browser of the flow, posting the same response, finds the request gone.
  await refused(e, () => postAcs(e, f.signed, f.pending.relayState), 401, /InResponseTo/);

  // Another flow's cookie: flow G started in e.browser, flow H in `other`; G's response posted by `other`.
  const other = new Browser(e.s);
  const g = await forge(e);
  const h = await forge(e, { browser: other });
  assert.notEqual(other.flowCookie, e.browser.flowCookie);
  await refused(e, () => postAcs(e, g.signed, g.pending.relayState, false, other), 401, /browser that did not start this sign-in/);
  assert.equal(await code(), 'sso_browser_mismatch');
  await refused(e, () => postAcs(e, g.signed, g.pending.relayState), 401, /InResponseTo/);
  // The refusal left `other`'s own flow alone: H completes there, and redeeming its ticket there clears the cookie.
  assert.ok(other.flowCookie);
  const ok = await postAcs(e, h.signed, h.pending.relayState, false, other);
  assert.equal(ok.status, 302, ok.text);
  assert.ok(other.flowCookie, 'kept until redeem');
  const redeemed = await other.go('POST', `${e.base}/api/auth/sso/redeem`, { json: { ticket: ticketOf(ok.headers.location) } });
  assert.equal(redeemed.status, 200, redeemed.text);
  assert.equal(other.flowCookie, undefined);
});

test('login CSRF through the landing page: a ticket redeemed by another browser (no flow cookie, or another flow\'s) is 401 sso_browser_mismatch and used up; its own browser then gets 401 invalid_ticket', async (t) => {
  const e = await setup(t);
  const MISMATCH = /did not start this sign-in|not started in this browser/;
  const redeem = (b: Browser, ticket: string) => b.go('POST', `${e.base}/api/auth/sso/redeem`, { json: { ticket } });
  // The attacker signs in with their own browser (e.browser) and sends the victim /sso/complete#ticket=...
  const first = await viaIdp(e, person());
  assert.equal(first.acs.status, 302, first.acs.text);
  const ticket = ticketOf(first.acs.headers.location);
  const victim = new Browser(e.s);
  const r = await refused(e, () => redeem(victim, ticket), 401, MISMATCH);
  assert.equal(r.body.error.code, 'sso_browser_mismatch');
  assert.equal(r.body.token, undefined);
  assert.equal((await failures(e)).at(-1)!.metadata.code, 'sso_browser_mismatch');
  assert.ok((await e.s.db.get<{ used_at: string | null }>('SELECT used_at FROM sso_tickets WHERE ticket_hash = ?', sha256Hex(ticket)))!.used_at, 'used up');
  const late = await redeem(e.browser, ticket);
  assert.equal(late.status, 401, late.text);
  assert.equal(late.body.error.code, 'invalid_ticket', 'single use: its own browser cannot redeem it afterwards');

  // A victim in the middle of a sign-in of their own (holding a flow cookie) is refused the same way, and keeps that cookie.
  await start(e, undefined, victim);
  const victimCookie = victim.flowCookie;
  const second = await viaIdp(e, person());
  const r2 = await refused(e, () => redeem(victim, ticketOf(second.acs.headers.location)), 401, MISMATCH);
  assert.equal(r2.body.error.code, 'sso_browser_mismatch');
  assert.equal(r2.headers['set-cookie'], undefined);
  assert.equal(victim.flowCookie, victimCookie);
  assert.equal((await redeem(e.browser, ticketOf(second.acs.headers.location))).body.error.code, 'invalid_ticket');
  assert.equal(await count(e.s, 'sessions'), 1, 'no session but the administrator\'s');
});

test('over https the SAML flow cookie is SameSite=None and Secure (the IdP\'s POST to the ACS is cross-site)', async (t) => {
  const e = await setup(t, { publicUrl: 'https://svc.test' });
  const r = await e.s.call('GET', `/api/auth/sso/start?providerId=${e.providerId}`);
  assert.equal(r.status, 302, r.text);
  assert.match(r.headers.get('set-cookie') ?? '', /^svc_sso_flow=[A-Za-z0-9_-]{43}; Path=\/api\/auth\/sso; HttpOnly; SameSite=None; Secure; Max-Age=600$/);
});

test('sign-in starts are limited per client address: over 30 a minute, 429 with Retry-After and nothing stored', async (t) => {
  const e = await setup(t, { env: { SVC_TRUST_PROXY: '1' } });
  const from = (address: string, providerId = e.providerId) =>
    e.browser.go('GET', `${e.base}/api/auth/sso/start?providerId=${providerId}`, { headers: { 'x-forwarded-for': address } });
  for (let i = 0; i < 30; i++) {
    const r = await from('198.51.100.7');
    assert.equal(r.status, 302, `start ${i + 1}: ${r.text}`);
  }
  const states = await count(e.s, 'sso_states');
  const over = await from('198.51.100.7');
  assert.equal(over.status, 429, over.text);
  assert.equal(over.body.error.code, 'rate_limited');
  const wait = Number(over.headers['retry-after']);
  assert.ok(Number.isInteger(wait) && wait >= 1 && wait <= 60, `Retry-After ${over.headers['retry-after']}`);
  assert.equal(over.headers['set-cookie'], undefined, 'no flow cookie');
  assert.equal(over.headers.location, undefined);
  // Any start from that address counts, an unknown provider included (429, not 404).
  assert.equal((await from('198.51.100.7', 'idp_nope')).status, 429);
  assert.equal(await count(e.s, 'sso_states'), states, 'nothing stored');
  // Another address is not limited.
  assert.equal((await from('198.51.100.8')).status, 302);
  assert.equal(await count(e.s, 'sso_states'), states + 1);
});

test('a request made for one SAML provider, answered at another provider\'s ACS, fails closed and is used up', async (t) => {
  const e = await setup(t);
  // Provider B: same IdP and certificate, same organization, its own SP entity id and ACS.
  const created = await e.s.call('POST', '/api/system/identity/providers', {
    token: e.adminToken,
    body: {
      kind: 'saml', name: 'Second SAML', organizationId: e.organizationId,
      config: { idpEntityId: IDP_ENTITY, ssoUrl: e.peer.ssoUrl, idpCertRef: CERT_REF, spEntityId: `${SP_ENTITY}/b`, attributeMapping: ATTRIBUTE_NAMES },
    },
  });
  assert.equal(created.status, 201, created.text);
  const b: Env = { ...e, providerId: created.body.id, acsUrl: `${e.base}/api/auth/sso/saml/${created.body.id}/acs` };
  // A request started at A (e.browser holds its flow cookie), answered by the IdP in every respect for B.
  const f = await forge(e, { values: (v) => Object.assign(v, { Destination: b.acsUrl, SubjectRecipient: b.acsUrl, Audience: `${SP_ENTITY}/b` }) });
  await refused(b, () => postAcs(b, f.signed, f.pending.relayState), 401, /InResponseTo matches no pending, unused request of this provider/);
  // A's request is gone: a genuine answer for A at A's ACS is refused now too.
  const forA = signElement(fillResponse(responseValues({ idpEntityId: IDP_ENTITY, spEntityId: SP_ENTITY, acsUrl: e.acsUrl, inResponseTo: f.pending.id, user: f.user }), f.user), 'Assertion', IDP_KEY, IDP_CERT);
  await refused(e, () => postAcs(e, forA, f.pending.relayState), 401, /InResponseTo/);
});

test('a relay state that does not come back unchanged is refused', async (t) => {
  const e = await setup(t);
  const f = await forge(e);
  await refused(e, () => postAcs(e, f.signed, `${f.pending.relayState}x`), 401, /relay state/);
  const g = await forge(e);
  await refused(e, () => postAcs(e, g.signed, null), 401, /relay state/);
});

test('a well-formed forged response signed with the IdP key is accepted (the forging helpers are sound)', async (t) => {
  const e = await setup(t);
  const f = await forge(e);
  const r = await postAcs(e, f.signed, f.pending.relayState);
  assert.equal(r.status, 302, r.text);
  ticketOf(r.headers.location);
  // A response signed as a whole (assertion unsigned) is accepted too.
  const g = await forge(e);
  const whole = await postAcs(e, signElement(g.unsigned, 'Response', IDP_KEY, IDP_CERT), g.pending.relayState);
  assert.equal(whole.status, 302, whole.text);
});

test('without SVC_PUBLIC_URL the assertion consumer is at the origin the browser used', async (t) => {
  const e = await setup(t, { publicUrl: false });
  assert.match(e.acsUrl, /^http:\/\/127\.0\.0\.1:\d+\/api\/auth\/sso\/saml\//);
  const user = person();
  const { redirect, form, acs } = await viaIdp(e, user, '/home');
  assert.match(redirect.xml, new RegExp(`AssertionConsumerServiceURL="${e.acsUrl}"`));
  assert.equal(form.action, e.acsUrl);
  assert.equal(acs.status, 302, acs.text);
  const redeemed = await e.browser.go('POST', `${e.base}/api/auth/sso/redeem`, { json: { ticket: ticketOf(acs.headers.location) } });
  assert.equal(redeemed.status, 200, redeemed.text);
  assert.equal(redeemed.body.returnTo, '/home');
});
