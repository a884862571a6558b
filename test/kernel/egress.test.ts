// The egress policy (src/kernel/egress.ts) over real HTTP: connector endpoints in every spelling of the
// link-local / metadata / reserved addresses are refused at registration and update (422 naming
// endpoint), and a connector stored before the rule is refused at probe and job time without a
// connection; costMode local requires loopback or private addresses (422 naming costMode; a stored
// local connector on a public address never runs); files a model names by URL come only from the
// connector's own origin (or SVC_CONNECTOR_OUTPUT_ORIGINS): an answer naming another local port
// (standing for an internal service) fails the job and stores nothing; identity providers (creation,
// discovery, key set, sign-in) go through the same policy. The policy module itself is loaded with a
// dynamic import inside the tests that need it, so that the HTTP tests also run on code without it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { startTestServer, type TestServer, serversRunTheWorker } from '../helpers/server.ts';
import { login, makeOrg, makeUser, member, type Tree } from '../helpers/factories.ts';
import { WORKER_ENV, createJob, waitJob } from '../helpers/jobs.ts';
import { jsonSetText } from '../helpers/sql.ts';
import { loadConfig } from '../../src/kernel/config.ts';

serversRunTheWorker();

const BASE = '/api/platform/models';

/** Every spelling of a refused destination the review tried (WHATWG URL turns the numeric ones into 169.254.169.254). */
const REFUSED_ENDPOINTS = [
  'http://169.254.169.254/latest/meta-data',
  'http://[::ffff:169.254.169.254]/',
  'http://[::ffff:a9fe:a9fe]:80/',
  'http://2852039166/',
  'http://0251.0376.0251.0376/',
  'http://0xa9fea9fe/',
  'http://0xa9.0xfe.0xa9.0xfe/',
  'http://169.254.43518/',
  'http://169.254.169.254./',
  'http://[fe80::1]:8080/',
  'http://[fe80::a9fe:a9fe]/',
  'http://[fd00:ec2::254]/',
  'http://[2002:a9fe:a9fe::1]/',
  'http://100.100.100.200/',
  'http://168.63.129.16/',
  'http://0.0.0.0:8080/',
  'http://0/',
  'http://[::]:8080/',
  'http://224.0.0.251/',
  'http://[ff02::1]/',
  'http://[64:ff9b::a9fe:a9fe]/',
];

interface Srv { url: string; port: number; hits: string[] }

/** A tiny HTTP server on 127.0.0.1; `handle` answers, every request path is recorded in hits. */
async function server(t: TestContext, handle: (req: http.IncomingMessage, res: http.ServerResponse, own: string) => void): Promise<Srv> {
  const hits: string[] = [];
  const srv = http.createServer((req, res) => {
    hits.push(`${req.method} ${req.url}`);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handle(req, res, `http://127.0.0.1:${(srv.address() as AddressInfo).port}`));
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => { srv.closeAllConnections(); srv.close(() => resolve()); }));
  const port = (srv.address() as AddressInfo).port;
  return { url: `http://127.0.0.1:${port}`, port, hits };
}

const sendJson = (res: http.ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

const SECRET_PAGE = `internal-only-${crypto.randomBytes(8).toString('hex')}`;

/** The internal service a model's answer must not reach: anything it serves is a secret. */
const internalService = (t: TestContext) => server(t, (_req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain' });
  res.end(SECRET_PAGE);
});

/**
 * A model server answering http-json (POST /generate) and openai images with the file URLs `urls(own)`;
 * own-origin files are served under /files/.
 */
const lyingModel = (t: TestContext, urls: (own: string) => string[]) => server(t, (req, res, own) => {
  const p = (req.url ?? '/').split('?')[0];
  if (p === '/health' || p === '/v1/models') return sendJson(res, 200, { ok: true, data: [] });
  if (p.startsWith('/files/')) {
    res.writeHead(200, { 'content-type': 'text/plain' });
    return res.end(`own file ${p}`);
  }
  if (p === '/generate') return sendJson(res, 200, { status: 'completed', outputs: urls(own).map((url) => ({ role: 'text', mimeType: 'text/plain', url })) });
  if (p === '/v1/images/generations') return sendJson(res, 200, { data: urls(own).map((url) => ({ url })) });
  sendJson(res, 404, { error: 'not found' });
});

async function setup(t: TestContext, env: Record<string, string> = {}) {
  const s = await startTestServer(t, { ...WORKER_ENV, SVC_CONNECTOR_TIMEOUT_MS: '3000', ...env });
  const owner = await member(s, 'org_owner');
  const register = (body: Record<string, unknown>, token = owner.token) => s.call('POST', `${BASE}/register`, { token, body });
  return { s, owner, tree: owner.tree, token: owner.token, register };
}

const connector = (over: Record<string, unknown> = {}) => ({
  label: 'Model', endpoint: 'http://127.0.0.1:9', kind: 'http-json', capability: ['chat', 'image'], costMode: 'local', ...over,
});

const count = async (s: TestServer) => (await s.db.get<{ n: number }>('SELECT count(*) AS n FROM model_connectors'))!.n;

/** A connector row written directly, as one stored before the egress policy existed (ready: the worker takes local ones). */
async function storeConnector(s: TestServer, tree: Tree, o: { endpoint: string; costMode?: string; kind?: string; capability?: string[]; status?: string }): Promise<string> {
  const id = `mdl_${crypto.randomBytes(8).toString('hex')}`;
  const now = new Date().toISOString();
  await s.db.run(`INSERT INTO model_connectors (id, organization_id, label, endpoint, kind, capability, cost_mode, auth_env, protocol, status, created_at, updated_at)
    VALUES (?, ?, 'stored before', ?, ?, ?, ?, NULL, '{}', ?, ?, ?)`,
  id, tree.organizationId, o.endpoint, o.kind ?? 'http-json', JSON.stringify(o.capability ?? ['chat', 'image']), o.costMode ?? 'local', o.status ?? 'ready', now, now);
  return id;
}

/** Every file under the storage root whose bytes contain `needle`. */
function filesHolding(dir: string, needle: string): string[] {
  const found: string[] = [];
  const walk = (d: string) => {
    if (!fs.existsSync(d)) return;
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (fs.readFileSync(p).includes(needle)) found.push(p);
    }
  };
  walk(dir);
  return found;
}

// ---------------------------------------------------------------------------------------------
// Registration and update

test('register and PATCH: every spelling of a link-local, metadata or reserved endpoint is 422 naming endpoint, for local and cloud alike; nothing is written', async (t) => {
  const { s, owner, register } = await setup(t);
  const producer = await member(s, 'producer', owner.tree);
  assert.equal((await register(connector({ endpoint: REFUSED_ENDPOINTS[0] }), producer.token)).status, 403, 'the permission comes first');
  for (const endpoint of REFUSED_ENDPOINTS) {
    for (const costMode of ['local', 'cloud']) {
      const r = await register(connector({ endpoint, costMode }));
      assert.equal(r.status, 422, `${endpoint} ${costMode}: ${r.text}`);
      assert.equal(r.body.error.code, 'validation_failed');
      assert.match(r.body.error.details.fields.endpoint, /^is refused by the egress policy: \S+ is a link-local, metadata or reserved address$/, endpoint);
    }
  }
  // A zone id is not part of a URL at all.
  assert.equal((await register(connector({ endpoint: 'http://[fe80::1%25eth0]/' }))).status, 422);
  assert.equal(await count(s), 0);

  // Loopback, private and (for cloud) public endpoints stay allowed.
  for (const [endpoint, costMode] of [['http://127.0.0.1:9', 'local'], ['http://localhost:9/v1', 'local'], ['http://10.1.2.3:8188', 'local'], ['http://100.101.102.103:8188', 'local'], ['http://[::1]:9', 'local'], ['http://203.0.113.9/v1', 'cloud'], ['https://api.example.test/v1', 'cloud']]) {
    const r = await register(connector({ endpoint, costMode }));
    assert.equal(r.status, 201, `${endpoint}: ${r.text}`);
  }
  const ok = (await register(connector({ endpoint: 'http://127.0.0.1:9/generate' }))).body;
  for (const endpoint of REFUSED_ENDPOINTS) {
    const r = await s.call('PATCH', `${BASE}/${ok.id}`, { token: owner.token, body: { endpoint } });
    assert.equal(r.status, 422, `${endpoint}: ${r.text}`);
    assert.ok(r.body.error.details.fields.endpoint, endpoint);
  }
  assert.equal((await s.db.get<any>('SELECT endpoint FROM model_connectors WHERE id = ?', ok.id)).endpoint, 'http://127.0.0.1:9/generate');
});

test('costMode local means loopback or private: a public endpoint registered or changed as local is 422 naming costMode; mixed and cloud may be public', async (t) => {
  const { s, owner, register } = await setup(t);
  for (const endpoint of ['http://203.0.113.9:8000/v1', 'http://[2001:db8::1]:8000', 'http://8.8.8.8/']) {
    const r = await register(connector({ endpoint, costMode: 'local' }));
    assert.equal(r.status, 422, `${endpoint}: ${r.text}`);
    assert.match(r.body.error.details.fields.costMode, /public address.*loopback or private/);
    assert.equal(r.body.error.details.fields.endpoint, undefined);
  }
  assert.equal(await count(s), 0);
  const cloud = await register(connector({ endpoint: 'http://203.0.113.9:8000/v1', costMode: 'cloud' }));
  assert.equal(cloud.status, 201, cloud.text);
  const toLocal = await s.call('PATCH', `${BASE}/${cloud.body.id}`, { token: owner.token, body: { costMode: 'local' } });
  assert.equal(toLocal.status, 422, toLocal.text);
  assert.ok(toLocal.body.error.details.fields.costMode);
  const local = (await register(connector())).body;
  const moved = await s.call('PATCH', `${BASE}/${local.id}`, { token: owner.token, body: { endpoint: 'http://203.0.113.9:8000' } });
  assert.equal(moved.status, 422, moved.text);
  assert.ok(moved.body.error.details.fields.costMode);
  const both = await s.call('PATCH', `${BASE}/${local.id}`, { token: owner.token, body: { endpoint: 'http://203.0.113.9:8000', costMode: 'mixed' } });
  assert.equal(both.status, 200, both.text);
  assert.equal(both.body.status, 'awaiting_approval');
  assert.deepEqual((await s.db.all<any>('SELECT cost_mode FROM model_connectors ORDER BY created_at')).map((r) => r.cost_mode).sort(), ['cloud', 'mixed']);
});

// ---------------------------------------------------------------------------------------------
// Call time

test('a connector stored before the rule with a refused endpoint is refused at probe and job time, before any connection', async (t) => {
  const { s, tree, token } = await setup(t);
  for (const endpoint of ['http://169.254.169.254:9/generate', 'http://2852039166:9/generate', 'http://[::ffff:169.254.169.254]:9/generate', 'http://[fd00:ec2::254]:9/']) {
    const id = await storeConnector(s, tree, { endpoint, status: 'pending' });
    const r = await s.call('POST', `${BASE}/${id}/probe`, { token });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.probe.ok, false, endpoint);
    assert.match(r.body.probe.error, /destination refused: .*link-local, metadata or reserved.*egress policy/, endpoint);
    assert.ok(r.body.probe.latencyMs < 1000, `refused without connecting (${r.body.probe.latencyMs} ms)`);
    assert.equal(r.body.status, 'unreachable');
  }
  // A job on a ready one fails at once: not retryable, with the refusal as its error.
  const id = await storeConnector(s, tree, { endpoint: 'http://0xa9fea9fe:9/generate' });
  const job = await createJob(s, token, { kind: 'chat', connectorId: id });
  const done = await waitJob(s, token, job.id, ['failed', 'completed']);
  assert.equal(done.status, 'failed');
  assert.equal(done.attempt, 1, 'not retried');
  assert.match(done.error, /^egress_refused: destination refused: 169\.254\.169\.254 is a link-local, metadata or reserved address/);
});

test('a local connector whose endpoint is public (stored before the rule) never runs: probe and job refused by the egress policy', async (t) => {
  const { s, tree, token } = await setup(t);
  const id = await storeConnector(s, tree, { endpoint: 'http://203.0.113.9:9/generate', costMode: 'local', status: 'pending' });
  const r = await s.call('POST', `${BASE}/${id}/probe`, { token });
  assert.equal(r.body.probe.ok, false);
  assert.match(r.body.probe.error, /destination refused: 203\.0\.113\.9 is public and the connector is local/);
  await s.db.run("UPDATE model_connectors SET status = 'ready' WHERE id = ?", id);
  const job = await createJob(s, token, { kind: 'chat', connectorId: id });
  const done = await waitJob(s, token, job.id, ['failed', 'completed']);
  assert.equal(done.status, 'failed');
  assert.equal(done.attempt, 1);
  assert.match(done.error, /^egress_refused: .*public and the connector is local/);
});

// ---------------------------------------------------------------------------------------------
// Output downloads

test('a model answer naming another local port (an internal service) fails the job and stores nothing; own-origin files still work', async (t) => {
  const internal = await internalService(t);
  const { s, token } = await setup(t);
  for (const [kind, endpointPath] of [['chat', '/generate'], ['image', '/v1']] as const) {
    const model = await lyingModel(t, () => [`http://127.0.0.1:${internal.port}/admin/secrets`]);
    const reg = await s.call('POST', `${BASE}/register`, {
      token, body: connector({ endpoint: `${model.url}${endpointPath}`, kind: kind === 'chat' ? 'http-json' : 'openai-compatible', capability: [kind], protocol: kind === 'image' ? { models: { image: 'm' } } : {} }),
    });
    assert.equal(reg.status, 201, reg.text);
    assert.equal((await s.call('POST', `${BASE}/${reg.body.id}/probe`, { token })).body.status, 'ready');
    const job = await createJob(s, token, { kind, connectorId: reg.body.id });
    const done = await waitJob(s, token, job.id, ['failed', 'completed']);
    assert.equal(done.status, 'failed', `${kind}: ${JSON.stringify(done)}`);
    assert.match(done.error, /^egress_refused: destination refused: the model answered a file URL on http:\/\/127\.0\.0\.1:\d+, which is neither the connector's own origin/);
    assert.equal(done.attempt, 1, 'not retried');
  }
  assert.deepEqual(internal.hits, [], 'the internal service was never called');
  assert.deepEqual(filesHolding(s.config.storageDir, SECRET_PAGE), []);
  assert.equal((await s.db.get<any>('SELECT count(*) AS n FROM media_artifacts'))!.n, 0);

  // The connector's own origin (relative or absolute URL) is downloaded as before.
  const honest = await lyingModel(t, (own) => ['/files/a.txt', `${own}/files/b.txt`]);
  const reg = await s.call('POST', `${BASE}/register`, { token, body: connector({ endpoint: `${honest.url}/generate`, capability: ['chat'] }) });
  await s.call('POST', `${BASE}/${reg.body.id}/probe`, { token });
  const job = await createJob(s, token, { kind: 'chat', connectorId: reg.body.id });
  const done = await waitJob(s, token, job.id, ['failed', 'completed']);
  assert.equal(done.status, 'completed', JSON.stringify(done));
  assert.deepEqual(honest.hits.filter((h) => h.startsWith('GET /files/')), ['GET /files/a.txt', 'GET /files/b.txt']);
});

test('SVC_CONNECTOR_OUTPUT_ORIGINS lets the operator name another origin for model files; a bad entry stops the start', async (t) => {
  const files = await internalService(t);
  const { s, token } = await setup(t, { SVC_CONNECTOR_OUTPUT_ORIGINS: `https://cdn.example.test, ${files.url}/` });
  assert.equal(s.config.connectorOutputOrigins, `https://cdn.example.test,${files.url}`);
  const model = await lyingModel(t, () => [`${files.url}/generated/1.txt`]);
  const reg = await s.call('POST', `${BASE}/register`, { token, body: connector({ endpoint: `${model.url}/generate`, capability: ['chat'] }) });
  await s.call('POST', `${BASE}/${reg.body.id}/probe`, { token });
  const job = await createJob(s, token, { kind: 'chat', connectorId: reg.body.id });
  const done = await waitJob(s, token, job.id, ['failed', 'completed']);
  assert.equal(done.status, 'completed', JSON.stringify(done));
  assert.deepEqual(files.hits, ['GET /generated/1.txt']);
  for (const bad of ['http://169.254.169.254', 'ftp://files.example.test', 'https://cdn.example.test/path', 'not an origin']) {
    assert.throws(() => loadConfig({}, { SVC_CONNECTOR_OUTPUT_ORIGINS: bad }), /SVC_CONNECTOR_OUTPUT_ORIGINS/, bad);
  }
});

// ---------------------------------------------------------------------------------------------
// Identity providers

async function discovery(t: TestContext, o: { jwks?: (own: string) => string; authorization?: (own: string) => string } = {}) {
  const { publicKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = { ...publicKey.export({ format: 'jwk' }), kid: 'k1', alg: 'RS256', use: 'sig' };
  return server(t, (req, res, own) => {
    if (req.url === '/.well-known/openid-configuration') {
      return sendJson(res, 200, {
        issuer: own, authorization_endpoint: o.authorization ? o.authorization(own) : `${own}/auth`, token_endpoint: `${own}/token`,
        jwks_uri: o.jwks ? o.jwks(own) : `${own}/jwks`, code_challenge_methods_supported: ['S256'], id_token_signing_alg_values_supported: ['RS256'],
      });
    }
    if (req.url === '/jwks') return sendJson(res, 200, { keys: [jwk] });
    sendJson(res, 404, {});
  });
}

test('identity providers: a metadata issuer is 422; discovery, key set and sign-in refuse link-local and metadata destinations', async (t) => {
  const s = await startTestServer(t);
  const admin = await login(s, await makeUser(s, { systemAdmin: true }));
  const org = await makeOrg(s);
  process.env.EGRESS_TEST_CLIENT_SECRET = 'egress-test-secret';
  const body = (issuer: string) => ({ kind: 'oidc', name: 'IdP', organizationId: org.id, config: { issuer, clientId: 'svc', clientSecretRef: 'EGRESS_TEST_CLIENT_SECRET' } });
  for (const issuer of ['https://169.254.169.254', 'https://[::ffff:a9fe:a9fe]', 'https://2852039166/realms/x', 'https://[fd00:ec2::254]']) {
    const r = await s.call('POST', '/api/system/identity/providers', { token: admin, body: body(issuer) });
    assert.equal(r.status, 422, `${issuer}: ${r.text}`);
    assert.match(r.body.error.details.fields['config.issuer'], /link-local, metadata or reserved/);
  }
  // Stored before the rule: the probe refuses the discovery URL without connecting.
  const created = await s.call('POST', '/api/system/identity/providers', { token: admin, body: body('https://login.example.test') });
  assert.equal(created.status, 201, created.text);
  await s.db.run(`UPDATE identity_providers SET config = ${jsonSetText(s.db, 'config', 'issuer', '?')} WHERE id = ?`, 'https://169.254.169.254', created.body.id);
  const started = Date.now();
  const probed = await s.call('POST', `/api/system/identity/providers/${created.body.id}/probe`, { token: admin });
  assert.equal(probed.status, 200, probed.text);
  assert.match(probed.body.detail.problems.join('\n'), /discovery document: destination refused: .*link-local, metadata or reserved.*egress policy/);
  assert.ok(Date.now() - started < 3000, 'refused at once');

  // A discovery document naming a metadata key set: reported, and never fetched.
  const idp = await discovery(t, { jwks: () => 'https://0xa9fea9fe/jwks' });
  const p = await s.call('POST', '/api/system/identity/providers', { token: admin, body: body(idp.url) });
  assert.equal(p.status, 201, p.text);
  const r = await s.call('POST', `/api/system/identity/providers/${p.body.id}/probe`, { token: admin });
  assert.equal(r.body.status, 'failed');
  assert.match(r.body.detail.problems.join('\n'), /jwks_uri points to a link-local, metadata or reserved address/);
  assert.match(r.body.detail.problems.join('\n'), /key set \(jwks_uri\): destination refused/);

  // Sign-in: a provider whose discovery sends the browser or the key set to a metadata address is unavailable.
  const sneaky = await discovery(t, { authorization: () => 'https://[::ffff:169.254.169.254]/auth' });
  const sp = await s.call('POST', '/api/system/identity/providers', { token: admin, body: body(sneaky.url) });
  const start = await s.call('GET', `/api/auth/sso/start?providerId=${sp.body.id}`);
  assert.equal(start.status, 502, start.text);
  assert.equal(start.body.error.code, 'sso_provider_unavailable');
});

// ---------------------------------------------------------------------------------------------
// The policy module: names resolved to refused addresses (a resolver the test controls)

test('egress lookup: a name is resolved once and every answer judged; the connection goes to a judged address', async (t) => {
  const egress = await import('../../src/kernel/egress.ts');
  const target = await server(t, (_req, res) => { res.end('reached'); });
  const get = (policy: Parameters<typeof egress.egressLookup>[0], answers: string[]) => new Promise<string>((resolve, reject) => {
    let lookups = 0;
    const agent = new http.Agent({ lookup: egress.egressLookup(policy, async () => { lookups++; return answers; }) });
    const req = http.get(`http://model.internal.test:${target.port}/`, { agent }, (res) => {
      let text = '';
      res.on('data', (c) => { text += c; });
      res.on('end', () => { agent.destroy(); assert.equal(lookups, 1); resolve(text); });
    });
    req.on('error', (err) => { agent.destroy(); reject(err); });
  });
  assert.equal(await get(egress.CONNECTOR_EGRESS, ['127.0.0.1']), 'reached');
  assert.equal(await get(egress.LOCAL_CONNECTOR_EGRESS, ['::ffff:127.0.0.1']), 'reached', 'IPv4-mapped answers connect as IPv4');
  for (const [policy, answers, reason] of [
    [egress.CONNECTOR_EGRESS, ['169.254.169.254'], /169\.254\.169\.254 is a link-local, metadata or reserved address/],
    [egress.CONNECTOR_EGRESS, ['::ffff:169.254.169.254'], /169\.254\.169\.254 is a link-local/],
    [egress.CONNECTOR_EGRESS, ['127.0.0.1', 'fd00:ec2::254'], /fd00:ec2::254 is a link-local/],
    [egress.CONNECTOR_EGRESS, ['fe80::1'], /fe80::1 is a link-local/],
    [egress.LOCAL_CONNECTOR_EGRESS, ['203.0.113.9'], /203\.0\.113\.9 is public and the connector is local/],
    [egress.webhookEgress([]), ['203.0.113.9'], /not in the organization's allow-list/],
  ] as const) {
    await assert.rejects(get(policy, [...answers]), (err: any) => err.code === 'EGRESS_REFUSED' && reason.test(err.message));
  }
  assert.equal(target.hits.length, 2, 'only the allowed lookups reached the server');
  for (const url of REFUSED_ENDPOINTS) {
    assert.ok(egress.literalRefusal(new URL(url).hostname, egress.CONNECTOR_EGRESS), url);
  }
  assert.equal(egress.literalRefusal('127.0.0.1', egress.LOCAL_CONNECTOR_EGRESS), null);
  // The key set fetch jose is given goes through the same policy.
  const { keySetFetch } = await import('../../src/identity/sso/fetch-json.ts');
  await assert.rejects(keySetFetch('https://169.254.169.254/jwks', { headers: new Headers(), signal: AbortSignal.timeout(2000) }), /destination refused/);
});
