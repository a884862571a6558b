// What the single sign-on test files (test/identity/sso-*.test.ts) share: a server with a system
// administrator, an organization and a workspace; provider bodies; the provider row, audit records,
// the ticket of a landing URL and a browser's flow cookie; a loopback OIDC discovery server.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import http from 'node:http';
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { login, makeOrg, makeUser, makeWorkspace } from '../helpers/factories.ts';
import { createContext, type Ctx } from '../../src/directory/context.ts';
import { AppError } from '../../src/kernel/errors.ts';
import { providerById, type ProviderRow } from '../../src/identity/sso/store.ts';

export const base = '/api/system/identity/providers';
export const FRONTEND = 'https://app.example.test';
export const SECRET_REF = 'SSO_PROVIDERS_TEST_CLIENT_SECRET';
export const SECRET_VALUE = `client-secret-${crypto.randomBytes(12).toString('hex')}`;
export const UNSET_REF = 'SSO_PROVIDERS_TEST_UNSET';
process.env[SECRET_REF] = SECRET_VALUE;
delete process.env[UNSET_REF];

export async function world(t: Parameters<typeof startTestServer>[0]) {
  const s = await startTestServer(t, { SVC_FRONTEND_ORIGIN: FRONTEND });
  const adminUser = await makeUser(s, { systemAdmin: true });
  const admin = await login(s, adminUser);
  const org = await makeOrg(s);
  const ws = await makeWorkspace(s, org.id);
  return { s, admin, adminUser, org, ws };
}

export const oidcBody = (organizationId: string, config: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) => ({
  kind: 'oidc', name: 'Corporate OIDC', organizationId,
  config: { issuer: 'https://login.example.test', clientId: 'svc-client', clientSecretRef: SECRET_REF, ...config }, ...extra,
});

export const samlBody = (organizationId: string, config: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) => ({
  kind: 'saml', name: 'Corporate SAML', organizationId,
  config: { idpEntityId: 'https://idp.example.test/entity', ssoUrl: 'https://idp.example.test/sso', idpCertRef: 'SSO_PROVIDERS_TEST_CERT', spEntityId: 'https://svc.example.test/sp', ...config },
  ...extra,
});

export async function create(s: TestServer, token: string, body: unknown) {
  const r = await s.call('POST', base, { token, body });
  assert.equal(r.status, 201, r.text);
  return r.body;
}

export const row = async (s: TestServer, id: string): Promise<ProviderRow> => (await providerById(s.db, id))!;
export const fakeReq = { headers: { host: 'svc.test' }, socket: {} } as unknown as IncomingMessage;
export const ctxAt = (s: TestServer, at: number): Ctx => createContext({ db: s.db, config: s.config, log: s.log, now: () => new Date(at) });
export const audits = async (s: TestServer, action: string) =>
  (await s.db.all<any>('SELECT * FROM audit_log WHERE action = ? ORDER BY seq', action)).map((a) => ({ ...a, metadata: JSON.parse(a.metadata) }));
export const ticketOf = (url: string) => decodeURIComponent(new URL(url).hash.replace(/^#ticket=/, ''));
/** A browser's flow cookie as GET /api/auth/sso/start sets it, and its hash that finishSso binds the ticket to. */
export const FLOW_VALUE = crypto.randomBytes(32).toString('base64url');
export const FLOW = { cookie: `svc_sso_flow=${FLOW_VALUE}`, hash: crypto.hash('sha256', FLOW_VALUE, 'hex') };
export const CLEAR_FLOW = 'svc_sso_flow=; Path=/api/auth/sso; HttpOnly; SameSite=Lax; Max-Age=0';

export async function expectAppError(fn: () => unknown, status: number, code: string) {
  await assert.rejects(async () => await fn(), (err: unknown) => err instanceof AppError && err.status === status && err.code === code);
}

/** A loopback OpenID provider's discovery document and key set (the documents only). */
export async function discoveryServer(t: Parameters<typeof startTestServer>[0], o: { issuer?: (own: string) => string; keys?: number; tokenEndpoint?: string } = {}) {
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
