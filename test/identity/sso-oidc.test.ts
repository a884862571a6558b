// OIDC sign-in over real HTTP against real peers on loopback: `oidc-provider` (PKCE required,
// client_secret_basic, its development login and consent pages driven like a browser) for the
// end-to-end flow and the refusals it can produce (state, nonce, PKCE), and a scripted provider
// (discovery + JWKS of its own key + a token endpoint the test controls) for ID tokens a real
// provider never mints (alg none, HS256 keyed with the public key, wrong iss/aud, expired, azp,
// foreign signature). Every refusal fails closed: 400/401, audited auth.sso.failed, no ticket, no
// session. Each flow is started by the browser that later brings the answer back and redeems the
// ticket (the flow cookie; a ticket redeemed by another client is refused and used up);
// the service trusts X-Forwarded-For here and every browser has its own address, so the per-address
// limit of starts is not reached. At the end, every answer, URL, log line and audit record is scanned
// for the session tokens, the client secret and the ID tokens.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { SignJWT, UnsecuredJWT, exportSPKI, generateKeyPair, importJWK } from 'jose';
import { startTestServer, type Answer, type TestServer } from '../helpers/server.ts';
import { grant, login, makeOrg, makeUser, makeWorkspace } from '../helpers/factories.ts';
import { Browser, headersOf, s256, startFakeOp, startOidcPeer, type FakeOp, type OidcPeer } from '../helpers/oidc-peer.ts';
import { sha256Hex } from '../../src/kernel/ids.ts';
import { loadConfig } from '../../src/kernel/config.ts';
import { createContext } from '../../src/directory/context.ts';
import { createLogger } from '../../src/kernel/log.ts';
import type { Db } from '../../src/db/db.ts';
import { oidcRedirectUri } from '../../src/identity/sso/oidc/flow.ts';

const FRONT = 'http://front.example.test';
const SECRET_REF = 'TEST_OIDC_CLIENT_SECRET';
const FAKE_SECRET_REF = 'TEST_OIDC_FAKE_SECRET';
const CLIENT_ID = 'svc-test-client';

const count = async (s: TestServer, sql: string, ...p: string[]) => ((await s.db.get<{ n: number }>(`SELECT count(*) AS n FROM ${sql}`, ...p))!).n;
const failures = async (s: TestServer) => await s.db.all<any>("SELECT * FROM audit_log WHERE action = 'auth.sso.failed' ORDER BY seq");

test('OIDC single sign-on against oidc-provider and a scripted provider', async (t) => {
  const secret = randomBytes(24).toString('base64url');
  const fakeSecret = randomBytes(24).toString('base64url');
  process.env[SECRET_REF] = secret;
  process.env[FAKE_SECRET_REF] = fakeSecret;
  t.after(() => { delete process.env[SECRET_REF]; delete process.env[FAKE_SECRET_REF]; });

  const s = await startTestServer(t, { SVC_FRONTEND_ORIGIN: FRONT, SVC_TRUST_PROXY: '1' });
  const answers: Answer[] = [];
  const sessionTokens: string[] = [];
  const redeemAnswers = new Set<Answer>();
  const call = async (method: string, path: string, opts: Parameters<TestServer['call']>[2] = {}) => {
    const a = await s.call(method, path, opts);
    answers.push(a);
    return a;
  };
  const browsers: Browser[] = [];
  const idTokens: string[] = [];

  const admin = await makeUser(s, { systemAdmin: true });
  const adminToken = await login(s, admin);
  const org = await makeOrg(s);
  const ws = await makeWorkspace(s, org.id);

  const peer: OidcPeer = await startOidcPeer({
    redirectUri: `${s.url}/api/auth/sso/callback`, clientId: CLIENT_ID, clientSecret: secret,
    accounts: {
      alice: { email: 'alice@sso.example.test', name: 'Alice Peer' },
      bob: { email: 'bob@sso.example.test', name: 'Bob Peer' },
      carol: { email: 'carol@sso.example.test', name: 'Carol Peer' },
      dave: { email: 'dave@sso.example.test', name: 'Dave Peer' },
      erin: { email: 'erin@sso.example.test', name: 'Erin Peer', emailVerified: false },
    },
  });
  t.after(() => peer.close());
  const fake: FakeOp = await startFakeOp();
  t.after(() => fake.close());

  const createProvider = async (body: Record<string, unknown>) => {
    const r = await call('POST', '/api/system/identity/providers', { token: adminToken, body });
    assert.equal(r.status, 201, r.text);
    return r.body.id as string;
  };
  const providerId = await createProvider({
    kind: 'oidc', name: 'Peer', organizationId: org.id, workspaceId: ws.id, defaultRole: 'producer',
    config: { issuer: peer.issuer, clientId: CLIENT_ID, clientSecretRef: SECRET_REF, scopes: ['openid', 'email', 'profile'] },
  });
  const fakeProviderId = await createProvider({
    kind: 'oidc', name: 'Scripted', organizationId: org.id, defaultRole: 'org_member',
    config: { issuer: fake.issuer, clientId: CLIENT_ID, clientSecretRef: FAKE_SECRET_REF },
  });

  const CALLBACK = `${s.url}/api/auth/sso/callback`;
  const SERVICE_HOST = new URL(s.url).host;
  /** GET /api/auth/sso/start in browser `b` (which keeps the flow cookie): the provider's authorization URL. */
  const start = async (b: Browser, pid: string, returnTo?: string) => {
    const q = new URLSearchParams({ providerId: pid, ...(returnTo ? { returnTo } : {}) });
    const r = await b.fetch(`${s.url}/api/auth/sso/start?${String(q)}`);
    assert.equal(r.status, 302, r.body);
    assert.ok(b.cookie(SERVICE_HOST, 'svc_sso_flow'), 'the flow cookie is set');
    return new URL(r.headers.location);
  };
  /** A browser of its own client address (X-Forwarded-For, trusted by this server). */
  const browser = (loginName: string) => {
    const n = browsers.length + 1;
    const b = new Browser({ login: loginName, password: 'any password' }, { 'x-forwarded-for': `10.0.${Math.floor(n / 250)}.${(n % 250) + 1}` });
    browsers.push(b);
    return b;
  };
  /** A person signing in at the peer: from the authorization URL to the redirect back to the service (not yet followed). */
  const atPeer = (b: Browser, authUrl: URL) => b.run(authUrl.href, (u) => u.startsWith(CALLBACK));
  const ticketOf = (location: string) => {
    assert.ok(location.startsWith(`${FRONT}/sso/complete#ticket=`), location);
    return new URLSearchParams(new URL(location).hash.slice(1)).get('ticket')!;
  };
  /** The whole browser journey: start -> provider login/consent -> callback -> front end; the ticket. */
  const signIn = async (loginName: string, returnTo?: string) => {
    const b = browser(loginName);
    const callbackUrl = await atPeer(b, await start(b, providerId, returnTo));
    const cb = await b.fetch(callbackUrl);
    assert.equal(cb.status, 302, cb.body);
    return { ticket: ticketOf(cb.headers.location), callbackUrl, b };
  };
  /** POST /api/auth/sso/redeem as browser `b` (its cookies go along and it keeps what the answer sets); null: a client without cookies. */
  const redeem = async ({ ticket, b }: { ticket: string; b: Browser | null }) => {
    const url = `${s.url}/api/auth/sso/redeem`;
    const cookie = b?.cookiesFor(url);
    const r = await call('POST', '/api/auth/sso/redeem', { body: { ticket }, headers: cookie ? { cookie } : {} });
    b?.keepFrom(url, r.headers);
    redeemAnswers.add(r);
    if (r.body?.token) sessionTokens.push(r.body.token);
    return r;
  };
  /** A refusal: its status and code, one more auth.sso.failed record, and no ticket and no session made. */
  const refused = async (status: number, code: string | RegExp, act: () => Promise<{ status: number; body: string }>) => {
    const before = { failed: (await failures(s)).length, tickets: await count(s, 'sso_tickets'), sessions: await count(s, 'sessions') };
    const r = await act();
    assert.equal(r.status, status, r.body);
    const errCode = JSON.parse(r.body).error.code;
    if (typeof code === 'string') assert.equal(errCode, code, r.body);
    else assert.match(errCode, code);
    const after = await failures(s);
    assert.equal(after.length, before.failed + 1, 'audited as auth.sso.failed');
    assert.equal(after.at(-1).result, 'failure');
    assert.equal(await count(s, 'sso_tickets'), before.tickets, 'no ticket issued');
    assert.equal(await count(s, 'sessions'), before.sessions, 'no session started');
    return { body: JSON.parse(r.body), audit: JSON.parse(after.at(-1).metadata) };
  };
  const getRaw = async (b: Browser, url: string) => { const r = await b.fetch(url); return { status: r.status, body: r.body }; };

  await t.test('acceptance 1: start -> oidc-provider -> callback -> front end with a ticket -> redeem -> session; user and membership created', async () => {
    const b = browser('alice');
    const authUrl = await start(b, providerId, '/projects/p1?tab=shots');
    // The flow cookie binding the flow to this browser: random, HttpOnly, only under /api/auth/sso, 10 minutes, Lax (plain http: not Secure).
    const setCookie = b.seen.at(-1)!.headers['set-cookie'];
    const flowCookie = /^svc_sso_flow=([A-Za-z0-9_-]{43}); Path=\/api\/auth\/sso; HttpOnly; SameSite=Lax; Max-Age=600$/.exec(setCookie)?.[1];
    assert.ok(flowCookie, setCookie);
    assert.equal(authUrl.origin, peer.issuer);
    const p = authUrl.searchParams;
    assert.equal(p.get('response_type'), 'code');
    assert.equal(p.get('client_id'), CLIENT_ID);
    assert.equal(p.get('redirect_uri'), CALLBACK);
    assert.equal(p.get('scope'), 'openid email profile');
    assert.equal(p.get('code_challenge_method'), 'S256');
    assert.match(p.get('code_challenge')!, /^[A-Za-z0-9_-]{43}$/);
    assert.match(p.get('state')!, /^[A-Za-z0-9_-]{43}$/);
    assert.match(p.get('nonce')!, /^[A-Za-z0-9_-]{43}$/);
    // The state is stored only as its hash, the rest encrypted.
    const row = await s.db.get<any>('SELECT * FROM sso_states WHERE handle_hash = ?', sha256Hex(p.get('state')!));
    assert.ok(row, 'flow state stored by the hash of the state');
    assert.equal(row.provider_id, providerId);
    for (const v of [p.get('state')!, p.get('nonce')!, '/projects/p1', flowCookie, sha256Hex(flowCookie)]) assert.ok(!JSON.stringify(row).includes(v));

    const callbackUrl = await atPeer(b, authUrl);
    const cb = await b.fetch(callbackUrl);
    assert.equal(cb.status, 302, cb.body);
    assert.equal(cb.headers['set-cookie'], undefined, 'the flow cookie is kept: redeem requires it');
    assert.equal(b.cookie(SERVICE_HOST, 'svc_sso_flow'), flowCookie);
    const location = cb.headers.location;
    const ticket = ticketOf(location);
    assert.equal(new URL(location).search, '', 'nothing in the query string: the ticket travels in the fragment');
    assert.equal(cb.headers['referrer-policy'], 'no-referrer');
    assert.ok(!/token/i.test(location.replace(/#ticket=.*/, '')));

    const r = await redeem({ ticket, b });
    assert.equal(r.status, 200, r.text);
    assert.ok(r.body.token, 'a Bearer session');
    assert.deepEqual(r.headers.getSetCookie(), ['svc_sso_flow=; Path=/api/auth/sso; HttpOnly; SameSite=Lax; Max-Age=0'], 'redeem clears the flow cookie');
    assert.equal(b.cookie(SERVICE_HOST, 'svc_sso_flow'), undefined);
    assert.equal((await s.db.get<any>('SELECT browser_hash FROM sso_tickets WHERE ticket_hash = ?', sha256Hex(ticket))).browser_hash, sha256Hex(flowCookie),
      'the ticket is bound to the flow cookie (its hash only)');
    assert.equal(r.body.returnTo, '/projects/p1?tab=shots', 'returnTo comes back');
    const me = await call('GET', '/api/auth/session', { token: r.body.token });
    assert.equal(me.status, 200, me.text);

    const user = await s.db.get<any>("SELECT * FROM users WHERE email_normalized = 'alice@sso.example.test'");
    assert.ok(user, 'user created');
    assert.equal(user.name, 'Alice Peer');
    assert.equal(user.password_hash, null, 'no password');
    assert.equal(me.body.user?.id ?? me.body.userId, user.id);
    const ms = await s.db.all<any>("SELECT level, scope_id, role, status FROM memberships WHERE user_id = ? ORDER BY level", user.id);
    assert.deepEqual(ms.map((m) => [m.level, m.scope_id, m.role, m.status]), [
      ['organization', org.id, 'org_member', 'active'],
      ['workspace', ws.id, 'producer', 'active'],
    ]);
    const identity = await s.db.get<any>('SELECT * FROM sso_identities WHERE provider_id = ? AND subject = ?', providerId, 'alice');
    assert.equal(identity.user_id, user.id);
    const verified = await s.db.all<any>("SELECT * FROM audit_log WHERE action = 'auth.sso.verified' AND target_id = ?", user.id);
    assert.equal(verified.length, 1, 'auth.sso.verified audited');
    const vm = JSON.parse(verified[0].metadata);
    assert.equal(vm.providerId, providerId);
    assert.equal(vm.subject, 'alice');
    assert.equal(verified[0].organization_id, org.id);

    // Replay of the ticket: 401, no second session.
    const sessions = await count(s, 'sessions');
    const again = await redeem({ ticket, b });
    assert.equal(again.status, 401, again.text);
    assert.equal(again.body.error.code, 'invalid_ticket');
    assert.equal(await count(s, 'sessions'), sessions);
  });

  await t.test('a second sign-in finds the same account (by provider subject); an existing account is linked by e-mail', async () => {
    const alice = (await s.db.get<any>("SELECT id FROM users WHERE email_normalized = 'alice@sso.example.test'"))!;
    const r1 = await redeem(await signIn('alice'));
    assert.equal(r1.status, 200, r1.text);
    assert.equal(r1.body.returnTo ?? null, null);
    assert.equal(await count(s, "users WHERE email_normalized = 'alice@sso.example.test'"), 1);
    assert.equal(await count(s, 'memberships WHERE user_id = ?', alice.id), 2, 'no duplicate membership');

    // Linked by e-mail: an active member of the provider's organization only, the address verified (email_verified: true).
    const bob = await makeUser(s, { email: 'bob@sso.example.test' });
    await grant(s, bob.id, 'organization', org.id, 'org_member');
    const r2 = await redeem(await signIn('bob'));
    assert.equal(r2.status, 200, r2.text);
    const me = await call('GET', '/api/auth/session', { token: r2.body.token });
    assert.equal(me.body.user?.id ?? me.body.userId, bob.id, 'linked to the existing account');
  });

  await t.test('with MFA required by the policy, redeem answers an enrollment challenge, not a session', async () => {
    const on = await call('PATCH', '/api/system/identity/policy', { token: adminToken, body: { mfaRequired: true } });
    assert.equal(on.status, 200, on.text);
    try {
      const sessions = await count(s, 'sessions');
      const r = await redeem(await signIn('carol'));
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.mfaEnrollmentRequired, true, r.text);
      assert.ok(r.body.challengeToken);
      assert.equal(r.body.token, undefined, 'no session');
      assert.equal(await count(s, 'sessions'), sessions);
    } finally {
      const off = await call('PATCH', '/api/system/identity/policy', { token: adminToken, body: { mfaRequired: false } });
      assert.equal(off.status, 200, off.text);
    }
  });

  await t.test('an expired ticket is 401 (60 seconds; the clock is moved by ageing the row)', async () => {
    const { ticket, b } = await signIn('alice');
    const row = await s.db.get<any>('SELECT * FROM sso_tickets WHERE ticket_hash = ?', sha256Hex(ticket));
    assert.ok(row, 'only the hash of the ticket is stored');
    const ttl = Date.parse(row.expires_at) - Date.parse(row.created_at);
    assert.equal(ttl, 60_000);
    await s.db.run('UPDATE sso_tickets SET expires_at = ? WHERE ticket_hash = ?', new Date(Date.now() - 1000).toISOString(), sha256Hex(ticket));
    const r = await redeem({ ticket, b });
    assert.equal(r.status, 401, r.text);
    assert.equal(r.body.error.code, 'invalid_ticket');
  });

  await t.test('state: missing 400, unknown 401, replayed 401 (taken once)', async () => {
    const b = browser('alice');
    await refused(400, 'invalid_callback', () => getRaw(b, `${CALLBACK}?code=abc`));
    await refused(401, 'invalid_state', () => getRaw(b, `${CALLBACK}?code=abc&state=${randomBytes(32).toString('base64url')}`));
    const done = await signIn('alice');
    const replay = await refused(401, 'invalid_state', () => getRaw(done.b, done.callbackUrl));
    assert.equal(replay.audit.reason, 'unknown, used or expired state');
  });

  await t.test('an error answered by the provider (here: the authorization request without PKCE, which the peer requires) is 401', async () => {
    const b = browser('alice');
    const authUrl = await start(b, providerId);
    authUrl.searchParams.delete('code_challenge');
    authUrl.searchParams.delete('code_challenge_method');
    const callbackUrl = await atPeer(b, authUrl);
    assert.equal(new URL(callbackUrl).searchParams.get('error'), 'invalid_request', callbackUrl);
    const r = await refused(401, 'provider_error', () => getRaw(b, callbackUrl));
    assert.equal(r.audit.providerId, providerId);
  });

  await t.test('PKCE: the peer refuses a code exchanged without the verifier; a verifier of another challenge is 401', async () => {
    // Without a verifier, the peer refuses to exchange the code (400 invalid_grant).
    const b = browser('alice');
    const authUrl = await start(b, providerId);
    const callbackUrl = await atPeer(b, authUrl);
    const code = new URL(callbackUrl).searchParams.get('code')!;
    const direct = await fetch(`${peer.issuer}/token`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from(`${CLIENT_ID}:${secret}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: CALLBACK }).toString(),
    });
    const directBody = await direct.json() as { error: string };
    assert.equal(direct.status, 400);
    assert.equal(directBody.error, 'invalid_grant');
    // The service's own exchange of that code carries the verifier only it holds, and works.
    const ok = await b.fetch(callbackUrl);
    assert.equal(ok.status, 302, ok.body);

    // The authorization request carries the challenge of another verifier: the service's verifier does not match.
    const b2 = browser('alice');
    const other = await start(b2, providerId);
    other.searchParams.set('code_challenge', s256(randomBytes(32).toString('base64url')));
    const cb2 = await atPeer(b2, other);
    const r = await refused(401, 'token_exchange_failed', () => getRaw(b2, cb2));
    assert.match(r.audit.reason, /invalid_grant/);
  });

  await t.test('nonce mismatch: the peer signs the nonce it was given, not the flow\'s (401)', async () => {
    const b = browser('alice');
    const authUrl = await start(b, providerId);
    authUrl.searchParams.set('nonce', randomBytes(32).toString('base64url'));
    const callbackUrl = await atPeer(b, authUrl);
    const r = await refused(401, 'invalid_id_token', () => getRaw(b, callbackUrl));
    assert.equal(r.audit.reason, 'nonce differs from the flow');
  });

  await t.test('an e-mail address the provider marks unverified is refused (401)', async () => {
    const b = browser('erin');
    const callbackUrl = await atPeer(b, await start(b, providerId));
    await refused(401, 'email_not_verified', () => getRaw(b, callbackUrl));
    assert.equal(await count(s, "users WHERE email_normalized = 'erin@sso.example.test'"), 0);
  });

  // ---- The scripted provider: tokens a real provider never mints. ----
  const now = () => Math.floor(Date.now() / 1000);
  /** Starts a flow at the scripted provider in a new browser: the browser, the state, nonce and challenge. */
  const fakeFlow = async () => {
    const b = browser('scripted');
    const u = await start(b, fakeProviderId);
    assert.equal(u.origin, fake.issuer);
    return { b, state: u.searchParams.get('state')!, nonce: u.searchParams.get('nonce')!, challenge: u.searchParams.get('code_challenge')! };
  };
  type FakeFlow = Awaited<ReturnType<typeof fakeFlow>>;
  const claims = (nonce: string, over: Record<string, unknown> = {}) => ({
    iss: fake.issuer, aud: CLIENT_ID, sub: 'scripted-1', email: 'scripted@sso.example.test', name: 'Scripted', nonce, iat: now(), exp: now() + 300, ...over,
  });
  const sign = (payload: Record<string, unknown>, key = fake.privateKey, kid = fake.kid) =>
    new SignJWT(payload).setProtectedHeader({ alg: 'RS256', kid }).sign(key);
  /** The callback of a flow (in the browser that started it) whose token endpoint answers `idToken`. */
  const deliver = async (f: FakeFlow, idToken: string, b: Browser = f.b) => {
    idTokens.push(idToken);
    fake.answer = { status: 200, body: { access_token: 'at', token_type: 'Bearer', expires_in: 60, id_token: idToken } };
    return getRaw(b, `${CALLBACK}?code=scripted-code&state=${encodeURIComponent(f.state)}`);
  };

  await t.test('scripted provider, control: a correct RS256 token signs in; the code is exchanged with client_secret_basic and the PKCE verifier', async () => {
    const f = await fakeFlow();
    const r = await deliver(f, await sign(claims(f.nonce)));
    assert.equal(r.status, 302, r.body);
    const req = fake.tokenRequests.at(-1)!;
    assert.equal(req.authorization, `Basic ${Buffer.from(`${CLIENT_ID}:${fakeSecret}`).toString('base64')}`);
    assert.equal(req.form.get('grant_type'), 'authorization_code');
    assert.equal(req.form.get('code'), 'scripted-code');
    assert.equal(req.form.get('redirect_uri'), CALLBACK);
    assert.equal(s256(req.form.get('code_verifier')!), f.challenge, 'the verifier of the challenge sent at start');
  });

  await t.test('scripted provider: each forged or wrong ID token fails closed (401 invalid_id_token)', async () => {
    const cases: [string, (nonce: string) => Promise<string>, RegExp][] = [
      ['alg none', async (n) => new UnsecuredJWT(claims(n)).encode(), /^algorithm not allowed$/],
      ['HS256 keyed with the provider\'s public key', async (n) => {
        const pem = await exportSPKI(await importJWK(fake.publicJwk, 'RS256', { extractable: true }) as any);
        return new SignJWT(claims(n)).setProtectedHeader({ alg: 'HS256', kid: fake.kid }).sign(new TextEncoder().encode(pem));
      }, /algorithm not allowed/],
      ['HS256 keyed with the public JWK text', async (n) =>
        new SignJWT(claims(n)).setProtectedHeader({ alg: 'HS256', kid: fake.kid }).sign(new TextEncoder().encode(JSON.stringify(fake.publicJwk))), /algorithm not allowed/],
      ['wrong iss', async (n) => sign(claims(n, { iss: 'https://evil.example.test' })), /claim iss/],
      ['wrong aud', async (n) => sign(claims(n, { aud: 'another-client' })), /claim aud/],
      ['expired', async (n) => sign(claims(n, { iat: now() - 3600, exp: now() - 600 })), /expired/],
      ['nonce mismatch', async () => sign(claims(randomBytes(32).toString('base64url'))), /nonce/],
      ['no nonce', async (n) => sign(claims(n, { nonce: undefined })), /nonce/],
      ['several audiences without azp', async (n) => sign(claims(n, { aud: [CLIENT_ID, 'other'] })), /azp/],
      ['azp of another client', async (n) => sign(claims(n, { azp: 'other' })), /azp/],
      ['signed by another key under the provider\'s kid', async (n) => {
        const { privateKey } = await generateKeyPair('RS256');
        return sign(claims(n), privateKey);
      }, /ERR_JWS_SIGNATURE_VERIFICATION_FAILED|ERR_JWKS_NO_MATCHING_KEY/],
      ['no sub', async (n) => sign(claims(n, { sub: undefined })), /claim sub/],
    ];
    for (const [name, make, reason] of cases) {
      const f = await fakeFlow();
      const token = await make(f.nonce);
      const r = await refused(401, 'invalid_id_token', () => deliver(f, token));
      assert.match(r.audit.reason, reason, `${name}: ${r.audit.reason}`);
      assert.ok(!JSON.stringify(r).includes(token), `${name}: the token is not echoed`);
    }
  });

  await t.test('scripted provider: a refused code exchange and an answer without id_token are 401 token_exchange_failed', async () => {
    const f = await fakeFlow();
    fake.answer = { status: 400, body: { error: 'invalid_grant', error_description: 'nope' } };
    await refused(401, 'token_exchange_failed', () => getRaw(f.b, `${CALLBACK}?code=c&state=${f.state}`));
    const g = await fakeFlow();
    fake.answer = { status: 200, body: { access_token: 'at', token_type: 'Bearer' } };
    await refused(401, 'token_exchange_failed', () => getRaw(g.b, `${CALLBACK}?code=c&state=${g.state}`));
  });

  await t.test('the iss parameter of the answer (RFC 9207) must name the flow\'s provider', async () => {
    const f = await fakeFlow();
    await refused(401, 'issuer_mismatch', () => getRaw(f.b, `${CALLBACK}?code=c&state=${f.state}&iss=${encodeURIComponent(peer.issuer)}`));
  });

  await t.test('a provider disabled while the person is at it: the callback is 401', async () => {
    const f = await fakeFlow();
    const off = await call('PATCH', `/api/system/identity/providers/${fakeProviderId}`, { token: adminToken, body: { status: 'disabled' } });
    assert.equal(off.status, 200, off.text);
    try {
      const exchanges = fake.tokenRequests.length;
      await refused(401, 'provider_unavailable', () => deliver(f, 'never.looked.at'));
      assert.equal(fake.tokenRequests.length, exchanges, 'no code exchanged for it');
    } finally {
      fake.answer = null;
      const on = await call('PATCH', `/api/system/identity/providers/${fakeProviderId}`, { token: adminToken, body: { status: 'active' } });
      assert.equal(on.status, 200, on.text);
    }
  });

  await t.test('a discovery document naming another issuer stops the start (502, nothing stored)', async () => {
    const liar = await startFakeOp({ issuerOverride: 'https://someone-else.example.test' });
    t.after(() => liar.close());
    const pid = await createProvider({
      kind: 'oidc', name: 'Liar', organizationId: org.id, config: { issuer: liar.issuer, clientId: CLIENT_ID, clientSecretRef: FAKE_SECRET_REF },
    });
    const states = await count(s, 'sso_states');
    const r = await call('GET', `/api/auth/sso/start?providerId=${pid}`);
    assert.equal(r.status, 502, r.text);
    assert.equal(r.body.error.code, 'sso_provider_unavailable');
    assert.equal(await count(s, 'sso_states'), states);
  });

  await t.test('login CSRF: a callback without the flow cookie or with another flow\'s cookie is 401 sso_browser_mismatch, and the state is used up all the same', async () => {
    // The peer's answer for a flow started in browser b, brought back by a browser that holds no flow cookie.
    const b = browser('alice');
    const callbackUrl = await atPeer(b, await start(b, providerId));
    const r = await refused(401, 'sso_browser_mismatch', () => getRaw(browser('alice'), callbackUrl));
    assert.equal(r.audit.providerId, providerId);
    assert.match(r.audit.reason, /did not start this sign-in/);
    // Single use either way: the browser of the flow now finds the state gone.
    await refused(401, 'invalid_state', () => getRaw(b, callbackUrl));

    // Two flows at the scripted provider: flow A's answer in flow B's browser (which holds B's cookie).
    const a = await fakeFlow();
    const other = await fakeFlow();
    const exchanges = fake.tokenRequests.length;
    await refused(401, 'sso_browser_mismatch', () => deliver(a, 'never.looked.at', other.b));
    assert.equal(fake.tokenRequests.length, exchanges, 'no code exchanged for it');
    fake.answer = null;
    await refused(401, 'invalid_state', () => deliver(a, 'never.looked.at'));
    fake.answer = null;
    // The refusal left flow B's cookie alone: B completes in its own browser and redeems there, which clears it.
    const ok = await deliver(other, await sign(claims(other.nonce)));
    assert.equal(ok.status, 302, ok.body);
    assert.ok(other.b.cookie(SERVICE_HOST, 'svc_sso_flow'), 'kept until redeem');
    const redeemed = await redeem({ ticket: ticketOf(other.b.seen.at(-1)!.headers.location), b: other.b });
    assert.equal(redeemed.status, 200, redeemed.text);
    assert.equal(other.b.cookie(SERVICE_HOST, 'svc_sso_flow'), undefined);
  });

  await t.test('login CSRF through the landing page: a ticket redeemed by another client (no flow cookie, or another flow\'s) is 401 sso_browser_mismatch and used up; its browser then gets 401 invalid_ticket', async () => {
    // The attacker finished a sign-in in their own browser and hands the ticket (#ticket=...) to the victim.
    const attacker = await signIn('alice');
    const sessions = await count(s, 'sessions');
    const noCookie = await refused(401, 'sso_browser_mismatch', async () => {
      const r = await redeem({ ticket: attacker.ticket, b: null });
      return { status: r.status, body: r.text };
    });
    assert.equal(noCookie.audit.providerId, providerId);
    assert.match(noCookie.audit.reason, /did not start this sign-in/);
    assert.equal(noCookie.body.token, undefined);
    const row = await s.db.get<any>('SELECT used_at FROM sso_tickets WHERE ticket_hash = ?', sha256Hex(attacker.ticket));
    assert.ok(row.used_at, 'the ticket is used up');
    const late = await redeem(attacker);
    assert.equal(late.status, 401, late.text);
    assert.equal(late.body.error.code, 'invalid_ticket', 'single use: its own browser cannot redeem it afterwards');

    // The victim is in the middle of a sign-in of their own (holds a flow cookie): the attacker's ticket is refused there too.
    const victim = browser('bob');
    await start(victim, providerId);
    const victimCookie = victim.cookie(SERVICE_HOST, 'svc_sso_flow');
    const other = await signIn('alice');
    await refused(401, 'sso_browser_mismatch', async () => {
      const r = await redeem({ ticket: other.ticket, b: victim });
      return { status: r.status, body: r.text };
    });
    assert.equal(victim.cookie(SERVICE_HOST, 'svc_sso_flow'), victimCookie, 'a refusal leaves the victim\'s own flow cookie alone');
    const again = await redeem(other);
    assert.equal(again.status, 401, again.text);
    assert.equal(again.body.error.code, 'invalid_ticket');
    assert.equal(await count(s, 'sessions'), sessions, 'no session for anyone');
  });

  await t.test('scripted provider: email_verified goes to the account rules; an existing member is linked only when it is true', async () => {
    const person = await makeUser(s, { email: 'linked-member@sso.example.test' });
    await grant(s, person.id, 'organization', org.id, 'org_member');
    const identity = { sub: 'scripted-link', email: person.email };
    for (const over of [{}, { email_verified: 'true' }]) { // absent, and not a boolean: null
      const f = await fakeFlow();
      const r = await refused(401, 'sso_link_refused', async () => deliver(f, await sign(claims(f.nonce, { ...identity, ...over }))));
      assert.match(r.audit.reason, /verified/, JSON.stringify(over));
    }
    assert.equal(await count(s, 'sso_identities WHERE provider_id = ? AND subject = ?', fakeProviderId, 'scripted-link'), 0);
    const g = await fakeFlow();
    const ok = await deliver(g, await sign(claims(g.nonce, { ...identity, email_verified: true })));
    assert.equal(ok.status, 302, ok.body);
    const linked = await s.db.get<any>('SELECT user_id FROM sso_identities WHERE provider_id = ? AND subject = ?', fakeProviderId, 'scripted-link');
    assert.equal(linked?.user_id, person.id, 'linked to the existing account');
  });

  await t.test('a discovery document naming an http endpoint off loopback stops the start (502, nothing stored, no flow cookie)', async () => {
    const plain = await startFakeOp({ tokenEndpointOverride: 'http://token.example.test/token' });
    t.after(() => plain.close());
    const pid = await createProvider({
      kind: 'oidc', name: 'Plain token endpoint', organizationId: org.id, config: { issuer: plain.issuer, clientId: CLIENT_ID, clientSecretRef: FAKE_SECRET_REF },
    });
    const states = await count(s, 'sso_states');
    const r = await call('GET', `/api/auth/sso/start?providerId=${pid}`);
    assert.equal(r.status, 502, r.text);
    assert.equal(r.body.error.code, 'sso_provider_unavailable');
    assert.equal(r.headers.get('set-cookie'), null);
    assert.equal(await count(s, 'sso_states'), states);
    s.log.flush();
    assert.ok(s.logs.some((l) => l.includes('oidc discovery failed') && l.includes('discovery token_endpoint must use https')), 'refused for the token endpoint\'s scheme');
  });

  await t.test('acceptance 4: no answer, URL, log line or audit record holds a session token, the client secret or an ID token', async () => {
    idTokens.push(...peer.idTokens);
    assert.ok(sessionTokens.length >= 3, 'sessions were issued');
    assert.ok(peer.idTokens.length >= 3, 'the peer issued ID tokens');
    s.log.flush();
    const texts: [string, string][] = [];
    for (const a of answers) {
      const text = `${a.text}\n${JSON.stringify(headersOf(a.headers))}`;
      texts.push(['answer', redeemAnswers.has(a) ? text.replace(/"token":"[^"]+"/g, '"token":"(issued here)"') : text]);
    }
    for (const b of browsers) for (const seen of b.seen) texts.push([`browser ${seen.url}`, `${seen.url}\n${JSON.stringify(seen.headers)}\n${seen.body}`]);
    for (const line of s.logs) texts.push(['log', line]);
    for (const row of await s.db.all<any>('SELECT * FROM audit_log')) texts.push(['audit', JSON.stringify(row)]);
    assert.ok(texts.length > 50);
    const secrets: [string, string][] = [
      ...sessionTokens.map((v) => ['session token', v] as [string, string]),
      ['client secret', secret], ['client secret', fakeSecret],
      ['client secret (Basic)', Buffer.from(`${CLIENT_ID}:${secret}`).toString('base64')],
      ...idTokens.map((v) => ['ID token', v] as [string, string]),
      ...idTokens.map((v) => ['ID token signature', v.split('.')[2]] as [string, string]).filter(([, v]) => v && v.length > 20),
    ];
    for (const [what, value] of secrets) {
      for (const [where, text] of texts) assert.ok(!text.includes(value), `${what} found in ${where}`);
    }
  });
});

test('the redirect URI: SVC_OIDC_REDIRECT_URI, else {SVC_PUBLIC_URL or the start request\'s origin}/api/auth/sso/callback, else 409', () => {
  const ctxOf = (env: Record<string, string>) => createContext({ db: {} as Db, config: loadConfig({}, env), log: createLogger('silent') });
  const fixed = ctxOf({ SVC_OIDC_REDIRECT_URI: 'https://sso.example.test/cb', SVC_PUBLIC_URL: 'https://api.example.test' });
  assert.equal(oidcRedirectUri(fixed, 'http://127.0.0.1:9'), 'https://sso.example.test/cb');
  const pub = ctxOf({ SVC_PUBLIC_URL: 'https://api.example.test/' });
  assert.equal(oidcRedirectUri(pub, 'http://127.0.0.1:9'), 'https://api.example.test/api/auth/sso/callback');
  assert.equal(oidcRedirectUri(ctxOf({}), 'http://127.0.0.1:9'), 'http://127.0.0.1:9/api/auth/sso/callback');
  assert.throws(() => oidcRedirectUri(ctxOf({})), (e: any) => e.status === 409 && e.code === 'sso_not_configured');
});
