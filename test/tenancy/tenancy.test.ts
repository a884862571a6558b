// Organizations, workspaces and projects: create and list, with their access tests and audit.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { login, makeProject, makeTree, makeUser, makeWorkspace, member } from '../helpers/factories.ts';

const audit = async (s: TestServer, action: string) => await s.db.all<any>('SELECT * FROM audit_log WHERE action = ? ORDER BY seq', action);

test('POST /api/organizations: 401, 403 for non-administrators, 422, 201 with an owner, audited', async (t) => {
  const s = await startTestServer(t);
  assert.equal((await s.call('POST', '/api/organizations', { body: { name: 'X' } })).status, 401);
  const owner = await member(s, 'org_owner');
  const denied = await s.call('POST', '/api/organizations', { token: owner.token, body: { name: 'X' } });
  assert.equal(denied.status, 403);
  assert.equal(denied.body.error.code, 'permission_denied');
  const admin = await makeUser(s, { systemAdmin: true });
  const token = await login(s, admin);
  const bad = await s.call('POST', '/api/organizations', { token, body: { name: '', ownerUserId: 'usr_nobody' } });
  assert.equal(bad.status, 422);
  assert.equal(bad.body.error.details.fields.name, 'must not be empty');
  const noOwner = await s.call('POST', '/api/organizations', { token, body: { name: 'Ghost', ownerUserId: 'usr_nobody' } });
  assert.equal(noOwner.status, 422);
  assert.equal((await s.db.get<any>("SELECT count(*) AS n FROM organizations WHERE name = 'Ghost'")).n, 0, 'nothing half-written');

  const u = await makeUser(s);
  const r = await s.call('POST', '/api/organizations', { token, body: { name: 'Moon Studio', ownerUserId: u.id } });
  assert.equal(r.status, 201, r.text);
  assert.match(r.body.id, /^org_/);
  assert.equal(r.body.name, 'Moon Studio');
  const ctx = await s.call('GET', '/api/context', { token: await login(s, u) });
  assert.equal(ctx.body.organization.id, r.body.id);
  assert.equal(ctx.body.roles.organization, 'org_owner');
  const rows = (await audit(s, 'organization.created')).filter((a) => a.target_id === r.body.id);
  assert.equal(rows.length, 1);
  assert.equal(rows[0].actor_user_id, admin.id);
  assert.equal(rows[0].organization_id, r.body.id);
  assert.equal((await audit(s, 'membership.created')).filter((a) => a.target_id === u.id && a.organization_id === r.body.id).length, 1);
});

test('POST /api/organizations without ownerUserId: the calling system administrator becomes org_owner and its console opens there', async (t) => {
  const s = await startTestServer(t);
  const admin = await makeUser(s, { systemAdmin: true });
  const token = await login(s, admin);
  const before = await s.call('GET', '/api/context', { token });
  assert.equal(before.body.organization, null);

  const r = await s.call('POST', '/api/organizations', { token, body: { name: 'Own Studio' } });
  assert.equal(r.status, 201, r.text);
  // The same session, at its next request: in the new organization, as its owner.
  const ctx = await s.call('GET', '/api/context', { token });
  assert.equal(ctx.body.organization?.id, r.body.id, ctx.text);
  assert.equal(ctx.body.roles.organization, 'org_owner');
  assert.deepEqual(ctx.body.memberships.map((m: any) => [m.organizationId, m.role]), [[r.body.id, 'org_owner']]);
  const members = await s.call('GET', `/api/organizations/${r.body.id}/members`, { token });
  assert.equal(members.status, 200, members.text);
  assert.deepEqual(members.body.items.map((m: any) => [m.email, m.role]), [[admin.email, 'org_owner']]);
  const [created] = (await audit(s, 'organization.created')).filter((a) => a.target_id === r.body.id);
  assert.deepEqual(JSON.parse(created.metadata), { name: 'Own Studio', ownerUserId: admin.id, ownerFrom: 'caller' });
  assert.equal((await audit(s, 'membership.created')).filter((a) => a.target_id === admin.id && a.organization_id === r.body.id).length, 1);

  // A named owner wins over the caller, who then stays outside.
  const other = await makeUser(s);
  const named = await s.call('POST', '/api/organizations', { token, body: { name: 'Their Studio', ownerUserId: other.id } });
  assert.equal(named.status, 201, named.text);
  const theirs = await s.db.all<any>("SELECT user_id, role FROM memberships WHERE level = 'organization' AND scope_id = ?", named.body.id);
  assert.deepEqual(theirs.map((m) => [m.user_id, m.role]), [[other.id, 'org_owner']]);
  const [namedAudit] = (await audit(s, 'organization.created')).filter((a) => a.target_id === named.body.id);
  assert.equal(JSON.parse(namedAudit.metadata).ownerFrom, 'ownerUserId');
});

test('GET /api/organizations lists only the caller\'s organizations; the system administrator sees all', async (t) => {
  const s = await startTestServer(t);
  const a = await member(s, 'writer');
  const b = await member(s, 'org_admin');
  const ra = await s.call('GET', '/api/organizations', { token: a.token });
  assert.deepEqual(ra.body.items.map((o: any) => o.id), [a.tree.organizationId]);
  assert.deepEqual(ra.body.pagination, { page: 1, pageSize: 50, total: 1 });
  const rb = await s.call('GET', '/api/organizations', { token: b.token });
  assert.deepEqual(rb.body.items.map((o: any) => o.id), [b.tree.organizationId]);
  const admin = await login(s, await makeUser(s, { systemAdmin: true }));
  const all = await s.call('GET', '/api/organizations?pageSize=1&page=2', { token: admin });
  assert.equal(all.body.pagination.total, 2);
  assert.equal(all.body.items.length, 1);
  assert.equal((await s.call('GET', '/api/organizations?pageSize=999', { token: admin })).body.pagination.pageSize, 200, 'pageSize clamped');
  assert.equal((await s.call('GET', '/api/organizations')).status, 401);
});

test('POST /api/organizations/:id/workspaces: owner and admin only, in their own organization', async (t) => {
  const s = await startTestServer(t);
  const tree = await makeTree(s);
  const other = await makeTree(s);
  const path = `/api/organizations/${tree.organizationId}/workspaces`;
  assert.equal((await s.call('POST', path, { body: { name: 'W' } })).status, 401);
  for (const role of ['org_member', 'producer'] as const) {
    const m = await member(s, role, tree);
    const r = await s.call('POST', path, { token: m.token, body: { name: 'W' } });
    assert.equal(r.status, 403, role);
    assert.equal(r.body.error.code, 'permission_denied');
  }
  const foreign = await member(s, 'org_owner', other);
  const cross = await s.call('POST', path, { token: foreign.token, body: { name: 'W' } });
  assert.equal(cross.status, 403);
  assert.equal(cross.body.error.code, 'scope_forbidden');
  const unknown = await s.call('POST', '/api/organizations/org_nope/workspaces', { token: foreign.token, body: { name: 'W' } });
  assert.deepEqual(unknown.body, cross.body, 'unknown and foreign ids answer alike');
  for (const role of ['org_owner', 'org_admin'] as const) {
    const m = await member(s, role, tree);
    const r = await s.call('POST', path, { token: m.token, body: { name: `By ${role}` } });
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.organizationId, tree.organizationId);
  }
  assert.equal((await audit(s, 'workspace.created')).filter((a) => a.organization_id === tree.organizationId).length, 3);
});

test('GET /api/organizations/:id/workspaces is scoped to what the caller may see', async (t) => {
  const s = await startTestServer(t);
  const tree = await makeTree(s);
  const ws2 = await makeWorkspace(s, tree.organizationId);
  const writer = await member(s, 'writer', tree);
  const owner = await member(s, 'org_owner', tree);
  const path = `/api/organizations/${tree.organizationId}/workspaces`;
  assert.deepEqual((await s.call('GET', path, { token: writer.token })).body.items.map((w: any) => w.id), [tree.workspaceId]);
  assert.deepEqual((await s.call('GET', path, { token: owner.token })).body.items.map((w: any) => w.id), [tree.workspaceId, ws2.id]);
  const outsider = await member(s, 'org_owner');
  assert.equal((await s.call('GET', path, { token: outsider.token })).status, 403);
  assert.equal((await s.call('GET', path)).status, 401);
});

test('POST /api/workspaces/:id/projects needs project:create in that workspace', async (t) => {
  const s = await startTestServer(t);
  const tree = await makeTree(s);
  const path = `/api/workspaces/${tree.workspaceId}/projects`;
  assert.equal((await s.call('POST', path, { body: { name: 'P' } })).status, 401);
  const expected = { writer: 'permission_denied', reviewer: 'permission_denied', project_editor: 'permission_denied', org_member: 'scope_forbidden' } as const;
  for (const [role, code] of Object.entries(expected)) {
    const m = await member(s, role as keyof typeof expected, tree);
    const r = await s.call('POST', path, { token: m.token, body: { name: 'P' } });
    assert.equal(r.status, 403, role);
    assert.equal(r.body.error.code, code, role);
  }
  const foreignProducer = await member(s, 'producer');
  const cross = await s.call('POST', path, { token: foreignProducer.token, body: { name: 'P' } });
  assert.equal(cross.status, 403);
  assert.equal(cross.body.error.code, 'scope_forbidden');
  const producer = await member(s, 'producer', tree);
  const r = await s.call('POST', path, { token: producer.token, body: { name: 'Pilot season', templateId: 'short-drama' } });
  assert.equal(r.status, 201, r.text);
  assert.equal(r.body.status, 'draft');
  assert.equal(r.body.templateId, 'short-drama');
  assert.equal(r.body.workspaceId, tree.workspaceId);
  const rows = (await audit(s, 'project.created')).filter((a) => a.target_id === r.body.id);
  assert.equal(rows.length, 1);
  assert.equal(rows[0].actor_user_id, producer.user.id);
  assert.equal(rows[0].workspace_id, tree.workspaceId);
});

test('GET /api/workspaces/:id/projects is tenant-scoped', async (t) => {
  const s = await startTestServer(t);
  const tree = await makeTree(s);
  const p2 = await makeProject(s, tree.workspaceId);
  const producer = await member(s, 'producer', tree);
  const path = `/api/workspaces/${tree.workspaceId}/projects`;
  const r = await s.call('GET', path, { token: producer.token });
  assert.deepEqual(r.body.items.map((p: any) => p.id), [tree.projectId, p2.id]);
  const other = await member(s, 'producer');
  assert.equal((await s.call('GET', path, { token: other.token })).status, 403);
  const own = await s.call('GET', `/api/workspaces/${other.tree.workspaceId}/projects`, { token: other.token });
  assert.deepEqual(own.body.items.map((p: any) => p.id), [other.tree.projectId]);
  assert.equal((await s.call('GET', path)).status, 401);
});
