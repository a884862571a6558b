// Search: tenant isolation with identical content, project-only guests, CJK queries of 2 and 4
// characters, highlights, scopes, and what is never searchable.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { grant, login, makeProject, makeTree, makeUser, member, type Tree } from '../helpers/factories.ts';
import { createTask } from '../../src/production/tasks/service.ts';
import { withScope } from '../../src/directory/context.ts';
import { registerConnector } from '../../src/generation/connectors/service.ts';
import { createJob } from '../../src/generation/jobs/service.ts';
import { createDelivery } from '../../src/finishing/delivery/service.ts';

async function task(s: TestServer, tree: Tree, title: string, description = '') {
  return await createTask(withScope(s.operator(), tree), { title, description });
}

const search = (s: TestServer, token: string, q: string, extra = '') =>
  s.call('GET', `/api/search?q=${encodeURIComponent(q)}${extra}`, { token });

test('two organizations with identical content only ever see their own results', async (t) => {
  const s = await startTestServer(t);
  const a = await member(s, 'producer');
  const b = await member(s, 'producer');
  for (const m of [a, b]) await task(s, m.tree, 'Storyboard for the night train', 'platform scene at dawn');
  const ra = await search(s, a.token, 'night train');
  assert.equal(ra.status, 200, ra.text);
  assert.equal(ra.body.length, 1);
  assert.equal(ra.body[0].organizationId, a.tree.organizationId);
  assert.equal(ra.body[0].projectId, a.tree.projectId);
  assert.equal(ra.body[0].type, 'task');
  assert.equal(ra.body[0].typeLabel, 'Collaboration task');
  assert.equal(ra.body[0].targetTab, 'tasks');
  assert.match(ra.body[0].targetId, /^tsk_/);
  const rb = await search(s, b.token, 'night train');
  assert.deepEqual(rb.body.map((r: any) => r.organizationId), [b.tree.organizationId]);
  // Input cannot widen the tenant filter.
  const sneaky = await s.call('GET', `/api/search?q=night&organizationId=${b.tree.organizationId}&projectId=${b.tree.projectId}`, { token: a.token });
  assert.ok(sneaky.body.every((r: any) => r.organizationId === a.tree.organizationId));
});

test('a project-only guest finds only its own projects; scope=project narrows to the current project', async (t) => {
  const s = await startTestServer(t);
  const tree = await makeTree(s);
  const other = await makeProject(s, tree.workspaceId, 'Other show');
  const producer = await member(s, 'producer', tree);
  await task(s, tree, 'Casting call for the lead');
  await task(s, { ...tree, projectId: other.id }, 'Casting call for the villain');
  const guest = await makeUser(s);
  await grant(s, guest.id, 'project', tree.projectId, 'project_viewer');
  const guestToken = await login(s, guest);
  const g = await search(s, guestToken, 'casting');
  assert.deepEqual(g.body.map((r: any) => r.title), ['Casting call for the lead']);
  const all = await search(s, producer.token, 'casting');
  assert.equal(all.body.length, 2);
  const narrow = await search(s, producer.token, 'casting', '&scope=project');
  assert.deepEqual(narrow.body.map((r: any) => r.projectId), [tree.projectId]);
});

test('Chinese queries of 2 and 4 characters find the shot, with highlights', async (t) => {
  const s = await startTestServer(t);
  const producer = await member(s, 'producer');
  const shot = (await s.db.get<{ id: string }>('SELECT id FROM shots WHERE project_id = ?', producer.tree.projectId))!;
  const changed = await s.call('PATCH', `/api/production/shots/${shot.id}`, {
    token: producer.token, body: { title: '第一场 夜行列车', description: '主角在站台上等待末班车' },
  });
  assert.equal(changed.status, 200, changed.text);
  await task(s, producer.tree, 'Unrelated task', 'nothing to see');
  for (const q of ['站台', '夜行列车', '站台上等待']) {
    const r = await search(s, producer.token, q);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.map((x: any) => x.targetId), [shot.id], q);
    assert.equal(r.body[0].type, 'shot');
    const { text, highlights } = r.body[0].snippet;
    assert.ok(highlights.length >= 1, q);
    assert.equal(text.slice(highlights[0][0], highlights[0][1]).includes(q.slice(0, 2)), true, `${q}: ${JSON.stringify(r.body[0].snippet)}`);
  }
  assert.deepEqual((await search(s, producer.token, '火车')).body, []);
  assert.deepEqual((await search(s, producer.token, '站 夜行列车')).body.map((x: any) => x.targetId), [shot.id], 'a short term filters a long one');
});

test('empty q answers [], limit is clamped, and the route needs a session and a workspace', async (t) => {
  const s = await startTestServer(t);
  const producer = await member(s, 'producer');
  for (let i = 0; i < 5; i++) await task(s, producer.tree, `Dialogue pass ${i}`);
  assert.deepEqual((await search(s, producer.token, '')).body, []);
  assert.deepEqual((await search(s, producer.token, '   ')).body, []);
  assert.equal((await search(s, producer.token, 'dialogue', '&limit=0')).body.length, 1);
  assert.equal((await search(s, producer.token, 'dialogue', '&limit=3')).body.length, 3);
  assert.equal((await s.call('GET', '/api/search?q=dialogue')).status, 401);
  const orgOnly = await member(s, 'org_member');
  const r = await search(s, orgOnly.token, 'dialogue');
  assert.equal(r.status, 403);
  assert.equal(r.body.error.code, 'scope_forbidden');
  assert.equal((await search(s, producer.token, 'x', '&scope=everything')).status, 422);
});

test('the index holds display fields only: no storage paths, tokens or endpoints are searchable', async (t) => {
  const s = await startTestServer(t);
  const producer = await member(s, 'producer');
  await task(s, producer.tree, 'Review the teaser');
  const text = JSON.stringify(await s.db.all('SELECT * FROM search_documents'));
  assert.ok(!text.includes(s.config.storageDir), 'no absolute storage path');
  assert.ok(!text.includes(s.config.dataDir));
  assert.deepEqual((await search(s, producer.token, s.config.storageDir)).body, []);
  const tokens = await s.db.all<{ token_hash: string }>('SELECT token_hash FROM sessions');
  assert.deepEqual((await search(s, producer.token, tokens[0].token_hash.slice(0, 12))).body, []);
});

test('assets are found by name and file name, never by their storage path; an archived asset leaves the index', async (t) => {
  const s = await startTestServer(t);
  const producer = await member(s, 'producer');
  const asset = await s.call('POST', '/api/assets', { token: producer.token, body: { kind: 'image', name: 'Heroine 站台 portrait', tags: ['lead'] } });
  assert.equal(asset.status, 201, asset.text);
  const png = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');
  const up = await fetch(`${s.url}/api/assets/${asset.body.id}/versions/upload?fileName=heroine-final.png`, {
    method: 'POST', headers: { authorization: `Bearer ${producer.token}`, 'content-type': 'image/png' }, body: png,
  });
  assert.equal(up.status, 201, await up.text());
  assert.deepEqual((await search(s, producer.token, 'heroine-final')).body.map((r: any) => r.targetId), [asset.body.id]);
  assert.deepEqual((await search(s, producer.token, '站台')).body.map((r: any) => r.type), ['asset']);
  const stored = (await s.db.get<{ storage_path: string }>('SELECT storage_path FROM asset_versions WHERE asset_id = ?', asset.body.id))!.storage_path;
  assert.deepEqual((await search(s, producer.token, stored)).body, [], 'the storage path is not searchable');
  assert.deepEqual((await search(s, producer.token, s.config.storageDir)).body, []);
  assert.equal((await s.call('DELETE', `/api/assets/${asset.body.id}`, { token: producer.token })).status, 200);
  assert.deepEqual((await search(s, producer.token, 'heroine')).body, []);
});

test('endpoints, secrets and token hints of the organization are never searchable, even by an administrator', async (t) => {
  const s = await startTestServer(t);
  const owner = await member(s, 'org_owner');
  await task(s, owner.tree, 'Render farm checklist', 'see the model server notes');
  const admin = await login(s, await makeUser(s, { systemAdmin: true }));
  const channel = await s.call('POST', '/api/system/notifications/channels', {
    token: admin, body: { organizationId: owner.tree.organizationId, kind: 'webhook', url: 'http://127.0.0.1:9/hooks/render-farm-endpoint' },
  });
  assert.equal(channel.status, 201, channel.text);
  const invite = await s.call('POST', `/api/organizations/${owner.tree.organizationId}/invitations`, { token: owner.token, body: { email: 'new@example.test', role: 'org_member' } });
  assert.equal(invite.status, 201);
  for (const q of ['render-farm-endpoint', '127.0.0.1:9', channel.body.secret.slice(6, 20), invite.body.inviteToken.slice(0, 12), invite.body.invitation.tokenHint]) {
    assert.deepEqual((await search(s, owner.token, q)).body, [], q);
  }
  assert.equal((await search(s, owner.token, 'render farm')).body.length, 1, 'the task itself is found');
});

test('a hit shows only when the caller could open it: job prompts need job:create or queue:manage in that project, deliveries delivery:view', async (t) => {
  const s = await startTestServer(t);
  const tree = await makeTree(s);
  const p2 = await makeProject(s, tree.workspaceId, 'Second show');
  const treeB = await makeTree(s);
  const prompt = 'lighthouse keeper at midnight 灯塔';
  const jobIn = async (tr: Tree) => {
    const ctx = withScope(s.operator(), tr);
    const connectorId = (await registerConnector(ctx, { label: 'fixture', endpoint: 'http://127.0.0.1:9', kind: 'http-json', capability: ['image'], costMode: 'local' })).id;
    return (await createJob(ctx, { kind: 'image', connectorId, prompt })).id;
  };
  const job1 = await jobIn(tree);
  const job2 = await jobIn({ ...tree, projectId: p2.id });
  await jobIn(treeB);
  await task(s, tree, 'Lighthouse repair checklist');
  // A delivery of one image artifact of the first job (the row as the worker registers it; no file needed).
  await s.db.run(`INSERT INTO media_artifacts (id, organization_id, workspace_id, project_id, job_id, kind, source, storage_path, file_name, mime_type,
      file_size, content_sha256, has_video, has_audio, created_at) VALUES ('art_lh', ?, ?, ?, ?, 'image', 'generation', 'outputs/x.png', 'x.png', 'image/png', 1, ?, 0, 0, ?)`,
  tree.organizationId, tree.workspaceId, tree.projectId, job1, 'a'.repeat(64), new Date().toISOString());
  const delivery = await createDelivery(withScope(s.operator(), tree), { title: 'Lighthouse cut for the client', artifactIds: ['art_lh'] });

  const producer = await member(s, 'producer', tree);
  const writer = await member(s, 'writer', tree);
  const reviewer = await member(s, 'reviewer', tree);
  // A project-only guest: editor of the first project (job:create there), viewer of the second.
  const guest = await makeUser(s);
  await grant(s, guest.id, 'project', tree.projectId, 'project_editor');
  await grant(s, guest.id, 'project', p2.id, 'project_viewer');
  const guestToken = await login(s, guest);
  const hits = async (token: string, q: string, extra = '') => {
    const r = await search(s, token, q, extra);
    assert.equal(r.status, 200, r.text);
    return r.body.map((h: any) => `${h.type}:${h.targetId}`).sort();
  };
  const tsk = (await hits(producer.token, 'repair checklist'))[0];
  assert.match(tsk, /^task:/);
  const dlv = `delivery:${delivery.id}`;
  for (const q of ['lighthouse', '灯塔']) { // FTS terms and the short-term substring scan alike (only the jobs hold 灯塔)
    const long = q === 'lighthouse';
    assert.deepEqual(await hits(producer.token, q), [...(long ? [dlv, tsk] : []), `job:${job1}`, `job:${job2}`].sort(), `producer ${q}`);
    assert.deepEqual(await hits(writer.token, q), long ? [tsk] : [], `writer ${q}: no job:create, no delivery:view`);
    assert.deepEqual(await hits(reviewer.token, q), long ? [dlv, tsk].sort() : [], `reviewer ${q}`);
    assert.deepEqual(await hits(guestToken, q), [...(long ? [dlv, tsk] : []), `job:${job1}`].sort(), `guest ${q}: jobs of its editor project only`);
  }
  assert.deepEqual(await hits(writer.token, 'midnight', '&scope=project'), []);
  // What search hides, the routes refuse.
  assert.equal((await s.call('GET', `/api/jobs/${job1}`, { token: writer.token })).status, 403);
  assert.equal((await s.call('GET', `/api/production/deliveries/${delivery.id}`, { token: writer.token })).status, 403);
  assert.equal((await s.call('PATCH', '/api/context', { token: guestToken, body: { projectId: p2.id } })).status, 200);
  assert.equal((await s.call('GET', `/api/jobs/${job2}`, { token: guestToken })).status, 403, 'a project_viewer cannot open the job its search hides');
  assert.equal((await s.call('GET', `/api/tasks`, { token: writer.token })).status, 200);
});
