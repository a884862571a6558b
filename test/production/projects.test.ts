// Projects: the starter hierarchy, PATCH, the lifecycle state machine from every state, archiving
// with active jobs, and the archived-project guard over every route of the route table.
import { mapSeq } from '../../src/kernel/seq.ts';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { makeProject, makeTree, member } from '../helpers/factories.ts';
import { changeLifecycle } from '../../src/production/projects/service.ts';
import { createTask } from '../../src/production/tasks/service.ts';
import { registerConnector } from '../../src/generation/connectors/service.ts';
import { createJob } from '../../src/generation/jobs/service.ts';
import { instantiate } from '../../src/generation/workflows/runs.ts';
import { withScope } from '../../src/directory/context.ts';
import { LIFECYCLE_ACTIONS, type LifecycleAction } from '../../src/directory/tenancy/lifecycle.ts';
import { DEFAULT_SPEC } from '../../src/production/projects/spec.ts';
import { writeExport } from '../../src/finishing/export/service.ts';

const audit = async (s: TestServer, action: string, targetId: string) =>
  await s.db.all<any>('SELECT * FROM audit_log WHERE action = ? AND target_id = ? ORDER BY seq', action, targetId);

test('a new project has one series, one season, a pilot episode and a starter shot, and is draft', async (t) => {
  const s = await startTestServer(t);
  const producer = await member(s, 'producer');
  const r = await s.call('POST', `/api/workspaces/${producer.tree.workspaceId}/projects`, { token: producer.token, body: { name: 'Night Train', templateId: 'tpl-thriller' } });
  assert.equal(r.status, 201, r.text);
  assert.equal(r.body.status, 'draft');
  assert.equal(r.body.templateId, 'tpl-thriller');
  const count = async (table: string) => (await s.db.get<{ n: number }>(`SELECT count(*) AS n FROM ${table} WHERE project_id = ?`, r.body.id))!.n;
  assert.deepEqual(await mapSeq(['series', 'seasons', 'episodes', 'shots'], count), [1, 1, 1, 1]);
  const shot = (await s.db.get<any>('SELECT s.*, e.title AS episode_title, e.season_id FROM shots s JOIN episodes e ON e.id = s.episode_id WHERE s.project_id = ?', r.body.id))!;
  assert.equal(shot.episode_title, 'Pilot');
  assert.equal(shot.organization_id, producer.tree.organizationId);
  assert.equal((await s.db.get<any>('SELECT template_id FROM projects WHERE id = ?', r.body.id))!.template_id, 'tpl-thriller', 'templateId persisted');
  const got = await s.call('GET', `/api/projects/${r.body.id}`, { token: producer.token });
  assert.equal(got.status, 200);
  assert.deepEqual(got.body.allowedActions, ['activate', 'archive']);
});

test('PATCH /api/projects/:id: 401, 403 without project:create, 403 across tenants (audited), 200 for a producer', async (t) => {
  const s = await startTestServer(t);
  const tree = await makeTree(s);
  const path = `/api/projects/${tree.projectId}`;
  assert.equal((await s.call('PATCH', path, { body: { name: 'X' } })).status, 401);
  const writer = await member(s, 'writer', tree);
  const denied = await s.call('PATCH', path, { token: writer.token, body: { name: 'X' } });
  assert.equal(denied.status, 403);
  assert.equal(denied.body.error.code, 'permission_denied');
  const outsider = await member(s, 'org_owner');
  const cross = await s.call('PATCH', path, { token: outsider.token, body: { name: 'X' } });
  assert.equal(cross.status, 403);
  assert.equal(cross.body.error.code, 'scope_forbidden');
  const attempts = await audit(s, 'access.denied', tree.projectId);
  assert.equal(attempts.length, 1);
  assert.equal(attempts[0].actor_user_id, outsider.user.id);
  assert.equal(attempts[0].result, 'denied');
  const producer = await member(s, 'producer', tree);
  const ok = await s.call('PATCH', path, { token: producer.token, body: { name: 'Renamed', templateId: null } });
  assert.equal(ok.status, 200, ok.text);
  assert.equal(ok.body.name, 'Renamed');
  assert.equal(ok.body.templateId, null);
  assert.equal((await s.call('PATCH', path, { token: producer.token, body: { name: '' } })).status, 422);
  assert.equal((await audit(s, 'project.updated', tree.projectId)).length, 1);
});

// The documented state machine, written out independently of src/directory/tenancy/lifecycle.ts.
const EXPECTED: Record<string, Partial<Record<LifecycleAction, string>>> = {
  draft: { activate: 'active', archive: 'archived' },
  active: { pause: 'paused', 'submit-review': 'in_review', archive: 'archived' },
  paused: { resume: 'active', archive: 'archived' },
  in_review: { activate: 'active', pause: 'paused', archive: 'archived' },
};
const PATH_TO: Record<string, LifecycleAction[]> = { draft: [], active: ['activate'], paused: ['activate', 'pause'], in_review: ['activate', 'submit-review'] };

test('every lifecycle action from every state: allowed ones move, others are 409 invalid_transition naming the allowed', async (t) => {
  const s = await startTestServer(t);
  const producer = await member(s, 'producer');
  for (const [from, path] of Object.entries(PATH_TO)) {
    for (const action of LIFECYCLE_ACTIONS) {
      const p = (await s.call('POST', `/api/workspaces/${producer.tree.workspaceId}/projects`, { token: producer.token, body: { name: `${from} ${action}` } })).body;
      for (const step of path) await changeLifecycle(s.operator(), p.id, step);
      const r = await s.call('POST', `/api/projects/${p.id}/lifecycle`, { token: producer.token, body: { action } });
      const to = EXPECTED[from][action];
      if (to) {
        assert.equal(r.status, 200, `${from} --${action}--> ${r.text}`);
        assert.equal(r.body.status, to, `${from} --${action}`);
      } else {
        assert.equal(r.status, 409, `${from} --${action} must be refused`);
        assert.equal(r.body.error.code, 'invalid_transition');
        assert.deepEqual(r.body.error.details.allowedActions, Object.keys(EXPECTED[from]).sort((a, b) => LIFECYCLE_ACTIONS.indexOf(a as LifecycleAction) - LIFECYCLE_ACTIONS.indexOf(b as LifecycleAction)));
      }
    }
  }
  // From archived only restore is allowed.
  const p = (await s.call('POST', `/api/workspaces/${producer.tree.workspaceId}/projects`, { token: producer.token, body: { name: 'archived' } })).body;
  await changeLifecycle(s.operator(), p.id, 'archive');
  for (const action of LIFECYCLE_ACTIONS.filter((a) => a !== 'restore')) {
    const r = await s.call('POST', `/api/projects/${p.id}/lifecycle`, { token: producer.token, body: { action } });
    assert.equal(r.status, 409, action);
    assert.equal(r.body.error.code, 'invalid_transition');
    assert.deepEqual(r.body.error.details.allowedActions, ['restore']);
  }
  assert.equal((await s.call('POST', `/api/projects/${p.id}/lifecycle`, { token: producer.token, body: { action: 'explode' } })).status, 422);
  const writer = await member(s, 'writer', producer.tree);
  assert.equal((await s.call('POST', `/api/projects/${p.id}/lifecycle`, { token: writer.token, body: { action: 'restore' } })).status, 403);
});

test('archive then restore returns the stored state, with archivedAt/By/FromStatus and audit', async (t) => {
  const s = await startTestServer(t);
  const producer = await member(s, 'producer');
  for (const [from, path] of Object.entries(PATH_TO)) {
    const p = (await s.call('POST', `/api/workspaces/${producer.tree.workspaceId}/projects`, { token: producer.token, body: { name: from } })).body;
    for (const step of path) await changeLifecycle(s.operator(), p.id, step);
    const archived = await s.call('POST', `/api/projects/${p.id}/lifecycle`, { token: producer.token, body: { action: 'archive' } });
    assert.equal(archived.body.status, 'archived');
    assert.equal(archived.body.archivedFromStatus, from);
    assert.equal(archived.body.archivedBy, producer.user.id);
    assert.ok(Date.parse(archived.body.archivedAt));
    const restored = await s.call('POST', `/api/projects/${p.id}/lifecycle`, { token: producer.token, body: { action: 'restore' } });
    assert.equal(restored.status, 200);
    assert.equal(restored.body.status, from);
    assert.equal(restored.body.archivedAt, null);
    assert.equal((await audit(s, 'project.archived', p.id)).length, 1);
    assert.equal((await audit(s, 'project.restored', p.id)).length, 1);
    assert.deepEqual(JSON.parse((await audit(s, 'project.restored', p.id))[0].metadata), { action: 'restore', from: 'archived', to: from });
  }
});

test('archive is refused with 409 project_has_active_jobs while a job is queued, running or blocked', async (t) => {
  const s = await startTestServer(t);
  const producer = await member(s, 'producer');
  const { projectId, organizationId, workspaceId } = producer.tree;
  const addJob = async (status: string) => await s.db.run(
    `INSERT INTO generation_jobs (id, organization_id, workspace_id, project_id, kind, status, created_at, updated_at)
     VALUES (?, ?, ?, ?, 'image', ?, 'now', 'now')`, `job_${status}`, organizationId, workspaceId, projectId, status);
  for (const status of ['queued', 'running', 'blocked']) {
    await addJob(status);
    const r = await s.call('POST', `/api/projects/${projectId}/lifecycle`, { token: producer.token, body: { action: 'archive' } });
    assert.equal(r.status, 409, status);
    assert.equal(r.body.error.code, 'project_has_active_jobs');
    assert.equal(r.body.error.details.activeJobs, 1);
    assert.equal((await s.db.get<any>('SELECT status FROM projects WHERE id = ?', projectId))!.status, 'draft', 'unchanged');
    await s.db.run("UPDATE generation_jobs SET status = 'completed' WHERE id = ?", `job_${status}`);
  }
  await addJob('failed');
  const ok = await s.call('POST', `/api/projects/${projectId}/lifecycle`, { token: producer.token, body: { action: 'archive' } });
  assert.equal(ok.status, 200, 'completed and failed jobs do not hold the archive');
});

/** Values for path parameters of every route; a route with a parameter missing here fails the test. */
async function fixtures(s: TestServer, tree: { organizationId: string; workspaceId: string; projectId: string }, userId: string): Promise<Record<string, string>> {
  const task = await createTask(withScope(s.operator(), tree), { title: 'fixture task' });
  // Script and bible: revision 1 of the pilot's script and of the project's bible (immutable rows, inserted as-is).
  const episodeId = (await s.db.get<{ id: string }>('SELECT id FROM episodes WHERE project_id = ?', tree.projectId))!.id;
  for (const [table, documentId, content] of [['script_revisions', episodeId, '{"scenes":[]}'], ['bible_revisions', tree.projectId, '{"entries":[]}']]) {
    await s.db.run(`INSERT INTO ${table} (id, organization_id, workspace_id, project_id, document_id, revision, author_name, created_at, content, content_sha256, item_count)
      VALUES (?, ?, ?, ?, ?, 1, 'fixture', '2026-01-01T00:00:00.000Z', ?, '', 0)`, `rev_fx_${table}`, tree.organizationId, tree.workspaceId, tree.projectId, documentId, content);
  }
  // Assets: one image asset whose version 1 is a small file on disk (rows inserted as-is).
  const assetFile = Buffer.from('fixture asset content\n');
  const assetSha = process.getBuiltinModule('node:crypto').createHash('sha256').update(assetFile).digest('hex');
  const assetFs = process.getBuiltinModule('node:fs');
  assetFs.mkdirSync(`${s.config.storageDir}/assets/${assetSha.slice(0, 2)}`, { recursive: true });
  assetFs.writeFileSync(`${s.config.storageDir}/assets/${assetSha.slice(0, 2)}/${assetSha}`, assetFile);
  await s.db.run(`INSERT INTO assets (id, organization_id, workspace_id, project_id, kind, name, current_version_id, created_at, updated_at)
    VALUES ('ast_fx', ?, ?, ?, 'image', 'fixture asset', 'asv_fx', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')`, tree.organizationId, tree.workspaceId, tree.projectId);
  await s.db.run(`INSERT INTO asset_versions (id, asset_id, organization_id, workspace_id, project_id, number, file_name, mime_type, file_size, content_sha256, storage_path, created_at)
    VALUES ('asv_fx', 'ast_fx', ?, ?, ?, 1, 'fixture.txt', 'text/plain; charset=utf-8', ?, ?, ?, '2026-01-01T00:00:00.000Z')`,
  tree.organizationId, tree.workspaceId, tree.projectId, assetFile.length, assetSha, `assets/${assetSha.slice(0, 2)}/${assetSha}`);
  const connectorId = (await registerConnector(withScope(s.operator(), tree), { label: 'fixture model', endpoint: 'http://127.0.0.1:9', kind: 'http-json', capability: ['image', 'tts', 'asr'], costMode: 'local' })).id;
  const completedJob = await createJob(withScope(s.operator(), tree), { kind: 'image', connectorId, prompt: 'fixture' });
  await s.db.run("UPDATE generation_jobs SET status = 'completed', output = '{}' WHERE id = ?", completedJob.id);
  // Media: the completed job's output, the asset's file registered as a (text) artifact.
  await s.db.run(`INSERT INTO media_artifacts (id, organization_id, workspace_id, project_id, job_id, kind, source, storage_path, file_name, mime_type,
      file_size, content_sha256, has_video, has_audio, created_at) VALUES ('art_fx', ?, ?, ?, ?, 'other', 'generation', ?, 'fixture.txt', 'text/plain', ?, ?, 0, 0, '2026-01-01T00:00:00.000Z')`,
  tree.organizationId, tree.workspaceId, tree.projectId, completedJob.id, `assets/${assetSha.slice(0, 2)}/${assetSha}`, assetFile.length, assetSha);
  // Review, QA, delivery: one of each on the fixture artifact (rows inserted as-is).
  const at = '2026-01-01T00:00:00.000Z';
  const ids = [tree.organizationId, tree.workspaceId, tree.projectId];
  await s.db.run(`INSERT INTO reviews (id, organization_id, workspace_id, project_id, target_kind, episode_id, artifact_kind, artifact_id, artifact_sha256, title, created_at, updated_at)
    VALUES ('rev_fx', ?, ?, ?, 'shot', ?, 'other', 'art_fx', ?, 'fixture review', ?, ?)`, ...ids, episodeId, assetSha, at, at);
  await s.db.run(`INSERT INTO qa_runs (id, organization_id, workspace_id, project_id, target_kind, result, spec, summary, artifact_count, started_at, created_at)
    VALUES ('qar_fx', ?, ?, ?, 'artifacts', 'pass', ?, ?, 1, ?, ?)`, ...ids, JSON.stringify(DEFAULT_SPEC),
    JSON.stringify({ checks: 1, pass: 1, warn: 0, fail: 0, blockingFailed: 0, failing: [] }), at, at);
  await s.db.run(`INSERT INTO deliveries (id, organization_id, workspace_id, project_id, title, status, created_at, updated_at, approved_at)
    VALUES ('dlv_fx', ?, ?, ?, 'fixture delivery', 'approved', ?, ?, ?)`, ...ids, at, at, at);
  await s.db.run("INSERT INTO delivery_items (delivery_id, position, artifact_id, artifact_sha256, episode_id) VALUES ('dlv_fx', 1, 'art_fx', ?, ?)", assetSha, episodeId);
  await s.db.run(`INSERT INTO delivery_links (id, delivery_id, organization_id, token_hash, expires_at, created_at) VALUES ('dll_fx', 'dlv_fx', ?, 'fixture-hash', '2999-01-01T00:00:00.000Z', ?)`, tree.organizationId, at);
  // The export is written by the service (with its archive), so its downloads have something to serve.
  const exportId = (await writeExport(withScope(s.operator(), tree), { deliveryId: 'dlv_fx', archive: true })).row.id;
  return { ...tree, userId, invitationId: 'inv_none', sessionId: 'ses_none', taskId: task.id, episodeId, revision: '1', assetId: 'ast_fx', versionId: 'asv_fx',
    reviewId: 'rev_fx', qaRunId: 'qar_fx', deliveryId: 'dlv_fx', linkId: 'dll_fx', exportId,
    // Production content: the starter season and shot of the project.
    seasonId: (await s.db.get<{ id: string }>('SELECT id FROM seasons WHERE project_id = ?', tree.projectId))!.id,
    shotId: (await s.db.get<{ id: string }>('SELECT id FROM shots WHERE project_id = ?', tree.projectId))!.id,
    // Model platform: one local connector of the organization.
    connectorId,
    // Generation jobs: one completed job (active jobs would hold the archive).
    jobId: completedJob.id,
    artifactId: 'art_fx',
    // Workflows: the built-in template and a plan run of it in this project.
    templateId: 'wft_builtin_voice_over', gateKey: 'voice_qa',
    runId: (await instantiate(withScope(s.operator(), tree), 'wft_builtin_voice_over', { mode: 'plan', shotId: (await s.db.get<{ id: string }>('SELECT id FROM shots WHERE project_id = ?', tree.projectId))!.id })).run.id,
  };
}

/** Reads that need a query parameter, with the fixture's value. */
const REQUIRED_QUERY: Record<string, string> = { 'GET /api/exports/:exportId/file': '?path=shotlist.csv' };

test('on an archived project every write route is 409 project_archived and every read route answers 200', async (t) => {
  const s = await startTestServer(t);
  const owner = await member(s, 'org_owner');
  const tree = owner.tree;
  const fx = await fixtures(s, tree, owner.user.id);
  await changeLifecycle(s.operator(), tree.projectId, 'archive');
  const projectRoutes = s.app.router.routes.filter((r) => r.meta.scope === 'project');
  assert.ok(projectRoutes.length >= 3);
  let writes = 0;
  for (const route of projectRoutes) {
    const path = route.pattern.replace(/:(\w+)/g, (_m, name: string) => {
      assert.ok(fx[name], `add a fixture for :${name} (route ${route.method} ${route.pattern})`);
      return fx[name];
    });
    const query = REQUIRED_QUERY[`${route.method} ${route.pattern}`] ?? '';
    const r = await s.call(route.method, path + query, { token: owner.token, ...(route.method === 'GET' ? {} : { body: {} }) });
    if (route.method === 'GET') {
      assert.equal(r.status, 200, `${route.method} ${route.pattern} stays readable: ${r.text}`);
    } else if (!route.meta.archivedOk) {
      writes++;
      assert.equal(r.status, 409, `${route.method} ${route.pattern} must be guarded: ${r.text}`);
      assert.equal(r.body.error.code, 'project_archived');
    }
  }
  assert.ok(writes >= 1, 'at least one guarded write route exists');
  // Reads outside the project scope still show it.
  const list = await s.call('GET', `/api/workspaces/${tree.workspaceId}/projects`, { token: owner.token });
  assert.equal(list.body.items[0].status, 'archived');
});

test('project-management routes exempt from the guard are exactly the lifecycle and member routes, the adapter dry run (writes nothing) and revoking a client delivery link (cutting off outside access)', async (t) => {
  const s = await startTestServer(t);
  const exempt = s.app.router.routes.filter((r) => r.meta.archivedOk).map((r) => `${r.method} ${r.pattern}`).sort();
  assert.deepEqual(exempt.filter((r) => !/\/members\/:userId$/.test(r)),
    ['POST /api/adapters/dry-run', 'POST /api/production/deliveries/:deliveryId/links/:linkId/revoke', 'POST /api/projects/:projectId/lifecycle']);
});

test('every write route outside a project scope is a known non-production route (new production writes must act in a project scope)', async (t) => {
  const s = await startTestServer(t);
  const NON_PRODUCTION = [
    /^\/api\/auth\//, /^\/api\/context$/, /^\/api\/invitations\//, /^\/api\/system\//,
    /^\/api\/notifications(\/|$)/, /^\/api\/notification-preferences\//, // a person's own inbox
    /^\/api\/organizations(\/:organizationId\/(workspaces|members\/:userId|invitations(\/:invitationId\/(resend|revoke))?))?$/,
    /^\/api\/workspaces\/:workspaceId\/(projects|members\/:userId)$/,
    /^\/api\/platform\/models(\/|$)/, // connector records of the organization (model:manage)
    /^\/api\/admin\/queue\/batch$/, // jobs of several projects; retry and priority skip archived projects (project_archived)
    /^\/api\/workflows\/templates(\/:templateId)?$/, // template definitions of the organization or workspace; instantiate is project-scoped
    /^\/api\/organizations\/:organizationId\/(billing|quotas\/:quotaId|cost-centers\/:costCenterId|invoices\/(generate|:invoiceId\/status))$/, // commercial records of the organization
    /^\/api\/oauth\/token$/, // an API client's secret exchanged for an access token
    /^\/scim\//, // SCIM provisioning of a directory's users (directory bearer token)
  ];
  const unguarded = s.app.router.routes
    .filter((r) => r.method !== 'GET' && r.meta.scope !== 'project')
    .filter((r) => !NON_PRODUCTION.some((re) => re.test(r.pattern)))
    .map((r) => `${r.method} ${r.pattern}`);
  assert.deepEqual(unguarded, [], 'a write route that is neither project-scoped (guarded) nor a known non-production route');
});

test('a project_editor may PATCH its project and run its lifecycle actions; a project_viewer, a writer, an editor of another project and other tenants may not', async (t) => {
  const s = await startTestServer(t);
  const tree = await makeTree(s);
  const path = `/api/projects/${tree.projectId}`;
  const editor = await member(s, 'project_editor', tree);
  const renamed = await s.call('PATCH', path, { token: editor.token, body: { name: 'Renamed by the editor' } });
  assert.equal(renamed.status, 200, renamed.text);
  assert.equal(renamed.body.name, 'Renamed by the editor');
  assert.equal((await audit(s, 'project.updated', tree.projectId))[0].actor_user_id, editor.user.id);
  for (const [action, status] of [['activate', 'active'], ['pause', 'paused'], ['archive', 'archived'], ['restore', 'paused']] as const) {
    const r = await s.call('POST', `${path}/lifecycle`, { token: editor.token, body: { action } });
    assert.equal(r.status, 200, `${action}: ${r.text}`);
    assert.equal(r.body.status, status, action);
  }
  assert.equal((await audit(s, 'project.archived', tree.projectId))[0].actor_user_id, editor.user.id);

  const viewer = await member(s, 'project_viewer', tree);
  const writer = await member(s, 'writer', tree);
  const elsewhere = await member(s, 'project_editor', { ...tree, projectId: (await makeProject(s, tree.workspaceId)).id });
  for (const [who, token] of [['project_viewer', viewer.token], ['writer', writer.token]] as const) {
    for (const [method, p, body] of [['PATCH', path, { name: 'X' }], ['POST', `${path}/lifecycle`, { action: 'resume' }]] as const) {
      const r = await s.call(method, p, { token, body });
      assert.deepEqual([r.status, r.body.error.code], [403, 'permission_denied'], `${who} ${method} ${p}`);
    }
  }
  const foreign = await s.call('PATCH', path, { token: elsewhere.token, body: { name: 'X' } });
  assert.deepEqual([foreign.status, foreign.body.error.code], [403, 'scope_forbidden'], 'an editor of another project cannot reach this one');
  const outsider = await member(s, 'project_editor');
  const cross = await s.call('POST', `${path}/lifecycle`, { token: outsider.token, body: { action: 'resume' } });
  assert.deepEqual([cross.status, cross.body.error.code], [403, 'scope_forbidden']);
  // Its own project's editor role does not reach a sibling project named in the path either.
  const sibling = await makeProject(s, tree.workspaceId);
  assert.equal((await s.call('PATCH', `/api/projects/${sibling.id}`, { token: editor.token, body: { name: 'X' } })).status, 403);
  assert.equal((await s.db.get<any>('SELECT name, status FROM projects WHERE id = ?', tree.projectId)).name, 'Renamed by the editor');
  assert.equal((await s.call('PATCH', path, { body: { name: 'X' } })).status, 401);
  const doc = await s.call('GET', '/api/openapi.json');
  assert.deepEqual(doc.body.paths['/api/projects/{projectId}'].patch['x-access'].projectRoles, ['project_editor']);
});
