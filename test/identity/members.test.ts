// Organization detail and members at three levels: lists, role changes, removals, the last owner.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../helpers/server.ts';
import { grant, login, makeProject, makeTree, makeUser, member } from '../helpers/factories.ts';

test('GET /api/organizations/:id: members see it with their role and seats; others 403; 401 without a token', async (t) => {
  const s = await startTestServer(t);
  const writer = await member(s, 'writer');
  const path = `/api/organizations/${writer.tree.organizationId}`;
  const r = await s.call('GET', path, { token: writer.token });
  assert.equal(r.status, 200);
  assert.equal(r.body.role, 'org_member');
  assert.deepEqual(r.body.seats, { limit: 25, activeMembers: 1, pendingInvitations: 0, used: 1 });
  const outsider = await member(s, 'org_owner');
  assert.equal((await s.call('GET', path, { token: outsider.token })).status, 403);
  assert.equal((await s.call('GET', path)).status, 401);
});

test('member lists show role, level, status and last login, and stay inside their scope', async (t) => {
  const s = await startTestServer(t);
  const tree = await makeTree(s);
  const owner = await member(s, 'org_owner', tree);
  const writer = await member(s, 'writer', tree);
  const viewer = await member(s, 'project_viewer', tree);
  const other = await member(s, 'producer');
  const org = await s.call('GET', `/api/organizations/${tree.organizationId}/members`, { token: writer.token });
  assert.equal(org.status, 200);
  const byEmail = new Map(org.body.items.map((m: any) => [m.email, m]));
  assert.equal(org.body.items.length, 3, 'only this organization\'s members');
  const w = byEmail.get(writer.user.email) as any;
  assert.equal(w.role, 'org_member');
  assert.equal(w.userStatus, 'active');
  assert.ok(Date.parse(w.lastLoginAt));
  assert.deepEqual(w.roles.map((x: any) => [x.level, x.role]), [['workspace', 'writer']]);
  assert.equal((byEmail.get(owner.user.email) as any).role, 'org_owner');
  assert.ok(!byEmail.has(other.user.email));
  const ws = await s.call('GET', `/api/workspaces/${tree.workspaceId}/members`, { token: owner.token });
  assert.deepEqual(ws.body.items.map((m: any) => [m.email, m.role, m.accessMode]).sort(),
    [[viewer.user.email, 'project_guest', 'project-only'], [writer.user.email, 'writer', 'full']].sort());
  const pr = await s.call('GET', `/api/projects/${tree.projectId}/members`, { token: viewer.token });
  assert.deepEqual(pr.body.items.map((m: any) => [m.email, m.role]), [[viewer.user.email, 'project_viewer']]);
  assert.equal((await s.call('GET', `/api/organizations/${tree.organizationId}/members`, { token: other.token })).status, 403);
  assert.equal((await s.call('GET', `/api/workspaces/${tree.workspaceId}/members`, { token: other.token })).status, 403);
  assert.equal((await s.call('GET', `/api/projects/${tree.projectId}/members`)).status, 401);
});

test('owners and admins set roles; producers cannot; only owners touch ownership; the last owner stays', async (t) => {
  const s = await startTestServer(t);
  const tree = await makeTree(s);
  const owner = await member(s, 'org_owner', tree);
  const admin = await member(s, 'org_admin', tree);
  const writer = await member(s, 'writer', tree);
  const producer = await member(s, 'producer', tree);
  const wsPath = `/api/workspaces/${tree.workspaceId}/members/${writer.user.id}`;
  assert.equal((await s.call('PUT', wsPath, { body: { role: 'producer' } })).status, 401);
  const byProducer = await s.call('PUT', wsPath, { token: producer.token, body: { role: 'producer' } });
  assert.equal(byProducer.status, 403);
  assert.equal(byProducer.body.error.code, 'permission_denied');
  const bad = await s.call('PUT', wsPath, { token: admin.token, body: { role: 'project_editor' } });
  assert.equal(bad.status, 422);
  const ok = await s.call('PUT', wsPath, { token: admin.token, body: { role: 'art_director' } });
  assert.equal(ok.status, 200, ok.text);
  assert.equal(ok.body.role, 'art_director');
  const writerCtx = await s.call('GET', '/api/context', { token: writer.token });
  assert.ok(writerCtx.body.permissions.includes('asset:edit') && !writerCtx.body.permissions.includes('script:edit'), 'takes effect at once');
  // A workspace role for an organization member who had none there.
  const ws2 = await s.call('POST', `/api/organizations/${tree.organizationId}/workspaces`, { token: owner.token, body: { name: 'B' } });
  assert.equal((await s.call('PUT', `/api/workspaces/${ws2.body.id}/members/${writer.user.id}`, { token: admin.token, body: { role: 'reviewer' } })).status, 200);
  // Non-members of the organization cannot be given roles this way.
  const stranger = await makeUser(s);
  assert.equal((await s.call('PUT', `/api/workspaces/${tree.workspaceId}/members/${stranger.id}`, { token: admin.token, body: { role: 'writer' } })).status, 404);

  const orgPath = (id: string) => `/api/organizations/${tree.organizationId}/members/${id}`;
  const adminMakesOwner = await s.call('PUT', orgPath(writer.user.id), { token: admin.token, body: { role: 'org_owner' } });
  assert.equal(adminMakesOwner.status, 403);
  const lastOwner = await s.call('PUT', orgPath(owner.user.id), { token: owner.token, body: { role: 'org_admin' } });
  assert.equal(lastOwner.status, 409);
  assert.equal(lastOwner.body.error.code, 'last_owner');
  assert.equal((await s.call('DELETE', orgPath(owner.user.id), { token: owner.token })).status, 409);
  assert.equal((await s.call('PUT', orgPath(admin.user.id), { token: owner.token, body: { role: 'org_owner' } })).status, 200);
  assert.equal((await s.call('PUT', orgPath(owner.user.id), { token: owner.token, body: { role: 'org_admin' } })).status, 200, 'with a second owner the first may step down');
  const audit = await s.db.all<any>("SELECT * FROM audit_log WHERE action = 'membership.role_changed' AND organization_id = ?", tree.organizationId);
  assert.ok(audit.length >= 3);
});

test('removing members: from a workspace, a project (and its guest row), the organization; other tenants are refused and audited', async (t) => {
  const s = await startTestServer(t);
  const tree = await makeTree(s);
  const admin = await member(s, 'org_admin', tree);
  const writer = await member(s, 'writer', tree);
  const viewer = await member(s, 'project_viewer', tree);
  assert.equal((await s.call('DELETE', `/api/projects/${tree.projectId}/members/${viewer.user.id}`, { token: admin.token })).status, 204);
  const rows = await s.db.all<any>('SELECT level, role FROM memberships WHERE user_id = ? ORDER BY level', viewer.user.id);
  assert.deepEqual(rows.map((r) => [r.level, r.role]), [['organization', 'org_member']], 'the project_guest workspace row went with the last project role');
  assert.equal((await s.call('GET', `/api/projects/${tree.projectId}`, { token: viewer.token })).status, 403);
  assert.equal((await s.call('DELETE', `/api/workspaces/${tree.workspaceId}/members/${writer.user.id}`, { token: admin.token })).status, 204);
  assert.equal((await s.call('GET', `/api/workspaces/${tree.workspaceId}/members`, { token: writer.token })).status, 403);
  assert.equal((await s.call('DELETE', `/api/organizations/${tree.organizationId}/members/${writer.user.id}`, { token: admin.token })).status, 204);
  assert.equal((await s.call('GET', `/api/organizations/${tree.organizationId}`, { token: writer.token })).status, 403);
  assert.equal((await s.call('DELETE', `/api/organizations/${tree.organizationId}/members/${writer.user.id}`, { token: admin.token })).status, 404);
  assert.equal((await s.db.all("SELECT * FROM audit_log WHERE action = 'membership.removed'")).length, 3);

  const foreignAdmin = await member(s, 'org_admin');
  const victim = await makeUser(s);
  await grant(s, victim.id, 'workspace', tree.workspaceId, 'writer');
  const cross = await s.call('DELETE', `/api/organizations/${tree.organizationId}/members/${victim.id}`, { token: foreignAdmin.token });
  assert.equal(cross.status, 403);
  assert.equal(cross.body.error.code, 'scope_forbidden');
  const denied = await s.db.all<any>("SELECT * FROM audit_log WHERE action = 'access.denied' AND actor_user_id = ?", foreignAdmin.user.id);
  assert.equal(denied.length, 1);
  assert.equal(denied[0].target_id, tree.organizationId);
  assert.equal((await s.db.all('SELECT * FROM memberships WHERE user_id = ?', victim.id)).length, 2, 'nothing removed');
  // A second project keeps the guest row alive.
  const p2 = await makeProject(s, tree.workspaceId);
  const guest = await makeUser(s);
  await grant(s, guest.id, 'project', tree.projectId, 'project_editor');
  await grant(s, guest.id, 'project', p2.id, 'project_viewer');
  assert.equal((await s.call('DELETE', `/api/projects/${tree.projectId}/members/${guest.id}`, { token: admin.token })).status, 204);
  const guestToken = await login(s, guest);
  const ctx = await s.call('GET', '/api/context', { token: guestToken });
  assert.equal(ctx.body.project.id, p2.id);
  assert.equal(ctx.body.roles.workspace, 'project_guest');
});

test('granting a role below an inactive organization membership reactivates it', async (t) => {
  const s = await startTestServer(t);
  const tree = await makeTree(s);
  const u = await makeUser(s);
  await grant(s, u.id, 'workspace', tree.workspaceId, 'writer');
  await s.db.run("UPDATE memberships SET status = 'inactive' WHERE user_id = ?", u.id);
  const token = await login(s, u);
  assert.equal((await s.call('GET', `/api/workspaces/${tree.workspaceId}/projects`, { token })).status, 403);
  await grant(s, u.id, 'project', tree.projectId, 'project_editor');
  const rows = await s.db.all<any>('SELECT level, role, status FROM memberships WHERE user_id = ? ORDER BY level', u.id);
  assert.deepEqual(rows.map((r) => [r.level, r.role, r.status]),
    [['organization', 'org_member', 'active'], ['project', 'project_editor', 'active'], ['workspace', 'writer', 'active']]);
  assert.equal((await s.call('GET', `/api/projects/${tree.projectId}`, { token })).status, 200);
});

test('a project-only guest lists only the members of its own projects; last logins are shown to administrators only', async (t) => {
  const s = await startTestServer(t);
  const tree = await makeTree(s);
  const p2 = await makeProject(s, tree.workspaceId);
  const owner = await member(s, 'org_owner', tree);
  const writer = await member(s, 'writer', tree);
  const guest = await member(s, 'project_viewer', tree);
  const coMember = await member(s, 'project_editor', tree);
  const elsewhere = await member(s, 'project_editor', { ...tree, projectId: p2.id });
  const stranger = await member(s, 'project_viewer');
  const emails = (items: any[]) => items.map((m) => m.email).sort();
  const list = async (token: string, path: string) => {
    const r = await s.call('GET', path, { token });
    assert.equal(r.status, 200, `${path}: ${r.text}`);
    return r.body.items as any[];
  };
  const orgPath = `/api/organizations/${tree.organizationId}/members`;

  const seenByGuest = await list(guest.token, orgPath);
  assert.deepEqual(emails(seenByGuest), [guest.user.email, coMember.user.email].sort(), 'only its project\u2019s members');
  const co = seenByGuest.find((m) => m.email === coMember.user.email);
  assert.deepEqual(co.roles.map((x: any) => [x.level, x.role, x.projectId]), [['project', 'project_editor', tree.projectId]], 'only that project\u2019s roles');
  assert.equal(co.lastLoginAt, null, 'no one else\u2019s last login');
  assert.ok(Date.parse(seenByGuest.find((m) => m.email === guest.user.email).lastLoginAt), 'its own last login');
  assert.deepEqual(emails(await list(guest.token, `/api/workspaces/${tree.workspaceId}/members`)), [guest.user.email, coMember.user.email].sort());
  assert.deepEqual(emails(await list(guest.token, `/api/projects/${tree.projectId}/members`)), [guest.user.email, coMember.user.email].sort());
  const otherProject = await s.call('GET', `/api/projects/${p2.id}/members`, { token: guest.token });
  assert.deepEqual([otherProject.status, otherProject.body.error.code], [403, 'scope_forbidden']);
  const foreign = await s.call('GET', orgPath, { token: stranger.token });
  assert.deepEqual([foreign.status, foreign.body.error.code], [403, 'scope_forbidden']);
  assert.equal((await s.call('GET', orgPath)).status, 401);

  // A full member sees every member, without others' last login; owners see it all.
  const everyone = [owner, writer, guest, coMember, elsewhere].map((m) => m.user.email).sort();
  const seenByWriter = await list(writer.token, orgPath);
  assert.deepEqual(emails(seenByWriter), everyone);
  assert.ok(seenByWriter.every((m) => (m.email === writer.user.email ? Date.parse(m.lastLoginAt) : m.lastLoginAt === null)));
  assert.ok((await list(writer.token, `/api/workspaces/${tree.workspaceId}/members`)).every((m) => m.email === writer.user.email || m.lastLoginAt === null));
  const seenByOwner = await list(owner.token, orgPath);
  assert.deepEqual(emails(seenByOwner), everyone);
  assert.ok(seenByOwner.every((m) => Date.parse(m.lastLoginAt)), 'owners see every last login');
});
