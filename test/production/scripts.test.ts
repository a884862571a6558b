// Script and story bible: access on every route, optimistic concurrency (409 revision_conflict with
// nothing changed), revisions list/read, diff, restore as a new revision, immutable revisions,
// validation limits, archived projects.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { makeTree, member } from '../helpers/factories.ts';
import { changeLifecycle } from '../../src/production/projects/service.ts';

const pilotOf = async (s: TestServer, projectId: string) => (await s.db.get<{ id: string }>('SELECT id FROM episodes WHERE project_id = ?', projectId))!.id;

async function setup(t: any) {
  const s = await startTestServer(t);
  const tree = await makeTree(s);
  const producer = await member(s, 'producer', tree);
  const writer = await member(s, 'writer', tree);
  const reviewer = await member(s, 'reviewer', tree);
  const episodeId = await pilotOf(s, tree.projectId);
  const base = `/api/production/script/episodes/${episodeId}`;
  const save = (baseRevision: number | undefined, scenes: unknown[], token = writer.token, headers: Record<string, string> = {}) =>
    s.call('PUT', base, { token, headers, body: baseRevision === undefined ? { scenes } : { baseRevision, scenes } });
  return { s, tree, producer, writer, reviewer, episodeId, base, save };
}

const SCENE_1 = {
  id: 's1', heading: 'INT. NIGHT TRAIN - CORRIDOR - NIGHT', location: 'Night train', timeOfDay: 'night',
  lines: [
    { id: 'l1', kind: 'action', text: 'Lights flicker. MEI walks past the compartments.' },
    { id: 'l2', kind: 'dialogue', character: 'MEI', text: 'Someone is following me.' },
    { id: 'l3', kind: 'note', text: 'Handheld camera.' },
  ],
};
const SCENE_2 = { id: 's2', heading: 'EXT. PLATFORM - DAWN', location: 'Platform', timeOfDay: 'dawn', lines: [{ id: 'l4', kind: 'dialogue', character: 'CONDUCTOR', text: '站台到了。' }] };

test('script routes: 401 without a session, 403 without script:read or script:edit, 404 for another project\'s episode', async (t) => {
  const { s, tree, producer, writer, reviewer, episodeId, base, save } = await setup(t);
  const reads = [base, `${base}/revisions`, `${base}/revisions/1`, `${base}/diff`];
  assert.equal((await save(0, [SCENE_1])).status, 200);
  for (const p of reads) assert.equal((await s.call('GET', p)).status, 401, p);
  assert.equal((await s.call('PUT', base, { body: { baseRevision: 1, scenes: [] } })).status, 401);
  assert.equal((await s.call('POST', `${base}/revisions/1/restore`, { body: { baseRevision: 1 } })).status, 401);
  // reviewer: script:read only
  for (const p of reads) assert.equal((await s.call('GET', p, { token: reviewer.token })).status, 200, p);
  const denied = await save(1, [], reviewer.token);
  assert.equal(denied.status, 403);
  assert.equal(denied.body.error.code, 'permission_denied');
  assert.equal((await s.call('POST', `${base}/revisions/1/restore`, { token: reviewer.token, body: { baseRevision: 1 } })).status, 403);
  // a project member without script:read: a project-level guest with a role that has it is fine, an org_member is not
  const orgMember = await member(s, 'org_member', tree);
  const noRead = await s.call('GET', base, { token: orgMember.token });
  assert.equal(noRead.status, 403, noRead.text);
  // another project's episode (same organization) is 404, and so is an unknown one
  const otherProject = (await s.call('POST', `/api/workspaces/${tree.workspaceId}/projects`, { token: producer.token, body: { name: 'Other' } })).body;
  const foreign = `/api/production/script/episodes/${await pilotOf(s, otherProject.id)}`;
  for (const p of [foreign, `${foreign}/revisions`, `${foreign}/diff`, '/api/production/script/episodes/epi_none']) {
    const r = await s.call('GET', p, { token: writer.token });
    assert.equal(r.status, 404, p);
    assert.equal(r.body.error.code, 'not_found');
  }
  assert.equal((await s.call('PUT', foreign, { token: writer.token, body: { baseRevision: 0, scenes: [] } })).status, 404);
  assert.equal((await s.call('POST', `${foreign}/revisions/1/restore`, { token: writer.token, body: { baseRevision: 0 } })).status, 404);
  // another organization's producer cannot reach it either
  const outsider = await member(s, 'producer');
  assert.equal((await s.call('GET', base, { token: outsider.token })).status, 404);
  assert.equal(await pilotOf(s, tree.projectId), episodeId);
});

test('a first save on revision 0 creates revision 1; each save appends n+1 with author, time and SHA-256; a stale save is 409 revision_conflict and changes nothing', async (t) => {
  const { s, writer, producer, episodeId, base, save } = await setup(t);
  const empty = await s.call('GET', base, { token: writer.token });
  assert.equal(empty.status, 200);
  assert.equal(empty.body.revision, 0);
  assert.deepEqual(empty.body.scenes, []);
  assert.equal(empty.headers.get('etag'), '"0"');

  const first = await save(0, [SCENE_1]);
  assert.equal(first.status, 200, first.text);
  assert.equal(first.body.revision, 1);
  assert.equal(first.body.episodeId, episodeId);
  assert.deepEqual(first.body.author, { userId: writer.user.id, name: writer.user.name });
  assert.ok(Date.parse(first.body.createdAt));
  assert.equal(first.body.scenes[0].lines[0].character, null);
  assert.equal(first.body.scenes[0].lines[1].character, 'MEI');
  const stored = (await s.db.get<any>('SELECT content, content_sha256 FROM script_revisions WHERE document_id = ? AND revision = 1', episodeId))!;
  assert.equal(stored.content_sha256, createHash('sha256').update(stored.content).digest('hex'));
  assert.equal(first.body.contentSha256, stored.content_sha256);

  const second = await save(1, [SCENE_1, SCENE_2], producer.token);
  assert.equal(second.body.revision, 2);
  assert.equal(second.body.author.userId, producer.user.id);

  const stale = await save(1, [], writer.token);
  assert.equal(stale.status, 409);
  assert.equal(stale.body.error.code, 'revision_conflict');
  assert.equal(stale.body.error.details.currentRevision, 2);
  assert.equal(stale.body.error.details.baseRevision, 1);
  assert.match(stale.body.error.message, /revision 2/);
  const ahead = await save(7, [], writer.token);
  assert.equal(ahead.status, 409);
  const now = await s.call('GET', base, { token: writer.token });
  assert.equal(now.body.revision, 2, 'nothing changed');
  assert.equal(now.body.scenes.length, 2);
  assert.equal((await s.db.get<any>('SELECT count(*) AS n FROM script_revisions WHERE document_id = ?', episodeId))!.n, 2);

  // If-Match works as the base revision; a stale one is refused the same way
  const viaHeader = await save(undefined, [SCENE_2], writer.token, { 'if-match': '"2"' });
  assert.equal(viaHeader.status, 200, viaHeader.text);
  assert.equal(viaHeader.body.revision, 3);
  assert.equal(viaHeader.headers.get('etag'), '"3"');
  assert.equal((await save(undefined, [], writer.token, { 'if-match': '"2"' })).status, 409);
  assert.equal((await save(undefined, [])).status, 422, 'a base revision is required');
  assert.equal((await save(3, [], writer.token, { 'if-match': '"2"' })).status, 422, 'body and If-Match disagree');

  const audits = await s.db.all<any>("SELECT * FROM audit_log WHERE action = 'script.saved' AND target_id = ? ORDER BY seq", episodeId);
  assert.equal(audits.length, 3);
  assert.equal(audits[0].target_type, 'script');
  assert.equal(audits[0].actor_user_id, writer.user.id);
  assert.deepEqual(JSON.parse(audits[1].metadata), { revision: 2, baseRevision: 1, contentSha256: second.body.contentSha256, scenes: 2, lines: 4 });
});

test('revisions list newest first with paging, each revision readable; 404 for a missing one, 422 for a bad number', async (t) => {
  const { s, writer, base, save } = await setup(t);
  for (let i = 0; i < 3; i++) assert.equal((await save(i, [{ ...SCENE_1, heading: `take ${i + 1}` }])).status, 200);
  const list = await s.call('GET', `${base}/revisions`, { token: writer.token });
  assert.equal(list.status, 200);
  assert.deepEqual(list.body.items.map((r: any) => r.revision), [3, 2, 1]);
  assert.deepEqual(list.body.pagination, { page: 1, pageSize: 50, total: 3 });
  assert.equal(list.body.items[0].sceneCount, 1);
  assert.equal(list.body.items[0].scenes, undefined, 'lists carry no content');
  const page2 = await s.call('GET', `${base}/revisions?page=2&pageSize=2`, { token: writer.token });
  assert.deepEqual(page2.body.items.map((r: any) => r.revision), [1]);
  const two = await s.call('GET', `${base}/revisions/2`, { token: writer.token });
  assert.equal(two.status, 200);
  assert.equal(two.body.revision, 2);
  assert.equal(two.body.scenes[0].heading, 'take 2');
  assert.equal((await s.call('GET', `${base}/revisions/9`, { token: writer.token })).status, 404);
  assert.equal((await s.call('GET', `${base}/revisions/abc`, { token: writer.token })).status, 422);
});

test('diff reports scenes and lines added, removed and changed (with field changes and moves)', async (t) => {
  const { s, writer, base, save } = await setup(t);
  await save(0, [SCENE_1, SCENE_2]);
  const edited = {
    ...SCENE_1, heading: 'INT. NIGHT TRAIN - CORRIDOR - LATE NIGHT',
    lines: [
      { id: 'l0', kind: 'action', text: 'A door slams.' },
      SCENE_1.lines[0],
      { ...SCENE_1.lines[1], text: 'Someone is behind me.' },
    ],
  };
  const s3 = { id: 's3', heading: 'INT. CABIN - NIGHT', lines: [{ kind: 'action', text: 'Empty.' }] };
  await save(1, [edited, s3]);
  const d = await s.call('GET', `${base}/diff?from=1&to=2`, { token: writer.token });
  assert.equal(d.status, 200, d.text);
  assert.equal(d.body.from, 1);
  assert.equal(d.body.to, 2);
  assert.deepEqual(d.body.scenes.added.map((x: any) => [x.id, x.position]), [['s3', 1]]);
  assert.deepEqual(d.body.scenes.removed.map((x: any) => x.id), ['s2']);
  assert.equal(d.body.scenes.changed.length, 1);
  const c = d.body.scenes.changed[0];
  assert.equal(c.id, 's1');
  assert.deepEqual(c.fields, { heading: { from: SCENE_1.heading, to: edited.heading } });
  assert.equal(c.moved, false);
  assert.deepEqual(c.lines.added.map((l: any) => [l.id, l.position]), [['l0', 0]]);
  assert.deepEqual(c.lines.removed.map((l: any) => l.id), ['l3']);
  assert.deepEqual(c.lines.changed, [{ id: 'l2', position: 2, fields: { text: { from: 'Someone is following me.', to: 'Someone is behind me.' } }, moved: false }]);
  assert.deepEqual(d.body.summary, { scenesAdded: 1, scenesRemoved: 1, scenesChanged: 1, linesAdded: 2, linesRemoved: 2, linesChanged: 1 });
  // defaults: to = current, from = the one before; from 0 is the empty document
  const dflt = await s.call('GET', `${base}/diff`, { token: writer.token });
  assert.deepEqual([dflt.body.from, dflt.body.to], [1, 2]);
  const fromEmpty = await s.call('GET', `${base}/diff?from=0&to=1`, { token: writer.token });
  assert.deepEqual(fromEmpty.body.scenes.added.map((x: any) => x.id), ['s1', 's2']);
  // a reorder is a move of one scene, not a change of every one
  await save(2, [s3, edited].map((x) => ({ ...x, lines: x.lines })));
  const reordered = (await s.call('GET', `${base}/diff`, { token: writer.token })).body;
  assert.equal(reordered.scenes.changed.filter((x: any) => x.moved).length, 1);
  assert.equal((await s.call('GET', `${base}/diff?from=1&to=9`, { token: writer.token })).status, 404);
  assert.equal((await s.call('GET', `${base}/diff?from=x`, { token: writer.token })).status, 422);
});

test('restore makes an older revision current as a new revision; a stale restore is 409', async (t) => {
  const { s, writer, reviewer, episodeId, base, save } = await setup(t);
  const r1 = (await save(0, [SCENE_1])).body;
  await save(1, [SCENE_2]);
  const stale = await s.call('POST', `${base}/revisions/1/restore`, { token: writer.token, body: { baseRevision: 1 } });
  assert.equal(stale.status, 409);
  assert.equal(stale.body.error.code, 'revision_conflict');
  assert.equal(stale.body.error.details.currentRevision, 2);
  const restored = await s.call('POST', `${base}/revisions/1/restore`, { token: writer.token, body: { baseRevision: 2 } });
  assert.equal(restored.status, 201, restored.text);
  assert.equal(restored.body.revision, 3);
  assert.equal(restored.body.restoredFrom, 1);
  assert.deepEqual(restored.body.scenes, r1.scenes);
  assert.equal(restored.body.contentSha256, r1.contentSha256);
  const cur = await s.call('GET', base, { token: reviewer.token });
  assert.equal(cur.body.revision, 3);
  assert.deepEqual((await s.call('GET', `${base}/revisions`, { token: writer.token })).body.items.map((r: any) => [r.revision, r.restoredFrom]), [[3, 1], [2, null], [1, null]]);
  assert.equal((await s.call('POST', `${base}/revisions/9/restore`, { token: writer.token, body: { baseRevision: 3 } })).status, 404);
  const audit = await s.db.all<any>("SELECT * FROM audit_log WHERE action = 'script.restored' AND target_id = ?", episodeId);
  assert.equal(audit.length, 1);
  assert.equal(JSON.parse(audit[0].metadata).restoredFrom, 1);
});

test('revisions are immutable: UPDATE and DELETE are refused by triggers', async (t) => {
  const { s, tree, episodeId, save, producer } = await setup(t);
  await save(0, [SCENE_1]);
  await s.call('PUT', '/api/production/bible', { token: producer.token, body: { baseRevision: 0, entries: [{ kind: 'character', name: 'Mei' }] } });
  await assert.rejects(async () => await s.db.run("UPDATE script_revisions SET content = '{\"scenes\":[]}' WHERE document_id = ?", episodeId), /immutable/);
  await assert.rejects(async () => await s.db.run('DELETE FROM script_revisions WHERE document_id = ?', episodeId), /immutable/);
  await assert.rejects(async () => await s.db.run("UPDATE bible_revisions SET author_name = 'x' WHERE project_id = ?", tree.projectId), /immutable/);
  await assert.rejects(async () => await s.db.run('DELETE FROM bible_revisions WHERE project_id = ?', tree.projectId), /immutable/);
  assert.equal((await s.db.get<any>('SELECT count(*) AS n FROM script_revisions WHERE document_id = ?', episodeId))!.n, 1);
});

test('script validation: limits, dialogue needs a character, ids unique, unknown fields refused (422)', async (t) => {
  const { s, writer, base, save } = await setup(t);
  const fields = async (scenes: unknown[]) => {
    const r = await save(0, scenes);
    assert.equal(r.status, 422, r.text);
    return Object.keys(r.body.error.details.fields);
  };
  assert.deepEqual(await fields(Array.from({ length: 501 }, () => ({}))), ['scenes']);
  assert.deepEqual(await fields([{ lines: Array.from({ length: 2001 }, () => ({ kind: 'note', text: '' })) }]), ['scenes[0].lines']);
  assert.deepEqual(await fields([{ lines: [{ kind: 'action', text: 'x'.repeat(10_001) }] }]), ['scenes[0].lines[0].text']);
  assert.deepEqual(await fields([{ lines: [{ kind: 'dialogue', text: 'hi' }, { kind: 'action', character: 'MEI', text: 'x' }] }]),
    ['scenes[0].lines[0].character', 'scenes[0].lines[1].character']);
  assert.deepEqual(await fields([{ id: 'a' }, { id: 'a' }]), ['scenes[1].id']);
  assert.deepEqual(await fields([{ lines: [{ kind: 'shout', text: 'x' }] }]), ['scenes[0].lines[0].kind']);
  assert.deepEqual(await fields([{ mood: 'dark' }]), ['scenes[0].mood']);
  assert.equal((await s.call('GET', base, { token: writer.token })).body.revision, 0, 'nothing saved');
  // ids are assigned where absent and kept across saves
  const ok = await save(0, [{ heading: 'INT. ROOM', lines: [{ kind: 'action', text: 'x' }] }]);
  assert.match(ok.body.scenes[0].id, /^scn_/);
  assert.match(ok.body.scenes[0].lines[0].id, /^ln_/);
});

test('story bible: script:read reads, asset:edit writes (a writer cannot), revisions, conflict, restore, diff', async (t) => {
  const { s, tree, producer, writer, reviewer } = await setup(t);
  const artDirector = await member(s, 'art_director', tree);
  const b = '/api/production/bible';
  assert.equal((await s.call('GET', b)).status, 401);
  assert.equal((await s.call('PUT', b, { body: { baseRevision: 0, entries: [] } })).status, 401);
  const empty = await s.call('GET', b, { token: reviewer.token });
  assert.equal(empty.status, 200);
  assert.equal(empty.body.revision, 0);
  assert.deepEqual(empty.body.entries, []);
  const ref = await s.call('POST', '/api/assets', { token: artDirector.token, body: { kind: 'reference', name: 'Mei reference' } });
  assert.equal(ref.status, 201, ref.text);
  const unknownAsset = await s.call('PUT', b, { token: artDirector.token, body: { baseRevision: 0, entries: [{ kind: 'character', name: 'X', referenceAssetIds: ['ast_nope'] }] } });
  assert.equal(unknownAsset.status, 422);
  assert.ok(unknownAsset.body.error.details.fields['entries[0].referenceAssetIds']);
  const mei = { id: 'mei', kind: 'character', name: 'Mei', description: 'A night-shift nurse', attributes: { age: '28', hair: 'black' }, referenceAssetIds: [ref.body.id] };
  const train = { id: 'train', kind: 'location', name: 'Night train' };
  const denied = await s.call('PUT', b, { token: writer.token, body: { baseRevision: 0, entries: [mei] } });
  assert.equal(denied.status, 403);
  assert.equal(denied.body.error.code, 'permission_denied');
  const first = await s.call('PUT', b, { token: artDirector.token, body: { baseRevision: 0, entries: [mei, train] } });
  assert.equal(first.status, 200, first.text);
  assert.equal(first.body.revision, 1);
  assert.equal(first.body.projectId, tree.projectId);
  assert.deepEqual(first.body.entries[0], mei);
  assert.deepEqual(first.body.entries[1], { ...train, description: '', attributes: {}, referenceAssetIds: [] });
  const second = await s.call('PUT', b, { token: producer.token, body: { baseRevision: 1, entries: [{ ...mei, attributes: { age: '29', hair: 'black' } }, { kind: 'prop', name: 'Red umbrella' }, { kind: 'style_note', name: 'Palette', description: 'teal and amber' }] } });
  assert.equal(second.body.revision, 2);
  const stale = await s.call('PUT', b, { token: producer.token, body: { baseRevision: 1, entries: [] } });
  assert.equal(stale.status, 409);
  assert.equal(stale.body.error.code, 'revision_conflict');
  assert.equal(stale.body.error.details.currentRevision, 2);
  assert.equal((await s.call('GET', b, { token: writer.token })).body.entries.length, 3, 'nothing changed');
  const list = await s.call('GET', `${b}/revisions`, { token: writer.token });
  assert.deepEqual(list.body.items.map((r: any) => [r.revision, r.entryCount]), [[2, 3], [1, 2]]);
  assert.equal((await s.call('GET', `${b}/revisions/1`, { token: writer.token })).body.entries.length, 2);
  const d = (await s.call('GET', `${b}/diff?from=1&to=2`, { token: writer.token })).body;
  assert.deepEqual(d.entries.removed.map((e: any) => e.id), ['train']);
  assert.deepEqual(d.entries.added.map((e: any) => e.name), ['Red umbrella', 'Palette']);
  assert.deepEqual(d.entries.changed, [{ id: 'mei', position: 0, fields: { attributes: { from: { age: '28', hair: 'black' }, to: { age: '29', hair: 'black' } } }, moved: false }]);
  assert.equal((await s.call('POST', `${b}/revisions/1/restore`, { token: writer.token, body: { baseRevision: 2 } })).status, 403);
  const restored = await s.call('POST', `${b}/revisions/1/restore`, { token: artDirector.token, body: { baseRevision: 2 } });
  assert.equal(restored.status, 201, restored.text);
  assert.equal(restored.body.revision, 3);
  assert.equal(restored.body.restoredFrom, 1);
  assert.deepEqual(restored.body.entries, first.body.entries);
  const bad = await s.call('PUT', b, { token: producer.token, body: { baseRevision: 3, entries: [{ kind: 'character', name: 'Mei' }, { kind: 'character', name: 'mei' }, { kind: 'ghost', name: '' }, { kind: 'prop', name: 'x', attributes: { n: 1 } }] } });
  assert.equal(bad.status, 422);
  assert.deepEqual(Object.keys(bad.body.error.details.fields).sort(), ['entries[2].kind', 'entries[2].name', 'entries[3].attributes.n']);
  const dup = await s.call('PUT', b, { token: producer.token, body: { baseRevision: 3, entries: [{ kind: 'character', name: 'Mei' }, { kind: 'character', name: 'mei' }] } });
  assert.deepEqual(Object.keys(dup.body.error.details.fields), ['entries[1].name']);
  assert.deepEqual((await s.db.all<any>("SELECT action FROM audit_log WHERE target_type = 'bible' AND target_id = ? ORDER BY seq", tree.projectId)).map((r) => r.action),
    ['bible.saved', 'bible.saved', 'bible.restored']);
  // another project's bible is its own
  const outsider = await member(s, 'producer');
  assert.equal((await s.call('GET', b, { token: outsider.token })).body.revision, 0);
});

test('on an archived project script and bible writes are 409 project_archived and reads answer 200', async (t) => {
  const { s, tree, producer, writer, base, save } = await setup(t);
  await save(0, [SCENE_1]);
  await s.call('PUT', '/api/production/bible', { token: producer.token, body: { baseRevision: 0, entries: [] } });
  await changeLifecycle(s.operator(), tree.projectId, 'archive');
  for (const [method, p, token] of [
    ['PUT', base, writer.token], ['POST', `${base}/revisions/1/restore`, writer.token],
    ['PUT', '/api/production/bible', producer.token], ['POST', '/api/production/bible/revisions/1/restore', producer.token],
  ] as const) {
    const r = await s.call(method, p, { token, body: { baseRevision: 1, scenes: [], entries: [] } });
    assert.equal(r.status, 409, `${method} ${p}`);
    assert.equal(r.body.error.code, 'project_archived');
  }
  for (const p of [base, `${base}/revisions`, `${base}/revisions/1`, `${base}/diff`, '/api/production/bible', '/api/production/bible/revisions', '/api/production/bible/diff']) {
    assert.equal((await s.call('GET', p, { token: writer.token })).status, 200, p);
  }
  assert.equal((await s.db.get<any>('SELECT count(*) AS n FROM script_revisions WHERE project_id = ?', tree.projectId))!.n, 1);
});

test('a saved script is indexed for search (current revision, same transaction): its lines are found', async (t) => {
  const { s, writer, episodeId, save } = await setup(t);
  await save(0, [SCENE_1]);
  await save(1, [SCENE_1, SCENE_2]);
  const r = await s.call('GET', `/api/search?q=${encodeURIComponent('站台')}&scope=project`, { token: writer.token });
  assert.equal(r.status, 200, r.text);
  const items = Array.isArray(r.body) ? r.body : r.body.items;
  const hit = items.find((x: any) => x.type === 'script');
  assert.ok(hit, r.text);
  assert.equal(hit.id ?? hit.targetId, episodeId);
  assert.equal((await s.db.get<any>("SELECT count(*) AS n FROM search_documents WHERE type = 'script' AND target_id = ?", episodeId))!.n, 1);
});
