// API clients: the system administrator's routes (access on every route, validation of binding and
// permissions, the secret shown once), the token endpoint (OAuth 2.0 client credentials, JSON, form
// and Basic), tokens acting with exactly the client's permissions inside its binding, rotation and
// revocation taking effect at once, last use, and audit rows that name the client but hold no secret.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { login, makeTree, makeUser, member, type Tree } from '../helpers/factories.ts';
import { matrix, runScenarios, type Route } from '../helpers/scenarios.ts';
import { createContext } from '../../src/directory/context.ts';
import { membershipsOfUser } from '../../src/directory/tenancy/store.ts';
import { createApiClient } from '../../src/identity/api-clients/service.ts';
import { AppError } from '../../src/kernel/errors.ts';

const BASE = '/api/system/api-clients';
const pilotOf = async (s: TestServer, projectId: string) => (await s.db.get<{ id: string }>('SELECT id FROM episodes WHERE project_id = ?', projectId))!.id;
const SCENE = { id: 's1', heading: 'INT. STUDIO - DAY', location: 'Studio', timeOfDay: 'day', lines: [{ id: 'l1', kind: 'action', text: 'A client writes.' }] };

async function setup(t: any) {
  const s = await startTestServer(t);
  const tree = await makeTree(s);
  const admin = await makeUser(s, { systemAdmin: true });
  const adminToken = await login(s, admin);
  const producer = await member(s, 'producer', tree);
  const create = (body: Record<string, unknown>, token = adminToken) => s.call('POST', BASE, { token, body });
  return { s, tree, admin, adminToken, producer, create };
}

async function newClient(s: TestServer, adminToken: string, body: Record<string, unknown>) {
  const r = await s.call('POST', BASE, { token: adminToken, body: { name: 'Integration', ...body } });
  assert.equal(r.status, 201, r.text);
  return { id: r.body.client.id as string, secret: r.body.clientSecret as string, client: r.body.client };
}

async function tokenOf(s: TestServer, clientId: string, secret: string): Promise<string> {
  const r = await s.call('POST', '/api/oauth/token', { body: { grant_type: 'client_credentials', client_id: clientId, client_secret: secret } });
  assert.equal(r.status, 200, r.text);
  return r.body.access_token;
}

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

test('every API client route: 401 without a session, 403 for non-administrators and for API clients, success for a system administrator', async (t) => {
  const { s, tree, adminToken, producer, create } = await setup(t);
  const owner = await member(s, 'org_owner', tree);
  const made = await newClient(s, adminToken, { organizationId: tree.organizationId, permissions: ['script:read'] });
  const clientToken = await tokenOf(s, made.id, made.secret);
  const body = { name: 'X', organizationId: tree.organizationId, permissions: ['script:read'] };
  const routes: Route[] = [
    ['GET', BASE], ['POST', BASE, body], ['GET', `${BASE}/${made.id}`], ['POST', `${BASE}/${made.id}/rotate`], ['POST', `${BASE}/${made.id}/revoke`],
  ];
  await runScenarios(s, matrix(routes, [
    { as: 'no session', status: 401, code: 'unauthenticated' },
    { as: 'producer', token: producer.token, status: 403, code: 'permission_denied' },
    { as: 'org_owner', token: owner.token, status: 403, code: 'permission_denied' },
    { as: 'API client', token: clientToken, status: 403, code: 'permission_denied' },
  ]));
  // success, in an order that keeps the client usable until the end
  assert.equal((await s.call('GET', BASE, { token: adminToken })).status, 200);
  assert.equal((await create(body)).status, 201);
  assert.equal((await s.call('GET', `${BASE}/${made.id}`, { token: adminToken })).status, 200);
  assert.equal((await s.call('POST', `${BASE}/${made.id}/rotate`, { token: adminToken })).status, 200);
  const revoked = await s.call('POST', `${BASE}/${made.id}/revoke`, { token: adminToken });
  assert.equal(revoked.status, 200);
  assert.equal(revoked.body.status, 'revoked');
  assert.equal((await s.call('GET', `${BASE}/apc_none`, { token: adminToken })).status, 404);
  const rotateRevoked = await s.call('POST', `${BASE}/${made.id}/rotate`, { token: adminToken });
  assert.equal(rotateRevoked.status, 409);
  assert.equal(rotateRevoked.body.error.code, 'api_client_revoked');
});

test('create refuses unknown, system and too-wide permissions (422 naming them) and bindings outside the organization', async (t) => {
  const { s, tree, adminToken, create } = await setup(t);
  const other = await makeTree(s);
  const unknown = await create({ name: 'U', organizationId: tree.organizationId, permissions: ['script:read', 'script:burn'] });
  assert.equal(unknown.status, 422, unknown.text);
  assert.equal(unknown.body.error.code, 'validation_failed');
  assert.deepEqual(unknown.body.error.details.notAllowed, ['script:burn']);
  assert.match(unknown.body.error.details.fields.permissions, /script:burn/);
  const system = await create({ name: 'S', organizationId: tree.organizationId, permissions: ['system:settings:read', 'system:settings:*', 'usage:view'] });
  assert.equal(system.status, 422);
  assert.deepEqual(system.body.error.details.notAllowed, ['system:settings:read', 'system:settings:*']);
  // audit:view is a person's reach (from memberships): a client could hold it but never use it.
  const audit = await create({ name: 'A', organizationId: tree.organizationId, permissions: ['audit:view', 'script:read'] });
  assert.deepEqual([audit.status, audit.body.error.details.notAllowed], [422, ['audit:view']]);
  assert.equal((await create({ name: 'E', organizationId: tree.organizationId, permissions: [] })).status, 422);

  const bad: Array<[Record<string, unknown>, string]> = [
    [{ organizationId: 'org_none' }, 'organizationId'],
    [{ organizationId: tree.organizationId, workspaceId: other.workspaceId }, 'workspaceId'],
    [{ organizationId: tree.organizationId, projectId: other.projectId }, 'projectId'],
    [{ organizationId: other.organizationId, workspaceId: other.workspaceId, projectId: tree.projectId }, 'projectId'],
  ];
  const sameOrgWs = (await s.call('POST', `/api/organizations/${tree.organizationId}/workspaces`, { token: adminToken, body: { name: 'Second' } })).body;
  bad.push([{ organizationId: tree.organizationId, workspaceId: sameOrgWs.id, projectId: tree.projectId }, 'projectId']);
  for (const [binding, field] of bad) {
    const r = await create({ name: 'B', permissions: ['script:read'], ...binding });
    assert.equal(r.status, 422, JSON.stringify(binding));
    assert.ok(r.body.error.details.fields[field], `${field}: ${r.text}`);
  }
  assert.equal((await s.db.get<{ n: number }>('SELECT count(*) AS n FROM api_clients'))!.n, 0, 'nothing created');

  // A project binding fills in the workspace; permissions come back in canonical order, once each.
  const ok = await create({ name: 'P', organizationId: tree.organizationId, projectId: tree.projectId, permissions: ['script:edit', 'script:read', 'script:read'] });
  assert.equal(ok.status, 201, ok.text);
  assert.equal(ok.body.client.workspaceId, tree.workspaceId);
  assert.deepEqual(ok.body.client.permissions, ['script:read', 'script:edit']);

  // No wider than the creator: a holder of system:settings:* who is a writer in the workspace may not grant billing:manage.
  const writer = await member(s, 'writer', tree);
  const base = createContext({
    db: s.db, config: s.config, log: s.log, memberships: await membershipsOfUser(s.db, writer.user.id),
    actor: { type: 'user', userId: writer.user.id, name: writer.user.name, email: writer.user.email, isSystemAdmin: false, sessionId: null, sessionKind: null },
  });
  const ctx = { ...base, permissions: ['system:settings:*' as const] };
  const input = { name: 'W', organizationId: tree.organizationId, workspaceId: tree.workspaceId, permissions: ['script:read', 'script:edit', 'billing:manage', 'queue:manage'] };
  await assert.rejects(async () => await createApiClient(ctx, input), (e: unknown) => {
    assert.ok(e instanceof AppError);
    assert.equal(e.status, 422);
    assert.deepEqual(e.details!.notAllowed, ['billing:manage', 'queue:manage']);
    return true;
  });
  // at the organization level the writer's workspace role does not count
  await assert.rejects(async () => await createApiClient(ctx, { ...input, workspaceId: null, permissions: ['script:read'] }), /script:read/);
  const mine = await createApiClient(ctx, { ...input, permissions: ['script:edit', 'script:read'] });
  assert.equal(mine.client.created_by, writer.user.id);
  // without system:settings:* the same user may not create clients at all
  await assert.rejects(async () => await createApiClient(base, { ...input, permissions: ['script:read'] }), (e: unknown) => e instanceof AppError && e.status === 403);
});

test('the client secret is shown once and stored hashed; list and detail show only its hint and lastUsedAt', async (t) => {
  const { s, tree, adminToken } = await setup(t);
  const made = await newClient(s, adminToken, { organizationId: tree.organizationId, projectId: tree.projectId, permissions: ['script:read'] });
  assert.match(made.secret, /^svccs_[A-Za-z0-9_-]{40,}$/);
  assert.equal(made.client.secretHint, `\u2026${made.secret.slice(-4)}`);
  assert.equal(made.client.lastUsedAt, null);
  assert.equal(made.client.tokenUrl, '/api/oauth/token');
  const row = (await s.db.get<{ secret_hash: string }>('SELECT secret_hash FROM api_clients WHERE id = ?', made.id))!;
  assert.notEqual(row.secret_hash, made.secret);
  assert.equal(row.secret_hash.length, 64);
  const list = await s.call('GET', `${BASE}?organizationId=${tree.organizationId}&status=active`, { token: adminToken });
  const one = await s.call('GET', `${BASE}/${made.id}`, { token: adminToken });
  for (const r of [list, one]) {
    assert.equal(r.status, 200);
    assert.ok(!r.text.includes(made.secret), 'no secret');
    assert.ok(!r.text.includes(row.secret_hash), 'no secret hash');
    assert.ok(!/clientSecret|secretHash|secret_hash/.test(r.text));
  }
  assert.equal(list.body.items.length, 1);
  assert.equal(list.body.pagination.total, 1);
  assert.equal(one.body.secretHint, made.client.secretHint);
  assert.equal((await s.call('GET', `${BASE}?status=revoked`, { token: adminToken })).body.items.length, 0);
  assert.equal((await s.call('GET', `${BASE}?organizationId=${(await makeTree(s)).organizationId}`, { token: adminToken })).body.items.length, 0);
});

test('token endpoint: client credentials in JSON, form or HTTP Basic; wrong credentials 401 invalid_client in the contract error body', async (t) => {
  const { s, tree, adminToken } = await setup(t);
  const made = await newClient(s, adminToken, { organizationId: tree.organizationId, projectId: tree.projectId, permissions: ['task:view', 'script:read'] });
  const asJson = await s.call('POST', '/api/oauth/token', { body: { grant_type: 'client_credentials', client_id: made.id, client_secret: made.secret } });
  assert.equal(asJson.status, 200, asJson.text);
  assert.deepEqual(Object.keys(asJson.body).sort(), ['access_token', 'expires_in', 'scope', 'token_type']);
  assert.equal(asJson.body.token_type, 'Bearer');
  assert.equal(asJson.body.expires_in, 3600);
  assert.equal(asJson.body.scope, 'script:read task:view');
  assert.equal(asJson.headers.get('cache-control'), 'no-store');
  const viaBasic = await s.call('POST', '/api/oauth/token', { headers: { authorization: basic(made.id, made.secret) }, body: { grant_type: 'client_credentials' } });
  assert.equal(viaBasic.status, 200, viaBasic.text);
  const form = await s.call('POST', '/api/oauth/token', {
    headers: { authorization: basic(made.id, made.secret), 'content-type': 'application/x-www-form-urlencoded' }, raw: 'grant_type=client_credentials',
  });
  assert.equal(form.status, 200, form.text);
  assert.notEqual(asJson.body.access_token, viaBasic.body.access_token);
  const stored = (await s.db.all<{ token_hash: string }>('SELECT token_hash FROM api_client_tokens WHERE client_id = ?', made.id)).map((r) => r.token_hash);
  assert.equal(stored.length, 3);
  assert.ok(!stored.includes(asJson.body.access_token), 'only hashes stored');
  for (const token of [asJson.body.access_token, viaBasic.body.access_token, form.body.access_token]) {
    assert.equal((await s.call('GET', `/api/production/script/episodes/${await pilotOf(s, tree.projectId)}`, { token })).status, 200);
  }

  const wrong = await s.call('POST', '/api/oauth/token', { body: { grant_type: 'client_credentials', client_id: made.id, client_secret: `${made.secret}x` } });
  assert.equal(wrong.status, 401);
  assert.equal(wrong.body.error.code, 'invalid_client');
  assert.equal(typeof wrong.body.error.message, 'string');
  const wrongBasic = await s.call('POST', '/api/oauth/token', { headers: { authorization: basic(made.id, 'nope') }, body: { grant_type: 'client_credentials' } });
  assert.equal(wrongBasic.status, 401);
  assert.equal(wrongBasic.body.error.code, 'invalid_client');
  assert.match(wrongBasic.headers.get('www-authenticate') ?? '', /^Basic/);
  const unknown = await s.call('POST', '/api/oauth/token', { body: { grant_type: 'client_credentials', client_id: 'apc_none', client_secret: made.secret } });
  assert.equal(unknown.status, 401);
  assert.equal(unknown.body.error.code, 'invalid_client');
  const grant = await s.call('POST', '/api/oauth/token', { body: { grant_type: 'password', client_id: made.id, client_secret: made.secret } });
  assert.equal(grant.status, 400);
  assert.equal(grant.body.error.code, 'unsupported_grant_type');
  assert.equal((await s.call('POST', '/api/oauth/token', { body: { client_id: made.id, client_secret: made.secret } })).body.error.code, 'invalid_request');
  const both = await s.call('POST', '/api/oauth/token', { headers: { authorization: basic(made.id, made.secret) }, body: { grant_type: 'client_credentials', client_id: made.id, client_secret: made.secret } });
  assert.equal(both.status, 400);

  // an expired token is no credential
  await s.db.run('UPDATE api_client_tokens SET expires_at = ? WHERE client_id = ?', '2000-01-01T00:00:00.000Z', made.id);
  const expired = await s.call('GET', `/api/production/script/episodes/${await pilotOf(s, tree.projectId)}`, { token: asJson.body.access_token });
  assert.equal(expired.status, 401);
  assert.equal(expired.body.error.code, 'unauthenticated');
});

test('acceptance: a script:read client bound to a project reads scripts, gets 403 on writes and on other scopes; after revocation its token and secret are 401', async (t) => {
  const { s, tree, adminToken, producer } = await setup(t);
  const episodeId = await pilotOf(s, tree.projectId);
  const script = `/api/production/script/episodes/${episodeId}`;
  assert.equal((await s.call('PUT', script, { token: producer.token, body: { baseRevision: 0, scenes: [SCENE] } })).status, 200);
  const made = await newClient(s, adminToken, { name: 'Reader', organizationId: tree.organizationId, projectId: tree.projectId, permissions: ['script:read'] });
  const token = await tokenOf(s, made.id, made.secret);

  const read = await s.call('GET', script, { token });
  assert.equal(read.status, 200, read.text);
  assert.equal(read.body.revision, 1);
  assert.equal((await s.call('GET', `${script}/revisions`, { token })).status, 200);
  assert.equal((await s.call('GET', '/api/production/bible', { token })).status, 200);
  for (const [method, path, body] of [
    ['PUT', script, { baseRevision: 1, scenes: [] }], ['POST', `${script}/revisions/1/restore`, { baseRevision: 1 }], ['PUT', '/api/production/bible', { baseRevision: 0, entries: [] }],
  ] as const) {
    const r = await s.call(method, path, { token, body });
    assert.equal(r.status, 403, `${method} ${path}: ${r.text}`);
    assert.equal(r.body.error.code, 'permission_denied');
  }
  assert.equal((await s.call('GET', script, { token: producer.token })).body.revision, 1, 'nothing written');

  // another project's data: its episode is 404 here, naming the project is 403
  const otherProject = (await s.call('POST', `/api/workspaces/${tree.workspaceId}/projects`, { token: producer.token, body: { name: 'Other' } })).body;
  const foreign = `/api/production/script/episodes/${await pilotOf(s, otherProject.id)}`;
  assert.equal((await s.call('GET', foreign, { token })).status, 404);
  const outsideBinding: Array<Record<string, string>> = [{ 'svc-scope': `project=${otherProject.id}` }, { 'svc-scope': `workspace=${tree.workspaceId}` }, { 'svc-scope': `organization=${tree.organizationId}` }];
  for (const headers of outsideBinding) {
    const r = await s.call('GET', foreign, { token, headers });
    assert.equal(r.status, 403, JSON.stringify(headers));
    assert.equal(r.body.error.code, 'scope_forbidden');
  }
  assert.equal((await s.call('GET', script, { token, headers: { 'svc-scope': `project=${tree.projectId}` } })).status, 200, 'its own project by name');
  assert.equal((await s.call('GET', `/api/projects/${otherProject.id}`, { token })).status, 403);
  // routes of a person (no permission), of organization roles, of the system administrator and of browser sessions refuse clients
  for (const [method, path, code] of [
    ['GET', '/api/context', 'permission_denied'], ['GET', `/api/projects/${tree.projectId}`, 'permission_denied'],
    ['GET', '/api/system/backups', 'permission_denied'], ['GET', BASE, 'permission_denied'], ['GET', '/api/auth/mfa', 'browser_session_required'],
  ] as const) {
    const r = await s.call(method, path, { token });
    assert.equal(r.status, 403, path);
    assert.equal(r.body.error.code, code, path);
  }
  const ws = await s.call('POST', `/api/organizations/${tree.organizationId}/workspaces`, { token, body: { name: 'Nope' } });
  assert.equal(ws.status, 403, ws.text);

  const revoked = await s.call('POST', `${BASE}/${made.id}/revoke`, { token: adminToken });
  assert.equal(revoked.status, 200);
  assert.equal((await s.db.get<{ n: number }>('SELECT count(*) AS n FROM api_client_tokens WHERE client_id = ?', made.id))!.n, 0);
  const after = await s.call('GET', script, { token });
  assert.equal(after.status, 401);
  assert.equal(after.body.error.code, 'unauthenticated');
  const exchange = await s.call('POST', '/api/oauth/token', { body: { grant_type: 'client_credentials', client_id: made.id, client_secret: made.secret } });
  assert.equal(exchange.status, 401);
  assert.equal(exchange.body.error.code, 'invalid_client');
});

test('an organization-bound client names a workspace or project with Svc-Scope, only inside its organization', async (t) => {
  const { s, tree, adminToken } = await setup(t);
  const other: Tree = await makeTree(s);
  const made = await newClient(s, adminToken, { organizationId: tree.organizationId, permissions: ['script:read'] });
  const token = await tokenOf(s, made.id, made.secret);
  const script = `/api/production/script/episodes/${await pilotOf(s, tree.projectId)}`;
  const noProject = await s.call('GET', script, { token });
  assert.equal(noProject.status, 403);
  assert.equal(noProject.body.error.code, 'scope_forbidden');
  assert.match(noProject.body.error.message, /Svc-Scope/);
  assert.equal((await s.call('GET', script, { token, headers: { 'svc-scope': `project=${tree.projectId}` } })).status, 200);
  assert.equal((await s.call('GET', script, { token, headers: { 'svc-scope': `project=${tree.projectId}; workspace=${tree.workspaceId}` } })).status, 200);
  const outside: Array<Record<string, string>> = [{ 'svc-scope': `project=${other.projectId}` }, { 'svc-scope': `project=${tree.projectId}; workspace=${other.workspaceId}` }, { 'svc-scope': 'project=prj_none' }];
  for (const headers of outside) {
    const r = await s.call('GET', script, { token, headers });
    assert.equal(r.status, 403, JSON.stringify(headers));
    assert.equal(r.body.error.code, 'scope_forbidden');
  }
  // a workspace-bound client: projects of its workspace only
  const sameOrgWs = (await s.call('POST', `/api/organizations/${tree.organizationId}/workspaces`, { token: adminToken, body: { name: 'Second' } })).body;
  const wsClient = await newClient(s, adminToken, { organizationId: tree.organizationId, workspaceId: sameOrgWs.id, permissions: ['script:read'] });
  const wsToken = await tokenOf(s, wsClient.id, wsClient.secret);
  assert.equal((await s.call('GET', script, { token: wsToken, headers: { 'svc-scope': `project=${tree.projectId}` } })).status, 403);
});

test('rotation: the old secret and old tokens are 401 at once, the new secret works; last use is recorded; audit rows name the client and hold no secret', async (t) => {
  const { s, tree, adminToken } = await setup(t);
  const script = `/api/production/script/episodes/${await pilotOf(s, tree.projectId)}`;
  const made = await newClient(s, adminToken, { name: 'Writer bot', organizationId: tree.organizationId, projectId: tree.projectId, permissions: ['script:read', 'script:edit'] });
  const oldToken = await tokenOf(s, made.id, made.secret);
  const lastUsed = async () => (await s.db.get<{ last_used_at: string | null }>('SELECT last_used_at FROM api_clients WHERE id = ?', made.id))!.last_used_at;
  assert.ok(await lastUsed(), 'the token exchange counts as use');
  // a request after more than a minute writes last use again
  await s.db.run('UPDATE api_clients SET last_used_at = ? WHERE id = ?', '2000-01-01T00:00:00.000Z', made.id);
  const saved = await s.call('PUT', script, { token: oldToken, body: { baseRevision: 0, scenes: [SCENE] } });
  assert.equal(saved.status, 200, saved.text);
  assert.ok((await lastUsed())! > '2000-01-01T00:00:00.000Z');
  const detail = await s.call('GET', `${BASE}/${made.id}`, { token: adminToken });
  assert.equal(detail.body.lastUsedAt, await lastUsed());

  const rotated = await s.call('POST', `${BASE}/${made.id}/rotate`, { token: adminToken });
  assert.equal(rotated.status, 200);
  const newSecret: string = rotated.body.clientSecret;
  assert.notEqual(newSecret, made.secret);
  assert.equal(rotated.body.client.secretHint, `\u2026${newSecret.slice(-4)}`);
  assert.ok(rotated.body.client.rotatedAt);
  assert.equal((await s.call('GET', script, { token: oldToken })).status, 401, 'old token');
  const oldSecret = await s.call('POST', '/api/oauth/token', { body: { grant_type: 'client_credentials', client_id: made.id, client_secret: made.secret } });
  assert.equal(oldSecret.status, 401, 'old secret');
  const newToken = await tokenOf(s, made.id, newSecret);
  assert.equal((await s.call('GET', script, { token: newToken })).status, 200);
  const outside = await s.call('GET', '/api/production/bible', { token: newToken, headers: { 'svc-scope': `project=${(await makeTree(s)).projectId}` } });
  assert.equal(outside.status, 403, 'audited as access.denied');
  await s.call('POST', `${BASE}/${made.id}/revoke`, { token: adminToken });

  const rows = await s.db.all<Record<string, string | null>>('SELECT * FROM audit_log WHERE target_id = ? OR actor_name LIKE ? ORDER BY seq', made.id, `%${made.id}%`);
  const actions = rows.map((r) => r.action);
  for (const a of ['api_client.created', 'api_client.token_issued', 'script.saved', 'api_client.rotated', 'api_client.token_refused', 'api_client.revoked', 'access.denied']) {
    assert.ok(actions.includes(a), `${a} in ${actions.join(', ')}`);
  }
  const byClient = rows.filter((r) => r.action === 'script.saved' || r.action === 'api_client.token_issued' || r.action === 'access.denied');
  for (const r of byClient) {
    assert.equal(r.actor_type, 'api_client', r.action!);
    assert.equal(r.actor_user_id, null);
    assert.equal(r.actor_name, `Writer bot (${made.id})`);
  }
  const created = rows.find((r) => r.action === 'api_client.created')!;
  assert.equal(created.actor_type, 'user');
  assert.equal(created.organization_id, tree.organizationId);
  assert.equal(created.project_id, tree.projectId);
  assert.deepEqual(JSON.parse(created.metadata!).permissions, ['script:read', 'script:edit']);
  const everything = JSON.stringify(await s.db.all('SELECT * FROM audit_log'));
  for (const secret of [made.secret, newSecret, oldToken, newToken]) assert.ok(!everything.includes(secret), 'no secret or token in the audit log');
  const hashes = (await s.db.all<{ token_hash: string }>('SELECT token_hash FROM api_client_tokens')).map((r) => r.token_hash);
  for (const h of hashes) assert.ok(!everything.includes(h));
});

test('token endpoint: failed exchanges are limited per client id like logins (429 with Retry-After, even for the right secret, until the window passes); answers are no-store', async (t) => {
  const s = await startTestServer(t, { SVC_LOGIN_MAX_FAILURES_PER_EMAIL: '3', SVC_LOGIN_MAX_FAILURES_PER_ADDRESS: '1000' });
  const tree = await makeTree(s);
  const adminToken = await login(s, await makeUser(s, { systemAdmin: true }));
  const a = await newClient(s, adminToken, { organizationId: tree.organizationId, permissions: ['script:read'] });
  const b = await newClient(s, adminToken, { organizationId: tree.organizationId, permissions: ['script:read'] });
  const exchange = (id: string, secret: string) => s.call('POST', '/api/oauth/token', { body: { grant_type: 'client_credentials', client_id: id, client_secret: secret } });
  const ok = await exchange(a.id, a.secret);
  assert.equal(ok.status, 200, ok.text);
  assert.equal(ok.headers.get('cache-control'), 'no-store');
  for (let i = 0; i < 3; i++) assert.equal((await exchange(a.id, 'svccs_wrong')).status, 401);
  const limited = await exchange(a.id, a.secret);
  assert.deepEqual([limited.status, limited.body.error.code], [429, 'rate_limited']);
  assert.ok(Number(limited.headers.get('retry-after')) > 0);
  assert.equal((await exchange(b.id, b.secret)).status, 200, 'another client is not limited');
  const refused = (await s.db.get<{ n: number }>("SELECT count(*) AS n FROM audit_log WHERE action = 'api_client.token_refused' AND target_id = ?", a.id))!.n;
  assert.equal(refused, 3, 'limited attempts write no audit rows');
});
