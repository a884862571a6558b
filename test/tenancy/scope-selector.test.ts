// The per-request scope selector (Svc-Scope): the same rule as PATCH /api/context for people and the
// binding for API clients, for one request only (the session's stored scope never moves), so one
// token works in two projects at once; refusals are 403 scope_forbidden audited as access.denied; the
// x-*-id development headers are honoured for nobody, API clients included, without SVC_ALLOW_DEV_CONTEXT=1.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { grant, login, makeProject, makeTree, makeUser, member } from '../helpers/factories.ts';

const SCOPE = 'svc-scope';
const bible = (name: string) => ({ baseRevision: 0, entries: [{ kind: 'character', name }] });
const denied = async (s: TestServer, targetId: string) => await s.db.all<Record<string, string>>(
  "SELECT * FROM audit_log WHERE action = 'access.denied' AND target_id = ?", targetId,
);

async function clientToken(s: TestServer, body: Record<string, unknown>): Promise<string> {
  const admin = await makeUser(s, { systemAdmin: true });
  const made = await s.call('POST', '/api/system/api-clients', { token: await login(s, admin), body: { name: 'Bot', ...body } });
  assert.equal(made.status, 201, made.text);
  const r = await s.call('POST', '/api/oauth/token', { body: { grant_type: 'client_credentials', client_id: made.body.client.id, client_secret: made.body.clientSecret } });
  assert.equal(r.status, 200, r.text);
  return r.body.access_token;
}

test('one session token works in two projects at once with Svc-Scope; the stored scope never moves', async (t) => {
  const s = await startTestServer(t);
  const { token, user, tree } = await member(s, 'producer');
  const second = await makeProject(s, tree.workspaceId);
  const before = await s.call('GET', '/api/context', { token });
  assert.equal(before.body.project.id, tree.projectId);
  const sessionRow = async () => await s.db.get<Record<string, string>>('SELECT organization_id, workspace_id, project_id FROM sessions WHERE user_id = ?', user.id);
  const rowBefore = await sessionRow();

  const [a, b] = await Promise.all([
    s.call('GET', '/api/context', { token, headers: { [SCOPE]: `project=${tree.projectId}` } }),
    s.call('GET', '/api/context', { token, headers: { [SCOPE]: `project=${second.id}` } }),
  ]);
  assert.equal(a.status, 200, a.text);
  assert.equal(b.status, 200, b.text);
  assert.equal(a.body.project.id, tree.projectId);
  assert.equal(b.body.project.id, second.id);
  assert.equal(b.body.workspace.id, tree.workspaceId);

  // writes land in the project each request names, concurrently, on the same token
  const [wa, wb] = await Promise.all([
    s.call('PUT', '/api/production/bible', { token, headers: { [SCOPE]: `project=${tree.projectId}` }, body: bible('Mei') }),
    s.call('PUT', '/api/production/bible', { token, headers: { [SCOPE]: `workspace=${tree.workspaceId}; project=${second.id}` }, body: bible('Jun') }),
  ]);
  assert.equal(wa.status, 200, wa.text);
  assert.equal(wb.status, 200, wb.text);
  const read = async (projectId: string) => (await s.call('GET', '/api/production/bible', { token, headers: { [SCOPE]: `project=${projectId}` } })).body;
  assert.deepEqual((await read(tree.projectId)).entries.map((e: any) => e.name), ['Mei']);
  assert.deepEqual((await read(second.id)).entries.map((e: any) => e.name), ['Jun']);

  const after = await s.call('GET', '/api/context', { token });
  assert.equal(after.body.project.id, tree.projectId, 'the session still acts in its own project');
  assert.deepEqual(await sessionRow(), rowBefore, 'nothing stored');
  // an organization or workspace alone is filled with the first visible workspace and project, like PATCH /api/context
  const org = await s.call('GET', '/api/context', { token, headers: { [SCOPE]: `organization=${tree.organizationId}` } });
  assert.equal(org.status, 200);
  assert.equal(org.body.workspace.id, tree.workspaceId);
  assert.ok(org.body.project, 'a project is filled in');

  // a browser (cookie) session takes the same selector
  const browser = await s.call('POST', '/api/auth/login', { body: { email: user.email, password: user.password }, headers: { origin: s.url } });
  const jar = browser.headers.get('set-cookie')!.split(';')[0];
  const viaCookie = await s.call('GET', '/api/context', { headers: { cookie: jar, [SCOPE]: `project=${second.id}` } });
  assert.equal(viaCookie.status, 200, viaCookie.text);
  assert.equal(viaCookie.body.project.id, second.id);
  assert.equal((await s.call('GET', '/api/context', { headers: { cookie: jar } })).body.project.id, tree.projectId);
});

test('Svc-Scope is checked like PATCH /api/context: another tenant, unknown or inconsistent ids are 403 scope_forbidden and audited', async (t) => {
  const s = await startTestServer(t);
  const { token, user, tree } = await member(s, 'producer');
  const other = await makeTree(s);
  assert.equal((await s.call('GET', '/api/context', { headers: { [SCOPE]: `project=${tree.projectId}` } })).status, 401, 'no credential');
  for (const value of [`project=${other.projectId}`, `workspace=${other.workspaceId}`, `organization=${other.organizationId}`, 'project=prj_none',
    `project=${tree.projectId}; workspace=${other.workspaceId}`, `project=${tree.projectId}; organization=${other.organizationId}`]) {
    for (const [method, path, body] of [['GET', '/api/context'], ['GET', '/api/production/bible'], ['PUT', '/api/production/bible', bible('X')]] as const) {
      const r = await s.call(method, path, { token, headers: { [SCOPE]: value }, body });
      assert.equal(r.status, 403, `${value} ${method} ${path}: ${r.text}`);
      assert.equal(r.body.error.code, 'scope_forbidden', value);
    }
    // PATCH /api/context answers the same ids the same way
    const patch: Record<string, string> = {};
    for (const pair of value.split(';')) {
      const [k, v] = pair.trim().split('=');
      patch[`${k}Id`] = v;
    }
    const moved = await s.call('PATCH', '/api/context', { token, body: patch });
    assert.equal(moved.status, 403, `PATCH ${JSON.stringify(patch)}`);
    assert.equal(moved.body.error.code, 'scope_forbidden');
  }
  assert.equal((await s.db.get<{ n: number }>('SELECT count(*) AS n FROM bible_revisions'))!.n, 0, 'nothing written');

  const probes = await denied(s, other.projectId);
  assert.ok(probes.length >= 3, `each refused selector audited: ${probes.length}`);
  const viaHeader = probes.find((r) => JSON.parse(r.metadata).via === 'Svc-Scope')!;
  assert.ok(viaHeader, 'the audit row says the scope came from the Svc-Scope header');
  assert.equal(viaHeader.actor_user_id, user.id);
  assert.equal(viaHeader.target_type, 'project');
  assert.equal(viaHeader.result, 'denied');
  assert.ok(probes.some((r) => JSON.parse(r.metadata).via === 'PATCH /api/context'), 'a refused PATCH /api/context is audited too');
  assert.ok((await denied(s, other.organizationId)).some((r) => r.target_type === 'organization'));

  // a role is the one held in the selected scope: a project_viewer elsewhere cannot write there
  const viewerProject = await makeTree(s);
  await grant(s, user.id, 'project', viewerProject.projectId, 'project_viewer');
  const view = await s.call('GET', '/api/production/bible', { token, headers: { [SCOPE]: `project=${viewerProject.projectId}` } });
  assert.equal(view.status, 200, view.text);
  const write = await s.call('PUT', '/api/production/bible', { token, headers: { [SCOPE]: `project=${viewerProject.projectId}` }, body: bible('Y') });
  assert.equal(write.status, 403);
  assert.equal(write.body.error.code, 'permission_denied');
});

test('a malformed Svc-Scope is 422 validation_failed naming the header; ids in the path win over it', async (t) => {
  const s = await startTestServer(t);
  const { token, tree } = await member(s, 'producer');
  for (const value of ['', 'prj_1', 'project', 'project=', 'team=t_1', `project=${tree.projectId}; project=${tree.projectId}`, 'project=a b', `project=${'x'.repeat(65)}`,
    `project=${tree.projectId};`, 'project=p'.padEnd(400, 'p')]) {
    const r = await s.call('GET', '/api/context', { token, headers: { [SCOPE]: value } });
    assert.equal(r.status, 422, `${JSON.stringify(value)}: ${r.text}`);
    assert.equal(r.body.error.code, 'validation_failed');
    assert.ok(r.body.error.details.fields['Svc-Scope'], JSON.stringify(r.body));
  }
  const other = await makeProject(s, tree.workspaceId);
  const byPath = await s.call('GET', `/api/projects/${tree.projectId}`, { token, headers: { [SCOPE]: `project=${other.id}` } });
  assert.equal(byPath.status, 200, byPath.text);
  assert.equal(byPath.body.id, tree.projectId);
});

test('API clients use Svc-Scope inside their binding; the x-*-id headers do nothing for them without SVC_ALLOW_DEV_CONTEXT=1', async (t) => {
  const s = await startTestServer(t);
  const tree = await makeTree(s);
  const second = await makeProject(s, tree.workspaceId);
  const other = await makeTree(s);
  const token = await clientToken(s, { organizationId: tree.organizationId, permissions: ['script:read', 'asset:edit'] });

  const none = await s.call('GET', '/api/production/bible', { token });
  assert.equal(none.status, 403);
  assert.equal(none.body.error.code, 'scope_forbidden');
  assert.match(none.body.error.message, /Svc-Scope/);
  // the development headers are no scope for a client any more
  const dev = await s.call('GET', '/api/production/bible', { token, headers: { 'x-project-id': tree.projectId } });
  assert.equal(dev.status, 403, dev.text);
  assert.equal(dev.body.error.code, 'scope_forbidden');
  const devOutside = await s.call('GET', '/api/production/bible', { token, headers: { 'x-project-id': tree.projectId, 'x-organization-id': other.organizationId } });
  assert.equal(devOutside.status, 403);

  const [a, b] = await Promise.all([
    s.call('PUT', '/api/production/bible', { token, headers: { [SCOPE]: `project=${tree.projectId}` }, body: bible('Mei') }),
    s.call('PUT', '/api/production/bible', { token, headers: { [SCOPE]: `project=${second.id}` }, body: bible('Jun') }),
  ]);
  assert.equal(a.status, 200, a.text);
  assert.equal(b.status, 200, b.text);
  const read = async (projectId: string) => (await s.call('GET', '/api/production/bible', { token, headers: { [SCOPE]: `project=${projectId}` } })).body.entries.map((e: any) => e.name);
  assert.deepEqual(await read(tree.projectId), ['Mei']);
  assert.deepEqual(await read(second.id), ['Jun']);

  for (const value of [`project=${other.projectId}`, `workspace=${other.workspaceId}`, 'project=prj_none', `project=${tree.projectId}; workspace=${other.workspaceId}`]) {
    const r = await s.call('GET', '/api/production/bible', { token, headers: { [SCOPE]: value } });
    assert.equal(r.status, 403, value);
    assert.equal(r.body.error.code, 'scope_forbidden');
  }
  assert.ok((await denied(s, other.projectId)).some((r) => r.actor_type === 'api_client' && JSON.parse(r.metadata).via === 'Svc-Scope'));

  // a project-bound client cannot widen itself
  const bound = await clientToken(s, { organizationId: tree.organizationId, projectId: tree.projectId, permissions: ['script:read'] });
  assert.equal((await s.call('GET', '/api/production/bible', { token: bound, headers: { [SCOPE]: `project=${tree.projectId}` } })).status, 200);
  for (const value of [`project=${second.id}`, `organization=${tree.organizationId}`, `workspace=${tree.workspaceId}`]) {
    const r = await s.call('GET', '/api/production/bible', { token: bound, headers: { [SCOPE]: value } });
    assert.equal(r.status, 403, value);
    assert.equal(r.body.error.code, 'scope_forbidden');
  }
});

test('with SVC_ALLOW_DEV_CONTEXT=1 the x-*-id headers are honoured for every caller, API clients inside their binding', async (t) => {
  const s = await startTestServer(t, { SVC_ALLOW_DEV_CONTEXT: '1' });
  const tree = await makeTree(s);
  const other = await makeTree(s);
  const token = await clientToken(s, { organizationId: tree.organizationId, permissions: ['script:read'] });
  assert.equal((await s.call('GET', '/api/production/bible', { token, headers: { 'x-project-id': tree.projectId } })).status, 200);
  const outside = await s.call('GET', '/api/production/bible', { token, headers: { 'x-project-id': other.projectId } });
  assert.equal(outside.status, 403);
  assert.equal(outside.body.error.code, 'scope_forbidden');
  // Svc-Scope wins over them
  const both = await s.call('GET', '/api/production/bible', { token, headers: { 'x-project-id': other.projectId, [SCOPE]: `project=${tree.projectId}` } });
  assert.equal(both.status, 200, both.text);
});

test('the OpenAPI document declares Svc-Scope once and references it from every authenticated operation', async (t) => {
  const s = await startTestServer(t);
  const doc = (await s.call('GET', '/api/openapi.json')).body;
  const param = doc.components.parameters.SvcScope;
  assert.equal(param.in, 'header');
  assert.equal(param.name, 'Svc-Scope');
  assert.match(param.description, /this request only/);
  const re = new RegExp(param.schema.pattern);
  assert.ok(re.test('project=prj_1') && re.test('organization=org_1; workspace=wsp_2') && !re.test('prj_1'));
  for (const route of s.app.router.routes) {
    const op = doc.paths[route.pattern.replace(/:(\w+)/g, '{$1}')][route.method.toLowerCase()];
    const refs = (op.parameters ?? []).filter((p: any) => p.$ref === '#/components/parameters/SvcScope').length;
    assert.equal(refs, route.meta.auth === 'none' || route.meta.auth === 'directory' ? 0 : 1, route.pattern);
  }
  assert.match(doc.info.description, /Svc-Scope/);
});
