// Single sign-on providers and the common end of every SSO flow: the system administrator's identity
// providers (access, strict validation, probes against a loopback OIDC discovery server and a real
// certificate), the one-time encrypted flow states, finishSso's account provisioning (new user,
// link by e-mail, seats, suspension), the one-time ticket redeemed for a session or an MFA
// challenge, and the return path that may only lead back into the front end.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.ts';
import { grant, login, makeOrg, makeUser, makeWorkspace, member } from '../helpers/factories.ts';
import { createContext, type Ctx } from '../../src/directory/context.ts';
import { AppError } from '../../src/kernel/errors.ts';
import { finishSso, TICKET_TTL_MS, type VerifiedIdentity } from '../../src/identity/sso/finish.ts';
import { safeReturnTo } from '../../src/identity/sso/return-to.ts';
import { FLOW_TTL_MS, saveFlowState, takeFlowState } from '../../src/identity/sso/state.ts';
import { providerById, type ProviderRow } from '../../src/identity/sso/store.ts';
import { probeProvider } from '../../src/identity/sso/probe.ts';
import { readRef } from '../../src/identity/sso/provider-config.ts';
import { TOTP_CONFIG, totpAt } from '../../src/identity/mfa/totp.ts';
import {
  MFA_KEY_SETTING, SSO_KEY_SETTING, SecretUnreadableError, parseEncryptionKey, parseMfaKey, seal, unseal,
} from '../../src/kernel/seal.ts';
import { setUserStatus } from '../../src/identity/users/service.ts';

const base = '/api/system/identity/providers';
const FRONTEND = 'https://app.example.test';
const SECRET_REF = 'SSO_PROVIDERS_TEST_CLIENT_SECRET';
const SECRET_VALUE = `client-secret-${crypto.randomBytes(12).toString('hex')}`;
const UNSET_REF = 'SSO_PROVIDERS_TEST_UNSET';
process.env[SECRET_REF] = SECRET_VALUE;
delete process.env[UNSET_REF];

async function world(t: Parameters<typeof startTestServer>[0]) {
  const s = await startTestServer(t, { SVC_FRONTEND_ORIGIN: FRONTEND });
  const adminUser = await makeUser(s, { systemAdmin: true });
  const admin = await login(s, adminUser);
  const org = makeOrg(s);
  const ws = makeWorkspace(s, org.id);
  return { s, admin, adminUser, org, ws };
}

const oidcBody = (organizationId: string, config: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) => ({
  kind: 'oidc', name: 'Corporate OIDC', organizationId,
  config: { issuer: 'https://login.example.test', clientId: 'svc-client', clientSecretRef: SECRET_REF, ...config }, ...extra,
});

const samlBody = (organizationId: string, config: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) => ({
  kind: 'saml', name: 'Corporate SAML', organizationId,
  config: { idpEntityId: 'https://idp.example.test/entity', ssoUrl: 'https://idp.example.test/sso', idpCertRef: 'SSO_PROVIDERS_TEST_CERT', spEntityId: 'https://svc.example.test/sp', ...config },
  ...extra,
});

async function create(s: TestServer, token: string, body: unknown) {
  const r = await s.call('POST', base, { token, body });
  assert.equal(r.status, 201, r.text);
  return r.body;
}

const row = (s: TestServer, id: string): ProviderRow => providerById(s.db, id)!;
const fakeReq = { headers: { host: 'svc.test' }, socket: {} } as unknown as IncomingMessage;
const ctxAt = (s: TestServer, at: number): Ctx => createContext({ db: s.db, config: s.config, log: s.log, now: () => new Date(at) });
const audits = (s: TestServer, action: string) =>
  s.db.all<any>('SELECT * FROM audit_log WHERE action = ? ORDER BY seq', action).map((a) => ({ ...a, metadata: JSON.parse(a.metadata) }));
const ticketOf = (url: string) => decodeURIComponent(new URL(url).hash.replace(/^#ticket=/, ''));
/** A browser's flow cookie as GET /api/auth/sso/start sets it, and its hash that finishSso binds the ticket to. */
const FLOW_VALUE = crypto.randomBytes(32).toString('base64url');
const FLOW = { cookie: `svc_sso_flow=${FLOW_VALUE}`, hash: crypto.hash('sha256', FLOW_VALUE, 'hex') };
const CLEAR_FLOW = 'svc_sso_flow=; Path=/api/auth/sso; HttpOnly; SameSite=Lax; Max-Age=0';

function expectAppError(fn: () => unknown, status: number, code: string) {
  assert.throws(fn, (err: unknown) => err instanceof AppError && err.status === status && err.code === code);
}

test('provider routes are for system administrators only: 401 without a session, 403 for an organization owner', async (t) => {
  const { s, admin, org } = await world(t);
  const p = await create(s, admin, oidcBody(org.id));
  const owner = await member(s, 'org_owner', { organizationId: org.id, workspaceId: '', projectId: '' });
  const routes: Array<[string, string, unknown?]> = [
    ['GET', base], ['POST', base, oidcBody(org.id)], ['GET', `${base}/${p.id}`],
    ['PATCH', `${base}/${p.id}`, { name: 'x' }], ['POST', `${base}/${p.id}/probe`],
  ];
  for (const [method, url, body] of routes) {
    assert.equal((await s.call(method, url, { body })).status, 401, `${method} ${url} without a session`);
    const r = await s.call(method, url, { token: owner.token, body });
    assert.equal(r.status, 403, `${method} ${url} as org_owner: ${r.text}`);
  }
  assert.equal((await s.call('GET', `${base}/idp_unknown`, { token: admin })).status, 404);
  assert.equal((await s.call('PATCH', `${base}/idp_unknown`, { token: admin, body: { name: 'x' } })).status, 404);
});

test('create, read, list and patch OIDC and SAML providers: config holds variable names only, audited, a config change clears the probe', async (t) => {
  const { s, admin, org, ws } = await world(t);
  const o = await create(s, admin, oidcBody(org.id));
  assert.equal(o.kind, 'oidc');
  assert.equal(o.status, 'active');
  assert.equal(o.defaultRole, 'org_member');
  assert.equal(o.workspaceId, null);
  assert.deepEqual(o.config, {
    issuer: 'https://login.example.test', clientId: 'svc-client', clientSecretRef: SECRET_REF,
    scopes: ['openid', 'email', 'profile'], claimMapping: { email: 'email', name: 'name' },
  });
  assert.match(o.endpoints.redirectUri, /^http:\/\/127\.0\.0\.1:\d+\/api\/auth\/sso\/callback$/);
  assert.deepEqual(o.probe, { probedAt: null, status: null, detail: null });

  const sm = await create(s, admin, samlBody(org.id, { attributeMapping: { email: 'mail' } }, { workspaceId: ws.id, defaultRole: 'writer' }));
  assert.deepEqual(sm.config.attributeMapping, { email: 'mail', name: 'name' });
  assert.equal(sm.workspaceId, ws.id);
  assert.match(sm.endpoints.acsUrl, new RegExp(`/api/auth/sso/saml/${sm.id}/acs$`));
  assert.match(sm.endpoints.metadataUrl, new RegExp(`/api/auth/sso/saml/${sm.id}/metadata$`));

  const list = await s.call('GET', `${base}?kind=saml`, { token: admin });
  assert.deepEqual(list.body.items.map((p: any) => p.id), [sm.id]);
  assert.equal(list.body.pagination.total, 1);
  assert.equal((await s.call('GET', `${base}/${o.id}`, { token: admin })).body.identities, 0);

  // A stored probe result is cleared by a config change (it no longer describes the provider).
  const detail = JSON.stringify({ discoveryUrl: 'https://login.example.test/.well-known/openid-configuration', clientSecretRef: SECRET_REF, clientSecretSet: true, problems: [] });
  s.db.run("UPDATE identity_providers SET probed_at = '2024-01-01T00:00:00.000Z', probe_status = 'ok', probe_detail = ? WHERE id = ?", detail, o.id);
  const renamed = await s.call('PATCH', `${base}/${o.id}`, { token: admin, body: { name: 'Renamed', status: 'disabled' } });
  assert.equal(renamed.status, 200, renamed.text);
  assert.equal(renamed.body.probe.status, 'ok');
  const changed = await s.call('PATCH', `${base}/${o.id}`, { token: admin, body: { config: { clientId: 'other-client', scopes: ['openid'] } } });
  assert.equal(changed.status, 200, changed.text);
  assert.equal(changed.body.config.clientId, 'other-client');
  assert.equal(changed.body.config.issuer, 'https://login.example.test', 'unnamed config fields are kept');
  assert.deepEqual(changed.body.config.scopes, ['openid']);
  assert.deepEqual(changed.body.probe, { probedAt: null, status: null, detail: null });
  // Rebinding: an organization role drops the workspace.
  const rebound = await s.call('PATCH', `${base}/${sm.id}`, { token: admin, body: { defaultRole: 'org_admin' } });
  assert.equal(rebound.status, 200, rebound.text);
  assert.equal(rebound.body.workspaceId, null);
  // Kind and organization are fixed.
  assert.equal((await s.call('PATCH', `${base}/${o.id}`, { token: admin, body: { kind: 'saml' } })).status, 422);
  assert.equal((await s.call('PATCH', `${base}/${o.id}`, { token: admin, body: {} })).status, 422);

  assert.deepEqual(audits(s, 'identity_provider.created').map((a) => [a.target_id, a.organization_id]), [[o.id, org.id], [sm.id, org.id]]);
  const updated = audits(s, 'identity_provider.updated');
  assert.deepEqual(updated.map((a) => Object.keys(a.metadata.changes).sort().join(',')), ['name,status', 'config', 'defaultRole,workspaceId']);
  assert.equal(updated[1].metadata.changes.config.to.clientSecretRef, SECRET_REF);
  const everything = JSON.stringify(s.db.all('SELECT * FROM identity_providers')) + JSON.stringify(s.db.all('SELECT metadata FROM audit_log'));
  assert.ok(!everything.includes(SECRET_VALUE), 'no secret value is stored or audited');
});

test('provider input is validated strictly: 422 naming the field', async (t) => {
  const { s, admin, org, ws } = await world(t);
  const other = makeWorkspace(s);
  const cases: Array<[string, unknown, string]> = [
    ['issuer over plain http', oidcBody(org.id, { issuer: 'http://login.example.test' }), 'config.issuer'],
    ['issuer not a URL', oidcBody(org.id, { issuer: 'login.example.test' }), 'config.issuer'],
    ['issuer with credentials', oidcBody(org.id, { issuer: 'https://u:p@login.example.test' }), 'config.issuer'],
    ['issuer javascript:', oidcBody(org.id, { issuer: 'javascript:alert(1)' }), 'config.issuer'],
    ['secret given as a value', oidcBody(org.id, { clientSecretRef: 's3cr3t-value' }), 'config.clientSecretRef'],
    ['secret ref with a space', oidcBody(org.id, { clientSecretRef: 'MY SECRET' }), 'config.clientSecretRef'],
    ['secret ref naming the service\'s session secret', oidcBody(org.id, { clientSecretRef: 'SVC_SESSION_SECRET' }), 'config.clientSecretRef'],
    ['secret ref naming the SSO storage key', oidcBody(org.id, { clientSecretRef: 'SVC_OIDC_STORAGE_KEY' }), 'config.clientSecretRef'],
    ['scopes without openid', oidcBody(org.id, { scopes: ['email', 'profile'] }), 'config.scopes'],
    ['scope with a space', oidcBody(org.id, { scopes: ['openid', 'a b'] }), 'config.scopes[1]'],
    ['a clientSecret value field', oidcBody(org.id, { clientSecret: 'value' }), 'config.clientSecret'],
    ['OIDC config without clientId', oidcBody(org.id, { clientId: undefined }), 'config.clientId'],
    ['SAML ssoUrl relative', samlBody(org.id, { ssoUrl: '/sso' }), 'config.ssoUrl'],
    ['SAML ssoUrl javascript:', samlBody(org.id, { ssoUrl: 'javascript:alert(1)' }), 'config.ssoUrl'],
    ['SAML cert ref lower case', samlBody(org.id, { idpCertRef: 'idp_cert' }), 'config.idpCertRef'],
    ['SAML a PEM in the ref', samlBody(org.id, { idpCertRef: '-----BEGIN CERTIFICATE-----' }), 'config.idpCertRef'],
    ['SAML without spEntityId', samlBody(org.id, { spEntityId: undefined }), 'config.spEntityId'],
    ['unknown kind', { ...oidcBody(org.id), kind: 'ldap' }, 'kind'],
    ['unknown organization', oidcBody('org_nope'), 'organizationId'],
    ['workspace role without workspace', oidcBody(org.id, {}, { defaultRole: 'producer' }), 'defaultRole'],
    ['organization role with workspace', oidcBody(org.id, {}, { workspaceId: ws.id, defaultRole: 'org_admin' }), 'defaultRole'],
    ['org_owner is never given by sign-in', oidcBody(org.id, {}, { defaultRole: 'org_owner' }), 'defaultRole'],
    ['project_guest is not a provider role', oidcBody(org.id, {}, { workspaceId: ws.id, defaultRole: 'project_guest' }), 'defaultRole'],
    ['unknown role', oidcBody(org.id, {}, { defaultRole: 'root' }), 'defaultRole'],
    ['workspace of another organization', oidcBody(org.id, {}, { workspaceId: other.id, defaultRole: 'writer' }), 'workspaceId'],
  ];
  for (const [what, body, field] of cases) {
    const r = await s.call('POST', base, { token: admin, body });
    assert.equal(r.status, 422, `${what}: ${r.text}`);
    assert.equal(r.body.error.code, 'validation_failed');
    assert.ok(field in r.body.error.details.fields, `${what}: ${JSON.stringify(r.body.error.details.fields)}`);
  }
  // http is allowed on loopback only.
  await create(s, admin, oidcBody(org.id, { issuer: 'http://127.0.0.1:9/' }));
  const p = await create(s, admin, oidcBody(org.id));
  const bad = await s.call('PATCH', `${base}/${p.id}`, { token: admin, body: { config: { issuer: 'http://evil.example.test' } } });
  assert.equal(bad.status, 422);
  assert.ok('config.issuer' in bad.body.error.details.fields);
  assert.equal(row(s, p.id).config.includes('evil'), false, 'a refused patch changes nothing');
  assert.equal(s.db.get<any>('SELECT count(*) AS n FROM identity_providers')!.n, 2);
});

/** A loopback OpenID provider's discovery document and key set (the documents only). */
async function discoveryServer(t: Parameters<typeof startTestServer>[0], o: { issuer?: (own: string) => string; keys?: number; tokenEndpoint?: string } = {}) {
  const { publicKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = { ...publicKey.export({ format: 'jwk' }), kid: 'k1', alg: 'RS256', use: 'sig' };
  const server = http.createServer((req, res) => {
    const own = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    if (req.url === '/.well-known/openid-configuration') {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({
        issuer: o.issuer ? o.issuer(own) : own, authorization_endpoint: `${own}/auth`, token_endpoint: o.tokenEndpoint ?? `${own}/token`,
        jwks_uri: `${own}/jwks`, code_challenge_methods_supported: ['S256'], id_token_signing_alg_values_supported: ['RS256'],
      }));
    } else if (req.url === '/jwks') {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ keys: Array.from({ length: o.keys ?? 1 }, () => jwk) }));
    } else {
      res.statusCode = 404;
      res.end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

test('probe OIDC: discovery and JWKS from a loopback provider; wrong issuer, no keys, a cleartext token endpoint, unreachable provider and unset secret variable fail the probe', async (t) => {
  const { s, admin, org } = await world(t);
  const good = await discoveryServer(t);
  const liar = await discoveryServer(t, { issuer: () => 'https://someone-else.example.test' });
  const keyless = await discoveryServer(t, { keys: 0 });
  const probe = async (config: Record<string, unknown>) => {
    const p = await create(s, admin, oidcBody(org.id, config));
    const r = await s.call('POST', `${base}/${p.id}/probe`, { token: admin });
    assert.equal(r.status, 200, r.text);
    return { p, r };
  };

  const ok = await probe({ issuer: good });
  assert.equal(ok.r.body.status, 'ok', JSON.stringify(ok.r.body.detail));
  assert.deepEqual(ok.r.body.detail.problems, []);
  assert.equal(ok.r.body.detail.issuer, good);
  assert.equal(ok.r.body.detail.jwksUri, `${good}/jwks`);
  assert.equal(ok.r.body.detail.keys, 1);
  assert.deepEqual(ok.r.body.detail.signingKeys, [{ kid: 'k1', kty: 'RSA', alg: 'RS256' }]);
  assert.equal(ok.r.body.detail.pkceS256, true);
  assert.equal(ok.r.body.detail.clientSecretSet, true);
  assert.equal(ok.r.body.provider.probe.status, 'ok');
  const stored = row(s, ok.p.id);
  assert.equal(stored.probe_status, 'ok');
  assert.ok(stored.probed_at);
  assert.equal(JSON.parse(stored.probe_detail!).keys, 1);

  const wrongIssuer = await probe({ issuer: liar });
  assert.equal(wrongIssuer.r.body.status, 'failed');
  assert.match(wrongIssuer.r.body.detail.problems.join('\n'), /differs from the configured issuer/);

  const noKeys = await probe({ issuer: keyless });
  assert.equal(noKeys.r.body.status, 'failed');
  assert.match(noKeys.r.body.detail.problems.join('\n'), /no signing keys/);

  // A token endpoint in clear text off loopback would carry the client secret unencrypted.
  const cleartext = await discoveryServer(t, { tokenEndpoint: 'http://idp.example.test/token' });
  const plain = await probe({ issuer: cleartext });
  assert.equal(plain.r.body.status, 'failed');
  assert.match(plain.r.body.detail.problems.join('\n'), /token_endpoint must use https/);

  const closed = await discoveryServer(t);
  const unreachable = await probe({ issuer: `${closed}/nothing-here` });
  assert.equal(unreachable.r.body.status, 'failed');
  assert.match(unreachable.r.body.detail.problems.join('\n'), /discovery document: answered HTTP 404/);

  const noSecret = await probe({ issuer: good, clientSecretRef: UNSET_REF });
  assert.equal(noSecret.r.body.status, 'failed');
  assert.equal(noSecret.r.body.detail.clientSecretSet, false);
  assert.deepEqual(noSecret.r.body.detail.problems, [`the environment variable ${UNSET_REF} is not set`]);

  const probed = audits(s, 'identity_provider.probed');
  assert.deepEqual(probed.map((a) => [a.target_id, a.result, a.metadata.status]), [
    [ok.p.id, 'success', 'ok'], [wrongIssuer.p.id, 'failure', 'failed'], [noKeys.p.id, 'failure', 'failed'],
    [plain.p.id, 'failure', 'failed'], [unreachable.p.id, 'failure', 'failed'], [noSecret.p.id, 'failure', 'failed'],
  ]);
  assert.ok(!JSON.stringify([ok.r.body, probed]).includes(SECRET_VALUE), 'the secret value is never shown');
});

/** A self-signed certificate made with openssl (node:crypto cannot create X.509 certificates). */
function makeCertificate(dir: string, name: string, o: { days?: number; ec?: boolean } = {}) {
  const key = path.join(dir, `${name}.key`);
  const cert = path.join(dir, `${name}.crt`);
  execFileSync('openssl', [
    'req', '-x509', '-newkey', o.ec ? 'ec' : 'rsa:2048', ...(o.ec ? ['-pkeyopt', 'ec_paramgen_curve:P-256'] : []),
    '-nodes', '-keyout', key, '-out', cert, '-days', String(o.days ?? 2), '-subj', `/CN=${name}/O=SSO Test IdP`,
  ], { stdio: 'ignore' });
  return fs.readFileSync(cert, 'utf8');
}

test('probe SAML: the certificate the variable names (subject, validity, SHA-256 fingerprint, never the PEM); unset, unreadable, expired, not yet valid and non-RSA fail', async (t) => {
  const { s, admin, org } = await world(t);
  const dir = tempDir(t);
  const pem = makeCertificate(dir, 'probe-idp');
  const ecPem = makeCertificate(dir, 'probe-ec', { ec: true });
  const vars = { SSO_PROVIDERS_TEST_CERT: pem, SSO_PROVIDERS_TEST_EC: ecPem, SSO_PROVIDERS_TEST_GARBAGE: 'not a certificate at all' };
  Object.assign(process.env, vars);
  t.after(() => { for (const k of Object.keys(vars)) delete process.env[k]; });
  const x509 = new crypto.X509Certificate(pem);
  const pemBody = pem.split('\n').filter((l) => l && !l.startsWith('-----')).join('');

  const p = await create(s, admin, samlBody(org.id));
  const r = await s.call('POST', `${base}/${p.id}/probe`, { token: admin });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.status, 'ok', JSON.stringify(r.body.detail));
  assert.match(r.body.detail.subject, /CN=probe-idp/);
  assert.equal(r.body.detail.fingerprint256, x509.fingerprint256);
  assert.equal(r.body.detail.keyType, 'rsa');
  assert.equal(r.body.detail.keyBits, 2048);
  assert.equal(r.body.detail.validTo, new Date(x509.validTo).toISOString());
  for (const chunk of [pemBody.slice(0, 64), pemBody.slice(200, 264), 'BEGIN CERTIFICATE']) {
    assert.ok(!r.text.includes(chunk), 'the answer never carries the certificate');
    assert.ok(!JSON.stringify(s.db.all('SELECT * FROM identity_providers')).includes(chunk), 'nor does the provider row');
    assert.ok(!JSON.stringify(s.db.all('SELECT metadata FROM audit_log')).includes(chunk), 'nor the audit log');
  }

  // The validity window is checked against the service's clock.
  const later = await probeProvider(ctxAt(s, Date.now() + 3 * 86_400_000), p.id);
  assert.equal(later.result.status, 'failed');
  assert.match(later.result.detail.problems.join('\n'), /certificate expired/);
  const earlier = await probeProvider(ctxAt(s, Date.now() - 86_400_000), p.id);
  assert.match(earlier.result.detail.problems.join('\n'), /not valid before/);
  assert.equal(row(s, p.id).probe_status, 'failed', 'the latest probe is stored');

  for (const [ref, problem] of [
    [UNSET_REF, `the environment variable ${UNSET_REF} is not set`],
    ['SSO_PROVIDERS_TEST_GARBAGE', 'the environment variable SSO_PROVIDERS_TEST_GARBAGE holds no readable X.509 certificate (PEM)'],
    ['SSO_PROVIDERS_TEST_EC', 'the certificate\'s key is not RSA (signatures are checked with rsa-sha256 or rsa-sha512)'],
  ]) {
    const q = await create(s, admin, samlBody(org.id, { idpCertRef: ref }));
    const a = await s.call('POST', `${base}/${q.id}/probe`, { token: admin });
    assert.equal(a.body.status, 'failed', ref);
    assert.deepEqual(a.body.detail.problems, [problem]);
    assert.ok(!a.text.includes('not a certificate at all'), 'a variable\'s value is never echoed');
  }
});

test('readRef: the value of the named variable; unset is 409 sso_not_configured naming the variable', () => {
  assert.equal(readRef(SECRET_REF), SECRET_VALUE);
  expectAppError(() => readRef(UNSET_REF), 409, 'sso_not_configured');
  try {
    readRef(UNSET_REF);
  } catch (err) {
    assert.match((err as AppError).message, new RegExp(UNSET_REF));
    assert.deepEqual((err as AppError).details, { variable: UNSET_REF });
  }
  expectAppError(() => readRef('lower_case'), 409, 'sso_not_configured');
});

test('flow states: stored hashed and encrypted, taken once (deleted), refused when expired, of another kind, moved to another row, or re-pointed at another provider or kind; expired states purged on save', async (t) => {
  const { s, admin, org } = await world(t);
  const p = await create(s, admin, oidcBody(org.id));
  const ctx = s.operator();
  const handle = `state-${crypto.randomBytes(16).toString('hex')}`;
  const payload = { nonce: 'n-123', verifier: 'v-456', returnTo: '/projects/1' };
  saveFlowState(ctx, { providerId: p.id, kind: 'oidc', handle, payload, ttlMs: FLOW_TTL_MS });
  const stored = s.db.get<any>('SELECT * FROM sso_states')!;
  assert.equal(stored.handle_hash, crypto.hash('sha256', handle, 'hex'));
  for (const secret of [handle, 'n-123', 'v-456', '/projects/1']) assert.ok(!JSON.stringify(stored).includes(secret), `${secret} is not stored in clear`);
  assert.equal(Date.parse(stored.expires_at) - Date.parse(stored.created_at), 10 * 60_000);

  assert.equal(takeFlowState(ctx, 'saml', handle), null, 'another kind does not take it');
  assert.equal(s.db.get<any>('SELECT count(*) AS n FROM sso_states')!.n, 1, 'nor deletes it');
  assert.deepEqual(takeFlowState(ctx, 'oidc', handle), { providerId: p.id, payload });
  assert.equal(s.db.get<any>('SELECT count(*) AS n FROM sso_states')!.n, 0, 'a taken state is deleted at once');
  assert.equal(takeFlowState(ctx, 'oidc', handle), null, 'single use');
  assert.equal(takeFlowState(ctx, 'oidc', 'never-issued'), null);
  assert.equal(takeFlowState(ctx, 'oidc', ''), null);

  const late = `late-${crypto.randomBytes(8).toString('hex')}`;
  saveFlowState(ctx, { providerId: p.id, kind: 'saml', handle: late, payload: { relayState: 'r' }, ttlMs: FLOW_TTL_MS });
  assert.equal(takeFlowState(ctxAt(s, Date.now() + FLOW_TTL_MS + 1000), 'saml', late), null, 'expired');
  assert.equal(s.db.get<any>('SELECT count(*) AS n FROM sso_states')!.n, 0, 'an expired state met at take is deleted too');

  // Every save forgets the states already expired (not a day later); unexpired ones stay.
  saveFlowState(ctx, { providerId: p.id, kind: 'oidc', handle: 'fresh', payload: {}, ttlMs: FLOW_TTL_MS });
  saveFlowState(ctxAt(s, Date.now() - FLOW_TTL_MS - 1000), { providerId: p.id, kind: 'oidc', handle: 'stale', payload: {}, ttlMs: FLOW_TTL_MS });
  assert.equal(s.db.get<any>('SELECT count(*) AS n FROM sso_states')!.n, 2, 'the stale state is still there before the next save');
  saveFlowState(ctx, { providerId: p.id, kind: 'oidc', handle: 'next', payload: {}, ttlMs: FLOW_TTL_MS });
  assert.deepEqual(s.db.all<any>('SELECT handle_hash FROM sso_states ORDER BY handle_hash').map((r) => r.handle_hash),
    ['fresh', 'next'].map((h) => crypto.hash('sha256', h, 'hex')).sort(), 'the expired state was deleted by the save');
  assert.equal(takeFlowState(ctx, 'oidc', 'stale'), null);
  assert.deepEqual(takeFlowState(ctx, 'oidc', 'fresh')?.payload, {});
  assert.deepEqual(takeFlowState(ctx, 'oidc', 'next')?.payload, {});

  // The provider id and the kind are additional data too: a row re-pointed at another provider, or
  // relabelled as another kind, does not decrypt (and is used up).
  const q = await create(s, admin, oidcBody(org.id, {}, { name: 'Other OIDC' }));
  saveFlowState(ctx, { providerId: p.id, kind: 'oidc', handle: 'moved', payload: { who: 'moved' }, ttlMs: FLOW_TTL_MS });
  s.db.run('UPDATE sso_states SET provider_id = ? WHERE handle_hash = ?', q.id, crypto.hash('sha256', 'moved', 'hex'));
  assert.equal(takeFlowState(ctx, 'oidc', 'moved'), null, 'provider id changed on the row');
  assert.equal(takeFlowState(ctx, 'oidc', 'moved'), null, 'and it is gone');
  saveFlowState(ctx, { providerId: p.id, kind: 'oidc', handle: 'relabelled', payload: { who: 'relabelled' }, ttlMs: FLOW_TTL_MS });
  s.db.run("UPDATE sso_states SET kind = 'saml' WHERE handle_hash = ?", crypto.hash('sha256', 'relabelled', 'hex'));
  assert.equal(takeFlowState(ctx, 'saml', 'relabelled'), null, 'kind changed on the row');
  // Unchanged, the same provider's state is taken as usual (the refusals above are the binding, not the key).
  saveFlowState(ctx, { providerId: q.id, kind: 'oidc', handle: 'kept', payload: { who: 'kept' }, ttlMs: FLOW_TTL_MS });
  assert.deepEqual(takeFlowState(ctx, 'oidc', 'kept'), { providerId: q.id, payload: { who: 'kept' } });

  // A payload moved to another row (the handle hash is its additional data) does not decrypt.
  const a = 'handle-a', b = 'handle-b';
  saveFlowState(ctx, { providerId: p.id, kind: 'oidc', handle: a, payload: { who: 'a' }, ttlMs: FLOW_TTL_MS });
  saveFlowState(ctx, { providerId: p.id, kind: 'oidc', handle: b, payload: { who: 'b' }, ttlMs: FLOW_TTL_MS });
  s.db.run('UPDATE sso_states SET payload = (SELECT payload FROM sso_states WHERE handle_hash = ?) WHERE handle_hash = ?',
    crypto.hash('sha256', a, 'hex'), crypto.hash('sha256', b, 'hex'));
  assert.equal(takeFlowState(ctx, 'oidc', b), null);
  assert.deepEqual(takeFlowState(ctx, 'oidc', a)?.payload, { who: 'a' });

  // Under another SVC_OIDC_STORAGE_KEY nothing decrypts.
  const c = 'handle-c';
  saveFlowState(ctx, { providerId: p.id, kind: 'oidc', handle: c, payload: { who: 'c' }, ttlMs: FLOW_TTL_MS });
  const otherKey = createContext({ db: s.db, config: { ...s.config, oidcStorageKey: 'ef'.repeat(32) }, log: s.log });
  assert.equal(takeFlowState(otherKey, 'oidc', c), null);
});

test('the SSO storage key shares the MFA key parsing but is its own key: ciphertexts do not cross', () => {
  const hex = 'ab'.repeat(32);
  const mfa = parseMfaKey(hex);
  const sso = parseEncryptionKey(hex, SSO_KEY_SETTING);
  assert.deepEqual(mfa.key, sso.key, 'the same 32 bytes');
  assert.notEqual(mfa.id, sso.id, 'fingerprinted per setting');
  const devMfa = parseMfaKey('');
  const devSso = parseEncryptionKey('', SSO_KEY_SETTING);
  assert.equal(devSso.source, 'development');
  assert.notDeepEqual(devMfa.key, devSso.key, 'separate development keys');
  const pass = 'a long passphrase for the key';
  assert.notDeepEqual(parseEncryptionKey(pass, MFA_KEY_SETTING).key, parseEncryptionKey(pass, SSO_KEY_SETTING).key, 'separate scrypt salts');
  assert.throws(() => parseEncryptionKey('short', SSO_KEY_SETTING), /SVC_OIDC_STORAGE_KEY must be 32 bytes/);
  const aad = Buffer.from('x');
  const blob = seal(devSso, aad, 'payload');
  assert.equal(unseal(devSso, aad, blob), 'payload');
  assert.throws(() => unseal(devMfa, aad, blob), SecretUnreadableError);
  assert.throws(() => unseal(devSso, Buffer.from('y'), blob), SecretUnreadableError);
});

test('finishSso provisions: a new passwordless user with the bound organization and workspace roles; the same subject finds it again; an existing e-mail is linked', async (t) => {
  const { s, admin, org, ws } = await world(t);
  const p = await create(s, admin, oidcBody(org.id, {}, { workspaceId: ws.id, defaultRole: 'writer' }));
  const ctx = s.operator();
  const url = finishSso(ctx, fakeReq, row(s, p.id), { subject: 'sub-1', email: 'New.Person@Example.test', name: 'New Person' }, '/after', FLOW.hash);
  assert.match(url, new RegExp(`^${FRONTEND}/sso/complete#ticket=[A-Za-z0-9_-]{43}$`));
  const user = s.db.get<any>("SELECT * FROM users WHERE email_normalized = 'new.person@example.test'")!;
  assert.equal(user.status, 'active');
  assert.equal(user.password_hash, null);
  assert.equal(user.name, 'New Person');
  const ms = () => s.db.all<any>('SELECT level, role, status, organization_id FROM memberships WHERE user_id = ? ORDER BY level', user.id)
    .map((m) => `${m.level}/${m.role}/${m.status}/${m.organization_id === org.id}`);
  assert.deepEqual(ms(), ['organization/org_member/active/true', 'workspace/writer/active/true']);
  const ticket = s.db.get<any>('SELECT * FROM sso_tickets')!;
  assert.equal(ticket.ticket_hash, crypto.hash('sha256', ticketOf(url), 'hex'), 'only the hash is stored');
  assert.equal(Date.parse(ticket.expires_at) - Date.parse(ticket.created_at), TICKET_TTL_MS);
  assert.equal(ticket.return_to, '/after');
  assert.deepEqual({ ...s.db.get<any>('SELECT user_id, email FROM sso_identities WHERE provider_id = ? AND subject = ?', p.id, 'sub-1') },
    { user_id: user.id, email: 'New.Person@Example.test' });

  // The same subject again (even with another e-mail address) is the same account; nothing granted twice.
  finishSso(ctx, fakeReq, row(s, p.id), { subject: 'sub-1', email: 'renamed@example.test', name: null }, null, FLOW.hash);
  assert.equal(s.db.get<any>('SELECT count(*) AS n FROM users WHERE email_normalized = ?', 'renamed@example.test')!.n, 0);
  assert.equal(ms().length, 2);

  // An existing account with the e-mail address (a member of the provider's organization only, the address
  // verified by the provider) is linked, keeps its roles, and gains the missing ones.
  const existing = await makeUser(s, { email: 'known@example.test' });
  grant(s, existing.id, 'organization', org.id, 'org_member');
  finishSso(ctx, fakeReq, row(s, p.id), { subject: 'sub-known', email: 'KNOWN@example.test', name: 'Ignored', emailVerified: true }, null, FLOW.hash);
  assert.equal(s.db.get<any>('SELECT user_id FROM sso_identities WHERE subject = ?', 'sub-known')!.user_id, existing.id);
  assert.equal(s.db.get<any>('SELECT name FROM users WHERE id = ?', existing.id)!.name, existing.name);
  const leader = await member(s, 'org_admin', { organizationId: org.id, workspaceId: ws.id, projectId: '' });
  const leaderEmail = s.db.get<any>('SELECT email FROM users WHERE id = ?', leader.user.id)!.email;
  finishSso(ctx, fakeReq, row(s, p.id), { subject: 'sub-leader', email: leaderEmail, name: null, emailVerified: true }, null, FLOW.hash);
  assert.equal(s.db.get<any>("SELECT role FROM memberships WHERE user_id = ? AND level = 'organization'", leader.user.id)!.role, 'org_admin', 'an existing role is never changed');

  const verified = audits(s, 'auth.sso.verified');
  assert.deepEqual(verified.map((a) => [a.metadata.subject, a.metadata.account, a.target_id === a.metadata.userId]), [
    ['sub-1', 'created', true], ['sub-1', 'identity', true], ['sub-known', 'email', true], ['sub-leader', 'email', true],
  ]);
  assert.deepEqual(verified[0].metadata.rolesGranted, ['org_member', 'writer']);
  assert.equal(verified[0].organization_id, org.id);
  assert.equal(verified[0].metadata.providerId, p.id);
  const auditText = JSON.stringify(s.db.all('SELECT metadata FROM audit_log'));
  assert.ok(!auditText.includes(ticketOf(url)), 'the ticket is never audited');
  assert.equal(audits(s, 'user.created').filter((a) => a.metadata.via === 'sso').length, 1);
});

test('finishSso fails closed: full organization 409, suspended account 403, system administrator or another organization\'s member linked by e-mail 401, disabled provider 401, no subject or e-mail 401; audited, no ticket', async (t) => {
  const { s, admin, adminUser, org } = await world(t);
  const p = await create(s, admin, samlBody(org.id));
  const ctx = s.operator();
  const finish = (identity: { subject: string; email: string | null; name: string | null }) => () => finishSso(ctx, fakeReq, row(s, p.id), identity, null, FLOW.hash);

  const used = s.db.get<any>("SELECT count(*) AS n FROM memberships WHERE organization_id = ? AND level = 'organization' AND status = 'active'", org.id)!.n;
  s.db.run('UPDATE billing_accounts SET seat_limit = ? WHERE organization_id = ?', used, org.id);
  expectAppError(finish({ subject: 'seatless', email: 'seatless@example.test', name: null }), 409, 'seat_limit_reached');
  assert.equal(s.db.get<any>('SELECT count(*) AS n FROM users WHERE email_normalized = ?', 'seatless@example.test')!.n, 0, 'rolled back: no account');
  assert.equal(s.db.get<any>('SELECT count(*) AS n FROM sso_identities')!.n, 0);
  s.db.run('UPDATE billing_accounts SET seat_limit = 25 WHERE organization_id = ?', org.id);

  const suspended = await makeUser(s, { email: 'gone@example.test' });
  grant(s, suspended.id, 'organization', org.id, 'org_member');
  setUserStatus(s.operator(), suspended.id, 'suspended');
  expectAppError(finish({ subject: 'gone', email: 'gone@example.test', name: null }), 403, 'account_suspended');
  // A linked account suspended later is refused too.
  const later = await makeUser(s, { email: 'later@example.test' });
  grant(s, later.id, 'organization', org.id, 'org_member');
  finish({ subject: 'later', email: 'later@example.test', name: null })();
  setUserStatus(s.operator(), later.id, 'suspended');
  expectAppError(finish({ subject: 'later', email: null, name: null }), 403, 'account_suspended');

  expectAppError(finish({ subject: 'admin', email: adminUser.email, name: null }), 401, 'sso_link_refused');
  // Another tenant's member: this organization's provider cannot take the account over by asserting its e-mail.
  const elsewhere = await member(s, 'org_member');
  expectAppError(finish({ subject: 'takeover', email: elsewhere.user.email, name: null }), 401, 'sso_link_refused');
  assert.equal(s.db.get<any>('SELECT count(*) AS n FROM sso_identities WHERE user_id = ?', elsewhere.user.id)!.n, 0);
  expectAppError(finish({ subject: '', email: 'x@example.test', name: null }), 401, 'sso_failed');
  expectAppError(finish({ subject: 'no-mail', email: null, name: null }), 401, 'sso_email_missing');
  expectAppError(finish({ subject: 'bad-mail', email: 'not an address', name: null }), 401, 'sso_email_missing');
  s.db.run("UPDATE identity_providers SET status = 'disabled' WHERE id = ?", p.id);
  expectAppError(finish({ subject: 'late', email: 'late@example.test', name: null }), 401, 'sso_provider_disabled');

  assert.equal(s.db.get<any>('SELECT count(*) AS n FROM sso_tickets')!.n, 1, 'only the one successful sign-in got a ticket');
  const failed = audits(s, 'auth.sso.failed');
  assert.deepEqual(failed.map((a) => [a.metadata.code, a.result, a.target_id]), [
    ['seat_limit_reached', 'failure', p.id], ['account_suspended', 'failure', p.id], ['account_suspended', 'failure', p.id],
    ['sso_link_refused', 'failure', p.id], ['sso_link_refused', 'failure', p.id], ['sso_failed', 'failure', p.id],
    ['sso_email_missing', 'failure', p.id], ['sso_email_missing', 'failure', p.id], ['sso_provider_disabled', 'failure', p.id],
  ]);
});

test('linking by e-mail: only an account whose memberships are all in the provider\'s organization, one of them active, never a system administrator; OIDC needs email_verified true, SAML may say nothing; a new account needs no verification', async (t) => {
  const { s, admin, org, ws } = await world(t);
  const other = makeOrg(s);
  const otherWs = makeWorkspace(s, other.id);
  const saml = await create(s, admin, samlBody(org.id));
  const oidc = await create(s, admin, oidcBody(org.id));
  const ctx = s.operator();
  const finish = (providerId: string, identity: VerifiedIdentity) => finishSso(ctx, fakeReq, row(s, providerId), identity, null, FLOW.hash);
  const links = (userId: string) => s.db.get<any>('SELECT count(*) AS n FROM sso_identities WHERE user_id = ?', userId)!.n;
  const roles = (userId: string) => s.db.all<any>('SELECT level, role, status FROM memberships WHERE user_id = ? ORDER BY level, role', userId)
    .map((m) => `${m.level}/${m.role}/${m.status}`);
  const NOT_HERE = 'the account has no active membership in the provider\'s organization';
  const ELSEWHERE = 'the account is a member of another organization';
  const UNVERIFIED = 'the provider did not confirm that the e-mail address is verified';
  /** Refused with the one generic answer (the caller learns nothing about the account); the precise reason only in the audit. */
  const refused = (providerId: string, identity: VerifiedIdentity, userId: string, reason: string) => {
    const before = audits(s, 'auth.sso.failed').length;
    const memberships = roles(userId);
    assert.throws(() => finish(providerId, identity), (err: unknown) => err instanceof AppError && err.status === 401 && err.code === 'sso_link_refused'
      && err.message === 'single sign-on failed: this account cannot be linked to a sign-in provider', `${identity.subject}: ${reason}`);
    assert.equal(links(userId), 0, `${identity.subject}: not linked`);
    assert.deepEqual(roles(userId), memberships, `${identity.subject}: no membership given`);
    assert.deepEqual(audits(s, 'auth.sso.failed').slice(before).map((a) => [a.metadata.code, a.metadata.reason, a.target_id]),
      [['sso_link_refused', reason, providerId]], identity.subject);
  };

  // The consultant: owner of another organization and a member of this one. This organization's provider
  // asserting their address must not get a session that carries the owner's rights over the other one.
  const dual = await makeUser(s);
  grant(s, dual.id, 'organization', org.id, 'org_member');
  grant(s, dual.id, 'organization', other.id, 'org_owner');
  refused(saml.id, { subject: 'dual', email: dual.email, name: null }, dual.id, ELSEWHERE);
  refused(oidc.id, { subject: 'dual', email: dual.email, name: null, emailVerified: true }, dual.id, ELSEWHERE);
  // A workspace role elsewhere counts as another organization just the same.
  const wsElsewhere = await makeUser(s);
  grant(s, wsElsewhere.id, 'organization', org.id, 'org_member');
  grant(s, wsElsewhere.id, 'workspace', otherWs.id, 'writer');
  refused(saml.id, { subject: 'ws-elsewhere', email: wsElsewhere.email, name: null }, wsElsewhere.id, ELSEWHERE);
  // Deactivated here, active elsewhere.
  const moved = await makeUser(s);
  grant(s, moved.id, 'organization', org.id, 'org_member');
  s.db.run("UPDATE memberships SET status = 'inactive' WHERE user_id = ? AND organization_id = ?", moved.id, org.id);
  grant(s, moved.id, 'organization', other.id, 'org_member');
  refused(saml.id, { subject: 'moved', email: moved.email, name: null }, moved.id, ELSEWHERE);
  // Deactivated here and nowhere else: no active membership to vouch for.
  const deactivated = await makeUser(s);
  grant(s, deactivated.id, 'organization', org.id, 'org_member');
  s.db.run("UPDATE memberships SET status = 'inactive' WHERE user_id = ?", deactivated.id);
  refused(saml.id, { subject: 'deactivated', email: deactivated.email, name: null }, deactivated.id, NOT_HERE);
  // No membership at all (an account of no organization is not this provider's to claim).
  const loner = await makeUser(s);
  refused(saml.id, { subject: 'loner', email: loner.email, name: null }, loner.id, NOT_HERE);
  refused(oidc.id, { subject: 'loner', email: loner.email, name: null, emailVerified: true }, loner.id, NOT_HERE);
  // A system administrator, even one who is a member of this organization only.
  const sysadmin = await makeUser(s, { systemAdmin: true });
  grant(s, sysadmin.id, 'organization', org.id, 'org_member');
  refused(saml.id, { subject: 'sysadmin', email: sysadmin.email, name: null }, sysadmin.id, 'a service administrator is never linked');

  // A member of this organization only (an active workspace role here is fine): linked through SAML,
  // which makes no statement about verification (null), keeps its roles and gains the missing ones.
  const here = await makeUser(s);
  grant(s, here.id, 'workspace', ws.id, 'reviewer');
  finish(saml.id, { subject: 'here', email: here.email, name: null });
  assert.equal(links(here.id), 1);
  assert.deepEqual(roles(here.id), ['organization/org_member/active', 'workspace/reviewer/active']);
  // SAML saying "not verified" (false) is refused all the same.
  const samlFalse = await makeUser(s);
  grant(s, samlFalse.id, 'organization', org.id, 'org_member');
  refused(saml.id, { subject: 'saml-false', email: samlFalse.email, name: null, emailVerified: false }, samlFalse.id, UNVERIFIED);

  // OIDC: linking needs email_verified true; false, null (claim absent) and undefined (not passed) are refused.
  const oidcMember = await makeUser(s);
  grant(s, oidcMember.id, 'organization', org.id, 'org_member');
  refused(oidc.id, { subject: 'oidc-member', email: oidcMember.email, name: null, emailVerified: false }, oidcMember.id, UNVERIFIED);
  refused(oidc.id, { subject: 'oidc-member', email: oidcMember.email, name: null, emailVerified: null }, oidcMember.id, UNVERIFIED);
  refused(oidc.id, { subject: 'oidc-member', email: oidcMember.email, name: null }, oidcMember.id, UNVERIFIED);
  finish(oidc.id, { subject: 'oidc-member', email: oidcMember.email, name: null, emailVerified: true });
  assert.equal(s.db.get<any>('SELECT user_id FROM sso_identities WHERE provider_id = ? AND subject = ?', oidc.id, 'oidc-member')!.user_id, oidcMember.id);

  // A new account (no account with the address) needs no verification: it takes nobody over.
  finish(oidc.id, { subject: 'newcomer', email: 'newcomer@example.test', name: null, emailVerified: null });
  const newcomer = s.db.get<any>("SELECT id FROM users WHERE email_normalized = 'newcomer@example.test'")!;
  assert.deepEqual(roles(newcomer.id), ['organization/org_member/active']);

  assert.deepEqual(audits(s, 'auth.sso.verified').map((a) => [a.metadata.subject, a.metadata.account]),
    [['here', 'email'], ['oidc-member', 'email'], ['newcomer', 'created']]);
  assert.equal(s.db.get<any>('SELECT count(*) AS n FROM sso_tickets')!.n, 3, 'a ticket for each accepted sign-in only');
});

test('a system administrator never signs in through a provider: an account linked before and made administrator afterwards is refused (401 sso_link_refused) at the next sign-in and at redemption of a ticket issued before', async (t) => {
  const { s, admin, org } = await world(t);
  const p = await create(s, admin, samlBody(org.id));
  const person = await makeUser(s);
  grant(s, person.id, 'organization', org.id, 'org_member');
  const before = finishSso(s.operator(), fakeReq, row(s, p.id), { subject: 'person', email: person.email, name: null }, null, FLOW.hash);
  assert.equal(s.db.get<any>('SELECT user_id FROM sso_identities WHERE subject = ?', 'person')!.user_id, person.id, 'linked');

  s.db.run('UPDATE users SET is_system_admin = 1 WHERE id = ?', person.id);
  const tickets = s.db.get<any>('SELECT count(*) AS n FROM sso_tickets')!.n;
  expectAppError(() => finishSso(s.operator(), fakeReq, row(s, p.id), { subject: 'person', email: null, name: null }, null, FLOW.hash), 401, 'sso_link_refused');
  assert.equal(s.db.get<any>('SELECT count(*) AS n FROM sso_tickets')!.n, tickets, 'no ticket');

  const r = await s.call('POST', '/api/auth/sso/redeem', { body: { ticket: ticketOf(before) }, headers: { cookie: FLOW.cookie } });
  assert.equal(r.status, 401, r.text);
  assert.equal(r.body.error.code, 'sso_link_refused');
  assert.deepEqual(r.headers.getSetCookie(), [CLEAR_FLOW], 'the flow ended: its cookie is cleared with the refusal');
  assert.equal(r.body.token, undefined);
  assert.equal(s.db.get<any>('SELECT count(*) AS n FROM sessions WHERE user_id = ?', person.id)!.n, 0, 'no session');
  assert.equal((await s.call('POST', '/api/auth/sso/redeem', { body: { ticket: ticketOf(before) }, headers: { cookie: FLOW.cookie } })).body.error.code, 'invalid_ticket', 'the ticket is used up');

  assert.deepEqual(audits(s, 'auth.sso.failed').map((a) => [a.metadata.code, a.metadata.reason, a.target_id]), [
    ['sso_link_refused', 'single sign-on failed: a service administrator cannot sign in through a sign-in provider', p.id],
    ['sso_link_refused', 'the account became a service administrator after the ticket was issued', p.id],
    ['invalid_ticket', 'the ticket is unknown, used or expired', null],
  ]);
});

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
  grant(s, person.id, 'organization', org.id, 'org_member');
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
  const sessions = () => s.db.get<any>('SELECT count(*) AS n FROM sessions WHERE user_id = ?', person.id)!.n;
  const sessionsBefore = sessions();

  const url = finishSso(s.operator(), fakeReq, row(s, p.id), { subject: 'totp-person', email: person.email, name: null }, '/after-mfa', FLOW.hash);
  const r = await s.call('POST', '/api/auth/sso/redeem', { body: { ticket: ticketOf(url) }, headers: { cookie: FLOW.cookie } });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(Object.keys(r.body).sort(), ['challengeToken', 'expiresAt', 'mfaRequired', 'returnTo']);
  assert.equal(r.body.mfaRequired, true);
  assert.equal(r.body.returnTo, '/after-mfa');
  assert.equal(sessions(), sessionsBefore, 'no session before the second factor');
  assert.equal((await s.call('POST', '/api/auth/sso/redeem', { body: { ticket: ticketOf(url) }, headers: { cookie: FLOW.cookie } })).status, 401, 'the ticket is used up by the challenge');

  const done = await s.call('POST', '/api/auth/login/mfa', { body: { challengeToken: r.body.challengeToken, code: totpAt(setup.body.secret, base) } });
  assert.equal(done.status, 200, done.text);
  assert.equal(typeof done.body.token, 'string');
  assert.equal(done.body.user.id, person.id);
  assert.equal(sessions(), sessionsBefore + 1);
  const login = audits(s, 'auth.login').at(-1)!;
  assert.deepEqual([login.metadata.method, login.metadata.mfa, login.actor_user_id], ['saml', 'totp', person.id]);
});

test('redeem: a session in the bound organization with returnTo; replay, expiry and unknown tickets 401; with MFA required an enrollment challenge', async (t) => {
  const { s, admin, org } = await world(t);
  const p = await create(s, admin, oidcBody(org.id));
  const redeem = (ticket: string, headers: Record<string, string> = {}, kind?: string) =>
    s.call('POST', '/api/auth/sso/redeem', { body: { ticket, ...(kind ? { kind } : {}) }, headers: { cookie: FLOW.cookie, ...headers } });

  const url = finishSso(s.operator(), fakeReq, row(s, p.id), { subject: 'alice', email: 'alice@example.test', name: 'Alice' }, '/projects?tab=recent', FLOW.hash);
  const r = await redeem(ticketOf(url));
  assert.equal(r.status, 200, r.text);
  assert.equal(typeof r.body.token, 'string');
  assert.equal(r.body.user.email, 'alice@example.test');
  assert.equal(r.body.returnTo, '/projects?tab=recent');
  assert.deepEqual(r.headers.getSetCookie(), [CLEAR_FLOW], 'a Bearer session by default (no session cookie); the flow cookie is cleared');
  const context = await s.call('GET', '/api/context', { token: r.body.token });
  assert.equal(context.status, 200);
  assert.equal(context.body.organization.id, org.id);
  const login = audits(s, 'auth.login').at(-1)!;
  assert.deepEqual([login.metadata.method, login.metadata.providerId, login.actor_user_id], ['oidc', p.id, r.body.user.id]);

  const replay = await redeem(ticketOf(url));
  assert.equal(replay.status, 401);
  assert.equal(replay.body.error.code, 'invalid_ticket');
  assert.equal((await redeem('never-issued')).status, 401);

  const stale = finishSso(ctxAt(s, Date.now() - TICKET_TTL_MS - 1000), fakeReq, row(s, p.id), { subject: 'alice', email: null, name: null }, null, FLOW.hash);
  assert.equal((await redeem(ticketOf(stale))).status, 401, 'a ticket older than 60 s');

  // A browser session only for the front end (its Origin), with the HttpOnly cookie.
  const t1 = ticketOf(finishSso(s.operator(), fakeReq, row(s, p.id), { subject: 'alice', email: null, name: null }, null, FLOW.hash));
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
  const bobUrl = finishSso(s.operator(), fakeReq, row(s, p.id), { subject: 'bob', email: 'bob@example.test', name: null }, null, FLOW.hash);
  const bob = s.db.get<any>("SELECT id FROM users WHERE email_normalized = 'bob@example.test'")!;
  setUserStatus(s.operator(), bob.id, 'suspended');
  const suspended = await redeem(ticketOf(bobUrl));
  assert.equal(suspended.status, 403);
  assert.equal(suspended.body.error.code, 'account_suspended');

  // With MFA required by the policy: no session, an enrollment challenge.
  assert.equal((await s.call('PATCH', '/api/system/identity/policy', { token: admin, body: { mfaRequired: true } })).status, 200);
  const mfaUrl = finishSso(s.operator(), fakeReq, row(s, p.id), { subject: 'alice', email: null, name: null }, '/secure', FLOW.hash);
  const challenged = await redeem(ticketOf(mfaUrl));
  assert.equal(challenged.status, 200, challenged.text);
  assert.deepEqual(Object.keys(challenged.body).sort(), ['challengeToken', 'expiresAt', 'mfaEnrollmentRequired', 'returnTo']);
  assert.equal(challenged.body.returnTo, '/secure');
  assert.equal((await redeem(ticketOf(mfaUrl))).status, 401, 'the ticket is used up by the challenge');

  const failures = audits(s, 'auth.sso.failed').map((a) => a.metadata.code);
  assert.deepEqual(failures, ['invalid_ticket', 'invalid_ticket', 'invalid_ticket', 'account_suspended', 'invalid_ticket']);
  const everything = JSON.stringify(s.db.all('SELECT metadata FROM audit_log')) + s.logs.join('\n');
  for (const secret of [r.body.token, ticketOf(url), browser.body.token]) assert.ok(!everything.includes(secret), 'no token or ticket in the audit log or the server log');
});

test('redeem is bound to the browser of the flow: without its flow cookie, or with another flow\'s, 401 sso_browser_mismatch (audited, the ticket used up); an unbound ticket needs no cookie', async (t) => {
  const { s, admin, org } = await world(t);
  const p = await create(s, admin, oidcBody(org.id));
  const redeem = (ticket: string, cookie?: string) =>
    s.call('POST', '/api/auth/sso/redeem', { body: { ticket }, headers: cookie ? { cookie } : {} });
  const issue = (browserHash: string | null) =>
    ticketOf(finishSso(s.operator(), fakeReq, row(s, p.id), { subject: 'alice', email: 'alice@example.test', name: null }, null, browserHash));
  const used = (ticket: string) => s.db.get<any>('SELECT used_at FROM sso_tickets WHERE ticket_hash = ?', crypto.hash('sha256', ticket, 'hex'))!.used_at;
  const otherFlow = `svc_sso_flow=${crypto.randomBytes(32).toString('base64url')}`;

  for (const cookie of [undefined, otherFlow, `svc_sso_flow=${FLOW.hash}`, `other=${FLOW_VALUE}`]) {
    const ticket = issue(FLOW.hash);
    const r = await redeem(ticket, cookie);
    assert.equal(r.status, 401, `${cookie}: ${r.text}`);
    assert.equal(r.body.error.code, 'sso_browser_mismatch');
    assert.equal(r.body.token, undefined);
    assert.equal(r.headers.get('set-cookie'), null, 'another browser\'s flow cookie is left alone');
    assert.ok(used(ticket), 'the ticket is used up');
    const late = await redeem(ticket, FLOW.cookie);
    assert.equal(late.status, 401, late.text);
    assert.equal(late.body.error.code, 'invalid_ticket', 'single use: its own browser cannot redeem it afterwards');
  }
  assert.equal(s.db.get<any>("SELECT count(*) AS n FROM sessions s JOIN users u ON u.id = s.user_id WHERE u.email_normalized = 'alice@example.test'")!.n, 0);
  const failed = audits(s, 'auth.sso.failed');
  assert.deepEqual(failed.map((a) => a.metadata.code), Array.from({ length: 4 }, () => ['sso_browser_mismatch', 'invalid_ticket']).flat());
  assert.equal(failed[0].target_id, p.id);
  assert.match(failed[0].metadata.reason, /did not start this sign-in/);
  assert.ok(!JSON.stringify(failed).includes(FLOW_VALUE) && !JSON.stringify(failed).includes(FLOW.hash), 'neither the cookie nor its hash is audited');

  // The right cookie among others (and a second copy from another path) is found.
  const ok = await redeem(issue(FLOW.hash), `svc_sso_flow=stale; ${FLOW.cookie}; other=1`);
  assert.equal(ok.status, 200, ok.text);
  assert.deepEqual(ok.headers.getSetCookie(), [CLEAR_FLOW]);
  // A ticket bound to no browser (browser_hash null) is redeemed without a cookie, and no cookie is touched.
  const unbound = await redeem(issue(null));
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
  assert.equal(s.db.get<any>('SELECT count(*) AS n FROM sso_states')!.n, 0, 'no flow state for a refused start');
});

test('start redirects to the provider with a one-time state; the public list shows active providers only; the identity overview lists providers with variable names only', async (t) => {
  const { s, admin, org } = await world(t);
  const issuer = await discoveryServer(t);
  const o = await create(s, admin, oidcBody(org.id, { issuer }));
  const sm = await create(s, admin, samlBody(org.id));
  const off = await create(s, admin, oidcBody(org.id, {}, { status: 'disabled', name: 'Off' }));

  const list = await s.call('GET', '/api/auth/sso/providers');
  assert.equal(list.status, 200);
  assert.deepEqual(list.body.items.map((p: any) => Object.keys(p).sort().join(',')), ['id,kind,name', 'id,kind,name']);
  assert.deepEqual(new Set(list.body.items.map((p: any) => p.id)), new Set([o.id, sm.id]));
  assert.ok(!list.body.items.some((p: any) => p.id === off.id));

  const start = await s.call('GET', `/api/auth/sso/start?providerId=${o.id}&returnTo=%2Fhome`);
  assert.equal(start.status, 302, start.text);
  const location = new URL(start.headers.get('location')!);
  assert.equal(`${location.origin}${location.pathname}`, `${issuer}/auth`);
  assert.equal(location.searchParams.get('code_challenge_method'), 'S256');
  assert.equal(s.db.get<any>("SELECT count(*) AS n FROM sso_states WHERE kind = 'oidc'")!.n, 1);
  assert.ok(!start.headers.get('location')!.includes(SECRET_VALUE));

  const overview = await s.call('GET', '/api/system/identity', { token: admin });
  assert.equal(overview.status, 200, overview.text);
  assert.deepEqual(overview.body.providers.oidc.map((p: any) => p.id).sort(), [o.id, off.id].sort());
  assert.deepEqual(overview.body.providers.saml.map((p: any) => [p.id, p.config.idpCertRef]), [[sm.id, 'SSO_PROVIDERS_TEST_CERT']]);
  assert.equal(overview.body.counts.providers, 3);
  assert.equal(overview.body.counts.activeProviders, 2);
  assert.ok(!overview.text.includes(SECRET_VALUE));
});

test('SVC_OIDC_STORAGE_KEY at start: a bad value stops the start, the development key is warned about, a set key is not', async (t) => {
  await assert.rejects(startTestServer(t, { SVC_OIDC_STORAGE_KEY: 'too short' }), /SVC_OIDC_STORAGE_KEY/);
  const dev = await startTestServer(t);
  dev.log.flush();
  assert.ok(dev.logs.some((l) => l.includes('SVC_OIDC_STORAGE_KEY is not set') && l.includes('"warn"')));
  const keyed = await startTestServer(t, { SVC_OIDC_STORAGE_KEY: 'ab'.repeat(32) });
  keyed.log.flush();
  assert.ok(!keyed.logs.some((l) => l.includes('SVC_OIDC_STORAGE_KEY is not set')));
});
