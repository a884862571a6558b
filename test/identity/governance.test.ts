// Global user governance (system administrator only): list and create accounts, suspend and
// reactivate, grant or remove the administrator identity, security resets, sessions and
// memberships; the protected cases refused with nothing changed; every change audited without secrets.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { grant, login, makeOrg, makeTree, makeUser, member } from '../helpers/factories.ts';
import { updateUser } from '../../src/identity/users/governance.ts';
import { AppError } from '../../src/kernel/errors.ts';

const audit = async (s: TestServer, action: string, targetId?: string) =>
  (await s.db.all<any>('SELECT * FROM audit_log WHERE action = ? ORDER BY seq', action)).filter((a) => !targetId || a.target_id === targetId);

const userRow = async (s: TestServer, id: string) => await s.db.get<any>('SELECT * FROM users WHERE id = ?', id);

async function systemAdmin(s: TestServer) {
  const user = await makeUser(s, { systemAdmin: true });
  return { user, token: await login(s, user) };
}

/** GET /api/context with the token: 200 while the session lives, 401 once it is revoked. */
const contextStatus = async (s: TestServer, token: string) => (await s.call('GET', '/api/context', { token })).status;

test('every governance route: 401 without a token, 403 for an org_owner, success for a system administrator', async (t) => {
  const s = await startTestServer(t);
  const owner = await member(s, 'org_owner');
  const admin = await systemAdmin(s);
  const target = await makeUser(s);
  const tree = await makeTree(s);
  const u = `/api/system/users/${target.id}`;
  const routes: Array<[string, string, unknown, number]> = [
    ['GET', '/api/system/users', undefined, 200],
    ['POST', '/api/system/users', { email: 'made@example.test', name: 'Made' }, 201],
    ['GET', u, undefined, 200],
    ['PATCH', u, { status: 'active' }, 200],
    ['POST', `${u}/reset-password`, undefined, 200],
    ['POST', `${u}/reset-mfa`, undefined, 200],
    ['POST', `${u}/revoke-sessions`, undefined, 200],
    ['POST', `${u}/memberships`, { level: 'workspace', scopeId: tree.workspaceId, role: 'writer' }, 201],
  ];
  for (const [method, path, body] of routes) {
    const anonymous = await s.call(method, path, { body });
    assert.equal(anonymous.status, 401, `${method} ${path}`);
    assert.equal(anonymous.body.error.code, 'unauthenticated');
    const denied = await s.call(method, path, { token: owner.token, body });
    assert.equal(denied.status, 403, `${method} ${path}: ${denied.text}`);
    assert.equal(denied.body.error.code, 'permission_denied');
  }
  assert.equal((await userRow(s, target.id)).password_must_change, 0, 'the refused calls changed nothing');
  assert.equal((await s.db.get<any>("SELECT count(*) AS n FROM users WHERE email = 'made@example.test'")).n, 0);
  for (const [method, path, body, status] of routes) {
    const r = await s.call(method, path, { token: admin.token, body });
    assert.equal(r.status, status, `${method} ${path}: ${r.text}`);
    assert.doesNotMatch(r.text, /scrypt|password_?hash/i, `${method} ${path} shows no password hash`);
  }
  for (const [method, path, body] of routes.filter(([, p]) => p.startsWith(u))) {
    const unknown = await s.call(method, path.replace(target.id, 'usr_nobody'), { token: admin.token, body });
    assert.equal(unknown.status, 404, `${method} ${path}`);
    assert.equal(unknown.body.error.code, 'not_found');
  }
});

test('GET /api/system/users filters by query and status, clamps limit, shows memberships and live sessions', async (t) => {
  const s = await startTestServer(t);
  const admin = await systemAdmin(s);
  const alice = await makeUser(s, { email: 'alice.smith@example.test', name: 'Alice Smith' });
  const bob = await makeUser(s, { email: 'bob@example.test', name: 'Bob 100%_sure' });
  const carol = await makeUser(s, { email: 'carol@example.test', name: 'Carol Smithers' });
  const list = async (qs: string) => {
    const r = await s.call('GET', `/api/system/users${qs}`, { token: admin.token });
    assert.equal(r.status, 200, r.text);
    return r.body;
  };
  const ids = (body: any) => body.items.map((x: any) => x.id);

  assert.deepEqual(ids(await list('?query=ALICE')), [alice.id], 'case-insensitive, e-mail or name');
  assert.deepEqual(ids(await list('?query=smith')).sort(), [alice.id, carol.id].sort());
  assert.deepEqual(ids(await list('?query=bob%40EXAMPLE')), [bob.id], 'e-mail address');
  assert.deepEqual(ids(await list('?query=%25_')), [bob.id], '% and _ are literal characters');
  assert.deepEqual(ids(await list('?query=_')), [bob.id]);
  assert.deepEqual(ids(await list('?query=nobody-matches')), []);

  assert.equal((await s.call('PATCH', `/api/system/users/${carol.id}`, { token: admin.token, body: { status: 'suspended' } })).status, 200);
  assert.deepEqual(ids(await list('?status=suspended')), [carol.id]);
  assert.deepEqual(ids(await list('?status=active&query=smith')), [alice.id]);
  const bad = await s.call('GET', '/api/system/users?status=gone', { token: admin.token });
  assert.equal(bad.status, 422);
  assert.ok(bad.body.error.details.fields.status);

  const all = await list('');
  assert.equal(all.pagination.total, 4);
  assert.equal(all.pagination.pageSize, 50, 'default limit');
  const one = await list('?limit=1');
  assert.equal(one.items.length, 1);
  assert.deepEqual(one.pagination, { page: 1, pageSize: 1, total: 4 });
  assert.equal((await list('?limit=0')).pagination.pageSize, 1, 'clamped up to 1');
  assert.equal((await list('?limit=999')).pagination.pageSize, 200, 'clamped down to 200');
  assert.deepEqual(ids(await list('?limit=2&page=2')), ids(all).slice(2, 4));

  // Memberships with names, and only live sessions counted.
  const tree = await makeTree(s);
  await grant(s, alice.id, 'project', tree.projectId, 'project_editor');
  const tokens = [await login(s, alice), await login(s, alice), await login(s, alice)];
  await s.db.run('UPDATE sessions SET last_seen_at = ? WHERE token_hash = (SELECT token_hash FROM sessions WHERE user_id = ? ORDER BY created_at LIMIT 1)',
    new Date(Date.now() - (s.config.sessionIdleMinutes + 1) * 60_000).toISOString(), alice.id);
  assert.equal(await contextStatus(s, tokens[2]), 200);
  const [item] = (await list('?query=alice')).items;
  assert.equal(item.activeSessions, 2, 'the idle session does not count');
  await s.call('POST', '/api/auth/logout', { token: tokens[2] });
  const detail = (await s.call('GET', `/api/system/users/${alice.id}`, { token: admin.token })).body;
  assert.equal(detail.activeSessions, 1, 'the revoked session does not count');
  assert.equal(detail.email, 'alice.smith@example.test');
  assert.equal(detail.status, 'active');
  assert.equal(detail.isSystemAdmin, false);
  assert.equal(detail.mfaEnabled, false);
  assert.ok(detail.lastLoginAt);
  const byLevel = Object.fromEntries(detail.memberships.map((m: any) => [m.level, m]));
  assert.deepEqual(Object.keys(byLevel).sort(), ['organization', 'project', 'workspace']);
  assert.equal(byLevel.organization.role, 'org_member');
  assert.equal(byLevel.workspace.role, 'project_guest');
  assert.equal(byLevel.workspace.accessMode, 'project-only');
  assert.equal(byLevel.project.role, 'project_editor');
  assert.equal(byLevel.project.projectId, tree.projectId);
  assert.equal(byLevel.project.workspaceId, tree.workspaceId);
  assert.equal(byLevel.project.organizationId, tree.organizationId);
  assert.ok(byLevel.project.projectName && byLevel.project.workspaceName && byLevel.project.organizationName);
  for (const x of all.items) assert.equal('passwordHash' in x || 'password_hash' in x, false);
});

test('POST /api/system/users creates an account with a one-time password; audited without it', async (t) => {
  const s = await startTestServer(t);
  const admin = await systemAdmin(s);
  const r = await s.call('POST', '/api/system/users', { token: admin.token, body: { email: 'New@Example.test', name: 'New', isSystemAdmin: false } });
  assert.equal(r.status, 201, r.text);
  const { user, initialPassword } = r.body;
  assert.match(user.id, /^usr_/);
  assert.equal(user.email, 'New@Example.test');
  assert.equal(user.status, 'active');
  assert.equal(user.passwordChangeRequired, true);
  assert.equal(user.activeSessions, 0);
  assert.deepEqual(user.memberships, []);
  assert.equal(typeof initialPassword, 'string');
  assert.ok(initialPassword.length >= 10);

  const first = await s.call('POST', '/api/auth/login', { body: { email: 'new@example.test', password: initialPassword } });
  assert.equal(first.status, 200, first.text);
  assert.equal(first.body.passwordChangeRequired, true);
  assert.equal((await s.call('GET', '/api/context', { token: first.body.token })).body.error.code, 'password_change_required');

  const dup = await s.call('POST', '/api/system/users', { token: admin.token, body: { email: 'new@EXAMPLE.test', name: 'Again' } });
  assert.equal(dup.status, 409);
  assert.equal(dup.body.error.code, 'email_already_registered');
  const withPassword = await s.call('POST', '/api/system/users', { token: admin.token, body: { email: 'p@example.test', name: 'P', password: 'chosen by admin' } });
  assert.equal(withPassword.status, 422, 'the administrator never chooses the password');
  assert.equal(withPassword.body.error.details.fields.password, 'is not a known field');

  const rows = await audit(s, 'user.created', user.id);
  assert.equal(rows.length, 1);
  assert.equal(rows[0].actor_user_id, admin.user.id);
  assert.doesNotMatch(JSON.stringify(await s.db.all('SELECT * FROM audit_log')), new RegExp(initialPassword));
});

test('suspension revokes every session at once; reactivation lets the user log in again', async (t) => {
  const s = await startTestServer(t);
  const admin = await systemAdmin(s);
  const m = await member(s, 'writer');
  const second = await login(s, m.user);
  assert.equal(await contextStatus(s, m.token), 200);

  const r = await s.call('PATCH', `/api/system/users/${m.user.id}`, { token: admin.token, body: { status: 'suspended' } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.status, 'suspended');
  assert.equal(r.body.activeSessions, 0);
  assert.equal(await contextStatus(s, m.token), 401, 'the very next request');
  assert.equal(await contextStatus(s, second), 401);
  const refused = await s.call('POST', '/api/auth/login', { body: { email: m.user.email, password: m.user.password } });
  assert.equal(refused.status, 403);
  assert.equal(refused.body.error.code, 'account_suspended');
  const rows = await audit(s, 'user.suspended', m.user.id);
  assert.equal(rows.length, 1);
  assert.equal(JSON.parse(rows[0].metadata).sessionsRevoked, 2);
  assert.equal(rows[0].actor_user_id, admin.user.id);

  const empty = await s.call('PATCH', `/api/system/users/${m.user.id}`, { token: admin.token, body: {} });
  assert.equal(empty.status, 422);
  const bad = await s.call('PATCH', `/api/system/users/${m.user.id}`, { token: admin.token, body: { status: 'deleted' } });
  assert.equal(bad.status, 422);

  const back = await s.call('PATCH', `/api/system/users/${m.user.id}`, { token: admin.token, body: { status: 'active' } });
  assert.equal(back.status, 200, back.text);
  assert.equal(back.body.status, 'active');
  assert.equal(await contextStatus(s, await login(s, m.user)), 200);
  assert.equal((await audit(s, 'user.activated', m.user.id)).length, 1);
});

test('refused with 409 and nothing changed: cannot_suspend_self, last_system_admin, only_organization_owner', async (t) => {
  const s = await startTestServer(t);
  const admin = await systemAdmin(s);
  const path = (id: string) => `/api/system/users/${id}`;
  const auditCount = async () => (await s.db.get<any>('SELECT count(*) AS n FROM audit_log')).n;

  let before = await auditCount();
  const self = await s.call('PATCH', path(admin.user.id), { token: admin.token, body: { status: 'suspended' } });
  assert.equal(self.status, 409);
  assert.equal(self.body.error.code, 'cannot_suspend_self');
  const demoteSelf = await s.call('PATCH', path(admin.user.id), { token: admin.token, body: { isSystemAdmin: false } });
  assert.equal(demoteSelf.status, 409);
  assert.equal(demoteSelf.body.error.code, 'last_system_admin');
  assert.equal((await userRow(s, admin.user.id)).status, 'active');
  assert.equal((await userRow(s, admin.user.id)).is_system_admin, 1);
  assert.equal(await contextStatus(s, admin.token), 200, 'sessions untouched');
  assert.equal(await auditCount(), before, 'nothing audited as done');

  // The local operator (no user of its own) may not suspend the last system administrator either.
  await assert.rejects(async () => await updateUser(s.operator(), admin.user.id, { status: 'suspended' }),
    (err: unknown) => err instanceof AppError && err.status === 409 && err.code === 'last_system_admin');
  assert.equal((await userRow(s, admin.user.id)).status, 'active');

  // A second administrator: now one of them may be suspended, or lose the identity.
  const other = await systemAdmin(s);
  const demoted = await s.call('PATCH', path(admin.user.id), { token: other.token, body: { isSystemAdmin: false } });
  assert.equal(demoted.status, 200, demoted.text);
  assert.equal(demoted.body.isSystemAdmin, false);
  assert.equal(await contextStatus(s, admin.token), 401, 'removing the identity revokes the sessions');
  const last = await s.call('PATCH', path(other.user.id), { token: other.token, body: { isSystemAdmin: false } });
  assert.equal(last.body.error.code, 'last_system_admin');

  // The only active owner of an organization.
  const owner = await member(s, 'org_owner');
  const org2 = await makeOrg(s, { ownerUserId: owner.user.id });
  before = await auditCount();
  const only = await s.call('PATCH', path(owner.user.id), { token: other.token, body: { status: 'suspended' } });
  assert.equal(only.status, 409);
  assert.equal(only.body.error.code, 'only_organization_owner');
  assert.deepEqual(only.body.error.details.organizationIds.sort(), [owner.tree.organizationId, org2.id].sort());
  assert.equal((await userRow(s, owner.user.id)).status, 'active');
  assert.equal(await contextStatus(s, owner.token), 200);
  assert.equal(await auditCount(), before);

  // A suspended co-owner does not count; an active one does.
  const coOwner = await makeUser(s);
  await grant(s, coOwner.id, 'organization', owner.tree.organizationId, 'org_owner');
  await grant(s, coOwner.id, 'organization', org2.id, 'org_owner');
  assert.equal((await s.call('PATCH', path(coOwner.id), { token: other.token, body: { status: 'suspended' } })).status, 200);
  assert.equal((await s.call('PATCH', path(owner.user.id), { token: other.token, body: { status: 'suspended' } })).body.error.code, 'only_organization_owner');
  assert.equal((await s.call('PATCH', path(coOwner.id), { token: other.token, body: { status: 'active' } })).status, 200);
  const ok = await s.call('PATCH', path(owner.user.id), { token: other.token, body: { status: 'suspended' } });
  assert.equal(ok.status, 200, ok.text);
  assert.equal(await contextStatus(s, owner.token), 401);
});

test('granting and removing the system administrator identity is audited; removal revokes sessions', async (t) => {
  const s = await startTestServer(t);
  const admin = await systemAdmin(s);
  const m = await member(s, 'org_admin');
  assert.equal((await s.call('GET', '/api/system/users', { token: m.token })).status, 403);
  const granted = await s.call('PATCH', `/api/system/users/${m.user.id}`, { token: admin.token, body: { isSystemAdmin: true } });
  assert.equal(granted.status, 200, granted.text);
  assert.equal(granted.body.isSystemAdmin, true);
  assert.equal((await s.call('GET', '/api/system/users', { token: m.token })).status, 200, 'effective on the live session');
  assert.equal((await audit(s, 'user.system_admin_granted', m.user.id)).length, 1);

  const removed = await s.call('PATCH', `/api/system/users/${m.user.id}`, { token: admin.token, body: { isSystemAdmin: false } });
  assert.equal(removed.status, 200, removed.text);
  assert.equal(removed.body.isSystemAdmin, false);
  assert.equal(removed.body.activeSessions, 0);
  assert.equal(await contextStatus(s, m.token), 401);
  const rows = await audit(s, 'user.system_admin_removed', m.user.id);
  assert.equal(rows.length, 1);
  assert.equal(JSON.parse(rows[0].metadata).sessionsRevoked, 1);
  assert.equal((await s.call('GET', '/api/system/users', { token: await login(s, m.user) })).status, 403);
});

test('reset-password: a working one-time password that must be changed; old tokens and password refused', async (t) => {
  const s = await startTestServer(t);
  const admin = await systemAdmin(s);
  const m = await member(s, 'producer');
  const r = await s.call('POST', `/api/system/users/${m.user.id}/reset-password`, { token: admin.token });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(Object.keys(r.body), ['initialPassword']);
  const initial = r.body.initialPassword as string;
  assert.ok(initial.length >= 10);
  assert.equal(await contextStatus(s, m.token), 401);
  const old = await s.call('POST', '/api/auth/login', { body: { email: m.user.email, password: m.user.password } });
  assert.equal(old.status, 401);
  assert.equal(old.body.error.code, 'invalid_credentials');

  const fresh = await s.call('POST', '/api/auth/login', { body: { email: m.user.email, password: initial } });
  assert.equal(fresh.status, 200, fresh.text);
  assert.equal(fresh.body.passwordChangeRequired, true);
  const blocked = await s.call('GET', '/api/context', { token: fresh.body.token });
  assert.equal(blocked.status, 403);
  assert.equal(blocked.body.error.code, 'password_change_required');
  const changed = await s.call('POST', '/api/auth/password', { token: fresh.body.token, body: { currentPassword: initial, newPassword: 'my own new password' } });
  assert.equal(changed.status, 200, changed.text);
  assert.equal(await contextStatus(s, changed.body.token), 200);

  const rows = await audit(s, 'user.password_reset', m.user.id);
  assert.equal(rows.length, 1);
  assert.equal(rows[0].actor_user_id, admin.user.id);
  assert.equal(JSON.parse(rows[0].metadata).sessionsRevoked, 1);
  assert.doesNotMatch(JSON.stringify(await s.db.all('SELECT * FROM audit_log')), new RegExp(initial), 'no audit row holds the password');
});

test('reset-mfa turns MFA off and revokes sessions; revoke-sessions answers how many', async (t) => {
  const s = await startTestServer(t);
  const admin = await systemAdmin(s);
  const m = await member(s, 'reviewer');
  await s.db.run('UPDATE users SET mfa_enabled = 1 WHERE id = ?', m.user.id);
  assert.equal((await s.call('GET', `/api/system/users/${m.user.id}`, { token: admin.token })).body.mfaEnabled, true);
  const r = await s.call('POST', `/api/system/users/${m.user.id}/reset-mfa`, { token: admin.token });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.mfaEnabled, false);
  assert.equal((await userRow(s, m.user.id)).mfa_enabled, 0);
  assert.equal(await contextStatus(s, m.token), 401);
  const mfaRows = await audit(s, 'user.mfa_reset', m.user.id);
  assert.equal(mfaRows.length, 1);
  assert.deepEqual(JSON.parse(mfaRows[0].metadata), { wasEnabled: true, sessionsRevoked: 1 });

  const tokens = [await login(s, m.user), await login(s, m.user)];
  const revoked = await s.call('POST', `/api/system/users/${m.user.id}/revoke-sessions`, { token: admin.token });
  assert.equal(revoked.status, 200, revoked.text);
  assert.deepEqual(revoked.body, { revoked: 2 });
  for (const token of tokens) assert.equal(await contextStatus(s, token), 401);
  const rows = await audit(s, 'user.sessions_revoked', m.user.id);
  assert.equal(rows.length, 1);
  assert.equal(JSON.parse(rows[0].metadata).count, 2);
  assert.deepEqual((await s.call('POST', `/api/system/users/${m.user.id}/revoke-sessions`, { token: admin.token })).body, { revoked: 0 });
});

test('POST /api/system/users/:id/memberships checks role level, scope, seats and owners; creates implied memberships', async (t) => {
  const s = await startTestServer(t);
  const admin = await systemAdmin(s);
  const tree = await makeTree(s);
  const u = await makeUser(s);
  const grantVia = (userId: string, body: unknown) => s.call('POST', `/api/system/users/${userId}/memberships`, { token: admin.token, body });
  const membershipCount = async (userId: string) => (await s.db.get<any>('SELECT count(*) AS n FROM memberships WHERE user_id = ?', userId)).n;

  const wrongLevel = await grantVia(u.id, { level: 'workspace', scopeId: tree.workspaceId, role: 'org_owner' });
  assert.equal(wrongLevel.status, 422);
  assert.equal(wrongLevel.body.error.details.fields.role, 'is not a workspace role');
  assert.equal((await grantVia(u.id, { level: 'project', scopeId: tree.projectId, role: 'superuser' })).status, 422);
  assert.equal((await grantVia(u.id, { level: 'workspace', scopeId: tree.workspaceId, role: 'project_guest' })).status, 422);
  const noScope = await grantVia(u.id, { level: 'project', scopeId: tree.workspaceId, role: 'project_viewer' });
  assert.equal(noScope.status, 422);
  assert.equal(noScope.body.error.details.fields.scopeId, 'names no project');
  assert.equal((await grantVia('usr_nobody', { level: 'project', scopeId: tree.projectId, role: 'project_viewer' })).status, 404);
  assert.equal(await membershipCount(u.id), 0);

  const r = await grantVia(u.id, { level: 'project', scopeId: tree.projectId, role: 'project_editor' });
  assert.equal(r.status, 201, r.text);
  assert.equal(r.body.level, 'project');
  assert.equal(r.body.role, 'project_editor');
  assert.equal(r.body.userId, u.id);
  assert.equal(r.body.projectId, tree.projectId);
  assert.equal(r.body.organizationId, tree.organizationId);
  assert.match(r.body.id, /^mem_/);
  assert.ok(r.body.organizationName && r.body.workspaceName && r.body.projectName);
  const detail = (await s.call('GET', `/api/system/users/${u.id}`, { token: admin.token })).body;
  assert.deepEqual(detail.memberships.map((m: any) => [m.level, m.role]), [['organization', 'org_member'], ['workspace', 'project_guest'], ['project', 'project_editor']]);
  const created = await audit(s, 'membership.created', u.id);
  assert.equal(created.length, 3);
  assert.ok(created.every((a) => a.actor_user_id === admin.user.id && a.organization_id === tree.organizationId));

  // Seats: u holds one; a limit of 1 leaves none for a newcomer, but u may get more roles there.
  await s.db.run('UPDATE billing_accounts SET seat_limit = ? WHERE organization_id = ?', 1, tree.organizationId);
  const v = await makeUser(s);
  const full = await grantVia(v.id, { level: 'workspace', scopeId: tree.workspaceId, role: 'writer' });
  assert.equal(full.status, 409, full.text);
  assert.equal(full.body.error.code, 'seat_limit_reached');
  assert.equal(await membershipCount(v.id), 0, 'nothing written');
  const more = await grantVia(u.id, { level: 'workspace', scopeId: tree.workspaceId, role: 'writer' });
  assert.equal(more.status, 201, more.text);
  assert.equal(more.body.accessMode, 'full');

  // Reactivation takes a seat again.
  assert.equal((await s.call('PATCH', `/api/system/users/${u.id}`, { token: admin.token, body: { status: 'suspended' } })).status, 200);
  assert.equal((await grantVia(v.id, { level: 'organization', scopeId: tree.organizationId, role: 'org_member' })).status, 201, 'the freed seat');
  const back = await s.call('PATCH', `/api/system/users/${u.id}`, { token: admin.token, body: { status: 'active' } });
  assert.equal(back.status, 409);
  assert.equal(back.body.error.code, 'seat_limit_reached');
  assert.equal((await userRow(s, u.id)).status, 'suspended');

  // The only owner cannot be demoted through a grant.
  const owner = await makeUser(s);
  const org = await makeOrg(s, { ownerUserId: owner.id });
  const demote = await grantVia(owner.id, { level: 'organization', scopeId: org.id, role: 'org_admin' });
  assert.equal(demote.status, 409);
  assert.equal(demote.body.error.code, 'last_owner');
  assert.equal((await s.db.get<any>("SELECT role FROM memberships WHERE user_id = ? AND level = 'organization'", owner.id)).role, 'org_owner');
});
