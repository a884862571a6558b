// Collaboration tasks: access, manage vs complete-own-only, filters, trail, assignment notification,
// archived projects.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../helpers/server.ts';
import { makeTree, makeUser, member } from '../helpers/factories.ts';
import { changeLifecycle } from '../../src/production/projects/service.ts';

async function setup(t: any) {
  const s = await startTestServer(t);
  const tree = await makeTree(s);
  const producer = await member(s, 'producer', tree);
  const writer = await member(s, 'writer', tree);
  const create = (body: Record<string, unknown>, token = producer.token) => s.call('POST', '/api/tasks', { token, body });
  return { s, tree, producer, writer, create };
}

test('POST /api/tasks: 401, 403 without task:manage, 422 on bad fields or an assignee outside the project, 201 for a producer', async (t) => {
  const { s, producer, writer, create } = await setup(t);
  assert.equal((await s.call('POST', '/api/tasks', { body: { title: 'x' } })).status, 401);
  const denied = await create({ title: 'x' }, writer.token);
  assert.equal(denied.status, 403);
  assert.equal(denied.body.error.code, 'permission_denied');
  const bad = await create({ title: '', status: 'later', priority: 'asap', dueAt: 'tomorrow' });
  assert.equal(bad.status, 422);
  assert.deepEqual(Object.keys(bad.body.error.details.fields).sort(), ['dueAt', 'priority', 'status', 'title']);
  const outsider = await member(s, 'producer');
  const foreignAssignee = await create({ title: 'x', assigneeUserId: outsider.user.id });
  assert.equal(foreignAssignee.status, 422);
  const ok = await create({ title: 'Storyboard ep. 1', description: 'Panels for the pilot', type: 'art', priority: 'high', assigneeUserId: writer.user.id, dueAt: '2026-12-01', linkedPage: '/production/episodes/1' });
  assert.equal(ok.status, 201, ok.text);
  assert.equal(ok.body.status, 'todo');
  assert.equal(ok.body.assigneeUserId, writer.user.id);
  assert.equal(ok.body.dueAt, '2026-12-01T00:00:00.000Z');
  assert.equal(ok.body.createdBy, producer.user.id);
  assert.equal(ok.body.completedAt, null);
});

test('GET /api/tasks lists the current project only, with status and assignedTo filters and a clamped limit', async (t) => {
  const { s, tree, producer, writer, create } = await setup(t);
  await create({ title: 'a', assigneeUserId: writer.user.id });
  await create({ title: 'b', status: 'in_progress' });
  await create({ title: 'c', assigneeUserId: producer.user.id, status: 'done' });
  const other = await member(s, 'producer');
  await create({ title: 'elsewhere' }, other.token);
  const all = await s.call('GET', '/api/tasks', { token: producer.token });
  assert.equal(all.status, 200);
  assert.deepEqual(all.body.items.map((x: any) => x.title).sort(), ['a', 'b', 'c']);
  assert.ok(all.body.items.every((x: any) => x.projectId === tree.projectId));
  assert.deepEqual((await s.call('GET', '/api/tasks?status=in_progress', { token: producer.token })).body.items.map((x: any) => x.title), ['b']);
  assert.deepEqual((await s.call('GET', '/api/tasks?status=all&assignedTo=me', { token: writer.token })).body.items.map((x: any) => x.title), ['a']);
  assert.deepEqual((await s.call('GET', `/api/tasks?assignedTo=${producer.user.id}`, { token: writer.token })).body.items.map((x: any) => x.title), ['c']);
  const clamped = await s.call('GET', '/api/tasks?limit=0', { token: producer.token });
  assert.equal(clamped.body.pagination.pageSize, 1);
  assert.equal(clamped.body.pagination.total, 3);
  assert.equal((await s.call('GET', '/api/tasks?limit=999', { token: producer.token })).body.pagination.pageSize, 200);
  assert.equal((await s.call('GET', '/api/tasks?status=later', { token: producer.token })).status, 422);
  assert.equal((await s.call('GET', '/api/tasks')).status, 401);
  const otherList = await s.call('GET', '/api/tasks', { token: other.token });
  assert.deepEqual(otherList.body.items.map((x: any) => x.title), ['elsewhere']);
});

test('task:complete holders change only the status of their own tasks; managers change anything; done sets completedAt', async (t) => {
  const { s, producer, writer, create } = await setup(t);
  const mine = (await create({ title: 'Polish dialogue', assigneeUserId: writer.user.id })).body;
  const theirs = (await create({ title: 'Not yours', assigneeUserId: producer.user.id })).body;
  const path = (id: string) => `/api/tasks/${id}`;
  assert.equal((await s.call('PATCH', path(mine.id), { body: { status: 'done' } })).status, 401);
  const other = await s.call('PATCH', path(theirs.id), { token: writer.token, body: { status: 'done' } });
  assert.equal(other.status, 403);
  assert.equal(other.body.error.code, 'permission_denied');
  const field = await s.call('PATCH', path(mine.id), { token: writer.token, body: { title: 'Renamed' } });
  assert.equal(field.status, 403);
  const progress = await s.call('PATCH', path(mine.id), { token: writer.token, body: { status: 'in_progress' } });
  assert.equal(progress.status, 200);
  const done = await s.call('PATCH', path(mine.id), { token: writer.token, body: { status: 'done' } });
  assert.equal(done.body.status, 'done');
  assert.ok(Date.parse(done.body.completedAt));
  const reopened = await s.call('PATCH', path(mine.id), { token: producer.token, body: { status: 'todo', title: 'Polish dialogue again', priority: 'urgent' } });
  assert.equal(reopened.status, 200);
  assert.equal(reopened.body.completedAt, null);
  assert.equal(reopened.body.priority, 'urgent');
  const reviewer = await member(s, 'reviewer', producer.tree);
  assert.equal((await s.call('PATCH', path(mine.id), { token: reviewer.token, body: { status: 'done' } })).status, 403, 'not assigned to the reviewer');
  assert.equal((await s.call('PATCH', path(mine.id), { token: producer.token, body: {} })).status, 422);
  const outsider = await member(s, 'producer');
  assert.equal((await s.call('PATCH', path(mine.id), { token: outsider.token, body: { status: 'done' } })).status, 404, 'another project\'s task is not found');
  assert.equal((await s.call('GET', path(mine.id), { token: outsider.token })).status, 404);
  const detail = await s.call('GET', path(mine.id), { token: writer.token });
  assert.deepEqual(detail.body.history.map((h: any) => h.action), ['task.created', 'task.status_changed', 'task.status_changed', 'task.status_changed']);
  assert.deepEqual(detail.body.history[1].details.changes.status, { from: 'todo', to: 'in_progress' });
  assert.equal(detail.body.history[1].actorUserId, writer.user.id);
});

test('assignment notifies the assignee in the collaboration_tasks category, unless they turned it off', async (t) => {
  const { s, producer, writer, create } = await setup(t);
  const task = (await create({ title: 'Record temp VO', assigneeUserId: writer.user.id })).body;
  const inbox = await s.call('GET', '/api/notifications', { token: writer.token });
  assert.equal(inbox.status, 200, inbox.text);
  assert.equal(inbox.body.items.length, 1);
  assert.equal(inbox.body.items[0].category, 'collaboration_tasks');
  assert.ok(inbox.body.items[0].subject.includes('Record temp VO'));
  assert.equal((await s.call('GET', '/api/notifications', { token: producer.token })).body.items.length, 0, 'only the assignee');
  assert.equal((await s.call('PATCH', '/api/notification-preferences/collaboration_tasks', { token: writer.token, body: { enabled: false } })).status, 200);
  await create({ title: 'Second task', assigneeUserId: writer.user.id });
  await s.call('PATCH', `/api/tasks/${task.id}`, { token: producer.token, body: { assigneeUserId: null } });
  await s.call('PATCH', `/api/tasks/${task.id}`, { token: producer.token, body: { assigneeUserId: writer.user.id } });
  assert.equal((await s.call('GET', '/api/notifications', { token: writer.token })).body.items.length, 1, 'disabled category: nothing written');
  const other = await makeUser(s);
  assert.equal((await create({ title: 'x', assigneeUserId: other.id })).status, 422);
});

test('on an archived project task writes are 409 project_archived and reads answer 200', async (t) => {
  const { s, tree, producer, writer, create } = await setup(t);
  const task = (await create({ title: 'Keep', assigneeUserId: writer.user.id })).body;
  await changeLifecycle(s.operator(), tree.projectId, 'archive');
  const post = await create({ title: 'New' });
  assert.equal(post.status, 409);
  assert.equal(post.body.error.code, 'project_archived');
  const patch = await s.call('PATCH', `/api/tasks/${task.id}`, { token: writer.token, body: { status: 'done' } });
  assert.equal(patch.status, 409);
  assert.equal(patch.body.error.code, 'project_archived');
  assert.equal((await s.call('GET', '/api/tasks', { token: producer.token })).status, 200);
  assert.equal((await s.call('GET', `/api/tasks/${task.id}`, { token: producer.token })).status, 200);
  assert.equal((await s.db.get<any>('SELECT status FROM tasks WHERE id = ?', task.id))!.status, 'todo');
});
