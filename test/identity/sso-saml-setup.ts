// What the SAML test files (test/identity/sso-saml*.test.ts) share: the IdP's names and certificate
// variable, a browser that keeps the service's cookies, a server with a samlify IdP on loopback and a
// provider, the sign-in start, the trip through the IdP, posts to the assertion consumer, the check
// of a refusal that fails closed, and a pending request with a forged response answering it.
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { login, makeOrg, makeUser, makeWorkspace } from '../helpers/factories.ts';
import { ATTRIBUTE_NAMES, IDP_CERT, IDP_KEY, fillResponse, parseAutoPostForm, readRedirect, responseValues, signElement, startSamlPeer, type IdpUser, type SamlPeer } from '../helpers/saml-peer.ts';

export const CERT_REF = 'TEST_SAML_IDP_CERT';
process.env[CERT_REF] = IDP_CERT;
/** {base_url} of the service as the IdP knows it (the Browser sends it to the test server). */
export const PUBLIC_URL = 'http://svc.test';
export const FRONTEND = 'http://app.test';
export const IDP_ENTITY = 'https://idp.example.test/saml';
export const SP_ENTITY = 'https://svc.test/saml/sp';

export interface Seen { url: string; status: number; headers: Record<string, string>; text: string }

/**
 * A browser that sends {base_url} (`publicUrl`) to the test server, keeps the cookies each host sets
 * (no Path, SameSite or Secure rules: the test server is the only host setting any), records every
 * answer and never follows redirects by itself.
 */
export class Browser {
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

export interface Env {
  s: TestServer; peer: SamlPeer; browser: Browser; base: string; providerId: string; organizationId: string; workspaceId: string; acsUrl: string;
  adminToken: string;
}

/**
 * A server (with SVC_PUBLIC_URL = PUBLIC_URL, or the URL given, unless `publicUrl` is false; `env` added),
 * the IdP peer and a SAML provider bound to a new organization and workspace.
 */
export async function setup(t: TestContext, o: { publicUrl?: boolean | string; env?: Record<string, string> } = {}): Promise<Env> {
  const publicUrl = typeof o.publicUrl === 'string' ? o.publicUrl : PUBLIC_URL;
  const s = await startTestServer(t, { ...(o.publicUrl === false ? {} : { SVC_PUBLIC_URL: publicUrl }), SVC_FRONTEND_ORIGIN: FRONTEND, ...o.env });
  const base = o.publicUrl === false ? s.url : publicUrl;
  const peer = await startSamlPeer({ entityId: IDP_ENTITY });
  t.after(() => peer.close());
  const admin = await makeUser(s, { systemAdmin: true });
  const token = await login(s, admin);
  const org = await makeOrg(s);
  const ws = await makeWorkspace(s, org.id);
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

export let n = 0;
export const person = (): IdpUser => {
  n += 1;
  return { nameId: `idp-subject-${n}`, email: `saml-person-${process.pid}-${n}@corp.example.test`, name: `SAML Person ${n}` };
};

/** GET /api/auth/sso/start (in `browser`, e.browser by default, which keeps the flow cookie): the redirect to the IdP. */
export async function start(e: Env, returnTo?: string, browser = e.browser) {
  const q = new URLSearchParams({ providerId: e.providerId, ...(returnTo ? { returnTo } : {}) });
  const r = await browser.go('GET', `${e.base}/api/auth/sso/start?${String(q)}`);
  assert.equal(r.status, 302, r.text);
  assert.ok(browser.flowCookie, 'the flow cookie is set');
  return { location: r.headers.location, setCookie: r.headers['set-cookie'], ...readRedirect(r.headers.location) };
}

/** Start, visit the IdP (logged in as `user`) and post its form to the ACS like a browser; the ACS answer. */
export async function viaIdp(e: Env, user: IdpUser, returnTo?: string) {
  e.peer.user = user;
  const redirect = await start(e, returnTo);
  const page = await e.browser.go('GET', redirect.location);
  assert.equal(page.status, 200, page.text);
  const form = parseAutoPostForm(page.text);
  const acs = await e.browser.go('POST', form.action, { form: form.fields });
  return { redirect, form, acs };
}

export const ticketOf = (location: string) => {
  const m = /^http:\/\/app\.test\/sso\/complete#ticket=([^&]+)$/.exec(location);
  assert.ok(m, `front-end redirect with a ticket: ${location}`);
  return decodeURIComponent(m[1]);
};

export const count = async (s: TestServer, table: string) => (await s.db.get<{ n: number }>(`SELECT count(*) AS n FROM ${table}`))!.n;

/** POSTs `xml` (base64) to the ACS with the relay state (from `browser`, e.browser by default). */
export function postAcs(e: Env, xml: string, relayState: string | null, raw = false, browser = e.browser) {
  const form: Record<string, string> = { SAMLResponse: raw ? xml : Buffer.from(xml, 'utf8').toString('base64') };
  if (relayState !== null) form.RelayState = relayState;
  return browser.go('POST', e.acsUrl, { form });
}

/** Asserts a refusal that fails closed: the status, no redirect, no ticket, no session, and an auth.sso.failed record with the reason. */
export async function refused(e: Env, send: () => Promise<Seen & { body: any }>, status: 400 | 401, reason: RegExp) {
  const before = { tickets: await count(e.s, 'sso_tickets'), sessions: await count(e.s, 'sessions'), failed: (await failures(e)).length };
  const r = await send();
  assert.equal(r.status, status, r.text);
  assert.equal(r.headers.location, undefined);
  assert.doesNotMatch(r.text, /ticket=/);
  assert.equal(await count(e.s, 'sso_tickets'), before.tickets, 'no ticket issued');
  assert.equal(await count(e.s, 'sessions'), before.sessions, 'no session');
  const audited = await failures(e);
  assert.equal(audited.length, before.failed + 1, 'audited once');
  const last = audited.at(-1)!;
  assert.equal(last.result, 'failure');
  assert.equal(last.metadata.providerId, e.providerId);
  assert.match(last.metadata.reason, reason);
  assert.match(r.body.error.message, reason);
  return r;
}

export async function failures(e: Env) {
  return (await e.s.db.all<{ result: string; metadata: string }>("SELECT result, metadata FROM audit_log WHERE action = 'auth.sso.failed' ORDER BY seq"))
    .map((a) => ({ result: a.result, metadata: JSON.parse(a.metadata) }));
}

/** A pending request of the service (its ID and relay state; started in `browser`) and a response answering it, signed or not. */
export async function forge(e: Env, o: { user?: IdpUser; values?: (v: Awaited<ReturnType<typeof responseValues>>) => void; browser?: Browser } = {}) {
  const pending = await start(e, undefined, o.browser);
  const user = o.user ?? person();
  const values = responseValues({ idpEntityId: IDP_ENTITY, spEntityId: SP_ENTITY, acsUrl: e.acsUrl, inResponseTo: pending.id, user });
  o.values?.(values);
  const unsigned = fillResponse(values, user);
  return { pending, user, values, unsigned, signed: signElement(unsigned, 'Assertion', IDP_KEY, IDP_CERT) };
}
