// Invitations exactly as the reference: one-time token, hash at rest, resend, revoke, expiry, role
// rules per level, conflicts, seats, registration and acceptance, project-only guests.
import { mapSeq } from '../../src/kernel/seq.ts';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { login, makeProject, makeTree, makeUser, member } from '../helpers/factories.ts';
import { tableNames } from '../helpers/sql.ts';

async function setup(t: any, env: Record<string, string> = {}) {
  const s = await startTestServer(t, env);
  const tree = await makeTree(s);
  const admin = await member(s, 'org_admin', tree);
  const invite = (body: Record<string, unknown>, token = admin.token) =>
    s.call('POST', `/api/organizations/${tree.organizationId}/invitations`, { token, body });
  return { s, tree, admin, invite };
}

/** Every text value stored anywhere in the database. */
async function databaseText(s: TestServer): Promise<string> {
  return (await mapSeq(await tableNames(s.db), async (name) => JSON.stringify(await s.db.all(`SELECT * FROM ${name}`)))).join('\n');
}

test('an invitation answers its token and acceptUrl once; the database keeps only a hash and a hint', async (t) => {
  const { s, tree, admin, invite } = await setup(t);
  const r = await invite({ email: 'New.Person@example.test', role: 'org_member' });
  assert.equal(r.status, 201, r.text);
  const token: string = r.body.inviteToken;
  assert.match(token, /^[\w-]{43}$/);
  assert.equal(r.body.acceptUrl, `${s.url}/invitations/accept?token=${token}`);
  assert.equal(r.body.invitation.status, 'pending');
  assert.equal(r.body.invitation.tokenHint, `…${token.slice(-4)}`);
  const days = (Date.parse(r.body.invitation.expiresAt) - Date.now()) / 86_400_000;
  assert.ok(days > 6.99 && days <= 7, `7-day expiry, got ${days}`);
  assert.ok(!(await databaseText(s)).includes(token), 'no token at rest');
  s.log.flush();
  assert.ok(!s.logs.join('\n').includes(token), 'no token in the log');
  const list = await s.call('GET', `/api/organizations/${tree.organizationId}/invitations`, { token: admin.token });
  assert.equal(list.body.items.length, 1);
  assert.ok(!list.text.includes(token), 'never listed again');
  const preview = await s.call('GET', `/api/invitations/preview?token=${token}`);
  assert.equal(preview.status, 200);
  assert.deepEqual(preview.body.organization.id, tree.organizationId);
  assert.equal(preview.body.role, 'org_member');
  assert.deepEqual(preview.body.invitedBy, { name: admin.user.name }, 'the preview names who invited');
  assert.equal((await s.call('GET', '/api/invitations/preview?token=nope')).body.error.code, 'invitation_not_found');
});

test('role rules per level: organization, workspace, workspace + project; never an owner', async (t) => {
  const { s, tree, invite } = await setup(t);
  const other = await makeTree(s);
  const p2 = await makeProject(s, tree.workspaceId);
  const cases: Array<[Record<string, unknown>, string, boolean]> = [
    [{}, 'org_member', true], [{}, 'org_admin', true], [{}, 'org_owner', false], [{}, 'producer', false], [{}, 'project_viewer', false],
    [{ workspaceId: tree.workspaceId }, 'producer', true], [{ workspaceId: tree.workspaceId }, 'writer', true],
    [{ workspaceId: tree.workspaceId }, 'art_director', true], [{ workspaceId: tree.workspaceId }, 'voice_editor', true],
    [{ workspaceId: tree.workspaceId }, 'reviewer', true], [{ workspaceId: tree.workspaceId }, 'project_guest', false],
    [{ workspaceId: tree.workspaceId }, 'org_admin', false], [{ workspaceId: tree.workspaceId }, 'project_editor', false],
    [{ workspaceId: tree.workspaceId, projectId: tree.projectId }, 'project_editor', true],
    [{ workspaceId: tree.workspaceId, projectId: p2.id }, 'project_viewer', true],
    [{ workspaceId: tree.workspaceId, projectId: tree.projectId }, 'producer', false],
    [{ projectId: tree.projectId }, 'project_editor', false],
    [{ workspaceId: other.workspaceId }, 'writer', false],
    [{ workspaceId: tree.workspaceId, projectId: other.projectId }, 'project_editor', false],
  ];
  let n = 0;
  for (const [target, role, ok] of cases) {
    const r = await invite({ email: `rule${n++}@example.test`, role, ...target });
    assert.equal(r.status, ok ? 201 : 422, `${role} ${JSON.stringify(target)}: ${r.text}`);
  }
});

test('conflicts: a second pending invitation, an e-mail that is already a member; ordinary members 403; other tenants 403', async (t) => {
  const { s, tree, admin, invite } = await setup(t);
  assert.equal((await invite({ email: 'dup@example.test', role: 'org_member' })).status, 201);
  const dup = await invite({ email: 'DUP@example.test', role: 'org_admin' });
  assert.equal(dup.status, 409);
  assert.equal(dup.body.error.code, 'invitation_already_pending');
  const existing = await member(s, 'writer', tree);
  const already = await invite({ email: existing.user.email.toUpperCase(), role: 'org_member' });
  assert.equal(already.status, 409);
  assert.equal(already.body.error.code, 'invitation_recipient_already_member');
  const ordinary = await invite({ email: 'x@example.test', role: 'org_member' }, existing.token);
  assert.equal(ordinary.status, 403);
  assert.equal(ordinary.body.error.code, 'permission_denied');
  for (const path of [`/api/organizations/${tree.organizationId}/invitations`]) {
    assert.equal((await s.call('GET', path, { token: existing.token })).body.error.code, 'permission_denied');
    assert.equal((await s.call('GET', path)).status, 401);
  }
  const foreign = await member(s, 'org_owner');
  const cross = await invite({ email: 'y@example.test', role: 'org_member' }, foreign.token);
  assert.equal(cross.status, 403);
  assert.equal(cross.body.error.code, 'scope_forbidden');
  const list = await s.call('GET', `/api/organizations/${foreign.tree.organizationId}/invitations`, { token: foreign.token });
  assert.equal(list.body.items.length, 0, 'lists are per organization');
  assert.equal((await s.call('GET', `/api/organizations/${tree.organizationId}/invitations?status=pending`, { token: admin.token })).body.items.length, 1);
});

test('resend gives a new token and the old link 404 invitation_not_found; revoke reports revoked and releases the seat', async (t) => {
  const { s, tree, admin, invite } = await setup(t);
  await s.db.run('UPDATE billing_accounts SET seat_limit = 2 WHERE organization_id = ?', tree.organizationId); // admin + one
  const first = await invite({ email: 'a@example.test', role: 'org_member' });
  const full = await invite({ email: 'b@example.test', role: 'org_member' });
  assert.equal(full.status, 409);
  assert.equal(full.body.error.code, 'seat_limit_reached');
  const id = first.body.invitation.id;
  const base = `/api/organizations/${tree.organizationId}/invitations/${id}`;
  const resent = await s.call('POST', `${base}/resend`, { token: admin.token });
  assert.equal(resent.status, 200);
  assert.notEqual(resent.body.inviteToken, first.body.inviteToken);
  assert.ok(resent.body.acceptUrl.includes(resent.body.inviteToken));
  const old = await s.call('GET', `/api/invitations/preview?token=${first.body.inviteToken}`);
  assert.equal(old.status, 404);
  assert.equal(old.body.error.code, 'invitation_not_found');
  assert.equal((await s.call('GET', `/api/invitations/preview?token=${resent.body.inviteToken}`)).status, 200);
  const revoked = await s.call('POST', `${base}/revoke`, { token: admin.token });
  assert.equal(revoked.status, 200);
  assert.equal(revoked.body.status, 'revoked');
  assert.equal((await s.db.get<any>('SELECT token_hash FROM invitations WHERE id = ?', id))!.token_hash, null, 'hash cleared');
  assert.equal((await s.call('GET', `/api/invitations/preview?token=${resent.body.inviteToken}`)).status, 404);
  assert.equal((await invite({ email: 'b@example.test', role: 'org_member' })).status, 201, 'the seat is free again');
  assert.equal((await s.call('POST', `${base}/resend`, { token: admin.token })).body.error.code, 'invitation_not_pending');
  assert.equal((await s.call('POST', `/api/organizations/${tree.organizationId}/invitations/inv_nope/revoke`, { token: admin.token })).status, 404);
  const actions = (await s.db.all<any>("SELECT action FROM audit_log WHERE target_id = ? ORDER BY seq", id)).map((a) => a.action);
  assert.deepEqual(actions, ['invitation.created', 'invitation.resent', 'invitation.revoked']);
});

test('an expired invitation holds no seat, cannot be used, and can be renewed', async (t) => {
  const { s, tree, admin, invite } = await setup(t);
  await s.db.run('UPDATE billing_accounts SET seat_limit = 2 WHERE organization_id = ?', tree.organizationId);
  const r = await invite({ email: 'late@example.test', role: 'org_member' });
  await s.db.run('UPDATE invitations SET expires_at = ? WHERE id = ?', new Date(Date.now() - 1000).toISOString(), r.body.invitation.id);
  const preview = await s.call('GET', `/api/invitations/preview?token=${r.body.inviteToken}`);
  assert.equal(preview.status, 410);
  assert.equal(preview.body.error.code, 'invitation_expired');
  const reg = await s.call('POST', '/api/auth/register', { body: { token: r.body.inviteToken, email: 'late@example.test', name: 'Late', password: 'a long enough password' } });
  assert.equal(reg.status, 410);
  assert.equal((await s.db.get<any>("SELECT count(*) AS n FROM users WHERE email_normalized = 'late@example.test'"))!.n, 0);
  assert.equal((await invite({ email: 'other@example.test', role: 'org_member' })).status, 201, 'the expired one holds no seat');
  await s.db.run("UPDATE invitations SET status = 'revoked' WHERE email_normalized = 'other@example.test'");
  const renewed = await s.call('POST', `/api/organizations/${tree.organizationId}/invitations/${r.body.invitation.id}/resend`, { token: admin.token });
  assert.equal(renewed.status, 200);
  assert.equal(renewed.body.invitation.status, 'pending');
  assert.equal((await s.call('GET', `/api/invitations/preview?token=${renewed.body.inviteToken}`)).status, 200);
});

test('register re-checks token and e-mail, creates the account and its membership, and logs in; the token works once', async (t) => {
  const { s, tree, invite } = await setup(t);
  const r = await invite({ email: 'writer@example.test', role: 'writer', workspaceId: tree.workspaceId });
  const body = { token: r.body.inviteToken, email: 'writer@example.test', name: 'Wren Writer', password: 'a long enough password' };
  const wrongEmail = await s.call('POST', '/api/auth/register', { body: { ...body, email: 'someone@example.test' } });
  assert.equal(wrongEmail.status, 403);
  assert.equal(wrongEmail.body.error.code, 'invitation_email_mismatch');
  const weak = await s.call('POST', '/api/auth/register', { body: { ...body, password: 'short' } });
  assert.equal(weak.status, 422);
  assert.equal((await s.db.get<any>("SELECT count(*) AS n FROM users WHERE email_normalized = 'writer@example.test'"))!.n, 0, 'nothing half-written');
  const ok = await s.call('POST', '/api/auth/register', { body: { ...body, email: 'Writer@Example.test' } });
  assert.equal(ok.status, 201, ok.text);
  const ctx = await s.call('GET', '/api/context', { token: ok.body.token });
  assert.equal(ctx.body.workspace.id, tree.workspaceId);
  assert.deepEqual(ctx.body.roles, { organization: 'org_member', workspace: 'writer', project: null });
  const again = await s.call('POST', '/api/auth/register', { body });
  assert.equal(again.status, 404);
  assert.equal(again.body.error.code, 'invitation_not_found');
  const inv = (await s.db.get<any>('SELECT * FROM invitations WHERE id = ?', r.body.invitation.id))!;
  assert.equal(inv.status, 'accepted');
  assert.equal(inv.token_hash, null);
});

test('an existing account accepts with its session; the e-mail must be its own', async (t) => {
  const { s, tree, invite } = await setup(t);
  const existing = await makeUser(s, { email: 'freelancer@example.test' });
  const other = await makeUser(s);
  const r = await invite({ email: existing.email, role: 'reviewer', workspaceId: tree.workspaceId });
  const body = { token: r.body.inviteToken };
  assert.equal((await s.call('POST', '/api/invitations/accept', { body })).status, 401);
  const mismatch = await s.call('POST', '/api/invitations/accept', { token: await login(s, other), body });
  assert.equal(mismatch.status, 403);
  const token = await login(s, existing);
  const ok = await s.call('POST', '/api/invitations/accept', { token, body });
  assert.equal(ok.status, 200, ok.text);
  assert.equal(ok.body.status, 'accepted');
  const ctx = await s.call('GET', '/api/context', { token });
  assert.equal(ctx.body.roles.workspace, 'reviewer');
  const reg = await s.call('POST', '/api/auth/register', { body: { token: r.body.inviteToken, email: existing.email, name: 'X', password: 'a long enough password' } });
  assert.equal(reg.status, 404);
});

test('a project-level invitation makes a project-only guest who sees no other project of the workspace', async (t) => {
  const { s, tree, invite } = await setup(t);
  const hidden = await makeProject(s, tree.workspaceId, 'Hidden');
  const r = await invite({ email: 'guest@example.test', role: 'project_viewer', workspaceId: tree.workspaceId, projectId: tree.projectId });
  const reg = await s.call('POST', '/api/auth/register', { body: { token: r.body.inviteToken, email: 'guest@example.test', name: 'Guest', password: 'a long enough password' } });
  assert.equal(reg.status, 201, reg.text);
  const token = reg.body.token;
  const rows = await s.db.all<any>('SELECT level, role, access_mode FROM memberships WHERE user_id = ? ORDER BY level', reg.body.user.id);
  assert.deepEqual(rows.map((m) => [m.level, m.role, m.access_mode]),
    [['organization', 'org_member', 'full'], ['project', 'project_viewer', 'full'], ['workspace', 'project_guest', 'project-only']]);
  const list = await s.call('GET', `/api/workspaces/${tree.workspaceId}/projects`, { token });
  assert.deepEqual(list.body.items.map((p: any) => p.id), [tree.projectId]);
  assert.equal((await s.call('GET', `/api/projects/${hidden.id}`, { token })).status, 403);
  assert.equal((await s.call('PATCH', '/api/context', { token, body: { projectId: hidden.id } })).status, 403);
  const ctx = await s.call('GET', '/api/context', { token });
  assert.equal(ctx.body.project.id, tree.projectId);
  assert.ok(!JSON.stringify(ctx.body).includes(hidden.id));
  assert.equal((await s.call('GET', `/api/workspaces/${tree.workspaceId}/members`, { token })).status, 200, 'a guest may list its workspace co-members');
});

