// Single sign-on providers: the system administrator's identity providers (access, strict
// validation, probes against a loopback OIDC discovery server and a real certificate) and the
// variables their configuration names. The flow, finishSso and redeem are in test/identity/sso-*.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from '../helpers/server.ts';
import { makeWorkspace, member } from '../helpers/factories.ts';
import { AppError } from '../../src/kernel/errors.ts';
import { probeProvider } from '../../src/identity/sso/probe.ts';
import { readRef } from '../../src/identity/sso/provider-config.ts';
import { base, SECRET_REF, SECRET_VALUE, UNSET_REF, world, oidcBody, samlBody, create, row, ctxAt, audits, expectAppError, discoveryServer } from './sso-setup.ts';

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
  await s.db.run("UPDATE identity_providers SET probed_at = '2024-01-01T00:00:00.000Z', probe_status = 'ok', probe_detail = ? WHERE id = ?", detail, o.id);
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

  assert.deepEqual((await audits(s, 'identity_provider.created')).map((a) => [a.target_id, a.organization_id]), [[o.id, org.id], [sm.id, org.id]]);
  const updated = await audits(s, 'identity_provider.updated');
  assert.deepEqual(updated.map((a) => Object.keys(a.metadata.changes).sort().join(',')), ['name,status', 'config', 'defaultRole,workspaceId']);
  assert.equal(updated[1].metadata.changes.config.to.clientSecretRef, SECRET_REF);
  const everything = JSON.stringify(await s.db.all('SELECT * FROM identity_providers')) + JSON.stringify(await s.db.all('SELECT metadata FROM audit_log'));
  assert.ok(!everything.includes(SECRET_VALUE), 'no secret value is stored or audited');
});

test('provider input is validated strictly: 422 naming the field', async (t) => {
  const { s, admin, org, ws } = await world(t);
  const other = await makeWorkspace(s);
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
  assert.equal((await row(s, p.id)).config.includes('evil'), false, 'a refused patch changes nothing');
  assert.equal((await s.db.get<any>('SELECT count(*) AS n FROM identity_providers'))!.n, 2);
});

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
  const stored = await row(s, ok.p.id);
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

  const probed = await audits(s, 'identity_provider.probed');
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
    assert.ok(!JSON.stringify(await s.db.all('SELECT * FROM identity_providers')).includes(chunk), 'nor does the provider row');
    assert.ok(!JSON.stringify(await s.db.all('SELECT metadata FROM audit_log')).includes(chunk), 'nor the audit log');
  }

  // The validity window is checked against the service's clock.
  const later = await probeProvider(ctxAt(s, Date.now() + 3 * 86_400_000), p.id);
  assert.equal(later.result.status, 'failed');
  assert.match(later.result.detail.problems.join('\n'), /certificate expired/);
  const earlier = await probeProvider(ctxAt(s, Date.now() - 86_400_000), p.id);
  assert.match(earlier.result.detail.problems.join('\n'), /not valid before/);
  assert.equal((await row(s, p.id)).probe_status, 'failed', 'the latest probe is stored');

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

test('readRef: the value of the named variable; unset is 409 sso_not_configured naming the variable', async () => {
  assert.equal(readRef(SECRET_REF), SECRET_VALUE);
  await expectAppError(() => readRef(UNSET_REF), 409, 'sso_not_configured');
  try {
    readRef(UNSET_REF);
  } catch (err) {
    assert.match((err as AppError).message, new RegExp(UNSET_REF));
    assert.deepEqual((err as AppError).details, { variable: UNSET_REF });
  }
  await expectAppError(() => readRef('lower_case'), 409, 'sso_not_configured');
});
