// GET/PATCH /api/context, the contract's role matrix as served, project-only guests, dev headers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../helpers/server.ts';
import { grant, login, makeProject, makeTree, makeUser, makeWorkspace, member } from '../helpers/factories.ts';

// The contract's table, written out independently of src/directory/roles.ts.
const ALL = 'script:read script:edit asset:edit voice:edit job:create queue:manage project:create workflow:manage qa:review delivery:view delivery:approve usage:view billing:manage quota:manage audit:view model:manage task:view task:manage task:complete organization:members:invite';
const MATRIX: Record<string, string> = {
  org_owner: ALL,
  org_admin: ALL.replace(' billing:manage', ''),
  org_member: '',
  producer: 'script:read script:edit asset:edit voice:edit job:create queue:manage project:create workflow:manage qa:review delivery:view delivery:approve usage:view task:view task:manage task:complete audit:view',
  writer: 'script:read script:edit task:view task:complete',
  art_director: 'script:read asset:edit job:create qa:review task:view task:complete',
  voice_editor: 'script:read voice:edit job:create task:view task:complete',
  reviewer: 'script:read qa:review delivery:view task:view task:complete',
  project_editor: 'script:read script:edit asset:edit voice:edit job:create qa:review delivery:view task:view task:manage task:complete',
  project_viewer: 'script:read delivery:view task:view',
};
const set = (s: string) => new Set(s.split(' ').filter(Boolean));

test('every role of the matrix gets exactly its permissions in /api/context', async (t) => {
  const s = await startTestServer(t);
  for (const [role, perms] of Object.entries(MATRIX)) {
    const { token, tree } = await member(s, role as any);
    const r = await s.call('GET', '/api/context', { token });
    assert.equal(r.status, 200, `${role}: ${r.text}`);
    assert.deepEqual(set(r.body.permissions.join(' ')), set(perms), role);
    assert.equal(r.body.organization.id, tree.organizationId, `${role} starts in its organization`);
    if (role !== 'org_member') {
      assert.equal(r.body.workspace?.id, tree.workspaceId, `${role} starts in the workspace`);
      assert.equal(r.body.project?.id, tree.projectId, `${role} starts in the project`);
    }
  }
});

test('context shows the user, roles and memberships; a system administrator holds every permission', async (t) => {
  const s = await startTestServer(t);
  const { token, user, tree } = await member(s, 'writer');
  const r = await s.call('GET', '/api/context', { token });
  assert.equal(r.body.user.id, user.id);
  assert.equal(r.body.user.isSystemAdmin, false);
  assert.deepEqual(r.body.roles, { organization: 'org_member', workspace: 'writer', project: null });
  assert.deepEqual(r.body.memberships.map((m: any) => [m.level, m.role]), [['organization', 'org_member'], ['workspace', 'writer']]);
  assert.equal(r.body.memberships[1].workspaceId, tree.workspaceId);
  const admin = await makeUser(s, { systemAdmin: true });
  const a = await s.call('GET', '/api/context', { token: await login(s, admin) });
  assert.equal(a.body.user.isSystemAdmin, true);
  assert.ok(a.body.permissions.includes('system:settings:*'));
  assert.deepEqual(set(a.body.permissions.filter((p: string) => p !== 'system:settings:*').join(' ')), set(ALL));
});

test('org owners and admins act as producer in every workspace; workspace roles stay in their workspace', async (t) => {
  const s = await startTestServer(t);
  const tree = await makeTree(s);
  const ws2 = await makeWorkspace(s, tree.organizationId);
  const p2 = await makeProject(s, ws2.id);
  const admin = await member(s, 'org_admin', tree);
  const moved = await s.call('PATCH', '/api/context', { token: admin.token, body: { projectId: p2.id } });
  assert.equal(moved.status, 200, moved.text);
  assert.equal(moved.body.workspace.id, ws2.id);
  assert.ok(moved.body.permissions.includes('delivery:approve'));
  const writer = await member(s, 'writer', tree);
  const denied = await s.call('PATCH', '/api/context', { token: writer.token, body: { workspaceId: ws2.id } });
  assert.equal(denied.status, 403);
  assert.equal(denied.body.error.code, 'scope_forbidden');
  // At organization level a workspace role grants nothing.
  const producer = await member(s, 'producer', tree);
  const orgOnly = await s.call('GET', `/api/organizations/${tree.organizationId}/workspaces`, { token: producer.token });
  assert.equal(orgOnly.status, 200);
  assert.deepEqual(orgOnly.body.items.map((w: any) => w.id), [tree.workspaceId]);
});

test('PATCH /api/context moves the scope, fills lower levels, and refuses what the user cannot see', async (t) => {
  const s = await startTestServer(t);
  const { token, user, tree } = await member(s, 'producer');
  const p2 = await makeProject(s, tree.workspaceId, 'Second');
  const moved = await s.call('PATCH', '/api/context', { token, body: { projectId: p2.id } });
  assert.equal(moved.status, 200);
  assert.equal(moved.body.project.id, p2.id);
  assert.equal((await s.call('GET', '/api/context', { token })).body.project.id, p2.id, 'the move is kept by the session');
  const back = await s.call('PATCH', '/api/context', { token, body: { workspaceId: tree.workspaceId } });
  assert.equal(back.body.project.id, tree.projectId, 'first visible project filled in');

  const other = await makeTree(s);
  for (const body of [{ organizationId: other.organizationId }, { workspaceId: other.workspaceId }, { projectId: other.projectId }, { projectId: 'prj_does_not_exist' },
    { organizationId: tree.organizationId, projectId: other.projectId }]) {
    const r = await s.call('PATCH', '/api/context', { token, body });
    assert.equal(r.status, 403, JSON.stringify(body));
    assert.equal(r.body.error.code, 'scope_forbidden');
  }
  assert.equal((await s.call('GET', '/api/context', { token })).body.project.id, tree.projectId, 'refusals change nothing');
  assert.equal((await s.call('PATCH', '/api/context', { token, body: {} })).status, 422);
  assert.equal((await s.call('PATCH', '/api/context', { body: { projectId: tree.projectId } })).status, 401);
  const sessionsOfOthers = await s.db.all('SELECT project_id FROM sessions WHERE user_id != ?', user.id);
  assert.ok(sessionsOfOthers.every((x: any) => x.project_id !== p2.id));
});

test('a project-only guest sees only its project: lists, context and scope changes', async (t) => {
  const s = await startTestServer(t);
  const tree = await makeTree(s);
  const hidden = await makeProject(s, tree.workspaceId, 'Hidden');
  const guest = await makeUser(s);
  await grant(s, guest.id, 'project', tree.projectId, 'project_viewer');
  const token = await login(s, guest);
  const ctx = await s.call('GET', '/api/context', { token });
  assert.equal(ctx.body.project.id, tree.projectId);
  assert.equal(ctx.body.roles.workspace, 'project_guest');
  assert.equal(ctx.body.memberships.find((m: any) => m.level === 'workspace').accessMode, 'project-only');
  const list = await s.call('GET', `/api/workspaces/${tree.workspaceId}/projects`, { token });
  assert.deepEqual(list.body.items.map((p: any) => p.id), [tree.projectId]);
  const denied = await s.call('PATCH', '/api/context', { token, body: { projectId: hidden.id } });
  assert.equal(denied.status, 403);
  assert.equal(denied.body.error.code, 'scope_forbidden');
  const viaWorkspace = await s.call('PATCH', '/api/context', { token, body: { workspaceId: tree.workspaceId } });
  assert.equal(viaWorkspace.body.project.id, tree.projectId, 'filling never picks a hidden project');
});

test('a session whose access was lost falls back to the first scope still visible', async (t) => {
  const s = await startTestServer(t);
  const { token, user, tree } = await member(s, 'producer');
  const second = await makeTree(s);
  await grant(s, user.id, 'workspace', second.workspaceId, 'writer');
  assert.equal((await s.call('PATCH', '/api/context', { token, body: { projectId: second.projectId } })).status, 200);
  await s.db.run("UPDATE memberships SET status = 'inactive' WHERE user_id = ? AND organization_id = ?", user.id, second.organizationId);
  const r = await s.call('GET', '/api/context', { token });
  assert.equal(r.status, 200);
  assert.equal(r.body.project.id, tree.projectId);
});

test('development headers do nothing unless SVC_ALLOW_DEV_CONTEXT=1', async (t) => {
  const off = await startTestServer(t);
  const u = await makeUser(off);
  const r = await off.call('GET', '/api/context', { headers: { 'x-user-id': u.id } });
  assert.equal(r.status, 401);
  const { token, tree } = await member(off, 'writer');
  const other = await makeTree(off);
  const ignored = await off.call('GET', '/api/context', { token, headers: { 'x-project-id': other.projectId, 'x-workspace-id': other.workspaceId } });
  assert.equal(ignored.status, 200);
  assert.equal(ignored.body.workspace.id, tree.workspaceId);

  const on = await startTestServer(t, { SVC_ALLOW_DEV_CONTEXT: '1' });
  on.log.flush();
  assert.ok(on.logs.some((l) => JSON.parse(l).level === 'warn' && /SVC_ALLOW_DEV_CONTEXT/.test(l)), 'a loud warning at start');
  const w = await member(on, 'writer');
  const asUser = await on.call('GET', '/api/context', { headers: { 'x-user-id': w.user.id } });
  assert.equal(asUser.status, 200);
  assert.equal(asUser.body.user.id, w.user.id);
  const p2 = await makeProject(on, w.tree.workspaceId);
  const scoped = await on.call('GET', '/api/context', { headers: { 'x-user-id': w.user.id, 'x-project-id': p2.id } });
  assert.equal(scoped.body.project.id, p2.id);
  const elsewhere = await makeTree(on);
  const forbidden = await on.call('GET', '/api/context', { headers: { 'x-user-id': w.user.id, 'x-organization-id': elsewhere.organizationId } });
  assert.equal(forbidden.status, 403);
  assert.equal(forbidden.body.error.code, 'scope_forbidden');
  assert.equal((await on.call('GET', '/api/context', { headers: { 'x-user-id': 'usr_nobody' } })).status, 401);
});
