// SCIM 2.0 provisioning: the system administrator's directories (token shown once, stored as a
// hash, rotated), and replays of the requests Okta and Microsoft Entra ID send, over real HTTP.
// Users enter only the bound organization; deactivation makes the organization's memberships
// inactive and revokes the sessions; a directory reaches only its own users and organization.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { login, makeOrg, makeTree, makeUser, makeWorkspace, member } from '../helpers/factories.ts';
import { hashPassword } from '../../src/kernel/password.ts';
import { setPassword } from '../../src/directory/users/store.ts';
import { parseUserFilter } from '../../src/identity/scim/filter.ts';
import { applyPatch } from '../../src/identity/scim/patch.ts';
import { ScimError } from '../../src/identity/scim/errors.ts';
import type { ScimUserState } from '../../src/identity/scim/resource.ts';

const ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const base = '/api/system/identity/directory-syncs';

async function systemAdminToken(s: TestServer): Promise<string> {
  return login(s, await makeUser(s, { systemAdmin: true }));
}

interface Dir { id: string; token: string; organizationId: string }

async function makeDirectory(s: TestServer, adminToken: string, body: Record<string, unknown>): Promise<Dir> {
  const r = await s.call('POST', base, { token: adminToken, body: { name: 'Directory', ...body } });
  assert.equal(r.status, 201, r.text);
  return { id: r.body.directory.id, token: r.body.token, organizationId: r.body.directory.organizationId };
}

/** A SCIM request as identity providers send it (application/scim+json). */
function scim(s: TestServer, dir: Pick<Dir, 'id' | 'token'>, method: string, path: string, body?: unknown) {
  return s.call(method, `/scim/v2.0/${dir.id}${path}`, { token: dir.token, body, headers: body === undefined ? {} : { 'content-type': 'application/scim+json' } });
}

const memberships = async (s: TestServer, userId: string) =>
  (await s.db.all<any>('SELECT level, role, status, organization_id, workspace_id FROM memberships WHERE user_id = ? ORDER BY level, created_at', userId))
    .map((m) => `${m.organization_id}/${m.level}/${m.role}/${m.status}`);

const contextStatus = async (s: TestServer, token: string) => (await s.call('GET', '/api/context', { token })).status;

/** Gives an account a known password (a fixture: SCIM accounts have none anybody knows). */
async function withPassword(s: TestServer, userId: string, email: string) {
  const password = 'provisioned user password 42';
  await setPassword(s.db, userId, await hashPassword(password, 10), false, new Date().toISOString());
  return { email, password };
}

function assertScimError(r: { status: number; headers: Headers; body: any }, status: number, scimType?: string) {
  assert.equal(r.status, status, JSON.stringify(r.body));
  assert.match(r.headers.get('content-type') ?? '', /^application\/scim\+json/);
  assert.deepEqual(r.body.schemas, [ERROR]);
  assert.equal(r.body.status, String(status));
  assert.equal(r.body.scimType, scimType);
  assert.equal(typeof r.body.detail, 'string');
}

async function world(t: Parameters<typeof startTestServer>[0], dirBody: Record<string, unknown> = {}) {
  const s = await startTestServer(t);
  const adminToken = await systemAdminToken(s);
  const tree = await makeTree(s);
  const dir = await makeDirectory(s, adminToken, { organizationId: tree.organizationId, defaultRole: 'writer', defaultWorkspaceId: tree.workspaceId, ...dirBody });
  return { s, adminToken, tree, dir };
}

test('directory routes: 401 without a session, 403 for an org owner, a system administrator creates, lists, changes and rotates; the token is shown once and never stored, logged or audited', async (t) => {
  const s = await startTestServer(t);
  const owner = await member(s, 'org_owner');
  const adminToken = await systemAdminToken(s);
  const org = owner.tree.organizationId;
  const routes: Array<[string, string, unknown]> = [
    ['GET', base, undefined],
    ['POST', base, { name: 'Okta', organizationId: org }],
    ['GET', `${base}/dir_x`, undefined],
    ['PATCH', `${base}/dir_x`, { name: 'x' }],
    ['POST', `${base}/dir_x/rotate-token`, undefined],
  ];
  for (const [method, path, body] of routes) {
    assert.equal((await s.call(method, path, { body })).status, 401, `${method} ${path}`);
    const denied = await s.call(method, path, { token: owner.token, body });
    assert.equal(denied.status, 403, `${method} ${path}`);
    assert.equal(denied.body.error.code, 'permission_denied');
  }
  assert.equal((await s.db.get<any>('SELECT count(*) AS n FROM scim_directories')).n, 0);

  const created = await s.call('POST', base, { token: adminToken, body: { name: 'Okta', organizationId: org } });
  assert.equal(created.status, 201, created.text);
  const { directory, token } = created.body;
  assert.match(token, /^scim_[A-Za-z0-9_-]{43}$/);
  assert.equal(directory.organizationId, org);
  assert.equal(directory.defaultRole, 'org_member');
  assert.equal(directory.defaultWorkspaceId, null);
  assert.equal(directory.status, 'active');
  assert.equal(directory.tokenHint, `…${token.slice(-4)}`);
  assert.equal(directory.scimBaseUrl, `${s.url}/scim/v2.0/${directory.id}`);
  assert.deepEqual(directory.users, { total: 0, active: 0 });

  const list = await s.call('GET', `${base}?organizationId=${org}`, { token: adminToken });
  assert.equal(list.status, 200);
  assert.deepEqual(list.body.items.map((d: any) => d.id), [directory.id]);
  assert.equal(list.body.pagination.total, 1);
  assert.equal((await s.call('GET', `${base}?organizationId=org_other`, { token: adminToken })).body.items.length, 0);
  const one = await s.call('GET', `${base}/${directory.id}`, { token: adminToken });
  assert.equal(one.status, 200);
  assert.equal((await s.call('GET', `${base}/dir_nothing`, { token: adminToken })).status, 404);

  const ws = await makeWorkspace(s, org);
  const foreignWs = await makeWorkspace(s);
  const invalid: Array<[Record<string, unknown>, string]> = [
    [{ name: 'x', organizationId: 'org_nothing' }, 'organizationId'],
    [{ name: 'x', organizationId: org, defaultRole: 'writer' }, 'defaultWorkspaceId'],
    [{ name: 'x', organizationId: org, defaultRole: 'writer', defaultWorkspaceId: foreignWs.id }, 'defaultWorkspaceId'],
    [{ name: 'x', organizationId: org, defaultRole: 'org_member', defaultWorkspaceId: ws.id }, 'defaultWorkspaceId'],
    [{ name: 'x', organizationId: org, defaultRole: 'org_owner' }, 'defaultRole'],
    [{ name: 'x', organizationId: org, defaultRole: 'project_editor' }, 'defaultRole'],
  ];
  for (const [body, field] of invalid) {
    const r = await s.call('POST', base, { token: adminToken, body });
    assert.equal(r.status, 422, JSON.stringify(body));
    assert.ok(r.body.error.details.fields[field], `${JSON.stringify(body)}: ${r.text}`);
  }

  const patched = await s.call('PATCH', `${base}/${directory.id}`, { token: adminToken, body: { name: 'Okta EU', defaultRole: 'reviewer', defaultWorkspaceId: ws.id } });
  assert.equal(patched.status, 200, patched.text);
  assert.equal(patched.body.name, 'Okta EU');
  assert.equal(patched.body.defaultRole, 'reviewer');
  assert.equal(patched.body.defaultWorkspaceId, ws.id);
  const back = await s.call('PATCH', `${base}/${directory.id}`, { token: adminToken, body: { defaultRole: 'org_admin' } });
  assert.equal(back.body.defaultWorkspaceId, null, 'an organization role drops the default workspace');
  assert.equal((await s.call('PATCH', `${base}/${directory.id}`, { token: adminToken, body: { organizationId: 'org_x' } })).status, 422, 'the organization is fixed');

  const rotated = await s.call('POST', `${base}/${directory.id}/rotate-token`, { token: adminToken });
  assert.equal(rotated.status, 200);
  assert.notEqual(rotated.body.token, token);
  assert.equal(rotated.body.directory.tokenHint, `…${rotated.body.token.slice(-4)}`);
  assert.ok(rotated.body.directory.tokenRotatedAt);

  const audit = await s.db.all<any>("SELECT action, metadata, organization_id FROM audit_log WHERE action LIKE 'system.identity.directory_%' ORDER BY seq");
  assert.deepEqual(audit.map((a) => a.action), [
    'system.identity.directory_created', 'system.identity.directory_updated', 'system.identity.directory_updated', 'system.identity.directory_token_rotated',
  ]);
  assert.ok(audit.every((a) => a.organization_id === org));
  const stored = JSON.stringify(await s.db.all('SELECT * FROM scim_directories'));
  const answers = [list.text, one.text, patched.text, back.text].join('\n');
  const everything = [JSON.stringify(await s.db.all('SELECT * FROM audit_log')), s.logs.join('\n'), stored, answers].join('\n');
  for (const secret of [token, rotated.body.token]) {
    assert.ok(!everything.includes(secret), 'no token in the database, the audit log, the log or list/GET answers');
    assert.ok(!everything.includes(secret.slice(5, 25)), 'not even a part of it');
  }
});

test('Okta replay: lookup by userName, create, deactivate with a replace without path (memberships inactive, session revoked), reactivate, PUT', async (t) => {
  const { s, dir, tree } = await world(t);
  const other = await makeTree(s);
  const userName = 'Test.User@okta.local';
  const lookup = await scim(s, dir, 'GET', `/Users?filter=${encodeURIComponent('userName eq "test.user@okta.local"')}&startIndex=1&count=100`);
  assert.equal(lookup.status, 200, lookup.text);
  assert.match(lookup.headers.get('content-type') ?? '', /^application\/scim\+json/);
  assert.deepEqual(lookup.body, { schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'], totalResults: 0, startIndex: 1, itemsPerPage: 0, Resources: [] });

  const created = await scim(s, dir, 'POST', '/Users', {
    schemas: [USER], userName, name: { givenName: 'Test', familyName: 'User' },
    emails: [{ primary: true, value: 'test.user@okta.local', type: 'work' }], displayName: 'Test User', locale: 'en-US',
    externalId: '00ujl29u0le5T6Aj10h7', groups: [], password: 'okta-sent-password-1mz050nq', active: true,
  });
  assert.equal(created.status, 201, created.text);
  const u = created.body;
  assert.deepEqual(u.schemas, [USER]);
  assert.match(u.id, /^usr_/);
  assert.equal(u.userName, userName);
  assert.equal(u.externalId, '00ujl29u0le5T6Aj10h7');
  assert.deepEqual(u.name, { givenName: 'Test', familyName: 'User' });
  assert.deepEqual(u.emails, [{ value: 'test.user@okta.local', type: 'work', primary: true }]);
  // A provisioned account has no password (Okta's is ignored): it signs in by SSO or after a reset.
  assert.equal((await s.db.get<{ password_hash: string | null }>('SELECT password_hash FROM users WHERE id = ?', u.id))!.password_hash, null);
  const denied = await s.call('POST', '/api/auth/login', { body: { email: 'test.user@okta.local', password: 'okta-sent-password-1mz050nq' } });
  assert.equal(denied.status, 401);
  assert.equal(u.active, true);
  assert.equal(u.meta.resourceType, 'User');
  assert.equal(u.meta.location, `${s.url}/scim/v2.0/${dir.id}/Users/${u.id}`);
  assert.equal(created.headers.get('location'), u.meta.location);
  assert.ok(u.meta.created && u.meta.lastModified);
  assert.ok(!created.text.includes('okta-sent-password'));

  const account = await s.db.get<any>('SELECT * FROM users WHERE id = ?', u.id);
  assert.equal(account.email, 'test.user@okta.local');
  assert.equal(account.name, 'Test User');
  assert.deepEqual(await memberships(s, u.id), [`${tree.organizationId}/organization/org_member/active`, `${tree.organizationId}/workspace/writer/active`]);
  assert.ok(!(await memberships(s, u.id)).some((m) => m.startsWith(other.organizationId)), 'only the bound organization');

  const found = await scim(s, dir, 'GET', `/Users?filter=${encodeURIComponent('userName eq "TEST.USER@OKTA.LOCAL"')}&startIndex=1&count=100`);
  assert.equal(found.body.totalResults, 1, 'userName compares without regard to case');
  assert.equal(found.body.Resources[0].id, u.id);
  assert.deepEqual((await scim(s, dir, 'GET', `/Users/${u.id}`)).body, u);

  const session = await login(s, await withPassword(s, u.id, 'test.user@okta.local'));
  assert.equal(await contextStatus(s, session), 200);
  const deactivated = await scim(s, dir, 'PATCH', `/Users/${u.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', value: { active: false } }] });
  assert.equal(deactivated.status, 200, deactivated.text);
  assert.equal(deactivated.body.active, false);
  assert.equal(await contextStatus(s, session), 401, 'the session is revoked at once');
  assert.deepEqual(await memberships(s, u.id), [`${tree.organizationId}/organization/org_member/inactive`, `${tree.organizationId}/workspace/writer/inactive`]);
  const fresh = await login(s, { email: 'test.user@okta.local', password: 'provisioned user password 42' });
  assert.equal((await s.call('GET', '/api/context', { token: fresh })).body.organization, null, 'a new login reaches no organization');

  const reactivated = await scim(s, dir, 'PATCH', `/Users/${u.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', value: { active: true } }] });
  assert.equal(reactivated.body.active, true);
  assert.deepEqual(await memberships(s, u.id), [`${tree.organizationId}/organization/org_member/active`, `${tree.organizationId}/workspace/writer/active`]);
  const again = await login(s, { email: 'test.user@okta.local', password: 'provisioned user password 42' });
  assert.equal((await s.call('GET', '/api/context', { token: again })).body.organization.id, tree.organizationId);

  const put = await scim(s, dir, 'PUT', `/Users/${u.id}`, {
    schemas: [USER], id: u.id, userName, name: { givenName: 'Another', familyName: 'User' },
    emails: [{ primary: true, value: 'another.user@okta.local', type: 'work' }], active: true, groups: [], meta: u.meta,
  });
  assert.equal(put.status, 200, put.text);
  assert.deepEqual(put.body.name, { givenName: 'Another', familyName: 'User' });
  assert.equal(put.body.displayName, undefined, 'PUT clears what it leaves out');
  assert.equal(put.body.externalId, undefined);
  assert.equal(put.body.active, true);
  const renamed = await s.db.get<any>('SELECT email, name FROM users WHERE id = ?', u.id);
  assert.deepEqual({ ...renamed }, { email: 'another.user@okta.local', name: 'Another User' }, 'an account the directory created follows it');

  const actions = await s.db.all<any>("SELECT action, actor_type, actor_name, organization_id FROM audit_log WHERE action LIKE 'scim.%' ORDER BY seq");
  assert.deepEqual(actions.map((a) => a.action), ['scim.user_created', 'scim.user_deactivated', 'scim.user_reactivated', 'scim.user_updated']);
  assert.ok(actions.every((a) => a.actor_type === 'system' && a.actor_name.includes(dir.id) && a.organization_id === tree.organizationId));
  const everything = JSON.stringify(await s.db.all('SELECT * FROM audit_log')) + s.logs.join('\n');
  assert.ok(!everything.includes(dir.token) && !everything.includes('okta-sent-password'));
});

test('Microsoft Entra ID replay: externalId, "Replace" with "False"/"True", value-filter paths, Add of an unkept attribute, DELETE twice', async (t) => {
  const { s, dir, tree } = await world(t, { defaultRole: 'org_member', defaultWorkspaceId: null });
  // An account that exists already (its own password) is linked, not created again.
  const existing = await makeUser(s, { email: 'alice@contoso.example', name: 'Alice Original' });
  const session = await login(s, existing);

  const probe = await scim(s, dir, 'GET', `/Users?filter=${encodeURIComponent('userName eq "alice@contoso.example"')}`);
  assert.equal(probe.body.totalResults, 0);
  const created = await scim(s, dir, 'POST', '/Users', {
    schemas: [USER, 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User'],
    externalId: '0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef', userName: 'alice@contoso.example', active: true,
    emails: [{ primary: true, type: 'work', value: 'alice@contoso.example' }], meta: { resourceType: 'User' },
    name: { formatted: 'Alice Liddell', familyName: 'Liddell', givenName: 'Alice' }, roles: [],
    'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User': { department: 'Story' },
  });
  assert.equal(created.status, 201, created.text);
  const id = created.body.id;
  assert.equal(id, existing.id, 'linked to the account with that e-mail address');
  assert.deepEqual(await memberships(s, id), [`${tree.organizationId}/organization/org_member/active`]);
  assert.equal((await s.db.get<any>("SELECT count(*) AS n FROM audit_log WHERE action = 'scim.user_linked'")).n, 1);

  const byExternal = await scim(s, dir, 'GET', `/Users?filter=${encodeURIComponent('externalId eq "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef"')}`);
  assert.deepEqual(byExternal.body.Resources.map((r: any) => r.id), [id]);

  const off = await scim(s, dir, 'PATCH', `/Users/${id}`, { schemas: [PATCH_OP], Operations: [{ op: 'Replace', path: 'active', value: 'False' }] });
  assert.equal(off.status, 200, off.text);
  assert.equal(off.body.active, false);
  assert.equal(await contextStatus(s, session), 401);
  assert.deepEqual(await memberships(s, id), [`${tree.organizationId}/organization/org_member/inactive`]);
  const on = await scim(s, dir, 'PATCH', `/Users/${id}`, { Operations: [{ op: 'Replace', path: 'active', value: 'True' }] });
  assert.equal(on.body.active, true);
  assert.deepEqual(await memberships(s, id), [`${tree.organizationId}/organization/org_member/active`]);

  const patched = await scim(s, dir, 'PATCH', `/Users/${id}`, {
    schemas: [PATCH_OP],
    Operations: [
      { op: 'Replace', path: 'emails[type eq "work"].value', value: 'alice.liddell@contoso.example' },
      { op: 'Replace', path: 'name.givenName', value: 'Alicia' },
      { op: 'Replace', path: 'name.familyName', value: 'Liddell-Hart' },
      { op: 'Add', path: 'displayName', value: 'Alicia L.' },
      { op: 'Add', path: 'title', value: 'Writer' },
      { op: 'Add', path: 'emails[type eq "home"].value', value: 'alice@home.example' },
      { op: 'Replace', path: 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department', value: 'Scripts' },
    ],
  });
  assert.equal(patched.status, 200, patched.text);
  assert.deepEqual(patched.body.emails, [
    { value: 'alice.liddell@contoso.example', type: 'work', primary: true },
    { value: 'alice@home.example', type: 'home', primary: false },
  ]);
  assert.deepEqual(patched.body.name, { givenName: 'Alicia', familyName: 'Liddell-Hart', formatted: 'Alice Liddell' });
  assert.equal(patched.body.displayName, 'Alicia L.');
  assert.equal(patched.body.title, undefined, 'attributes the service does not keep are ignored');
  assert.deepEqual({ ...await s.db.get<any>('SELECT email, name FROM users WHERE id = ?', id) }, { email: 'alice@contoso.example', name: 'Alice Original' },
    'a linked account keeps its own address and name');
  const removed = await scim(s, dir, 'PATCH', `/Users/${id}`, { Operations: [{ op: 'Remove', path: 'emails[type eq "home"]' }, { op: 'remove', path: 'displayName' }] });
  assert.deepEqual(removed.body.emails.map((e: any) => e.type), ['work']);
  assert.equal(removed.body.displayName, undefined);

  const session2 = await login(s, existing);
  const del = await scim(s, dir, 'DELETE', `/Users/${id}`);
  assert.equal(del.status, 204);
  assert.equal(await contextStatus(s, session2), 401);
  assert.deepEqual(await memberships(s, id), [`${tree.organizationId}/organization/org_member/inactive`]);
  assertScimError(await scim(s, dir, 'DELETE', `/Users/${id}`), 404);
  assertScimError(await scim(s, dir, 'GET', `/Users/${id}`), 404);
  assert.equal((await scim(s, dir, 'GET', '/Users')).body.totalResults, 0);
  assert.ok(await s.db.get('SELECT id FROM users WHERE id = ?', id), 'the account itself stays');

  // Provisioned again after the DELETE: linked again, its memberships restored.
  const back = await scim(s, dir, 'POST', '/Users', { schemas: [USER], userName: 'alice@contoso.example', emails: [{ value: 'alice@contoso.example', type: 'work', primary: true }] });
  assert.equal(back.status, 201, back.text);
  assert.deepEqual(await memberships(s, id), [`${tree.organizationId}/organization/org_member/active`]);
});

test('a directory reaches only its own users and organization: foreign tokens, foreign users, sessions, other directories of the organization, disabled directories', async (t) => {
  const { s, adminToken, dir: a, tree } = await world(t, { defaultRole: 'org_member', defaultWorkspaceId: null });
  const orgB = await makeOrg(s);
  const b = await makeDirectory(s, adminToken, { organizationId: orgB.id });
  const userA = (await scim(s, a, 'POST', '/Users', { userName: 'ann@a.example', emails: [{ value: 'ann@a.example' }] })).body;
  const userB = (await scim(s, b, 'POST', '/Users', { userName: 'bob@b.example', emails: [{ value: 'bob@b.example' }] })).body;

  const noAuth = await s.call('GET', `/scim/v2.0/${a.id}/Users`);
  assertScimError(noAuth, 401);
  assert.match(noAuth.headers.get('www-authenticate') ?? '', /^Bearer/);
  assertScimError(await s.call('GET', `/scim/v2.0/${a.id}/Users`, { token: 'scim_' + 'x'.repeat(43) }), 401);
  assertScimError(await s.call('GET', `/scim/v2.0/${a.id}/Users`, { token: adminToken }), 401, undefined);

  for (const [method, path, body] of [
    ['GET', '/Users', undefined], ['GET', `/Users/${userA.id}`, undefined], ['POST', '/Users', { userName: 'eve@b.example' }],
    ['PATCH', `/Users/${userA.id}`, { Operations: [{ op: 'replace', path: 'active', value: false }] }], ['DELETE', `/Users/${userA.id}`, undefined],
  ] as const) {
    assertScimError(await scim(s, { id: a.id, token: b.token }, method, path, body), 401);
  }
  const denied = await s.db.all<any>("SELECT * FROM audit_log WHERE action = 'access.denied' AND target_type = 'scim_directory'");
  assert.equal(denied.length, 5);
  assert.equal(denied[0].organization_id, tree.organizationId);
  assert.equal(JSON.parse(denied[0].metadata).tokenDirectoryId, b.id);

  for (const [method, body] of [
    ['GET', undefined], ['PUT', { userName: 'bob@b.example', emails: [{ value: 'bob@b.example' }] }],
    ['PATCH', { Operations: [{ op: 'replace', path: 'active', value: false }] }], ['DELETE', undefined],
  ] as const) {
    assertScimError(await scim(s, a, method, `/Users/${userB.id}`, body), 404);
  }
  assert.deepEqual(await memberships(s, userB.id), [`${orgB.id}/organization/org_member/active`], 'B\u2019s user untouched');

  // The same person provisioned by B too: a second organization, deactivated there alone.
  const annInB = await scim(s, b, 'POST', '/Users', { userName: 'ann.b', emails: [{ value: 'ann@a.example', primary: true }] });
  assert.equal(annInB.body.id, userA.id);
  await scim(s, b, 'PATCH', `/Users/${userA.id}`, { Operations: [{ op: 'replace', path: 'active', value: false }] });
  assert.deepEqual((await memberships(s, userA.id)).sort(), [`${orgB.id}/organization/org_member/inactive`, `${tree.organizationId}/organization/org_member/active`].sort());
  assert.equal((await scim(s, a, 'GET', `/Users/${userA.id}`)).body.active, true);
  // ... but a second directory of the same organization cannot take it over.
  const a2 = await makeDirectory(s, adminToken, { organizationId: tree.organizationId });
  assertScimError(await scim(s, a2, 'POST', '/Users', { userName: 'ann2', emails: [{ value: 'ANN@a.example' }] }), 409, 'uniqueness');

  // The only owner of the organization is not deactivated by a directory.
  const owner = await makeUser(s, { email: 'owner@a.example' });
  await s.call('POST', `/api/system/users/${owner.id}/memberships`, { token: adminToken, body: { level: 'organization', scopeId: tree.organizationId, role: 'org_owner' } });
  const linkedOwner = await scim(s, a, 'POST', '/Users', { userName: 'owner@a.example' });
  assert.equal(linkedOwner.status, 201, linkedOwner.text);
  assertScimError(await scim(s, a, 'PATCH', `/Users/${owner.id}`, { Operations: [{ op: 'replace', path: 'active', value: false }] }), 409);
  assert.deepEqual(await memberships(s, owner.id), [`${tree.organizationId}/organization/org_owner/active`], 'kept its role, nothing changed');

  const disabled = await s.call('PATCH', `${base}/${a.id}`, { token: adminToken, body: { status: 'disabled' } });
  assert.equal(disabled.body.status, 'disabled');
  assertScimError(await scim(s, a, 'GET', '/Users'), 403);
  await s.call('PATCH', `${base}/${a.id}`, { token: adminToken, body: { status: 'active' } });
  assert.equal((await scim(s, a, 'GET', '/Users')).status, 200);
});

test('token rotation: the old token is 401 at once, the new one works', async (t) => {
  const { s, adminToken, dir } = await world(t);
  assert.equal((await scim(s, dir, 'GET', '/Users')).status, 200);
  const r = await s.call('POST', `${base}/${dir.id}/rotate-token`, { token: adminToken });
  assertScimError(await scim(s, dir, 'GET', '/Users'), 401);
  assert.equal((await scim(s, { id: dir.id, token: r.body.token }, 'GET', '/Users')).status, 200);
  const everything = JSON.stringify(await s.db.all('SELECT * FROM audit_log')) + s.logs.join('\n');
  assert.ok(!everything.includes(dir.token) && !everything.includes(r.body.token));
});

test('paging with startIndex and count, filters, uniqueness and the SCIM error answers', async (t) => {
  const { s, dir } = await world(t);
  const ids: string[] = [];
  for (let i = 1; i <= 5; i++) {
    const r = await scim(s, dir, 'POST', '/Users', { userName: `user${i}@page.example`, externalId: `ext-${i}`, displayName: `Person ${i}`, emails: [{ value: `User${i}@Page.example`, type: 'work' }] });
    assert.equal(r.status, 201, r.text);
    ids.push(r.body.id);
  }
  const page = async (q: string) => (await scim(s, dir, 'GET', `/Users?${q}`)).body;
  const p1 = await page('startIndex=1&count=2');
  assert.deepEqual([p1.totalResults, p1.startIndex, p1.itemsPerPage, p1.Resources.map((r: any) => r.id)], [5, 1, 2, ids.slice(0, 2)]);
  const p3 = await page('startIndex=5&count=2');
  assert.deepEqual([p3.startIndex, p3.itemsPerPage, p3.Resources.map((r: any) => r.id)], [5, 1, ids.slice(4)]);
  assert.equal((await page('startIndex=0&count=1')).startIndex, 1, 'startIndex below 1 is 1');
  assert.deepEqual([(await page('count=0')).totalResults, (await page('count=0')).Resources.length], [5, 0]);
  assert.equal((await page('count=-3')).itemsPerPage, 0);
  assert.equal((await page('count=100000')).itemsPerPage, 5);
  assert.equal((await page('startIndex=9')).itemsPerPage, 0);

  const filtered = async (f: string) => (await page(`filter=${encodeURIComponent(f)}`)).Resources.map((r: any) => r.userName);
  assert.deepEqual(await filtered('userName sw "USER1"'), ['user1@page.example']);
  assert.deepEqual((await filtered('username co "@page."')).length, 5);
  assert.deepEqual(await filtered('externalId eq "ext-3"'), ['user3@page.example']);
  assert.deepEqual(await filtered('externalId eq "EXT-3"'), [], 'externalId is case-exact');
  assert.deepEqual(await filtered(`id eq "${ids[1]}"`), ['user2@page.example']);
  assert.deepEqual(await filtered('emails.value eq "USER4@page.example"'), ['user4@page.example']);
  assert.deepEqual(await filtered('displayName eq "person 5"'), ['user5@page.example']);
  assert.deepEqual(await filtered(`${USER}:userName EQ "user2@page.example"`), ['user2@page.example']);
  assert.deepEqual(await filtered('userName eq "x\\" OR 1=1 --"'), [], 'a value is only a value');
  // U+0000 (escaped; as it is, a control character is no JSON string): no stored text holds it, so it matches no user, on either engine.
  for (const nul of ['userName co "user1\\u0000"', 'externalId eq "ext-1\\u0000"', 'emails.value sw "\\u0000"']) assert.deepEqual(await filtered(nul), [], nul);
  for (const bad of ['userName ne "x"', 'userName eq x', 'userName eq "a" and userName eq "b"', 'title eq "x"', '(userName eq "x")',
    'userName pr', 'userName eq', 'emails[type eq "work"].value eq "x"', 'active eq true', 'userName gt "a"', 'userName eq "\\q"', 'userName eq "\u0000"']) {
    assertScimError(await scim(s, dir, 'GET', `/Users?filter=${encodeURIComponent(bad)}`), 400, 'invalidFilter');
  }
  assertScimError(await scim(s, dir, 'GET', '/Users?startIndex=abc'), 400, 'invalidValue');
  assertScimError(await scim(s, dir, 'POST', '/Users', { userName: 'USER1@page.example' }), 409, 'uniqueness');
  assertScimError(await scim(s, dir, 'POST', '/Users', { userName: 'new@page.example', externalId: 'ext-2' }), 409, 'uniqueness');
  assertScimError(await scim(s, dir, 'PATCH', `/Users/${ids[0]}`, { Operations: [{ op: 'replace', path: 'userName', value: 'user2@page.example' }] }), 409, 'uniqueness');
  assertScimError(await scim(s, dir, 'POST', '/Users', { userName: 'no e-mail at all' }), 400, 'invalidValue');
  assertScimError(await scim(s, dir, 'POST', '/Users', {}), 400, 'invalidValue');
  assertScimError(await scim(s, dir, 'POST', '/Users', { userName: 'x@y.example', active: 'maybe' }), 400, 'invalidValue');
  // No attribute the service keeps may hold U+0000 (PostgreSQL's text cannot): 400 invalidValue on either engine.
  const n = 'nul@page.example';
  for (const user of [{ userName: 'nul\u0000@page.example' }, { userName: n, displayName: 'N\u0000' }, { userName: n, externalId: '\u0000' },
    { userName: n, emails: [{ value: n, type: 'w\u0000rk' }] }, { userName: n, name: { givenName: '\u0000' } }]) assertScimError(await scim(s, dir, 'POST', '/Users', user), 400, 'invalidValue');
  assertScimError(await scim(s, dir, 'PATCH', `/Users/${ids[0]}`, { Operations: [{ op: 'replace', path: 'displayName', value: 'P\u0000' }] }), 400, 'invalidValue');
  const broken = await s.call('POST', `/scim/v2.0/${dir.id}/Users`, { token: dir.token, raw: '{"userName":', headers: { 'content-type': 'application/scim+json' } });
  assertScimError(broken, 400, 'invalidSyntax');
  assertScimError(await scim(s, dir, 'PATCH', `/Users/${ids[0]}`, { Operations: [{ op: 'move', path: 'userName' }] }), 400, 'invalidSyntax');
  assertScimError(await scim(s, dir, 'PATCH', `/Users/${ids[0]}`, { Operations: [] }), 400, 'invalidSyntax');
  assertScimError(await scim(s, dir, 'PATCH', `/Users/${ids[0]}`, { Operations: [{ op: 'remove' }] }), 400, 'noTarget');
  assertScimError(await scim(s, dir, 'PATCH', `/Users/${ids[0]}`, { Operations: [{ op: 'replace', path: 'emails[type eq "work"' }] }), 400, 'invalidPath');
  assertScimError(await scim(s, dir, 'PATCH', `/Users/${ids[0]}`, { Operations: [{ op: 'replace', path: 'id', value: 'usr_x' }] }), 400, 'mutability');
  assertScimError(await scim(s, dir, 'PATCH', `/Users/usr_nobody`, { Operations: [{ op: 'replace', path: 'active', value: false }] }), 404);
  assert.equal((await scim(s, dir, 'GET', `/Users/${ids[0]}`)).body.userName, 'user1@page.example', 'a refused PATCH changes nothing');
  // Provisioned inactive: an account without memberships; activation grants the directory's defaults.
  const dormant = await scim(s, dir, 'POST', '/Users', { userName: 'dormant@page.example', active: false });
  assert.equal(dormant.body.active, false);
  assert.deepEqual(await memberships(s, dormant.body.id), []);
  await scim(s, dir, 'PATCH', `/Users/${dormant.body.id}`, { Operations: [{ op: 'replace', path: 'active', value: true }] });
  assert.deepEqual((await memberships(s, dormant.body.id)).map((m) => m.split('/').slice(1).join('/')), ['organization/org_member/active', 'workspace/writer/active']);
});

test('discovery: ServiceProviderConfig, ResourceTypes and Schemas', async (t) => {
  const { s, dir } = await world(t);
  const spc = await scim(s, dir, 'GET', '/ServiceProviderConfig');
  assert.equal(spc.status, 200);
  assert.match(spc.headers.get('content-type') ?? '', /^application\/scim\+json/);
  assert.deepEqual(spc.body.schemas, ['urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig']);
  assert.equal(spc.body.patch.supported, true);
  assert.equal(spc.body.filter.supported, true);
  assert.equal(spc.body.bulk.supported, false);
  assert.equal(spc.body.authenticationSchemes[0].type, 'oauthbearertoken');
  const types = await scim(s, dir, 'GET', '/ResourceTypes');
  assert.equal(types.body.totalResults, 1);
  assert.deepEqual([types.body.Resources[0].id, types.body.Resources[0].endpoint, types.body.Resources[0].schema], ['User', '/Users', USER]);
  assert.equal((await scim(s, dir, 'GET', '/ResourceTypes/User')).body.name, 'User');
  assertScimError(await scim(s, dir, 'GET', '/ResourceTypes/Group'), 404);
  const schemas = await scim(s, dir, 'GET', '/Schemas');
  assert.equal(schemas.body.Resources[0].id, USER);
  assert.deepEqual(schemas.body.Resources[0].attributes.map((a: any) => a.name), ['userName', 'name', 'displayName', 'emails', 'active']);
  assert.equal((await scim(s, dir, 'GET', `/Schemas/${USER}`)).body.id, USER);
  assertScimError(await s.call('GET', `/scim/v2.0/${dir.id}/ServiceProviderConfig`), 401);
});

test('every request under /scim answers in SCIM\u2019s error shape: Groups, Bulk, Me and .search, unknown paths, other methods, bad bodies, auth', async (t) => {
  const { s, dir } = await world(t);
  const raw = (method: string, path: string, opts: { raw?: string; headers?: Record<string, string>; token?: string } = {}) =>
    s.call(method, `/scim/v2.0/${dir.id}${path}`, { token: dir.token, ...opts });
  // Okta's and Entra's group requests: Groups are not supported, and the answer says so in SCIM's words.
  const groups = await scim(s, dir, 'GET', `/Groups?filter=${encodeURIComponent('displayName eq "Writers"')}&excludedAttributes=members`);
  assertScimError(groups, 404);
  assert.match(groups.body.detail, /Groups are not supported/);
  assertScimError(await scim(s, dir, 'POST', '/Groups', { schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'], displayName: 'Writers', members: [] }), 404);
  assertScimError(await scim(s, dir, 'PATCH', '/Groups/grp_1', { schemas: [PATCH_OP], Operations: [{ op: 'add', path: 'members', value: [{ value: 'usr_x' }] }] }), 404);
  assertScimError(await s.call('GET', `/scim/v2.0/${dir.id}/Groups`), 404);
  // Operations this provider does not implement (RFC 7644 sections 3.4.3, 3.7, 3.11): 501.
  assertScimError(await scim(s, dir, 'POST', '/Bulk', { schemas: ['urn:ietf:params:scim:api:messages:2.0:BulkRequest'], Operations: [] }), 501);
  assertScimError(await scim(s, dir, 'GET', '/Me'), 501);
  assertScimError(await scim(s, dir, 'POST', '/Users/.search', { schemas: ['urn:ietf:params:scim:api:messages:2.0:SearchRequest'], filter: 'userName eq "x"' }), 501);
  assertScimError(await scim(s, dir, 'POST', '/.search', { filter: 'userName eq "x"' }), 501);
  // Unknown paths anywhere under /scim, and other methods of known paths (405 with Allow).
  for (const path of ['/scim', '/scim/v2.0', `/scim/v2.0/${dir.id}`, `/scim/v2.0/${dir.id}/Nothing/here`, '/scim/v1/Users', `/scim/v2.0/${dir.id}/Users/x/y`]) {
    assertScimError(await s.call('GET', path, { token: dir.token }), 404);
  }
  const wrong = await scim(s, dir, 'DELETE', '/Users');
  assertScimError(wrong, 405);
  assert.equal(wrong.headers.get('allow'), 'GET, POST');
  assertScimError(await scim(s, dir, 'PUT', '/ServiceProviderConfig', {}), 405);
  assertScimError(await scim(s, dir, 'POST', '/Users/usr_x', {}), 405);
  // Bodies: not JSON, another media type, too large; errors of the authentication.
  assertScimError(await raw('POST', '/Users', { raw: 'userName=x', headers: { 'content-type': 'text/plain' } }), 415);
  assertScimError(await raw('PATCH', '/Users/usr_x', { raw: '[', headers: { 'content-type': 'application/scim+json' } }), 400, 'invalidSyntax');
  const big = await raw('POST', '/Users', { raw: JSON.stringify({ userName: 'x'.repeat(s.config.maxBodyBytes) }), headers: { 'content-type': 'application/scim+json' } });
  assertScimError(big, 413);
  assertScimError(await raw('GET', '/Users', { token: undefined, headers: { authorization: 'Basic dXNlcjpwYXNz' } }), 401);
  assert.equal((await s.db.get<any>('SELECT count(*) AS n FROM scim_users')).n, 0, 'nothing was provisioned');
  // Discovery says the same: User alone, no bulk.
  assert.deepEqual((await scim(s, dir, 'GET', '/ResourceTypes')).body.Resources.map((r: any) => r.name), ['User']);
  assert.equal((await scim(s, dir, 'GET', '/ServiceProviderConfig')).body.bulk.supported, false);
  // ... and so does the OpenAPI document: SCIM answers and SCIM errors as application/scim+json.
  const doc = (await s.call('GET', '/api/openapi.json')).body;
  const users = doc.paths['/scim/v2.0/{directoryId}/Users'].get.responses;
  assert.deepEqual(Object.keys(users['200'].content), ['application/scim+json']);
  for (const status of ['400', '401', '403', '404']) assert.deepEqual(users[status].content['application/scim+json'].schema, { $ref: '#/components/schemas/ScimError' }, status);
  assert.deepEqual(doc.components.schemas.ScimError.required, ['schemas', 'status', 'detail']);
});

test('attributes and excludedAttributes pick what each User carries, on every read and write that answers Users (Okta- and Entra-shaped)', async (t) => {
  const { s, dir } = await world(t);
  const created = await scim(s, dir, 'POST', '/Users?attributes=userName', {
    schemas: [USER], userName: 'Ann.Lee@okta.local', externalId: 'okta-1', name: { givenName: 'Ann', familyName: 'Lee' }, displayName: 'Ann Lee',
    emails: [{ primary: true, value: 'ann.lee@okta.local', type: 'work' }, { value: 'ann@home.example', type: 'home' }], active: true,
  });
  assert.equal(created.status, 201, created.text);
  const id = created.body.id;
  assert.deepEqual(created.body, { schemas: [USER], id, userName: 'Ann.Lee@okta.local' });
  assert.equal(created.headers.get('location'), `${s.url}/scim/v2.0/${dir.id}/Users/${id}`, 'Location stays');
  const full = (await scim(s, dir, 'GET', `/Users/${id}`)).body;
  const get = async (q: string) => {
    const r = await scim(s, dir, 'GET', `/Users/${id}?${q}`);
    assert.equal(r.status, 200, r.text);
    return r.body;
  };
  // Sub-attributes, any case, with the core schema URN; id and schemas always.
  assert.deepEqual(await get(`attributes=${encodeURIComponent('NAME.givenName, Emails.Value,meta.location,urn:ietf:params:scim:schemas:core:2.0:User:active')}`), {
    schemas: [USER], id, name: { givenName: 'Ann' }, emails: [{ value: 'ann.lee@okta.local' }, { value: 'ann@home.example' }], active: true,
    meta: { location: full.meta.location },
  });
  assert.deepEqual(await get('attributes=emails.type,emails'), { schemas: [USER], id, emails: full.emails }, 'the whole attribute wins over a sub-attribute');
  assert.deepEqual(await get('attributes=title,urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department'), { schemas: [USER], id }, 'unkept attributes select nothing');
  assert.deepEqual(await get('attributes=id,schemas'), { schemas: [USER], id });
  // excludedAttributes: everything else; id and schemas cannot be excluded.
  const { emails: _e, meta: _m, ...rest } = full;
  assert.deepEqual(await get('excludedAttributes=emails,META,name.familyName,id,schemas'), { ...rest, name: { givenName: 'Ann' } });
  assert.deepEqual((await get('excludedAttributes=emails.primary,emails.type')).emails, [{ value: 'ann.lee@okta.local' }, { value: 'ann@home.example' }]);
  assert.equal((await get('excludedAttributes=name.givenName,name.familyName')).name, undefined, 'a complex attribute left empty is left out');
  assert.deepEqual(await get('attributes='), full, 'an empty parameter is no parameter');

  // Lists and filters (Okta's lookup, Entra's externalId probe): each resource, the envelope intact.
  const okta = await scim(s, dir, 'GET', `/Users?filter=${encodeURIComponent('userName eq "ann.lee@okta.local"')}&startIndex=1&count=100&attributes=userName,active`);
  assert.deepEqual(okta.body, { schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'], totalResults: 1, startIndex: 1, itemsPerPage: 1,
    Resources: [{ schemas: [USER], id, userName: 'Ann.Lee@okta.local', active: true }] });
  const entra = await scim(s, dir, 'GET', `/Users?filter=${encodeURIComponent('externalId eq "okta-1"')}&excludedAttributes=emails,name,meta`);
  assert.deepEqual(Object.keys(entra.body.Resources[0]), ['schemas', 'id', 'externalId', 'userName', 'displayName', 'active']);

  // PATCH and PUT answer the partial representation too.
  const patched = await scim(s, dir, 'PATCH', `/Users/${id}?attributes=active`, { schemas: [PATCH_OP], Operations: [{ op: 'Replace', path: 'displayName', value: 'Ann L.' }] });
  assert.deepEqual(patched.body, { schemas: [USER], id, active: true });
  const put = await scim(s, dir, 'PUT', `/Users/${id}?excludedAttributes=meta,emails`, { schemas: [USER], userName: 'Ann.Lee@okta.local', emails: full.emails, active: true });
  assert.deepEqual(put.body, { schemas: [USER], id, userName: 'Ann.Lee@okta.local', active: true });

  // Both at once, or a path that is not an attribute path: 400 invalidValue, and nothing is written.
  assertScimError(await scim(s, dir, 'GET', `/Users/${id}?attributes=userName&excludedAttributes=emails`), 400, 'invalidValue');
  assertScimError(await scim(s, dir, 'GET', `/Users?attributes=${encodeURIComponent('emails[type eq "work"].value')}`), 400, 'invalidValue');
  assertScimError(await scim(s, dir, 'POST', '/Users?attributes=a.b.c', { userName: 'bob@okta.local' }), 400, 'invalidValue');
  assertScimError(await scim(s, dir, 'PATCH', `/Users/${id}?attributes=userName&excludedAttributes=id`, { Operations: [{ op: 'replace', path: 'active', value: false }] }), 400, 'invalidValue');
  assert.equal((await scim(s, dir, 'GET', '/Users')).body.totalResults, 1);
  assert.equal((await scim(s, dir, 'GET', `/Users/${id}`)).body.active, true);
});

test('filter parser and PATCH operations (unit)', () => {
  assert.deepEqual(parseUserFilter('userName Eq "A\\"b"'), { attribute: 'userName', op: 'eq', value: 'a"b' });
  assert.deepEqual(parseUserFilter('externalId sw "AbC"'), { attribute: 'externalId', op: 'sw', value: 'AbC' });
  assert.throws(() => parseUserFilter('userName eq "a" or userName eq "b"'), (e: unknown) => e instanceof ScimError && e.scimType === 'invalidFilter');
  const base: ScimUserState = {
    userName: 'u@x.example', externalId: null, givenName: 'G', familyName: 'F', formattedName: null, displayName: null,
    emails: [{ value: 'u@x.example', type: 'work', primary: true }], active: true,
  };
  const patched = applyPatch(base, {
    Operations: [
      { op: 'replace', value: { 'name.givenName': 'Gee', displayName: 'Dee', active: 'False' } },
      { op: 'add', path: 'emails', value: [{ value: 'second@x.example', type: 'home', primary: true }] },
      { op: 'replace', path: 'emails[value eq "U@X.example"].type', value: 'other' },
      { op: 'add', path: 'name', value: { familyName: 'Eff' } },
    ],
  });
  assert.equal(patched.givenName, 'Gee');
  assert.equal(patched.familyName, 'Eff');
  assert.equal(patched.displayName, 'Dee');
  assert.equal(patched.active, false);
  assert.deepEqual(patched.emails, [{ value: 'u@x.example', type: 'other', primary: false }, { value: 'second@x.example', type: 'home', primary: true }]);
  assert.equal(base.emails[0].type, 'work', 'the input state is not changed');
  assert.throws(() => applyPatch(base, { Operations: [{ op: 'remove', path: 'userName' }] }), (e: unknown) => e instanceof ScimError && e.scimType === 'mutability');
});

test('a directory never signs a person out of other organizations, and never provisions a system administrator', async (t) => {
  const { s, dir, tree } = await world(t);
  // Someone working in another organization, signed in there, whom this directory then links by e-mail.
  const elsewhere = await member(s, 'org_owner');
  const token = await login(s, elsewhere.user);
  const linked = await scim(s, dir, 'POST', '/Users', { schemas: [USER], userName: elsewhere.user.email, active: true });
  assert.equal(linked.status, 201, linked.text);
  assert.ok((await memberships(s, elsewhere.user.id)).includes(`${tree.organizationId}/organization/org_member/active`));
  const off = await scim(s, dir, 'PATCH', `/Users/${linked.body.id}`, { schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations: [{ op: 'replace', path: 'active', value: false }] });
  assert.equal(off.status, 200, off.text);
  assert.ok((await memberships(s, elsewhere.user.id)).includes(`${tree.organizationId}/organization/org_member/inactive`));
  assert.equal(await contextStatus(s, token), 200, 'the session in the other organization lives on');
  assert.ok((await memberships(s, elsewhere.user.id)).includes(`${elsewhere.tree.organizationId}/organization/org_owner/active`));

  const admin = await makeUser(s, { systemAdmin: true });
  const refused = await scim(s, dir, 'POST', '/Users', { schemas: [USER], userName: admin.email, active: true });
  assertScimError(refused, 409, 'uniqueness');
  assert.deepEqual(await memberships(s, admin.id), []);
});
