// The model platform over real HTTP: access per route, tenant scoping, register validation, probes
// against the project's model server and a closed port, the approval rule (rule 2),
// local_runner_only, credentials that never leave the environment, status changes on PATCH,
// disable/enable, the audit trail, and connectors kept out of search.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import crypto from 'node:crypto';
import { startTestServer, type Answer, type TestServer } from '../helpers/server.ts';
import { login, makeUser, member } from '../helpers/factories.ts';
import { startModelServer } from '../../tools/model-server/server.ts';

const BASE = '/api/platform/models';

/** A port on loopback that nothing listens on. */
async function closedPort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

async function modelServer(t: any) {
  const m = await startModelServer();
  t.after(() => m.close());
  return m;
}

const connector = (over: Record<string, unknown> = {}) => ({
  label: 'Local image model', endpoint: 'http://127.0.0.1:9', kind: 'openai-compatible', capability: ['image'], costMode: 'local', ...over,
});

async function setup(t: any) {
  const s = await startTestServer(t);
  const owner = await member(s, 'org_owner');
  const register = async (body: Record<string, unknown>, token = owner.token) => s.call('POST', `${BASE}/register`, { token, body });
  const api = (method: string, path: string, body?: unknown, token = owner.token) =>
    s.call(method, `${BASE}${path}`, { token, ...(body === undefined ? {} : { body }) });
  return { s, owner, tree: owner.tree, register, api };
}

const audit = async (s: TestServer, targetId: string) =>
  await s.db.all<any>("SELECT * FROM audit_log WHERE target_type = 'model_connector' AND target_id = ? ORDER BY seq", targetId);

test('every platform route: 401 without a session, 403 for producers, editors and org members, 404 across organizations, 200 for the owner and a system administrator', async (t) => {
  const { s, owner, tree, register } = await setup(t);
  const port = await closedPort();
  const producer = await member(s, 'producer', tree);
  const editor = await member(s, 'project_editor', tree);
  const orgMember = await member(s, 'org_member', tree);
  const outsider = await member(s, 'org_owner');
  const adminUser = await makeUser(s, { systemAdmin: true });
  const admin = await login(s, adminUser);
  assert.equal((await s.call('PATCH', '/api/context', { token: admin, body: { organizationId: tree.organizationId } })).status, 200);
  const created = await register(connector({ costMode: 'cloud', endpoint: `http://127.0.0.1:${port}` }));
  assert.equal(created.status, 201, created.text);
  const id = created.body.id;
  assert.match(id, /^con_/);
  const cases: Array<{ method: string; path: string; body?: unknown; status: number }> = [
    { method: 'GET', path: BASE, status: 200 },
    { method: 'POST', path: `${BASE}/register`, body: connector(), status: 201 },
    { method: 'GET', path: `${BASE}/${id}`, status: 200 },
    { method: 'PATCH', path: `${BASE}/${id}`, body: { label: 'Renamed' }, status: 200 },
    { method: 'POST', path: `${BASE}/${id}/probe`, status: 200 },
    { method: 'POST', path: `${BASE}/${id}/disable`, status: 200 },
    { method: 'POST', path: `${BASE}/${id}/enable`, status: 200 },
    { method: 'POST', path: `${BASE}/${id}/approve`, body: { note: 'ok' }, status: 200 },
  ];
  const covered = new Set(cases.map((c) => `${c.method} ${c.path.replace(id, ':connectorId')}`));
  for (const r of s.app.router.routes.filter((x) => x.pattern.startsWith(BASE))) {
    assert.ok(covered.has(`${r.method} ${r.pattern}`), `${r.method} ${r.pattern} has an access case`);
  }
  for (const c of cases) {
    const label = `${c.method} ${c.path}`;
    const opts = c.body === undefined ? {} : { body: c.body };
    const anon = await s.call(c.method, c.path, opts);
    assert.equal(anon.status, 401, label);
    assert.equal(anon.body.error.code, 'unauthenticated');
    for (const who of [producer, editor, orgMember]) {
      const denied = await s.call(c.method, c.path, { token: who.token, ...opts });
      assert.equal(denied.status, 403, `${label}: ${denied.text}`);
      assert.equal(denied.body.error.code, 'permission_denied');
    }
    if (c.path.includes(id)) {
      const cross = await s.call(c.method, c.path, { token: outsider.token, ...opts });
      assert.equal(cross.status, 404, `${label} from another organization: ${cross.text}`);
      assert.equal(cross.body.error.code, 'not_found');
    }
    for (const token of [owner.token, admin]) {
      const ok = await s.call(c.method, c.path, { token, ...opts });
      assert.equal(ok.status, c.status, `${label}: ${ok.text}`);
    }
  }
  // The owner acted first, the administrator second: both approvals are on record.
  assert.equal((await audit(s, id)).filter((a) => a.action === 'model.connector.approved').length, 2);
  assert.deepEqual((await s.call('GET', BASE, { token: outsider.token })).body.items, [], 'the other organization sees none of them');
});

test('lists are tenant-scoped, filtered and paged', async (t) => {
  const s = await startTestServer(t);
  const a = await member(s, 'org_owner');
  const b = await member(s, 'org_owner');
  for (const [who, labels] of [[a, ['A1', 'A2', 'A3']], [b, ['B1']]] as const) {
    for (const [i, label] of labels.entries()) {
      const r = await s.call('POST', `${BASE}/register`, { token: who.token, body: connector({ label, costMode: i === 0 ? 'cloud' : 'local', kind: i === 2 ? 'http-json' : 'openai-compatible' }) });
      assert.equal(r.status, 201, r.text);
    }
  }
  const la = await s.call('GET', BASE, { token: a.token });
  assert.equal(la.status, 200);
  assert.deepEqual(la.body.items.map((x: any) => x.label), ['A3', 'A2', 'A1'], 'newest first');
  assert.deepEqual(la.body.pagination, { page: 1, pageSize: 50, total: 3 });
  assert.deepEqual((await s.call('GET', BASE, { token: b.token })).body.items.map((x: any) => x.label), ['B1']);
  assert.deepEqual((await s.call('GET', `${BASE}?status=awaiting_approval`, { token: a.token })).body.items.map((x: any) => x.label), ['A1']);
  assert.deepEqual((await s.call('GET', `${BASE}?costMode=local&kind=http-json`, { token: a.token })).body.items.map((x: any) => x.label), ['A3']);
  const paged = await s.call('GET', `${BASE}?page=2&pageSize=2`, { token: a.token });
  assert.deepEqual(paged.body.items.map((x: any) => x.label), ['A1']);
  assert.deepEqual(paged.body.pagination, { page: 2, pageSize: 2, total: 3 });
  assert.equal((await s.call('GET', `${BASE}?pageSize=999`, { token: a.token })).body.pagination.pageSize, 200);
  assert.equal((await s.call('GET', `${BASE}?status=sleeping`, { token: a.token })).status, 422);
  const bId = (await s.call('GET', BASE, { token: b.token })).body.items[0].id;
  assert.equal((await s.call('GET', `${BASE}/${bId}`, { token: a.token })).status, 404);
});

test('register validation: every bad field is 422 validation_failed naming it, and nothing is written', async (t) => {
  const { s, register } = await setup(t);
  const cases: Array<[Record<string, unknown>, string]> = [
    [connector({ endpoint: 'not a url' }), 'endpoint'],
    [connector({ endpoint: 'ftp://127.0.0.1/models' }), 'endpoint'],
    [connector({ endpoint: 'http://user:pass@127.0.0.1:8188' }), 'endpoint'],
    [connector({ endpoint: 'https://api.example.test/v1?api_key=abc' }), 'endpoint'],
    [connector({ kind: 'grpc' }), 'kind'],
    [connector({ capability: [] }), 'capability'],
    [connector({ capability: ['image', 'telepathy'] }), 'capability'],
    [connector({ capability: ['image', 'image'] }), 'capability'],
    [connector({ costMode: 'free' }), 'costMode'],
    [connector({ protocol: { routes: { chat: '/v1/chat/completions' } } }), 'protocol.routes.chat'],
    [connector({ protocol: { routes: { image: 'v1/images' } } }), 'protocol.routes.image'],
    [connector({ protocol: { healthRoute: 'health' } }), 'protocol.healthRoute'],
    [connector({ protocol: { models: { video: 'v1' } } }), 'protocol.models.video'],
    [connector({ authEnv: 'openai_api_key' }), 'authEnv'],
    [connector({ authEnv: '1KEY' }), 'authEnv'],
    [connector({ kind: 'comfyui', endpoint: 'http://127.0.0.1:8188' }), 'protocol.workflow'],
    [connector({ label: '' }), 'label'],
    [connector({ extra: true }), 'extra'],
  ];
  for (const [body, field] of cases) {
    const r = await register(body);
    assert.equal(r.status, 422, `${field}: ${r.text}`);
    assert.equal(r.body.error.code, 'validation_failed');
    assert.ok(field in r.body.error.details.fields, `${field} named in ${JSON.stringify(r.body.error.details.fields)}`);
  }
  const credentialUrl = await register(connector({ endpoint: 'http://user:pass@127.0.0.1:8188' }));
  assert.match(credentialUrl.body.error.details.fields.endpoint, /credentials/);
  for (const secret of ['sk-proj-4f9aQ2x7LmN3pR8sT1vW6yZ0', 'AKIAIOSFODNN7EXAMPLE', 'Bearer abcdef0123456789', 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc']) {
    const r = await register(connector({ authEnv: secret }));
    assert.equal(r.status, 422, secret);
    assert.match(r.body.error.details.fields.authEnv, /NAME of the environment variable/);
    assert.ok(!r.text.includes(secret), 'the value is not echoed');
  }
  assert.equal((await s.db.get<any>('SELECT count(*) AS n FROM model_connectors'))!.n, 0);
  assert.equal((await s.db.get<any>("SELECT count(*) AS n FROM audit_log WHERE action LIKE 'model.connector.%'"))!.n, 0);
  const ok = await register(connector({ kind: 'comfyui', capability: ['image', 'video'], endpoint: 'http://127.0.0.1:8188/', protocol: { workflow: { 3: { class_type: 'KSampler' } }, routes: { video: '/prompt' } } }));
  assert.equal(ok.status, 201, ok.text);
  assert.equal(ok.body.endpoint, 'http://127.0.0.1:8188', 'trailing slash dropped');
  assert.deepEqual(ok.body.protocol, { healthRoute: null, routes: { video: '/prompt' }, models: {}, workflow: { 3: { class_type: 'KSampler' } } });
});

test('probes: the model server makes local connectors of each kind ready; a closed port is unreachable with the error, answered 200', async (t) => {
  const { s, register, api } = await setup(t);
  const m = await modelServer(t);
  const kinds = [
    connector({ endpoint: m.url }),
    connector({ kind: 'http-json', endpoint: m.url, capability: ['chat'] }),
    connector({ kind: 'comfyui', endpoint: m.url, protocol: { workflow: { 1: { class_type: 'SaveImage' } } } }),
  ];
  for (const body of kinds) {
    const c = (await register(body)).body;
    assert.equal(c.status, 'pending');
    assert.deepEqual(c.lastProbe, { at: null, ok: null, latencyMs: null, httpStatus: null, error: null });
    const r = await api('POST', `/${c.id}/probe`);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.status, 'ready', `${body.kind}: ${r.text}`);
    assert.equal(r.body.probe.ok, true);
    assert.equal(r.body.probe.httpStatus, 200);
    assert.equal(r.body.probe.error, null);
    assert.ok(r.body.probe.latencyMs >= 0);
    assert.ok(Date.parse(r.body.probe.at));
    assert.deepEqual(r.body.lastProbe, { at: r.body.probe.at, ok: true, latencyMs: r.body.probe.latencyMs, httpStatus: 200, error: null });
  }
  const port = await closedPort();
  const dead = (await register(connector({ endpoint: `http://127.0.0.1:${port}` }))).body;
  const r = await api('POST', `/${dead.id}/probe`);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.status, 'unreachable');
  assert.equal(r.body.probe.ok, false);
  assert.equal(r.body.probe.httpStatus, null);
  assert.ok(r.body.probe.error, 'the error is recorded');
  const row = await s.db.get<any>('SELECT * FROM model_connectors WHERE id = ?', dead.id);
  assert.equal(row.status, 'unreachable');
  assert.equal(row.last_probe_ok, 0);
  assert.equal(row.last_probe_error, r.body.probe.error);
  // A recovered endpoint is ready again after the next probe.
  assert.equal((await api('PATCH', `/${dead.id}`, { endpoint: m.url })).body.status, 'pending');
  assert.equal((await api('POST', `/${dead.id}/probe`)).body.status, 'ready');
  const probes = (await audit(s, dead.id)).filter((a) => a.action === 'model.connector.probed');
  assert.deepEqual(probes.map((a) => a.result), ['failure', 'success']);
  assert.equal(JSON.parse(probes[0].metadata).ok, false);
});

test('rule 2: a cloud connector awaits approval through probes; a producer cannot approve; an org admin approves and a probe makes it ready', async (t) => {
  const { s, tree, register, api } = await setup(t);
  const m = await modelServer(t);
  const c = (await register(connector({ costMode: 'cloud', endpoint: m.url, label: 'Cloud video' }))).body;
  assert.equal(c.status, 'awaiting_approval');
  assert.equal(c.approvedBy, null);
  const probed = await api('POST', `/${c.id}/probe`);
  assert.equal(probed.body.status, 'awaiting_approval', 'a probe never approves');
  assert.equal(probed.body.probe.ok, true, 'but it is recorded');
  const producer = await member(s, 'producer', tree);
  const refused = await api('POST', `/${c.id}/approve`, {}, producer.token);
  assert.equal(refused.status, 403);
  assert.equal(refused.body.error.code, 'permission_denied');
  const admin = await member(s, 'org_admin', tree);
  const approved = await api('POST', `/${c.id}/approve`, { note: 'budget signed off for Q3' }, admin.token);
  assert.equal(approved.status, 200, approved.text);
  assert.equal(approved.body.status, 'pending');
  assert.equal(approved.body.approvedBy, admin.user.id);
  assert.ok(Date.parse(approved.body.approvedAt));
  assert.equal((await api('POST', `/${c.id}/probe`)).body.status, 'ready');
  const rec = (await audit(s, c.id)).find((a) => a.action === 'model.connector.approved');
  assert.equal(rec.actor_user_id, admin.user.id);
  assert.equal(JSON.parse(rec.metadata).note, 'budget signed off for Q3');
  assert.equal(rec.organization_id, tree.organizationId);
  assert.equal(rec.workspace_id, null, 'an organization-level record');
  const local = (await register(connector())).body;
  const needless = await api('POST', `/${local.id}/approve`, {}, admin.token);
  assert.equal(needless.status, 409);
  assert.equal(needless.body.error.code, 'approval_not_needed');
  const mixed = (await register(connector({ costMode: 'mixed' }))).body;
  assert.equal(mixed.status, 'awaiting_approval');
});

test('local_runner_only: registering, changing to, approving or enabling a mixed or cloud connector is 409 local_runner_only', async (t) => {
  const { s, tree, register, api } = await setup(t);
  const cloud = (await register(connector({ costMode: 'cloud' }))).body;
  const disabledCloud = (await register(connector({ costMode: 'mixed' }))).body;
  await api('POST', `/${disabledCloud.id}/disable`);
  const local = (await register(connector())).body;
  await s.db.run('UPDATE billing_accounts SET local_runner_only = 1 WHERE organization_id = ?', tree.organizationId);
  const before = (await s.db.get<any>('SELECT count(*) AS n FROM model_connectors'))!.n;
  const attempts: Array<[string, string, unknown?]> = [
    ['POST', '/register', connector({ costMode: 'cloud' })],
    ['POST', '/register', connector({ costMode: 'mixed' })],
    ['PATCH', `/${local.id}`, { costMode: 'cloud' }],
    ['POST', `/${cloud.id}/approve`, {}],
    ['POST', `/${disabledCloud.id}/enable`],
  ];
  for (const [method, path, body] of attempts) {
    const r = await api(method, path, body);
    assert.equal(r.status, 409, `${method} ${path}: ${r.text}`);
    assert.equal(r.body.error.code, 'local_runner_only');
  }
  assert.equal((await s.db.get<any>('SELECT count(*) AS n FROM model_connectors'))!.n, before, 'nothing registered');
  assert.equal((await api('GET', `/${local.id}`)).body.costMode, 'local');
  assert.equal((await api('GET', `/${cloud.id}`)).body.approvedAt, null);
  assert.equal((await api('GET', `/${disabledCloud.id}`)).body.status, 'disabled');
  assert.equal((await register(connector())).status, 201, 'local connectors still register');
  assert.equal((await api('PATCH', `/${cloud.id}`, { costMode: 'local' })).body.status, 'pending', 'and a cloud one may become local');
});

test('authEnv is a name: authConfigured follows the environment and the credential never appears in answers, logs or audit', async (t) => {
  const { s, owner, register, api } = await setup(t);
  const m = await modelServer(t);
  const name = `SVC_CONNECTOR_SECRET_TEST_MODEL_KEY_${crypto.randomBytes(4).toString('hex').toUpperCase()}`;
  const secret = `sk-test-${crypto.randomBytes(18).toString('hex')}`;
  process.env[name] = secret;
  t.after(() => { delete process.env[name]; });
  const texts: string[] = [];
  const keep = (r: Answer) => { texts.push(r.text); return r; };
  const c = keep(await register(connector({ endpoint: m.url, authEnv: name, costMode: 'cloud' }))).body;
  assert.equal(c.authEnv, name);
  assert.equal(c.authConfigured, true);
  keep(await api('POST', `/${c.id}/approve`, {}));
  const probed = keep(await api('POST', `/${c.id}/probe`));
  assert.equal(probed.body.status, 'ready', probed.text);
  keep(await api('PATCH', `/${c.id}`, { label: 'Keyed model', authEnv: name }));
  keep(await api('GET', `/${c.id}`));
  keep(await api('GET', ''));
  keep(await s.call('GET', '/api/audit?pageSize=200', { token: owner.token }));
  keep(await s.call('GET', '/api/audit/export?format=csv', { token: owner.token }));
  const unset = keep(await api('PATCH', `/${c.id}`, { authEnv: `${name}_MISSING` }));
  assert.equal(unset.body.authConfigured, false);
  assert.equal(unset.body.status, 'pending', 'a new credential variable needs a new probe');
  keep(await register(connector({ authEnv: secret })));
  const cleared = keep(await api('PATCH', `/${c.id}`, { authEnv: null }));
  assert.equal(cleared.body.authEnv, null);
  assert.equal(cleared.body.authConfigured, false);
  for (const text of texts) assert.ok(!text.includes(secret), `an answer holds the credential: ${text.slice(0, 200)}`);
  for (const line of s.logs) assert.ok(!line.includes(secret), `a log line holds the credential: ${line}`);
  const rows = await s.db.all<any>('SELECT metadata FROM audit_log');
  assert.ok(rows.length > 0);
  for (const r of rows) assert.ok(!r.metadata.includes(secret));
  assert.ok(!JSON.stringify(await s.db.all('SELECT * FROM model_connectors')).includes(secret), 'never stored');
  assert.equal(JSON.parse((await audit(s, c.id))[0].metadata).authEnv, name, 'the audit names the variable');
});

test('PATCH: reachability fields send a ready connector back to pending, a label keeps it ready, costMode moves the approval; disable and enable', async (t) => {
  const { s, register, api } = await setup(t);
  const m = await modelServer(t);
  const c = (await register(connector({ endpoint: m.url }))).body;
  assert.equal((await api('POST', `/${c.id}/probe`)).body.status, 'ready');
  const renamed = await api('PATCH', `/${c.id}`, { label: 'Image model v2', capability: ['image', 'chat'] });
  assert.equal(renamed.status, 200, renamed.text);
  assert.equal(renamed.body.status, 'ready');
  assert.deepEqual(renamed.body.capability, ['image', 'chat']);
  const moved = await api('PATCH', `/${c.id}`, { endpoint: `${m.url}/` });
  assert.equal(moved.body.status, 'ready', 'the same endpoint after normalization changes nothing');
  const other = await api('PATCH', `/${c.id}`, { endpoint: new URL('/v1', m.url).href });
  assert.equal(other.body.status, 'pending');
  assert.equal((await api('POST', `/${c.id}/probe`)).body.status, 'ready');
  assert.equal((await api('PATCH', `/${c.id}`, { protocol: { healthRoute: '/v1/models' } })).body.status, 'pending');
  assert.equal((await api('POST', `/${c.id}/probe`)).body.status, 'ready');
  assert.equal((await api('PATCH', `/${c.id}`, { kind: 'http-json' })).body.status, 'pending');
  assert.equal((await api('PATCH', `/${c.id}`, {})).status, 422);
  assert.equal((await api('PATCH', `/${c.id}`, { capability: ['chat'] })).status, 200);
  const bad = await api('PATCH', `/${c.id}`, { protocol: { routes: { image: '/v1/images/generations' } } });
  assert.equal(bad.status, 422, 'routes are checked against the stored capability');
  assert.ok('protocol.routes.image' in bad.body.error.details.fields);
  // costMode: to cloud clears approval and awaits it; approved then back to local is pending.
  const cloud = await api('PATCH', `/${c.id}`, { costMode: 'cloud' });
  assert.equal(cloud.body.status, 'awaiting_approval');
  assert.equal((await api('PATCH', `/${c.id}`, { endpoint: `http://127.0.0.1:${m.port}` })).body.status, 'awaiting_approval', 'still awaiting');
  assert.equal((await api('POST', `/${c.id}/approve`, {})).body.status, 'pending');
  const mixed = await api('PATCH', `/${c.id}`, { costMode: 'mixed' });
  assert.equal(mixed.body.status, 'awaiting_approval');
  assert.equal(mixed.body.approvedAt, null, 'a new cost mode clears the approval');
  assert.equal((await api('PATCH', `/${c.id}`, { costMode: 'local' })).body.status, 'pending');
  // disable and enable
  const disabled = await api('POST', `/${c.id}/disable`);
  assert.equal(disabled.body.status, 'disabled');
  assert.equal((await api('POST', `/${c.id}/probe`)).body.status, 'disabled', 'a probe does not enable');
  assert.equal((await api('PATCH', `/${c.id}`, { endpoint: m.url })).body.status, 'disabled');
  assert.equal((await api('POST', `/${c.id}/disable`)).body.status, 'disabled', 'idempotent');
  assert.equal((await api('POST', `/${c.id}/enable`)).body.status, 'pending');
  assert.equal((await api('POST', `/${c.id}/enable`)).body.status, 'pending', 'idempotent');
  const cloudOne = (await register(connector({ costMode: 'cloud', endpoint: m.url }))).body;
  await api('POST', `/${cloudOne.id}/disable`);
  assert.equal((await api('POST', `/${cloudOne.id}/enable`)).body.status, 'awaiting_approval', 'not approved: back to awaiting approval');
  await api('POST', `/${cloudOne.id}/approve`, {});
  await api('POST', `/${cloudOne.id}/disable`);
  assert.equal((await api('POST', `/${cloudOne.id}/enable`)).body.status, 'pending', 'approved: pending');
  // The trail, from the audit log.
  const actions = (await audit(s, c.id)).map((a) => a.action);
  for (const action of ['registered', 'updated', 'probed', 'approved', 'disabled', 'enabled']) {
    assert.ok(actions.includes(`model.connector.${action}`), action);
  }
  assert.equal(actions.filter((a) => a === 'model.connector.disabled').length, 1, 'a repeated disable writes nothing');
  const update = (await audit(s, c.id)).find((a) => a.action === 'model.connector.updated' && JSON.parse(a.metadata).changes.endpoint);
  assert.deepEqual(JSON.parse(update.metadata).changes.endpoint, { changed: true }, 'endpoints stay out of the audit');
  assert.ok(!JSON.stringify(await audit(s, c.id)).includes(`${m.port}/v1`));
});

test('connectors are never searchable: neither label nor endpoint', async (t) => {
  const { s, owner, register } = await setup(t);
  const c = await register(connector({ label: 'Zephyrine render cluster', endpoint: 'http://render-cluster-zephyr.internal:47821/v1' }));
  assert.equal(c.status, 201);
  for (const q of ['Zephyrine', 'render cluster', 'render-cluster-zephyr', '47821', 'zephyr.internal']) {
    const r = await s.call('GET', `/api/search?q=${encodeURIComponent(q)}`, { token: owner.token });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body, [], q);
    assert.ok(!r.text.includes('47821') && !r.text.includes(c.body.id));
  }
  assert.equal((await s.db.get<any>("SELECT count(*) AS n FROM search_documents WHERE body LIKE '%47821%' OR title LIKE '%Zephyrine%' OR target_id = ?", c.body.id))!.n, 0);
});
