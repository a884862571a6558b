// SAML 2.0 single sign-on against a samlify identity provider on loopback: the HTTP-Redirect
// AuthnRequest, the SP metadata, the HTTP-POST assertion consumer end to end (relay state preserved,
// account and membership created, ticket redeemed for a session), and a negative suite where every
// forged, altered or stale response fails closed (400/401, no ticket, no session, audited). The
// browser keeps the service's cookies: the flow cookie of the start goes back to the assertion
// consumer and to redeem, and a post or a redemption without it (login CSRF) is refused.
// Forged documents are signed with xml-crypto and the test keys in test/fixtures/sso/.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { deflateRawSync } from 'node:zlib';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { sha256Hex } from '../../src/kernel/ids.ts';
import { login, makeOrg, makeUser, makeWorkspace } from '../helpers/factories.ts';
import {
  ATTACKER_CERT, ATTACKER_KEY, ATTRIBUTE_NAMES, IDP_CERT, IDP_KEY, certBody, fillResponse, parseAutoPostForm, readRedirect,
  responseValues, signElement, startSamlPeer, type IdpUser, type SamlPeer,
} from '../helpers/saml-peer.ts';

const CERT_REF = 'TEST_SAML_IDP_CERT';
process.env[CERT_REF] = IDP_CERT;
/** {base_url} of the service as the IdP knows it (the Browser sends it to the test server). */
const PUBLIC_URL = 'http://svc.test';
const FRONTEND = 'http://app.test';
const IDP_ENTITY = 'https://idp.example.test/saml';
const SP_ENTITY = 'https://svc.test/saml/sp';

interface Seen { url: string; status: number; headers: Record<string, string>; text: string }

/**
 * A browser that sends {base_url} (`publicUrl`) to the test server, keeps the cookies each host sets
 * (no Path, SameSite or Secure rules: the test server is the only host setting any), records every
 * answer and never follows redirects by itself.
 */
class Browser {
  readonly seen: Seen[] = [];
  private readonly s: TestServer;
  private readonly publicUrl: string;
  private readonly jar = new Map<string, Map<string, string>>();
  constructor(s: TestServer, publicUrl = PUBLIC_URL) {
    this.s = s;
    this.publicUrl = publicUrl;
  }
  private target(url: string): string {
    return url.startsWith(this.publicUrl) ? this.s.url + url.slice(this.publicUrl.length) : url;
  }
  /** The flow cookie this browser holds for the service, if any. */
  get flowCookie(): string | undefined {
    return this.jar.get(new URL(this.s.url).host)?.get('svc_sso_flow');
  }
  async go(method: string, url: string, init: { form?: Record<string, string>; json?: unknown; headers?: Record<string, string> } = {}): Promise<Seen & { body: any }> {
    const headers: Record<string, string> = { ...init.headers };
    const host = new URL(this.target(url)).host;
    const cookies = this.jar.get(host);
    if (cookies?.size) headers.cookie = [...cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    let body: string | undefined;
    if (init.form) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(init.form).toString();
    } else if (init.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(init.json);
    }
    const res = await fetch(this.target(url), { method, headers, body, redirect: 'manual' });
    for (const line of res.headers.getSetCookie()) {
      const pair = line.split(';')[0];
      const eq = pair.indexOf('=');
      const [name, value] = [pair.slice(0, eq).trim(), pair.slice(eq + 1).trim()];
      if (!this.jar.has(host)) this.jar.set(host, new Map());
      if (value === '' || /max-age=0(;|$)/i.test(line)) this.jar.get(host)!.delete(name);
      else this.jar.get(host)!.set(name, value);
    }
    const text = await res.text();
    const seen: Seen = { url, status: res.status, headers: Object.fromEntries([...res.headers.entries()]), text };
    this.seen.push(seen);
    return { ...seen, body: (res.headers.get('content-type') ?? '').includes('json') && text ? JSON.parse(text) : null };
  }
}

interface Env {
  s: TestServer; peer: SamlPeer; browser: Browser; base: string; providerId: string; organizationId: string; workspaceId: string; acsUrl: string;
  adminToken: string;
}

/**
 * A server (with SVC_PUBLIC_URL = PUBLIC_URL, or the URL given, unless `publicUrl` is false; `env` added),
 * the IdP peer and a SAML provider bound to a new organization and workspace.
 */
async function setup(t: TestContext, o: { publicUrl?: boolean | string; env?: Record<string, string> } = {}): Promise<Env> {
  const publicUrl = typeof o.publicUrl === 'string' ? o.publicUrl : PUBLIC_URL;
  const s = await startTestServer(t, { ...(o.publicUrl === false ? {} : { SVC_PUBLIC_URL: publicUrl }), SVC_FRONTEND_ORIGIN: FRONTEND, ...o.env });
  const base = o.publicUrl === false ? s.url : publicUrl;
  const peer = await startSamlPeer({ entityId: IDP_ENTITY });
  t.after(() => peer.close());
  const admin = await makeUser(s, { systemAdmin: true });
  const token = await login(s, admin);
  const org = makeOrg(s);
  const ws = makeWorkspace(s, org.id);
  const created = await s.call('POST', '/api/system/identity/providers', {
    token,
    body: {
      kind: 'saml', name: 'Example SAML', organizationId: org.id, workspaceId: ws.id, defaultRole: 'writer',
      config: { idpEntityId: IDP_ENTITY, ssoUrl: peer.ssoUrl, idpCertRef: CERT_REF, spEntityId: SP_ENTITY, attributeMapping: ATTRIBUTE_NAMES },
    },
  });
  assert.equal(created.status, 201, created.text);
  const providerId = created.body.id as string;
  const browser = new Browser(s, base);
  const metadata = await browser.go('GET', `${base}/api/auth/sso/saml/${providerId}/metadata`);
  assert.equal(metadata.status, 200, metadata.text);
  peer.useServiceProvider(metadata.text);
  return {
    s, peer, browser, base, providerId, organizationId: org.id, workspaceId: ws.id, acsUrl: `${base}/api/auth/sso/saml/${providerId}/acs`, adminToken: token,
  };
}

let n = 0;
const person = (): IdpUser => {
  n += 1;
  return { nameId: `idp-subject-${n}`, email: `saml-person-${process.pid}-${n}@corp.example.test`, name: `SAML Person ${n}` };
};

/** GET /api/auth/sso/start (in `browser`, e.browser by default, which keeps the flow cookie): the redirect to the IdP. */
async function start(e: Env, returnTo?: string, browser = e.browser) {
  const q = new URLSearchParams({ providerId: e.providerId, ...(returnTo ? { returnTo } : {}) });
  const r = await browser.go('GET', `${e.base}/api/auth/sso/start?${q}`);
  assert.equal(r.status, 302, r.text);
  assert.ok(browser.flowCookie, 'the flow cookie is set');
  return { location: r.headers.location, setCookie: r.headers['set-cookie'], ...readRedirect(r.headers.location) };
}

/** Start, visit the IdP (logged in as `user`) and post its form to the ACS like a browser; the ACS answer. */
async function viaIdp(e: Env, user: IdpUser, returnTo?: string) {
  e.peer.user = user;
  const redirect = await start(e, returnTo);
  const page = await e.browser.go('GET', redirect.location);
  assert.equal(page.status, 200, page.text);
  const form = parseAutoPostForm(page.text);
  const acs = await e.browser.go('POST', form.action, { form: form.fields });
  return { redirect, form, acs };
}

const ticketOf = (location: string) => {
  const m = /^http:\/\/app\.test\/sso\/complete#ticket=([^&]+)$/.exec(location);
  assert.ok(m, `front-end redirect with a ticket: ${location}`);
  return decodeURIComponent(m[1]);
};

const count = (s: TestServer, table: string) => s.db.get<{ n: number }>(`SELECT count(*) AS n FROM ${table}`)!.n;

/** POSTs `xml` (base64) to the ACS with the relay state (from `browser`, e.browser by default). */
function postAcs(e: Env, xml: string, relayState: string | null, raw = false, browser = e.browser) {
  const form: Record<string, string> = { SAMLResponse: raw ? xml : Buffer.from(xml, 'utf8').toString('base64') };
  if (relayState !== null) form.RelayState = relayState;
  return browser.go('POST', e.acsUrl, { form });
}

/** Asserts a refusal that fails closed: the status, no redirect, no ticket, no session, and an auth.sso.failed record with the reason. */
async function refused(e: Env, send: () => Promise<Seen & { body: any }>, status: 400 | 401, reason: RegExp) {
  const before = { tickets: count(e.s, 'sso_tickets'), sessions: count(e.s, 'sessions'), failed: failures(e).length };
  const r = await send();
  assert.equal(r.status, status, r.text);
  assert.equal(r.headers.location, undefined);
  assert.doesNotMatch(r.text, /ticket=/);
  assert.equal(count(e.s, 'sso_tickets'), before.tickets, 'no ticket issued');
  assert.equal(count(e.s, 'sessions'), before.sessions, 'no session');
  const audited = failures(e);
  assert.equal(audited.length, before.failed + 1, 'audited once');
  const last = audited.at(-1)!;
  assert.equal(last.result, 'failure');
  assert.equal(last.metadata.providerId, e.providerId);
  assert.match(last.metadata.reason, reason);
  assert.match(r.body.error.message, reason);
  return r;
}

function failures(e: Env) {
  return e.s.db.all<{ result: string; metadata: string }>("SELECT result, metadata FROM audit_log WHERE action = 'auth.sso.failed' ORDER BY seq")
    .map((a) => ({ result: a.result, metadata: JSON.parse(a.metadata) }));
}

/** A pending request of the service (its ID and relay state; started in `browser`) and a response answering it, signed or not. */
async function forge(e: Env, o: { user?: IdpUser; values?: (v: ReturnType<typeof responseValues>) => void; browser?: Browser } = {}) {
  const pending = await start(e, undefined, o.browser);
  const user = o.user ?? person();
  const values = responseValues({ idpEntityId: IDP_ENTITY, spEntityId: SP_ENTITY, acsUrl: e.acsUrl, inResponseTo: pending.id, user });
  o.values?.(values);
  const unsigned = fillResponse(values, user);
  return { pending, user, values, unsigned, signed: signElement(unsigned, 'Assertion', IDP_KEY, IDP_CERT) };
}

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
  assert.equal(e.s.db.get<{ browser_hash: string }>('SELECT browser_hash FROM sso_tickets WHERE ticket_hash = ?', sha256Hex(ticket))!.browser_hash,
    sha256Hex(flowCookie), 'the ticket is bound to the flow cookie (its hash only)');

  // The account and memberships in the bound organization and workspace.
  const account = e.s.db.get<{ id: string; name: string; password_hash: string | null }>('SELECT * FROM users WHERE email = ?', user.email)!;
  assert.ok(account);
  assert.equal(account.name, user.name);
  assert.equal(account.password_hash, null);
  const memberships = e.s.db.all<{ level: string; scope_id: string; role: string }>('SELECT level, scope_id, role FROM memberships WHERE user_id = ? ORDER BY level', account.id)
    .map((m) => ({ ...m }));
  assert.deepEqual(memberships, [
    { level: 'organization', scope_id: e.organizationId, role: 'org_member' },
    { level: 'workspace', scope_id: e.workspaceId, role: 'writer' },
  ]);
  const identity = e.s.db.get<{ subject: string; user_id: string }>('SELECT subject, user_id FROM sso_identities WHERE provider_id = ?', e.providerId)!;
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
  const verified = e.s.db.get<{ metadata: string }>("SELECT metadata FROM audit_log WHERE action = 'auth.sso.verified'")!;
  assert.deepEqual(JSON.parse(verified.metadata).subject, user.nameId);

  // A second sign-in of the same person finds the same account by the NameID.
  const second = await viaIdp(e, user);
  assert.equal(second.acs.status, 302, second.acs.text);
  assert.equal(count(e.s, 'users'), 2);
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
    ...e.s.db.all<{ row: string }>("SELECT json_array(action, target_id, metadata, actor_name) AS row FROM audit_log").map((a) => a.row),
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
  const code = () => failures(e).at(-1)!.metadata.code;
  // A genuine response for a request started in e.browser, posted by a browser without any flow cookie.
  const stranger = new Browser(e.s);
  const f = await forge(e);
  await refused(e, () => postAcs(e, f.signed, f.pending.relayState, false, stranger), 401, /browser that did not start this sign-in/);
  assert.equal(code(), 'sso_browser_mismatch');
  // Single use either way: the browser of the flow, posting the same response, finds the request gone.
  await refused(e, () => postAcs(e, f.signed, f.pending.relayState), 401, /InResponseTo/);

  // Another flow's cookie: flow G started in e.browser, flow H in `other`; G's response posted by `other`.
  const other = new Browser(e.s);
  const g = await forge(e);
  const h = await forge(e, { browser: other });
  assert.notEqual(other.flowCookie, e.browser.flowCookie);
  await refused(e, () => postAcs(e, g.signed, g.pending.relayState, false, other), 401, /browser that did not start this sign-in/);
  assert.equal(code(), 'sso_browser_mismatch');
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
  assert.equal(failures(e).at(-1)!.metadata.code, 'sso_browser_mismatch');
  assert.ok(e.s.db.get<{ used_at: string | null }>('SELECT used_at FROM sso_tickets WHERE ticket_hash = ?', sha256Hex(ticket))!.used_at, 'used up');
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
  assert.equal(count(e.s, 'sessions'), 1, 'no session but the administrator\'s');
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
  const states = count(e.s, 'sso_states');
  const over = await from('198.51.100.7');
  assert.equal(over.status, 429, over.text);
  assert.equal(over.body.error.code, 'rate_limited');
  const wait = Number(over.headers['retry-after']);
  assert.ok(Number.isInteger(wait) && wait >= 1 && wait <= 60, `Retry-After ${over.headers['retry-after']}`);
  assert.equal(over.headers['set-cookie'], undefined, 'no flow cookie');
  assert.equal(over.headers.location, undefined);
  // Any start from that address counts, an unknown provider included (429, not 404).
  assert.equal((await from('198.51.100.7', 'idp_nope')).status, 429);
  assert.equal(count(e.s, 'sso_states'), states, 'nothing stored');
  // Another address is not limited.
  assert.equal((await from('198.51.100.8')).status, 302);
  assert.equal(count(e.s, 'sso_states'), states + 1);
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

test('negative: unsigned, tampered, comment / PI NameIDs, attacker KeyInfo and weak algorithms fail closed', async (t) => {
  const e = await setup(t);

  await t.test('unsigned response', async () => {
    const f = await forge(e);
    await refused(e, () => postAcs(e, f.unsigned, f.pending.relayState), 401, /unsigned/);
  });

  await t.test('NameID tampered after signing', async () => {
    const f = await forge(e, { user: { nameId: 'someone@corp.example.test', email: 'someone@corp.example.test', name: 'Someone' } });
    const tampered = f.signed.replace('>someone@corp.example.test</saml:NameID>', '>admin@corp.example.test</saml:NameID>');
    assert.notEqual(tampered, f.signed);
    await refused(e, () => postAcs(e, tampered, f.pending.relayState), 401, /signature is not valid/);
  });

  await t.test('NameID with an XML comment (admin@x.com<!---->.evil.com, signed as admin@x.com.evil.com)', async () => {
    const f = await forge(e, { user: { nameId: 'admin@x.com.evil.com', email: 'admin@x.com.evil.com', name: 'Evil' } });
    const commented = f.signed.replace('>admin@x.com.evil.com</saml:NameID>', '>admin@x.com<!---->.evil.com</saml:NameID>');
    assert.notEqual(commented, f.signed);
    await refused(e, () => postAcs(e, commented, f.pending.relayState), 401, /comments and processing instructions/);
    assert.equal(e.s.db.get('SELECT 1 AS x FROM sso_identities WHERE subject LIKE ?', 'admin@x.com%'), undefined);
  });

  await t.test('NameID with a processing instruction', async () => {
    const f = await forge(e, { user: { nameId: 'admin@x.com.evil.com', email: 'admin@x.com.evil.com', name: 'Evil' } });
    const withPi = f.signed.replace('>admin@x.com.evil.com</saml:NameID>', '>admin@x.com<?evil x?>.evil.com</saml:NameID>');
    await refused(e, () => postAcs(e, withPi, f.pending.relayState), 401, /comments and processing instructions/);
  });

  await t.test('signed by an attacker carrying its own certificate in KeyInfo', async () => {
    const f = await forge(e);
    const attackerSigned = signElement(f.unsigned, 'Assertion', ATTACKER_KEY, ATTACKER_CERT);
    assert.ok(attackerSigned.includes(certBody(ATTACKER_CERT)), 'KeyInfo carries the attacker certificate');
    await refused(e, () => postAcs(e, attackerSigned, f.pending.relayState), 401, /signature is not valid/);
    // Signed as a whole by the attacker: the same.
    const g = await forge(e);
    await refused(e, () => postAcs(e, signElement(g.unsigned, 'Response', ATTACKER_KEY, ATTACKER_CERT), g.pending.relayState), 401, /signature is not valid/);
  });

  await t.test('RSA-SHA1 signature and SHA-1 digest are not allowed', async () => {
    const f = await forge(e);
    const sha1 = signElement(f.unsigned, 'Assertion', IDP_KEY, IDP_CERT, {
      signatureAlgorithm: 'http://www.w3.org/2000/09/xmldsig#rsa-sha1', digestAlgorithm: 'http://www.w3.org/2000/09/xmldsig#sha1',
    });
    await refused(e, () => postAcs(e, sha1, f.pending.relayState), 401, /algorithm not allowed/);
  });
});

test('negative: signature wrapping fails closed (forged assertion beside, signed one wrapped, duplicate IDs)', async (t) => {
  const e = await setup(t);
  const assertionOf = (xml: string) => /<saml:Assertion[\s\S]*<\/saml:Assertion>/.exec(xml)![0];

  await t.test('a forged unsigned assertion beside the signed one', async () => {
    const f = await forge(e);
    const evil = { nameId: 'admin@corp.example.test', email: 'admin@corp.example.test', name: 'Admin' };
    const forged = assertionOf(fillResponse({ ...f.values, AssertionID: '_forged' }, evil));
    for (const doc of [
      f.signed.replace('<saml:Assertion ', `${forged}<saml:Assertion `),
      f.signed.replace('</samlp:Response>', `${forged}</samlp:Response>`),
    ]) {
      await refused(e, () => postAcs(e, doc, f.pending.relayState), 401, /exactly one assertion/);
    }
  });

  await t.test('the signed assertion wrapped inside another element, a forged one in its place', async () => {
    const f = await forge(e);
    const signedAssertion = assertionOf(f.signed);
    const evil = { nameId: 'admin@corp.example.test', email: 'admin@corp.example.test', name: 'Admin' };
    const forged = assertionOf(fillResponse({ ...f.values, AssertionID: '_forged' }, evil));
    const wrappedInExtensions = f.signed.replace(signedAssertion, `<samlp:Extensions>${signedAssertion}</samlp:Extensions>${forged}`);
    await refused(e, () => postAcs(e, wrappedInExtensions, f.pending.relayState), 401, /exactly one assertion/);
    // Wrapped alone (no forged sibling): an assertion not directly under the Response is refused.
    const wrappedOnly = f.signed.replace(signedAssertion, `<samlp:Extensions>${signedAssertion}</samlp:Extensions>`);
    await refused(e, () => postAcs(e, wrappedOnly, f.pending.relayState), 401, /assertion directly under the Response is missing/);
    // Inside the forged assertion (e.g. in its SubjectConfirmationData).
    const inside = f.signed.replace(signedAssertion, forged.replace('</saml:Subject>', `<saml:SubjectConfirmation Method="urn:x">${signedAssertion}</saml:SubjectConfirmation></saml:Subject>`));
    await refused(e, () => postAcs(e, inside, f.pending.relayState), 401, /exactly one assertion/);
  });

  await t.test('duplicate IDs (another element carrying the signed assertion\'s ID)', async () => {
    const f = await forge(e);
    const id = f.values.AssertionID!;
    const dup = f.signed.replace('<samlp:Status>', `<samlp:Extensions><x:Decoy xmlns:x="urn:decoy" ID="${id}"/></samlp:Extensions><samlp:Status>`);
    await refused(e, () => postAcs(e, dup, f.pending.relayState), 401, /duplicate ID/);
    // The forged assertion takes the signed one's ID and the signed one hides elsewhere.
    const g = await forge(e);
    const evil = { nameId: 'admin@corp.example.test', email: 'admin@corp.example.test', name: 'Admin' };
    const forged = assertionOf(fillResponse({ ...g.values }, evil));
    const swapped = g.signed.replace(assertionOf(g.signed), `${forged}<samlp:Extensions>${assertionOf(g.signed)}</samlp:Extensions>`);
    await refused(e, () => postAcs(e, swapped, g.pending.relayState), 401, /duplicate ID|exactly one assertion/);
  });
});

test('negative: responses the samlify IdP signs but that are not for this SP, this request or this time fail closed', async (t) => {
  const e = await setup(t);
  const minutes = (m: number) => new Date(Date.now() + m * 60_000).toISOString();
  const cases: Array<[string, (v: Record<string, string | null>) => Record<string, string | null>, RegExp]> = [
    ['wrong audience', (v) => ({ ...v, Audience: 'https://other-sp.example.test' }), /the assertion is for another audience/],
    ['wrong recipient', (v) => ({ ...v, SubjectRecipient: 'http://evil.test/acs' }), /the Recipient is not this assertion consumer/],
    ['wrong destination', (v) => ({ ...v, Destination: 'http://evil.test/acs' }), /the response Destination is not this assertion consumer/],
    ['expired', (v) => ({ ...v, ConditionsNotBefore: minutes(-20), ConditionsNotOnOrAfter: minutes(-10), SubjectConfirmationDataNotOnOrAfter: minutes(-10) }), /the assertion has expired/],
    ['expired beyond the 60 s skew', (v) => ({ ...v, ConditionsNotOnOrAfter: new Date(Date.now() - 61_000).toISOString() }), /the assertion has expired/],
    // Conditions valid; only the bearer confirmation is past (or has no end at all).
    ['subject confirmation expired', (v) => ({ ...v, SubjectConfirmationDataNotOnOrAfter: minutes(-10) }), /the subject confirmation has expired/],
    ['subject confirmation without NotOnOrAfter', (v) => ({ ...v, SubjectConfirmationDataNotOnOrAfter: null }), /the subject confirmation has no NotOnOrAfter/],
    ['not yet valid', (v) => ({ ...v, ConditionsNotBefore: minutes(5), ConditionsNotOnOrAfter: minutes(10) }), /the assertion is not yet valid/],
    ['unknown InResponseTo', (v) => ({ ...v, InResponseTo: '_0123456789abcdef0123456789abcdef01234567' }), /InResponseTo matches no pending/],
    ['non-success status', (v) => ({ ...v, StatusCode: 'urn:oasis:names:tc:SAML:2.0:status:Responder' }), /status:Responder/],
    // Only the signed assertion's Issuer differs (the Response's is right), then only the Response's.
    ['another issuer of the assertion', (v) => ({ ...v, AssertionIssuer: 'https://other-idp.example.test' }), /the assertion Issuer is not the configured IdP/],
    ['another issuer of the response', (v) => ({ ...v, Issuer: 'https://other-idp.example.test', AssertionIssuer: IDP_ENTITY }), /the response Issuer is not the configured IdP/],
    ['no AuthnStatement', (v) => ({ ...v, AuthnStatement: null }), /the assertion has no AuthnStatement/],
  ];
  for (const [name, tweak, reason] of cases) {
    await t.test(name, async () => {
      e.peer.tweak = tweak;
      try {
        await refused(e, async () => (await viaIdp(e, person())).acs, 401, reason);
      } finally {
        e.peer.tweak = (v) => v;
      }
    });
  }

  await t.test('within the 60 s skew is accepted', async () => {
    e.peer.tweak = (v) => ({ ...v, ConditionsNotBefore: new Date(Date.now() + 30_000).toISOString() });
    try {
      const { acs } = await viaIdp(e, person());
      assert.equal(acs.status, 302, acs.text);
    } finally {
      e.peer.tweak = (v) => v;
    }
  });

  await t.test('replayed InResponseTo (the same valid response posted twice)', async () => {
    const { form, acs } = await viaIdp(e, person());
    assert.equal(acs.status, 302, acs.text);
    await refused(e, () => e.browser.go('POST', form.action, { form: form.fields }), 401, /InResponseTo/);
  });

  await t.test('a genuine response posted to an unknown provider id', async () => {
    const f = await forge(e);
    const r = await e.browser.go('POST', `${PUBLIC_URL}/api/auth/sso/saml/idp_unknown/acs`, {
      form: { SAMLResponse: Buffer.from(f.signed).toString('base64'), RelayState: f.pending.relayState },
    });
    assert.equal(r.status, 400);
    assert.equal(r.body.error.code, 'sso_provider_unknown');
    assert.equal(failures(e).at(-1)!.metadata.code, 'sso_provider_unknown');
  });
});

test('negative: DOCTYPE and entity bombs are refused quickly, before parsing; malformed input is 400', async (t) => {
  const e = await setup(t);
  const f = await forge(e);
  const laughs = '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
    + Array.from({ length: 9 }, (_, i) => `<!ENTITY lol${i + 1} "${`&lol${i === 0 ? '' : i};`.repeat(10)}">`).join('')
    + ']>';
  const bomb = `${laughs}${f.signed.replace('>' + f.user.nameId + '<', '>&lol9;<')}`;
  const t0 = performance.now();
  const r = await refused(e, () => postAcs(e, bomb, f.pending.relayState), 400, /DOCTYPE/);
  assert.ok(performance.now() - t0 < 1000, 'refused in under a second');
  assert.equal(r.body.error.code, 'saml_response_invalid');

  const xxe = `<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>${f.signed.replace('>' + f.user.nameId + '<', '>&x;<')}`;
  await refused(e, () => postAcs(e, xxe, f.pending.relayState), 400, /DOCTYPE/);
  await refused(e, () => postAcs(e, 'not base64 at all!', f.pending.relayState, true), 400, /base64/);
  await refused(e, () => postAcs(e, '<samlp:Response', f.pending.relayState), 400, /well-formed/);
  await refused(e, () => postAcs(e, deflateRawSync('x').toString('base64'), f.pending.relayState, true), 400, /UTF-8/);
  // The pending request was never consumed by the refusals: the genuine response still signs in.
  const ok = await postAcs(e, f.signed, f.pending.relayState);
  assert.equal(ok.status, 302, ok.text);
  const form = await e.browser.go('POST', e.acsUrl, { json: { SAMLResponse: 'x' } });
  assert.equal(form.status, 415);
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
