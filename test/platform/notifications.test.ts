// Notifications: recipients, the inbox (limit clamp, unreadOnly vs unreadCount, 404 across users and
// scopes, read-all), preferences (disabled writes nothing, no back-fill) and access on every route.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { grant, login, makeProject, makeTree, makeUser, makeWorkspace, member, type Tree } from '../helpers/factories.ts';
import { notify, NOTIFICATION_CATEGORIES, type NotificationEvent } from '../../src/platform/notifications/service.ts';

const event = (tree: Partial<Tree> & { organizationId: string }, o: Partial<NotificationEvent> = {}): NotificationEvent => ({
  category: 'system_notices', type: 'test.event', subject: 'Hello', ...tree, ...o,
});

const send = async (s: TestServer, e: NotificationEvent) => await notify(s.operator(), e);
const inboxCount = async (s: TestServer, userId: string) => (await s.db.get<{ n: number }>('SELECT count(*) AS n FROM notifications WHERE user_id = ?', userId))!.n;

test('limit is clamped to 1..200 (default 50); unreadOnly=1 narrows the list but not unreadCount', async (t) => {
  const s = await startTestServer(t);
  const writer = await member(s, 'writer');
  for (let i = 0; i < 205; i++) {
    assert.equal(await send(s, event(writer.tree, { subject: `n${i}`, recipients: [writer.user.id] })), 1);
  }
  const get = (q: string) => s.call('GET', `/api/notifications${q}`, { token: writer.token });
  const dflt = await get('');
  assert.equal(dflt.status, 200, dflt.text);
  assert.equal(dflt.body.items.length, 50);
  assert.equal(dflt.body.items[0].subject, 'n204', 'newest first');
  assert.deepEqual(dflt.body.pagination, { limit: 50, total: 205 });
  assert.equal((await get('?limit=0')).body.items.length, 1);
  assert.equal((await get('?limit=-3')).body.items.length, 1);
  assert.equal((await get('?limit=500')).body.items.length, 200);
  assert.equal((await get('?limit=7')).body.items.length, 7);
  assert.equal((await get('?limit=abc')).status, 422);

  const n = dflt.body.items[0];
  assert.deepEqual(Object.keys(n).sort(),
    ['body', 'category', 'createdAt', 'id', 'link', 'organizationId', 'projectId', 'read', 'readAt', 'subject', 'type', 'workspaceId'].sort());
  assert.equal(n.read, false);
  for (const item of dflt.body.items.slice(0, 5)) {
    const r = await s.call('PATCH', `/api/notifications/${item.id}`, { token: writer.token, body: { read: true } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.read, true);
    assert.ok(Date.parse(r.body.readAt));
  }
  const all = await get('?limit=200');
  assert.equal(all.body.unreadCount, 200);
  assert.equal(all.body.pagination.total, 205);
  assert.equal(all.body.items.filter((x: any) => x.read).length, 5);
  const unread = await get('?limit=200&unreadOnly=1');
  assert.equal(unread.body.unreadCount, 200, 'unreadOnly does not change unreadCount');
  assert.equal(unread.body.pagination.total, 200);
  assert.ok(unread.body.items.every((x: any) => !x.read));
  const few = await get('?limit=3&unreadOnly=1');
  assert.equal(few.body.items.length, 3);
  assert.equal(few.body.unreadCount, 200);
  // Unread again.
  const back = await s.call('PATCH', `/api/notifications/${n.id}`, { token: writer.token, body: { read: false } });
  assert.equal(back.body.read, false);
  assert.equal(back.body.readAt, null);
  assert.equal((await get('')).body.unreadCount, 201);
  assert.equal((await s.call('PATCH', `/api/notifications/${n.id}`, { token: writer.token, body: { read: 'yes' } })).status, 422);
});

test('another user\u2019s, another organization\u2019s or an invisible workspace\u2019s notification is 404; read-all touches only the visible ones', async (t) => {
  const s = await startTestServer(t);
  const treeA = await makeTree(s);
  const treeB = await makeTree(s);
  const w1 = await member(s, 'writer', treeA);
  const w2 = await member(s, 'writer', treeA);
  await grant(s, w1.user.id, 'workspace', treeB.workspaceId, 'writer');
  const wsA2 = await makeWorkspace(s, treeA.organizationId);
  await grant(s, w1.user.id, 'workspace', wsA2.id, 'writer');
  const only = (userId: string) => ({ recipients: [userId] });

  await send(s, event(treeA, { subject: 'mine', ...only(w1.user.id) }));
  await send(s, event(treeA, { subject: 'mine too', ...only(w1.user.id) }));
  await send(s, event({ organizationId: treeA.organizationId }, { subject: 'org-level', ...only(w1.user.id) }));
  await send(s, event(treeA, { subject: 'theirs', ...only(w2.user.id) }));
  await send(s, event(treeB, { subject: 'other org', ...only(w1.user.id) }));
  await send(s, event({ organizationId: treeA.organizationId, workspaceId: wsA2.id }, { subject: 'lost workspace', ...only(w1.user.id) }));
  // w1 loses the second workspace: its notification is no longer visible.
  await s.db.run("DELETE FROM memberships WHERE user_id = ? AND workspace_id = ? AND level = 'workspace'", w1.user.id, wsA2.id);

  const idOf = async (subject: string) => (await s.db.get<{ id: string }>('SELECT id FROM notifications WHERE subject = ?', subject))!.id;
  const list = await s.call('GET', '/api/notifications', { token: w1.token });
  assert.equal(list.status, 200, list.text);
  assert.deepEqual(list.body.items.map((x: any) => x.subject).sort(), ['mine', 'mine too', 'org-level']);
  assert.equal(list.body.unreadCount, 3);

  for (const subject of ['theirs', 'other org', 'lost workspace']) {
    const r = await s.call('PATCH', `/api/notifications/${await idOf(subject)}`, { token: w1.token, body: { read: true } });
    assert.equal(r.status, 404, subject);
    assert.equal(r.body.error.code, 'not_found');
  }
  assert.equal((await s.call('PATCH', '/api/notifications/ntf_unknown', { token: w1.token, body: { read: true } })).status, 404);
  assert.equal((await s.call('PATCH', `/api/notifications/${await idOf('mine')}`, { token: w1.token, body: { read: true } })).status, 200);

  const all = await s.call('POST', '/api/notifications/read-all', { token: w1.token });
  assert.equal(all.status, 200, all.text);
  assert.deepEqual(all.body, { updated: 2 });
  const unreadLeft = (await s.db.all<{ subject: string }>('SELECT subject FROM notifications WHERE read_at IS NULL ORDER BY subject')).map((r) => r.subject);
  assert.deepEqual(unreadLeft, ['lost workspace', 'other org', 'theirs'], 'other users, organizations and invisible workspaces untouched');
  assert.equal((await s.call('GET', '/api/notifications', { token: w2.token })).body.unreadCount, 1);

  // In organization B, w1 sees B's notification and A's are 404.
  assert.equal((await s.call('PATCH', '/api/context', { token: w1.token, body: { organizationId: treeB.organizationId } })).status, 200);
  const inB = await s.call('GET', '/api/notifications', { token: w1.token });
  assert.deepEqual(inB.body.items.map((x: any) => x.subject), ['other org']);
  assert.equal((await s.call('PATCH', `/api/notifications/${await idOf('mine too')}`, { token: w1.token, body: { read: false } })).status, 404);
  assert.deepEqual((await s.call('POST', '/api/notifications/read-all', { token: w1.token })).body, { updated: 1 });
});

test('project-only guests see organization-level notifications and those of their own projects only', async (t) => {
  const s = await startTestServer(t);
  const tree = await makeTree(s);
  const other = await makeProject(s, tree.workspaceId);
  const guest = await member(s, 'project_viewer', tree);
  assert.equal(await send(s, event({ organizationId: tree.organizationId, workspaceId: tree.workspaceId, projectId: other.id }, { recipients: [guest.user.id] })), 0,
    'an explicit recipient who cannot see the project gets nothing');
  assert.equal(await send(s, event(tree, { subject: 'own project', recipients: [guest.user.id] })), 1);
  assert.equal(await send(s, event({ organizationId: tree.organizationId }, { subject: 'organization', recipients: [guest.user.id] })), 1);
  // A row written while the guest could see a project stays hidden once the role is gone.
  const p3 = await makeProject(s, tree.workspaceId);
  await grant(s, guest.user.id, 'project', p3.id, 'project_viewer');
  assert.equal(await send(s, event({ organizationId: tree.organizationId, workspaceId: tree.workspaceId, projectId: p3.id }, { subject: 'p3', recipients: [guest.user.id] })), 1);
  await s.db.run("DELETE FROM memberships WHERE user_id = ? AND project_id = ? AND level = 'project'", guest.user.id, p3.id);
  const list = await s.call('GET', '/api/notifications', { token: guest.token });
  assert.deepEqual(list.body.items.map((x: any) => x.subject).sort(), ['organization', 'own project']);
});

test('default recipients follow the category\u2019s rule in the event\u2019s scope', async (t) => {
  const s = await startTestServer(t);
  const tree = await makeTree(s);
  const owner = await member(s, 'org_owner', tree);
  const admin = await member(s, 'org_admin', tree);
  const producer = await member(s, 'producer', tree);
  const writer = await member(s, 'writer', tree);
  const reviewer = await member(s, 'reviewer', tree);
  const editor = await member(s, 'project_editor', tree);
  const viewer = await member(s, 'project_viewer', tree);
  const plain = await member(s, 'org_member', tree);
  const elsewhere = await member(s, 'producer', { ...tree, workspaceId: (await makeWorkspace(s, tree.organizationId)).id });
  const stranger = await member(s, 'org_owner');
  const suspended = await member(s, 'producer', tree);
  await s.db.run("UPDATE users SET status = 'suspended' WHERE id = ?", suspended.user.id);
  const names = new Map([owner, admin, producer, writer, reviewer, editor, viewer, plain, elsewhere, stranger, suspended].map((m, i) =>
    [m.user.id, ['owner', 'admin', 'producer', 'writer', 'reviewer', 'editor', 'viewer', 'plain', 'elsewhere', 'stranger', 'suspended'][i]]));
  const got = async (e: NotificationEvent) => {
    const before = (await s.db.get<{ n: number }>('SELECT count(*) AS n FROM notifications'))!.n;
    await send(s, { ...e, subject: `${e.category}-${before}` });
    return (await s.db.all<{ user_id: string }>('SELECT user_id FROM notifications WHERE subject = ?', `${e.category}-${before}`))
      .map((r) => names.get(r.user_id)).sort();
  };
  assert.deepEqual(await got(event(tree, { category: 'generation_jobs' })), ['admin', 'owner', 'producer']);
  assert.deepEqual(await got(event(tree, { category: 'review' })), ['admin', 'editor', 'owner', 'producer', 'reviewer']);
  assert.deepEqual(await got(event(tree, { category: 'delivery' })), ['admin', 'owner', 'producer']);
  assert.deepEqual(await got(event(tree, { category: 'collaboration_tasks' })), ['admin', 'editor', 'owner', 'producer']);
  assert.deepEqual(await got(event({ organizationId: tree.organizationId }, { category: 'organization_access' })), ['admin', 'owner']);
  assert.deepEqual(await got(event({ organizationId: tree.organizationId, workspaceId: tree.workspaceId }, { category: 'usage_quota' })), ['admin', 'owner']);
  assert.deepEqual(await got(event(tree, { category: 'system_notices' })), ['admin', 'editor', 'owner', 'producer', 'reviewer', 'viewer', 'writer']);
  assert.deepEqual(await got(event({ organizationId: tree.organizationId }, { category: 'system_notices' })),
    ['admin', 'editor', 'elsewhere', 'owner', 'plain', 'producer', 'reviewer', 'viewer', 'writer']);
  assert.deepEqual(await got(event(tree, { category: 'generation_jobs', recipients: [writer.user.id, stranger.user.id, suspended.user.id, writer.user.id] })), ['writer'],
    'explicit recipients replace the rule; outsiders and suspended users are dropped; duplicates once');
  await assert.rejects(async () => await send(s, event(tree, { category: 'nope' as never })), /unknown category/);
  await assert.rejects(async () => await send(s, { ...event(tree), organizationId: stranger.tree.organizationId }), /not in the event/);
});

test('a disabled category writes nothing for that user; re-enabling does not back-fill', async (t) => {
  const s = await startTestServer(t);
  const tree = await makeTree(s);
  const writer = await member(s, 'writer', tree);
  const producer = await member(s, 'producer', tree);
  const prefs = await s.call('GET', '/api/notification-preferences', { token: writer.token });
  assert.equal(prefs.status, 200, prefs.text);
  assert.equal(prefs.body.organizationId, tree.organizationId);
  assert.deepEqual(prefs.body.items.map((p: any) => [p.category, p.enabled]), NOTIFICATION_CATEGORIES.map((c) => [c, true]));

  const off = await s.call('PATCH', '/api/notification-preferences/collaboration_tasks', { token: writer.token, body: { enabled: false } });
  assert.equal(off.status, 200, off.text);
  assert.equal(off.body.category, 'collaboration_tasks');
  assert.equal(off.body.enabled, false);
  const after = await s.call('GET', '/api/notification-preferences', { token: writer.token });
  assert.equal(after.body.items.find((p: any) => p.category === 'collaboration_tasks').enabled, false);
  assert.equal(after.body.items.filter((p: any) => !p.enabled).length, 1);

  const both = { category: 'collaboration_tasks' as const, recipients: [writer.user.id, producer.user.id] };
  assert.equal(await send(s, event(tree, { ...both, subject: 'while off' })), 1, 'only the producer');
  assert.equal(await inboxCount(s, writer.user.id), 0, 'no row at all for the writer');
  assert.equal(await send(s, event(tree, { category: 'review', recipients: [writer.user.id] })), 1, 'other categories still arrive');

  assert.equal((await s.call('PATCH', '/api/notification-preferences/collaboration_tasks', { token: writer.token, body: { enabled: true } })).status, 200);
  const inbox = await s.call('GET', '/api/notifications', { token: writer.token });
  assert.deepEqual(inbox.body.items.map((x: any) => x.category), ['review'], 'nothing back-filled');
  assert.equal(await send(s, event(tree, { ...both, subject: 'after' })), 2);
  assert.deepEqual((await s.call('GET', '/api/notifications', { token: writer.token })).body.items.map((x: any) => x.subject), ['after', 'Hello']);

  const unknown = await s.call('PATCH', '/api/notification-preferences/nope', { token: writer.token, body: { enabled: false } });
  assert.equal(unknown.status, 404);
  assert.equal(unknown.body.error.code, 'not_found');
  assert.equal((await s.call('PATCH', '/api/notification-preferences/review', { token: writer.token, body: { enabled: 'no' } })).status, 422);
  // Preferences are per organization.
  const treeB = await makeTree(s);
  await grant(s, writer.user.id, 'workspace', treeB.workspaceId, 'writer');
  await s.call('PATCH', '/api/notification-preferences/review', { token: writer.token, body: { enabled: false } });
  assert.equal(await send(s, event(treeB, { category: 'review', recipients: [writer.user.id] })), 1);
  assert.equal((await s.db.all("SELECT * FROM audit_log WHERE action = 'notification.preference_changed' AND actor_user_id = ?", writer.user.id)).length, 3);
});

test('every notification route: 401 without a session, 403 without an organization in scope or without the system administrator identity', async (t) => {
  const s = await startTestServer(t);
  const owner = await member(s, 'org_owner');
  const loner = await makeUser(s);
  const lonerToken = await login(s, loner);
  const routes = s.app.router.routes.filter((r) => /^\/api\/(notification|system\/notifications)/.test(r.pattern));
  assert.ok(routes.length >= 16, `found ${routes.length} routes`);
  for (const route of routes) {
    const path = route.pattern.replace(/:(\w+)/g, 'x_none');
    const body = route.method === 'GET' ? {} : { body: {} };
    const anon = await s.call(route.method, path, body);
    assert.equal(anon.status, 401, `${route.method} ${route.pattern}`);
    assert.equal(anon.body.error.code, 'unauthenticated');
    if (route.pattern.startsWith('/api/system/')) {
      const r = await s.call(route.method, path, { token: owner.token, ...body });
      assert.equal(r.status, 403, `${route.method} ${route.pattern}`);
      assert.equal(r.body.error.code, 'permission_denied');
    } else {
      const r = await s.call(route.method, path, { token: lonerToken, ...body });
      assert.equal(r.status, 403, `${route.method} ${route.pattern}`);
      assert.equal(r.body.error.code, 'scope_forbidden');
    }
  }
});
