// Production content: catalog (seasons, episodes), shots, production graph and work items: access
// on every route, dense reordering, refused removals, archived projects, graph shape, to-do content.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { makeTree, member, type Tree } from '../helpers/factories.ts';
import { changeLifecycle } from '../../src/production/projects/service.ts';
import { createTask } from '../../src/production/tasks/service.ts';
import { withScope } from '../../src/directory/context.ts';

let jobCounter = 0;
async function addJob(s: TestServer, tree: Tree, shotId: string | null, status: string, createdAt = '2026-01-01T00:00:00.000Z', error: string | null = null): Promise<string> {
  const id = `job_t${++jobCounter}`;
  await s.db.run(`INSERT INTO generation_jobs (id, organization_id, workspace_id, project_id, shot_id, kind, status, error, created_at, updated_at)
    VALUES (?, ?, ?, ?, ?, 'image', ?, ?, ?, ?)`, id, tree.organizationId, tree.workspaceId, tree.projectId, shotId, status, error, createdAt, createdAt);
  return id;
}

const starter = async (s: TestServer, table: string, projectId: string) =>
  (await s.db.get<{ id: string }>(`SELECT id FROM ${table} WHERE project_id = ? ORDER BY position`, projectId))!.id;

async function setup(t: any) {
  const s = await startTestServer(t);
  const tree = await makeTree(s);
  const producer = await member(s, 'producer', tree);
  const api = (method: string, path: string, body?: unknown, token = producer.token) => s.call(method, path, { token, ...(body === undefined ? {} : { body }) });
  return {
    s, tree, producer, api,
    seasonId: await starter(s, 'seasons', tree.projectId), episodeId: await starter(s, 'episodes', tree.projectId), shotId: await starter(s, 'shots', tree.projectId),
  };
}

const positions = async (s: TestServer, table: string, parentColumn: string, parentId: string) =>
  await s.db.all<{ id: string; position: number }>(`SELECT id, position FROM ${table} WHERE ${parentColumn} = ? ORDER BY position`, parentId);

test('every production route: 401 without a session, 403 without the permission, 404 for another project\'s ids, success for a producer', async (t) => {
  const { s, tree, producer, api, seasonId, episodeId, shotId } = await setup(t);
  const writer = await member(s, 'writer', tree); // script:read only
  const orgMember = await member(s, 'org_member', tree); // sees no project: no project in scope
  const other = await member(s, 'producer'); // another project, where these ids do not exist
  // Fresh rows for the successful removals.
  const freshSeason = (await api('POST', '/api/production/seasons', { title: 'To remove' })).body.id;
  const freshEpisode = (await api('POST', `/api/production/seasons/${seasonId}/episodes`, { title: 'To remove' })).body.id;
  const freshShot = (await api('POST', '/api/production/shots', { episodeId })).body.id;
  type Case = { method: string; path: string; body?: unknown; status: number; denied: 'writer' | 'orgMember'; otherStatus?: number };
  const cases: Case[] = [
    { method: 'GET', path: '/api/production/catalog', status: 200, denied: 'orgMember', otherStatus: 200 },
    { method: 'POST', path: '/api/production/seasons', body: { title: 'S2' }, status: 201, denied: 'writer', otherStatus: 201 },
    { method: 'PATCH', path: `/api/production/seasons/${seasonId}`, body: { title: 'Renamed' }, status: 200, denied: 'writer' },
    { method: 'POST', path: `/api/production/seasons/${seasonId}/reorder`, body: { position: 1 }, status: 200, denied: 'writer' },
    { method: 'POST', path: `/api/production/seasons/${seasonId}/episodes`, body: { title: 'E2' }, status: 201, denied: 'writer' },
    { method: 'PATCH', path: `/api/production/episodes/${episodeId}`, body: { status: 'in_production' }, status: 200, denied: 'writer' },
    { method: 'POST', path: `/api/production/episodes/${episodeId}/reorder`, body: { position: 1 }, status: 200, denied: 'writer' },
    { method: 'GET', path: '/api/production/shots', status: 200, denied: 'orgMember', otherStatus: 200 },
    { method: 'GET', path: `/api/production/shots?episodeId=${episodeId}`, status: 200, denied: 'orgMember' },
    { method: 'POST', path: '/api/production/shots', body: { episodeId }, status: 201, denied: 'writer', otherStatus: 422 },
    { method: 'GET', path: `/api/production/shots/${shotId}`, status: 200, denied: 'orgMember' },
    { method: 'PATCH', path: `/api/production/shots/${shotId}`, body: { prompt: 'a rainy platform' }, status: 200, denied: 'writer' },
    { method: 'POST', path: `/api/production/shots/${shotId}/reorder`, body: { position: 1 }, status: 200, denied: 'writer' },
    { method: 'DELETE', path: `/api/production/shots/${freshShot}`, status: 204, denied: 'writer' },
    { method: 'DELETE', path: `/api/production/episodes/${freshEpisode}`, status: 204, denied: 'writer' },
    { method: 'DELETE', path: `/api/production/seasons/${freshSeason}`, status: 204, denied: 'writer' },
    { method: 'GET', path: '/api/production/graph', status: 200, denied: 'orgMember', otherStatus: 200 },
    { method: 'GET', path: '/api/work-items', status: 200, denied: 'orgMember', otherStatus: 200 },
  ];
  const covered = new Set(cases.map((c) => `${c.method} ${c.path.split('?')[0].replace(seasonId, ':seasonId').replace(freshSeason, ':seasonId')
    .replace(episodeId, ':episodeId').replace(freshEpisode, ':episodeId').replace(shotId, ':shotId').replace(freshShot, ':shotId')}`));
  const routes = s.app.router.routes.filter((r) => /^\/api\/(production\/(catalog|seasons|episodes|shots|graph)|work-items)/.test(r.pattern));
  for (const r of routes) assert.ok(covered.has(`${r.method} ${r.pattern}`), `route ${r.method} ${r.pattern} has an access case`);
  for (const c of cases) {
    const label = `${c.method} ${c.path}`;
    assert.equal((await s.call(c.method, c.path, c.body === undefined ? {} : { body: c.body })).status, 401, label);
    const token = c.denied === 'writer' ? writer.token : orgMember.token;
    const denied = await s.call(c.method, c.path, { token, ...(c.body === undefined ? {} : { body: c.body }) });
    assert.equal(denied.status, 403, label);
    assert.equal(denied.body.error.code, c.denied === 'writer' ? 'permission_denied' : 'scope_forbidden', label);
    const cross = await s.call(c.method, c.path, { token: other.token, ...(c.body === undefined ? {} : { body: c.body }) });
    assert.equal(cross.status, c.otherStatus ?? 404, `${label} from another project: ${cross.text}`);
    const ok = await s.call(c.method, c.path, { token: producer.token, ...(c.body === undefined ? {} : { body: c.body }) });
    assert.equal(ok.status, c.status, `${label}: ${ok.text}`);
  }
  // Nothing of the first project leaks into the other's lists.
  const otherShots = await s.call('GET', '/api/production/shots', { token: other.token });
  assert.ok(otherShots.body.items.every((x: any) => x.projectId === other.tree.projectId));
  assert.equal((await s.call('GET', `/api/production/shots?episodeId=${episodeId}`, { token: other.token })).status, 404);
});

test('the catalog lists series, ordered seasons and episodes with counts and statuses; changes are audited', async (t) => {
  const { s, tree, api, seasonId, episodeId } = await setup(t);
  const first = await api('GET', '/api/production/catalog');
  assert.equal(first.status, 200);
  assert.equal(first.body.projectId, tree.projectId);
  assert.equal(first.body.series.length, 1);
  const [series] = first.body.series;
  assert.equal(series.status, 'draft');
  assert.deepEqual([series.seasonCount, series.episodeCount, series.shotCount], [1, 1, 1]);
  assert.equal(series.seasons[0].id, seasonId);
  assert.equal(series.seasons[0].episodes[0].id, episodeId);
  assert.deepEqual(series.seasons[0].episodes[0].shotStatusCounts, { draft: 1 });

  const s2 = await api('POST', '/api/production/seasons', { title: 'Second', status: 'in_production' });
  assert.equal(s2.status, 201, s2.text);
  assert.deepEqual([s2.body.position, s2.body.number, s2.body.status], [2, 2, 'in_production']);
  const s0 = await api('POST', '/api/production/seasons', { title: 'Prequel', position: 1 });
  assert.deepEqual([s0.body.position, s0.body.number], [1, 1]);
  const e2 = await api('POST', `/api/production/seasons/${seasonId}/episodes`, {});
  assert.equal(e2.body.title, 'Episode 2');
  await api('POST', '/api/production/shots', { episodeId: e2.body.id, status: 'ready' });
  await api('POST', '/api/production/shots', { episodeId: e2.body.id });
  assert.equal((await api('PATCH', `/api/production/episodes/${e2.body.id}`, { title: 'Arrival', status: 'review' })).body.status, 'review');
  assert.equal((await api('PATCH', `/api/production/episodes/${e2.body.id}`, { status: 'finished' })).status, 422);
  assert.equal((await api('PATCH', `/api/production/seasons/${seasonId}`, {})).status, 422);
  assert.equal((await api('POST', '/api/production/seasons', { title: '' })).status, 422);

  const c = (await api('GET', '/api/production/catalog')).body.series[0];
  assert.deepEqual(c.seasons.map((x: any) => [x.title, x.position, x.number, x.episodeCount]), [['Prequel', 1, 1, 0], ['Season 1', 2, 2, 2], ['Second', 3, 3, 0]]);
  const eps = c.seasons[1].episodes;
  assert.deepEqual(eps.map((e: any) => [e.title, e.position, e.status, e.shotCount]), [['Pilot', 1, 'draft', 1], ['Arrival', 2, 'review', 2]]);
  assert.deepEqual(eps[1].shotStatusCounts, { ready: 1, draft: 1 });
  assert.equal(c.seasons[1].shotCount, 3);
  assert.deepEqual([c.seasonCount, c.episodeCount, c.shotCount], [3, 2, 3]);
  const actions = (await s.db.all<any>("SELECT action FROM audit_log WHERE project_id = ? AND target_type IN ('season', 'episode') ORDER BY seq", tree.projectId)).map((r) => r.action);
  assert.deepEqual(actions, ['season.created', 'season.created', 'episode.created', 'episode.updated']);
});

test('reordering keeps positions dense 1..n (and numbers following them) for seasons, episodes and shots', async (t) => {
  const { s, api, seasonId, episodeId, shotId, tree } = await setup(t);
  const seriesId = (await s.db.get<any>('SELECT id FROM series WHERE project_id = ?', tree.projectId))!.id;
  const seasons = [seasonId];
  for (let i = 0; i < 3; i++) seasons.push((await api('POST', '/api/production/seasons', {})).body.id);
  const moved = await api('POST', `/api/production/seasons/${seasons[3]}/reorder`, { position: 1 });
  assert.equal(moved.status, 200);
  assert.deepEqual([moved.body.position, moved.body.number], [1, 1]);
  assert.deepEqual((await positions(s, 'seasons', 'series_id', seriesId)).map((r) => r.id), [seasons[3], seasons[0], seasons[1], seasons[2]]);
  assert.equal((await api('POST', `/api/production/seasons/${seasons[3]}/reorder`, { position: 99 })).body.position, 4, 'past the end means last');
  assert.equal((await api('POST', `/api/production/seasons/${seasons[3]}/reorder`, { position: 0 })).status, 422);
  assert.equal((await api('DELETE', `/api/production/seasons/${seasons[1]}`)).status, 204);
  const after = await s.db.all<any>('SELECT id, position, number FROM seasons WHERE series_id = ? ORDER BY position', seriesId);
  assert.deepEqual(after.map((r) => [r.id, r.position, r.number]), [[seasons[0], 1, 1], [seasons[2], 2, 2], [seasons[3], 3, 3]]);

  const episodes = [episodeId];
  for (let i = 0; i < 2; i++) episodes.push((await api('POST', `/api/production/seasons/${seasonId}/episodes`, {})).body.id);
  await api('POST', `/api/production/episodes/${episodes[0]}/reorder`, { position: 3 });
  assert.deepEqual((await positions(s, 'episodes', 'season_id', seasonId)).map((r) => [r.id, r.position]), [[episodes[1], 1], [episodes[2], 2], [episodes[0], 3]]);

  const shots = [shotId];
  for (let i = 0; i < 3; i++) shots.push((await api('POST', '/api/production/shots', { episodeId })).body.id);
  const inserted = await api('POST', '/api/production/shots', { episodeId, position: 2, title: 'Insert' });
  assert.equal(inserted.body.position, 2);
  assert.deepEqual((await positions(s, 'shots', 'episode_id', episodeId)).map((r) => r.id), [shots[0], inserted.body.id, shots[1], shots[2], shots[3]]);
  const r = await api('POST', `/api/production/shots/${shots[3]}/reorder`, { position: 1 });
  assert.equal(r.body.position, 1);
  await api('DELETE', `/api/production/shots/${inserted.body.id}`);
  const final = await positions(s, 'shots', 'episode_id', episodeId);
  assert.deepEqual(final.map((x) => x.id), [shots[3], shots[0], shots[1], shots[2]]);
  assert.deepEqual(final.map((x) => x.position), [1, 2, 3, 4]);
  const listed = await api('GET', `/api/production/shots?episodeId=${episodeId}`);
  assert.deepEqual(listed.body.items.map((x: any) => x.id), final.map((x) => x.id));
  assert.equal(listed.body.pagination.total, 4);
  assert.ok((await s.db.all<any>("SELECT 1 FROM audit_log WHERE action = 'shot.reordered' AND target_id = ?", shots[3])).length === 1);
});

test('removals with attached rows or jobs are refused with 409 and change nothing', async (t) => {
  const { s, tree, api, seasonId, episodeId, shotId } = await setup(t);
  const season = await api('DELETE', `/api/production/seasons/${seasonId}`);
  assert.equal(season.status, 409);
  assert.equal(season.body.error.code, 'season_has_episodes');
  assert.equal(season.body.error.details.episodes, 1);
  const episode = await api('DELETE', `/api/production/episodes/${episodeId}`);
  assert.equal(episode.status, 409);
  assert.equal(episode.body.error.code, 'episode_has_shots');
  await addJob(s, tree, shotId, 'completed');
  const withJobs = await api('DELETE', `/api/production/episodes/${episodeId}`);
  assert.equal(withJobs.body.error.code, 'episode_has_jobs');
  assert.deepEqual(withJobs.body.error.details, { shots: 1, jobs: 1 });
  const shot = await api('DELETE', `/api/production/shots/${shotId}`);
  assert.equal(shot.status, 409);
  assert.equal(shot.body.error.code, 'shot_has_jobs');
  for (const table of ['seasons', 'episodes', 'shots']) {
    assert.equal((await s.db.get<any>(`SELECT count(*) AS n FROM ${table} WHERE project_id = ?`, tree.projectId))!.n, 1, table);
  }
  assert.equal((await s.db.get<any>("SELECT count(*) AS n FROM audit_log WHERE action LIKE '%.removed' AND project_id = ?", tree.projectId))!.n, 0);
  // An empty season and an episode whose only shot was removed go.
  const empty = (await api('POST', `/api/production/seasons/${seasonId}/episodes`, {})).body.id;
  const lone = (await api('POST', '/api/production/shots', { episodeId: empty })).body.id;
  assert.equal((await api('DELETE', `/api/production/episodes/${empty}`)).body.error.code, 'episode_has_shots');
  assert.equal((await api('DELETE', `/api/production/shots/${lone}`)).status, 204);
  assert.equal((await api('DELETE', `/api/production/episodes/${empty}`)).status, 204);
  assert.equal((await api('DELETE', `/api/production/episodes/${empty}`)).status, 404);
});

test('shots: fields, validation, references, generation history newest first and an empty latest media list', async (t) => {
  const { s, tree, api, episodeId, shotId } = await setup(t);
  const bad = await api('POST', '/api/production/shots', { episodeId, aspectRatio: '4:3', status: 'done', durationTargetMs: -1, extra: 1 });
  assert.equal(bad.status, 422);
  assert.deepEqual(Object.keys(bad.body.error.details.fields).sort(), ['aspectRatio', 'durationTargetMs', 'extra', 'status']);
  assert.equal((await api('POST', '/api/production/shots', { episodeId: 'epi_none' })).status, 422);
  // References must name entries of the current story bible and assets of this project.
  const bible = await api('PUT', '/api/production/bible', { baseRevision: 0, entries: [
    { id: 'bib_a', kind: 'character', name: 'Mei' }, { id: 'bib_b', kind: 'location', name: 'Platform 9' }] });
  assert.equal(bible.status, 200, bible.text);
  const asset = await api('POST', '/api/assets', { kind: 'reference', name: 'Station mood board' });
  assert.equal(asset.status, 201, asset.text);
  const unknownRefs = await api('POST', '/api/production/shots', { episodeId, bibleEntryIds: ['bib_zz'], assetIds: ['ast_nope'] });
  assert.equal(unknownRefs.status, 422);
  assert.deepEqual(Object.keys(unknownRefs.body.error.details.fields).sort(), ['assetIds', 'bibleEntryIds']);
  const made = await api('POST', '/api/production/shots', {
    episodeId, title: 'Platform at night', sceneId: 'S1', description: 'Wide', prompt: 'a rainy platform, neon', negativePrompt: 'blur',
    durationTargetMs: 4000, aspectRatio: '16:9', status: 'ready', bibleEntryIds: ['bib_a', 'bib_b', 'bib_a'], assetIds: [asset.body.id],
  });
  assert.equal(made.status, 201, made.text);
  assert.equal(made.body.projectId, tree.projectId);
  assert.deepEqual([made.body.sceneId, made.body.aspectRatio, made.body.status, made.body.durationTargetMs, made.body.position], ['S1', '16:9', 'ready', 4000, 2]);
  assert.deepEqual(made.body.bibleEntryIds, ['bib_a', 'bib_b']);
  assert.deepEqual(made.body.assetIds, [asset.body.id]);
  const patched = await api('PATCH', `/api/production/shots/${made.body.id}`, { sceneId: null, status: 'generating', assetIds: [], negativePrompt: '' });
  assert.equal(patched.status, 200, patched.text);
  assert.deepEqual([patched.body.sceneId, patched.body.status, patched.body.negativePrompt], [null, 'generating', '']);
  assert.deepEqual(patched.body.assetIds, []);
  assert.deepEqual(patched.body.bibleEntryIds, ['bib_a', 'bib_b'], 'untouched references stay');
  assert.equal((await api('PATCH', `/api/production/shots/${made.body.id}`, {})).status, 422);
  assert.equal((await api('PATCH', `/api/production/shots/${made.body.id}`, { aspectRatio: '21:9' })).status, 422);
  const older = await addJob(s, tree, made.body.id, 'failed', '2026-01-01T00:00:00.000Z', 'timeout');
  const newer = await addJob(s, tree, made.body.id, 'completed', '2026-01-02T00:00:00.000Z');
  await addJob(s, tree, shotId, 'completed');
  const got = await api('GET', `/api/production/shots/${made.body.id}`);
  assert.equal(got.status, 200);
  assert.deepEqual(got.body.generationHistory.map((j: any) => [j.id, j.status]), [[newer, 'completed'], [older, 'failed']]);
  assert.equal(got.body.generationHistory[1].error, 'timeout');
  assert.deepEqual(got.body.latestMedia, []);
  const audit = await s.db.all<any>("SELECT action, metadata FROM audit_log WHERE target_type = 'shot' AND target_id = ? ORDER BY seq", made.body.id);
  assert.deepEqual(audit.map((a) => a.action), ['shot.created', 'shot.status_changed']);
  assert.deepEqual(JSON.parse(audit[1].metadata).changes.status, { from: 'ready', to: 'generating' });
  assert.equal((await api('GET', '/api/production/shots/sht_none')).status, 404);
});

test('on an archived project production writes are 409 project_archived; the catalog, shots, graph and work items stay readable', async (t) => {
  const { s, tree, api, seasonId, episodeId, shotId } = await setup(t);
  await changeLifecycle(s.operator(), tree.projectId, 'archive');
  for (const [method, path, body] of [
    ['POST', '/api/production/seasons', {}], ['PATCH', `/api/production/seasons/${seasonId}`, { title: 'x' }],
    ['POST', `/api/production/seasons/${seasonId}/episodes`, {}], ['DELETE', `/api/production/episodes/${episodeId}`, undefined],
    ['POST', '/api/production/shots', { episodeId }], ['PATCH', `/api/production/shots/${shotId}`, { title: 'x' }],
    ['POST', `/api/production/shots/${shotId}/reorder`, { position: 1 }], ['DELETE', `/api/production/shots/${shotId}`, undefined],
  ] as const) {
    const r = await api(method, path, body);
    assert.equal(r.status, 409, `${method} ${path}`);
    assert.equal(r.body.error.code, 'project_archived');
  }
  for (const path of ['/api/production/catalog', '/api/production/shots', `/api/production/shots/${shotId}`, '/api/production/graph', '/api/work-items']) {
    assert.equal((await api('GET', path)).status, 200, path);
  }
  assert.equal((await api('GET', '/api/production/catalog')).body.series[0].status, 'archived');
});

test('the graph links series -> season -> episode -> scene -> shot -> job and shot -> asset, with per-node status', async (t) => {
  const { s, tree, api, seasonId, episodeId, shotId } = await setup(t);
  const a = (await api('POST', '/api/production/shots', { episodeId, sceneId: 'S1', status: 'approved' })).body.id;
  const b = (await api('POST', '/api/production/shots', { episodeId, sceneId: 'S1', status: 'ready' })).body.id;
  const job = await addJob(s, tree, a, 'completed');
  await addJob(s, tree, null, 'failed'); // a job without a shot is not part of the graph
  const g = await api('GET', '/api/production/graph');
  assert.equal(g.status, 200);
  assert.equal(g.body.projectId, tree.projectId);
  const node = (id: string) => g.body.nodes.find((n: any) => n.id === id);
  const seriesId = (await s.db.get<any>('SELECT id FROM series WHERE project_id = ?', tree.projectId))!.id;
  const sceneId = `scene:${episodeId}:S1`;
  assert.deepEqual(g.body.nodes.map((n: any) => n.type).sort(), ['episode', 'job', 'scene', 'season', 'series', 'shot', 'shot', 'shot']);
  assert.equal(node(seriesId).status, 'draft');
  assert.deepEqual([node(sceneId).type, node(sceneId).label, node(sceneId).status], ['scene', 'S1', 'ready'], 'a scene is as far as its least advanced shot');
  assert.equal(node(a).status, 'approved');
  assert.equal(node(job).status, 'completed');
  const edges = g.body.edges.map((e: any) => `${e.from}>${e.to}:${e.kind}`).sort();
  assert.deepEqual(edges, [
    `${seriesId}>${seasonId}:contains`, `${seasonId}>${episodeId}:contains`, `${episodeId}>${sceneId}:contains`,
    `${episodeId}>${shotId}:contains`, `${sceneId}>${a}:contains`, `${sceneId}>${b}:contains`, `${a}>${job}:generated_by`,
  ].sort());
  // Assets a shot refers to are linked from it.
  const asset = (await api('POST', '/api/assets', { kind: 'image', name: 'Key art' })).body;
  assert.equal((await api('PATCH', `/api/production/shots/${b}`, { assetIds: [asset.id] })).status, 200);
  const g2 = await api('GET', '/api/production/graph');
  assert.deepEqual(g2.body.nodes.find((n: any) => n.id === asset.id), { id: asset.id, type: 'asset', label: 'Key art', status: 'active', refId: asset.id });
  assert.ok(g2.body.edges.some((e: any) => e.from === b && e.to === asset.id && e.kind === 'references'));
});

test('work items: assigned open tasks for everyone; failed jobs and shots without media for job:create holders; computed on each read', async (t) => {
  const { s, tree, producer, api, shotId } = await setup(t);
  const writer = await member(s, 'writer', tree);
  const ctx = withScope(s.operator(), tree);
  const urgent = await createTask(ctx, { title: 'Fix scene 2 dialogue', assigneeUserId: writer.user.id, priority: 'urgent', dueAt: '2026-12-01' });
  await createTask(ctx, { title: 'Already done', assigneeUserId: writer.user.id, status: 'done' });
  await createTask(ctx, { title: 'Cancelled', assigneeUserId: writer.user.id, status: 'cancelled' });
  const mine = await createTask(ctx, { title: 'Approve the pilot', assigneeUserId: producer.user.id, priority: 'low' });
  await createTask(ctx, { title: 'Not assigned' });
  const failed = await addJob(s, tree, shotId, 'failed', '2026-01-01T00:00:00.000Z', 'connector timeout');
  await addJob(s, tree, shotId, 'completed');
  const approved = (await api('POST', '/api/production/shots', { episodeId: await starter(s, 'episodes', tree.projectId), status: 'approved' })).body.id;

  const w = await s.call('GET', '/api/work-items', { token: writer.token });
  assert.equal(w.status, 200);
  assert.deepEqual(w.body.items.map((i: any) => [i.kind, i.id]), [['task', urgent.id]]);
  assert.deepEqual(w.body.items[0], {
    kind: 'task', id: urgent.id, title: 'Fix scene 2 dialogue', status: 'todo', priority: 'urgent', dueAt: '2026-12-01T00:00:00.000Z',
    targetTab: 'tasks', link: `/tasks/${urgent.id}?project=${tree.projectId}`,
  });
  const p = await api('GET', '/api/work-items');
  assert.deepEqual(p.body.items.map((i: any) => [i.kind, i.id]), [['failed_job', failed], ['shot_without_media', shotId], ['task', mine.id]]);
  const job = p.body.items[0];
  assert.deepEqual([job.targetTab, job.link, job.priority], ['queue', `/jobs/${failed}?project=${tree.projectId}`, 'high']);
  assert.ok(job.title.includes('connector timeout'));
  assert.equal(p.body.items[1].targetTab, 'shots');
  assert.ok(!p.body.items.some((i: any) => i.id === approved), 'approved shots are not to-dos');
  assert.equal(p.body.pagination.total, 3);
  // Derived: approving the shot and retrying the job change the list without anything stored.
  await api('PATCH', `/api/production/shots/${shotId}`, { status: 'approved' });
  await s.db.run("UPDATE generation_jobs SET status = 'completed' WHERE id = ?", failed);
  assert.deepEqual((await api('GET', '/api/work-items')).body.items.map((i: any) => i.id), [mine.id]);
  const other = await member(s, 'producer');
  assert.deepEqual((await s.call('GET', '/api/work-items', { token: other.token })).body.items.map((i: any) => i.kind), ['shot_without_media'], 'only the caller\'s project');
});

test('episode and shot changes keep the search index in step, in the same transaction', async (t) => {
  const { s, api, seasonId, episodeId } = await setup(t);
  const doc = async (type: string, id: string) => await s.db.get<any>('SELECT * FROM search_documents WHERE doc_key = ?', `${type}:${id}`);
  const shot = (await api('POST', '/api/production/shots', { episodeId, title: '第一场 夜行列车', prompt: 'neon rain', sceneId: 'S3' })).body;
  assert.equal((await doc('shot', shot.id)).title, '第一场 夜行列车');
  assert.ok((await doc('shot', shot.id)).body.includes('neon rain'));
  await api('PATCH', `/api/production/shots/${shot.id}`, { status: 'review' });
  assert.equal((await doc('shot', shot.id)).status, 'review');
  await api('PATCH', `/api/production/episodes/${episodeId}`, { title: 'Departure' });
  assert.equal((await doc('episode', episodeId)).title, 'Departure');
  assert.ok((await doc('shot', shot.id)).subtitle.endsWith('Departure'), 'the shot names its episode');
  const e2 = (await api('POST', `/api/production/seasons/${seasonId}/episodes`, { position: 1 })).body;
  assert.ok((await doc('episode', episodeId)).subtitle.endsWith('episode 2'), 'renumbered');
  assert.equal((await api('DELETE', `/api/production/shots/${shot.id}`)).status, 204);
  assert.equal(await doc('shot', shot.id), undefined);
  assert.equal((await api('DELETE', `/api/production/episodes/${e2.id}`)).status, 204);
  assert.equal(await doc('episode', e2.id), undefined);
  assert.ok((await doc('episode', episodeId)).subtitle.endsWith('episode 1'));
});

test('an episode with a script is not removed (its revisions are kept for good): 409 episode_has_script', async (t) => {
  const s = await startTestServer(t);
  const producer = await member(s, 'producer');
  const season = (await s.call('POST', '/api/production/seasons', { token: producer.token, body: { title: 'Season 2' } })).body;
  const episode = await s.call('POST', `/api/production/seasons/${season.id}/episodes`, { token: producer.token, body: { title: 'Cold open' } });
  assert.equal(episode.status, 201, episode.text);
  const saved = await s.call('PUT', `/api/production/script/episodes/${episode.body.id}`, {
    token: producer.token, body: { baseRevision: 0, scenes: [{ heading: 'INT. STATION - NIGHT', lines: [{ kind: 'action', text: 'Rain.' }] }] },
  });
  assert.equal(saved.status, 200, saved.text);
  const removed = await s.call('DELETE', `/api/production/episodes/${episode.body.id}`, { token: producer.token });
  assert.equal(removed.status, 409);
  assert.equal(removed.body.error.code, 'episode_has_script');
  assert.equal((await s.db.get<{ n: number }>('SELECT count(*) AS n FROM episodes WHERE id = ?', episode.body.id))!.n, 1);
});
