// Workflow templates and runs over HTTP: the merge of the same templateKey at three levels, the
// step limit, read-only built-ins, versions (an older run keeps its version), status transitions,
// instantiate in plan and queue mode, the access rules, and runs whose status follows their jobs.
import test from 'node:test';
import assert from 'node:assert/strict';
import { makeProject, makeWorkspace, member } from '../helpers/factories.ts';
import { startTestServer, type TestServer, serversRunTheWorker } from '../helpers/server.ts';
import { connector, jobWorld, startModel } from '../helpers/jobs.ts';
import { matrix, runScenarios, type Route } from '../helpers/scenarios.ts';

serversRunTheWorker();

const step = (key: string, jobKind: string, extra: Record<string, unknown> = {}) => ({ key, label: `Step ${key}`, jobKind, ...extra });
const STEPS = [step('still', 'image', { requiresShot: true }), step('clip', 'video', { requiresShot: true, inputFromPrevious: true })];

async function make(s: TestServer, token: string, body: Record<string, unknown>) {
  const r = await s.call('POST', '/api/workflows/templates', { token, body: { name: 'T', steps: STEPS, status: 'active', ...body } });
  assert.equal(r.status, 201, r.text);
  return r.body;
}

async function list(s: TestServer, token: string, query = '') {
  const r = await s.call('GET', `/api/workflows/templates${query}`, { token });
  assert.equal(r.status, 200, r.text);
  return r.body.items as Array<Record<string, any>>;
}

const byKey = (items: Array<Record<string, any>>, key: string) => items.filter((i) => i.templateKey === key);

test('the same templateKey at three levels merges workspace over organization over global; archived ones only on request', async (t) => {
  const s = await startTestServer(t);
  const owner = await member(s, 'org_owner');
  const builtIns = await list(s, owner.token);
  const global = byKey(builtIns, 'shot-to-episode-cut');
  assert.equal(global.length, 1);
  assert.deepEqual([global[0].scope, global[0].builtIn, global[0].status, global[0].shadowed], ['global', true, 'active', []]);
  assert.ok(byKey(builtIns, 'voice-over-pass')[0].steps.length >= 2);

  const org = await make(s, owner.token, { templateKey: 'shot-to-episode-cut', scope: 'organization', name: 'Studio cut' });
  let entry = byKey(await list(s, owner.token), 'shot-to-episode-cut');
  assert.equal(entry.length, 1);
  assert.equal(entry[0].id, org.id);
  assert.deepEqual(entry[0].shadowed.map((x: any) => x.scope), ['global']);

  const ws = await make(s, owner.token, { templateKey: 'shot-to-episode-cut', name: 'Workspace cut' });
  assert.equal(ws.scope, 'workspace');
  assert.equal(ws.workspaceId, owner.tree.workspaceId);
  entry = byKey(await list(s, owner.token), 'shot-to-episode-cut');
  assert.deepEqual([entry.length, entry[0].id, entry[0].name], [1, ws.id, 'Workspace cut']);
  assert.deepEqual(entry[0].shadowed.map((x: any) => [x.scope, x.id]), [['organization', org.id], ['global', 'wft_builtin_shot_to_cut']]);

  // A producer of another workspace of the same organization sees the organization's, not this workspace's.
  const otherWs = await makeWorkspace(s, owner.tree.organizationId);
  const otherProject = await makeProject(s, otherWs.id);
  const producer = await member(s, 'producer', { organizationId: owner.tree.organizationId, workspaceId: otherWs.id, projectId: otherProject.id });
  assert.equal(byKey(await list(s, producer.token), 'shot-to-episode-cut')[0].id, org.id);
  // Another organization sees the built-in only.
  const stranger = await member(s, 'org_owner');
  assert.equal(byKey(await list(s, stranger.token), 'shot-to-episode-cut')[0].id, 'wft_builtin_shot_to_cut');

  // Archived: hidden (the next level shows through) unless includeArchived=1.
  const archived = await s.call('PATCH', `/api/workflows/templates/${ws.id}`, { token: owner.token, body: { status: 'archived' } });
  assert.equal(archived.status, 200, archived.text);
  assert.deepEqual([archived.body.status, archived.body.version], ['archived', 2]);
  assert.equal(byKey(await list(s, owner.token), 'shot-to-episode-cut')[0].id, org.id);
  const all = byKey(await list(s, owner.token, '?includeArchived=1'), 'shot-to-episode-cut');
  assert.deepEqual([all.length, all[0].id, all[0].status], [1, ws.id, 'archived']);
  // A key only an archived template has disappears from the default list.
  const lone = await make(s, owner.token, { templateKey: 'lone', status: 'archived' });
  assert.equal(byKey(await list(s, owner.token), 'lone').length, 0);
  assert.equal(byKey(await list(s, owner.token, '?includeArchived=1'), 'lone')[0].id, lone.id);
});

test('templates: 33 steps refused with the limit named, built-ins read-only, every change a new version, status transitions', async (t) => {
  const s = await startTestServer(t);
  const owner = await member(s, 'org_owner');
  const many = (n: number) => Array.from({ length: n }, (_, i) => step(`s${i}`, 'chat'));
  const tooMany = await s.call('POST', '/api/workflows/templates', { token: owner.token, body: { name: 'Long', templateKey: 'long', steps: many(33) } });
  assert.equal(tooMany.status, 422, tooMany.text);
  assert.match(tooMany.body.error.details.fields.steps, /at most 32/);
  const ok = await make(s, owner.token, { templateKey: 'long', steps: many(32), status: 'draft' });
  assert.deepEqual([ok.steps.length, ok.version, ok.status], [32, 1, 'draft']);
  const patchTooMany = await s.call('PATCH', `/api/workflows/templates/${ok.id}`, { token: owner.token, body: { steps: many(33) } });
  assert.equal(patchTooMany.status, 422);
  assert.match(patchTooMany.body.error.details.fields.steps, /at most 32/);

  for (const [body, field] of [
    [{ steps: [step('a', 'image'), step('a', 'video')] }, 'steps[1].key'],
    [{ steps: [step('a', 'teleport')] }, 'steps[0].jobKind'],
    [{ steps: [step('a', 'image', { dependsOnPrevious: true })] }, 'steps[0].dependsOnPrevious'],
    [{ steps: [step('a', 'image'), step('b', 'video', { dependsOnPrevious: false, inputFromPrevious: true })] }, 'steps[1].inputFromPrevious'],
    [{ steps: [step('a', 'compose', { requiresShot: true })] }, 'steps[0].requiresShot'],
    [{ steps: [step('a', 'image', { prompt: 'a {{shot.colour}} sky' })] }, 'steps[0].prompt'],
    [{ steps: [step('a', 'image')], gates: [{ key: 'g', label: 'G' }, { key: 'g', label: 'G again' }] }, 'gates[1].key'],
    [{ steps: [step('a', 'image')], defaultAdapterId: 'mdl_nowhere' }, 'defaultAdapterId'],
    [{ steps: [step('a', 'image')], status: 'retired' }, 'status'],
    [{ steps: [step('a', 'compose', { parameters: { width: 'wide', height: 720 } })] }, 'steps[0].parameters.width'],
    [{ steps: [step('a', 'compose', { parameters: { artifactIds: ['art_x'] } })] }, 'steps[0].parameters.artifactIds'],
    [{ steps: [step('a', 'compose', { parameters: { voiceLines: 'no' } })] }, 'steps[0].parameters.voiceLines'],
  ] as const) {
    const r = await s.call('POST', '/api/workflows/templates', { token: owner.token, body: { name: 'Bad', templateKey: 'bad', ...body } });
    assert.equal(r.status, 422, `${field}: ${r.text}`);
    assert.ok(r.body.error.details.fields[field], `${field}: ${r.text}`);
  }
  const taken = await s.call('POST', '/api/workflows/templates', { token: owner.token, body: { name: 'Again', templateKey: 'long', steps: many(1) } });
  assert.deepEqual([taken.status, taken.body.error.code], [409, 'template_key_taken']);

  // Built-ins cannot be edited, not even by the organization's owner.
  const builtIn = await s.call('PATCH', '/api/workflows/templates/wft_builtin_shot_to_cut', { token: owner.token, body: { name: 'Mine now' } });
  assert.deepEqual([builtIn.status, builtIn.body.error.code], [409, 'template_read_only']);

  // Each change is version n+1; a PATCH that changes nothing writes none; old versions stay readable.
  const renamed = await s.call('PATCH', `/api/workflows/templates/${ok.id}`, { token: owner.token, body: { name: 'Renamed', steps: many(2) } });
  assert.deepEqual([renamed.status, renamed.body.version, renamed.body.name, renamed.body.steps.length], [200, 2, 'Renamed', 2]);
  const same = await s.call('PATCH', `/api/workflows/templates/${ok.id}`, { token: owner.token, body: { name: 'Renamed' } });
  assert.equal(same.body.version, 2);
  const v1 = await s.call('GET', `/api/workflows/templates/${ok.id}?version=1`, { token: owner.token });
  assert.deepEqual([v1.status, v1.body.version, v1.body.name, v1.body.steps.length, v1.body.currentVersion], [200, 1, 'T', 32, 2]);
  assert.deepEqual(v1.body.versions.map((v: any) => v.version), [2, 1]);
  assert.equal((await s.call('GET', `/api/workflows/templates/${ok.id}?version=9`, { token: owner.token })).status, 404);
  await assert.rejects(async () => await s.db.run("UPDATE workflow_template_versions SET name = 'x' WHERE template_id = ?", ok.id), /immutable/);

  // draft -> active -> archived -> active; archived -> draft and active -> draft are refused.
  const go = (status: string) => s.call('PATCH', `/api/workflows/templates/${ok.id}`, { token: owner.token, body: { status } });
  assert.equal((await go('active')).body.status, 'active');
  const back = await go('draft');
  assert.deepEqual([back.status, back.body.error.code], [409, 'invalid_transition']);
  assert.equal((await go('archived')).body.status, 'archived');
  assert.equal((await go('draft')).status, 409);
  const again = await go('active');
  assert.deepEqual([again.body.status, again.body.version], ['active', 5]);
  const audit = await s.call('GET', `/api/audit?targetId=${ok.id}`, { token: owner.token });
  assert.deepEqual(audit.body.auditLog.map((a: any) => a.action).sort(), ['workflow_template.created', ...Array(4).fill('workflow_template.updated')]);
});

const starterShot = async (s: TestServer, projectId: string) =>
  (await s.db.get<{ id: string; episode_id: string }>('SELECT id, episode_id FROM shots WHERE project_id = ? ORDER BY position', projectId))!;

async function instantiate(s: TestServer, token: string, templateId: string, body: Record<string, unknown>, status = 201) {
  const r = await s.call('POST', `/api/workflows/templates/${templateId}/instantiate`, { token, body });
  assert.equal(r.status, status, r.text);
  return r.body;
}

async function jobsOf(s: TestServer, token: string) {
  const r = await s.call('GET', '/api/jobs?pageSize=200', { token });
  assert.equal(r.status, 200, r.text);
  return r.body.items as Array<Record<string, any>>;
}

test('instantiate: a plan creates no job; queue creates one job a step, chained; shot, adapter and approval rules', async (t) => {
  const { s, token, tree, id } = await jobWorld(t, { env: { SVC_WORKER_ENABLED: '0' } });
  const shot = await starterShot(s, tree.projectId);

  const plan = await instantiate(s, token, 'wft_builtin_shot_to_cut', { mode: 'plan', shotId: shot.id });
  assert.deepEqual([plan.status, plan.mode, plan.templateVersion, plan.episodeId, plan.currentStep], ['planned', 'plan', 1, shot.episode_id, null]);
  assert.deepEqual(plan.steps.map((x: any) => [x.key, x.status, x.jobId]), [
    ['shot_image', 'planned', null], ['shot_video', 'planned', null], ['voice_line', 'planned', null], ['episode_cut', 'planned', null],
  ]);
  assert.deepEqual(plan.steps.map((x: any) => [x.job.kind, x.job.connectorId, x.job.dependsOnStep, x.job.shotId]), [
    ['image', id, null, shot.id], ['video', id, 'shot_image', shot.id], ['tts', id, 'shot_video', shot.id], ['compose', null, 'voice_line', null],
  ]);
  assert.equal(plan.steps[0].job.prompt, 'Shot 1', 'the starter shot has only a title');
  assert.equal(plan.steps[1].job.inputFromPrevious, true);
  assert.deepEqual(plan.steps[0].blockers, []);
  assert.deepEqual(plan.steps[3].blockers.map((b: any) => b.code), ['waits_for_step']);
  assert.deepEqual(plan.gates.map((g: any) => [g.key, g.blocking, g.status]), [['picture_qa', true, 'pending'], ['voice_qa', false, 'pending']]);
  assert.equal((await jobsOf(s, token)).length, 0, 'a plan creates no job');

  // Input errors are 422 in either mode and write nothing.
  const noShot = await instantiate(s, token, 'wft_builtin_shot_to_cut', { mode: 'queue' }, 422);
  assert.match(noShot.error.details.fields.shotId, /shot_image/);
  const elsewhere = await starterShot(s, (await makeProject(s, tree.workspaceId)).id);
  const foreign = await instantiate(s, token, 'wft_builtin_shot_to_cut', { mode: 'queue', shotId: elsewhere.id }, 422);
  assert.ok(foreign.error.details.fields.shotId);
  const chatOnly = await connector(s, token, 'http://127.0.0.1:9', { capability: ['chat'], probe: false, label: 'Chat only' });
  const unable = await instantiate(s, token, 'wft_builtin_shot_to_cut', { mode: 'queue', shotId: shot.id, adapter: chatOnly }, 422);
  assert.match(unable.error.details.fields.adapter, /cannot do image/);
  assert.equal((await jobsOf(s, token)).length, 0);
  assert.equal((await s.call('GET', '/api/workflows/runs', { token })).body.items.length, 1);

  // Queue: one job a step, each depending on the previous one, carrying the run in its input.
  const run = await instantiate(s, token, 'wft_builtin_shot_to_cut', { mode: 'queue', shotId: shot.id, priority: 7 });
  assert.deepEqual([run.status, run.currentStep, run.error], ['queued', 'shot_image', null]);
  const jobs = await jobsOf(s, token);
  assert.equal(jobs.length, 4);
  const stepJobs = run.steps.map((x: any) => jobs.find((j) => j.id === x.jobId)!);
  assert.deepEqual(stepJobs.map((j: any) => [j.kind, j.status, j.priority]), [
    ['image', 'queued', 7], ['video', 'queued', 7], ['tts', 'queued', 7], ['compose', 'queued', 7],
  ]);
  assert.deepEqual(stepJobs.map((j: any) => j.dependsOn), [null, stepJobs[0].id, stepJobs[1].id, stepJobs[2].id]);
  assert.deepEqual(stepJobs[1].input.workflow, { templateId: 'wft_builtin_shot_to_cut', templateVersion: 1, runId: run.id, stepKey: 'shot_video' });
  assert.equal(stepJobs[1].input.useDependencyOutputs, true);
  assert.deepEqual([stepJobs[3].episodeId, stepJobs[3].shotId, stepJobs[3].connectorId], [shot.episode_id, null, null]);
  assert.deepEqual(run.steps.map((x: any) => x.blockers.map((b: any) => b.code)), [[], ['waits_for_step'], ['waits_for_step'], ['waits_for_step']]);
  const audit = await s.call('GET', `/api/audit?targetId=${run.id}`, { token });
  assert.equal(audit.body.auditLog[0].action, 'workflow.instantiated');
  const early = await s.call('POST', `/api/workflows/runs/${run.id}/gates/picture_qa`, { token, body: { status: 'passed' } });
  assert.deepEqual([early.status, early.body.error.code], [409, 'run_not_ready']);
  // Running the first step by hand moves the run on; cancelling a step's job cancels the run.
  const ran = await s.call('POST', `/api/jobs/${stepJobs[0].id}/run`, { token, body: {} });
  assert.equal(ran.status, 200, ran.text);
  const moving = (await s.call('GET', `/api/workflows/runs/${run.id}`, { token })).body;
  assert.deepEqual([moving.status, moving.currentStep, moving.steps[0].status], ['running', 'shot_video', 'completed']);
  assert.deepEqual(moving.steps[1].blockers, [], 'the step no longer waits for the completed one');
  assert.equal((await s.call('POST', `/api/jobs/${stepJobs[1].id}/cancel`, { token, body: {} })).status, 200);
  const cancelled = (await s.call('GET', `/api/workflows/runs/${run.id}`, { token })).body;
  assert.deepEqual([cancelled.status, cancelled.error.stepKey, cancelled.error.status], ['cancelled', 'shot_video', 'cancelled']);
  assert.deepEqual(cancelled.steps.map((x: any) => x.status), ['completed', 'cancelled', 'blocked', 'blocked']);

  // Only active templates enter production.
  const draft = await make(s, token, { templateKey: 'draft-one', status: 'draft' });
  assert.equal((await instantiate(s, token, draft.id, { mode: 'plan', shotId: shot.id }, 409)).error.code, 'template_not_active');

  // A cloud adapter: the plan names what blocks it; queue needs approveExternal, and its jobs wait for a person.
  const cloud = await connector(s, token, 'http://127.0.0.1:9', { costMode: 'cloud', probe: false, label: 'Cloud' });
  const cloudPlan = await instantiate(s, token, 'wft_builtin_shot_to_cut', { mode: 'plan', shotId: shot.id, adapter: cloud });
  assert.deepEqual(cloudPlan.steps[0].blockers.map((b: any) => b.code), ['connector_not_ready', 'connector_not_approved', 'external_approval_required', 'runs_by_person']);
  const refused = await instantiate(s, token, 'wft_builtin_shot_to_cut', { mode: 'queue', shotId: shot.id, adapter: cloud }, 409);
  assert.equal(refused.error.code, 'external_approval_required');
  assert.match(refused.error.message, /Cloud \(cloud, step "shot_image"\)/);
  const approved = await instantiate(s, token, 'wft_builtin_shot_to_cut', { mode: 'queue', shotId: shot.id, adapter: cloud, approveExternal: true });
  assert.deepEqual([approved.approveExternal, approved.adapterId], [true, cloud]);
  assert.deepEqual(approved.steps[0].blockers.map((b: any) => b.code), ['connector_not_ready', 'connector_not_approved', 'runs_by_person']);
  assert.equal((await jobsOf(s, token)).length, 8);
  // Blockers of a queued run are looked at when it is read: the approval shows at once.
  assert.equal((await s.call('POST', `/api/platform/models/${cloud}/approve`, { token, body: { note: 'budget agreed' } })).status, 200);
  const reread = (await s.call('GET', `/api/workflows/runs/${approved.id}`, { token })).body;
  assert.deepEqual(reread.steps[0].blockers.map((b: any) => b.code), ['connector_not_ready', 'runs_by_person']);
  // A local-runner-only organization: the plan names it, the queue refuses it.
  await s.db.run('UPDATE billing_accounts SET local_runner_only = 1 WHERE organization_id = ?', tree.organizationId);
  const localPlan = await instantiate(s, token, 'wft_builtin_shot_to_cut', { mode: 'plan', shotId: shot.id, adapter: cloud });
  assert.ok(localPlan.steps[0].blockers.some((b: any) => b.code === 'local_runner_only'));
  assert.equal((await instantiate(s, token, 'wft_builtin_shot_to_cut', { mode: 'queue', shotId: shot.id, adapter: cloud, approveExternal: true }, 409)).error.code, 'local_runner_only');
  await s.db.run('UPDATE billing_accounts SET local_runner_only = 0 WHERE organization_id = ?', tree.organizationId);

  // A prompt that renders longer than a job prompt may be is refused before anything is written.
  await s.call('PATCH', `/api/production/shots/${shot.id}`, { token, body: { prompt: 'x'.repeat(15_000) } });
  const twice = await make(s, token, { templateKey: 'twice', steps: [step('still', 'image', { requiresShot: true, prompt: '{{shot.prompt}} {{shot.prompt}}' })] });
  const long = await instantiate(s, token, twice.id, { mode: 'queue', shotId: shot.id }, 422);
  assert.match(long.error.details.fields['steps.still.prompt'], /30001 characters.*at most 20000/);
  assert.equal((await jobsOf(s, token)).length, 8);
  await s.call('PATCH', `/api/production/shots/${shot.id}`, { token, body: { prompt: '' } });

  // A run keeps the template version it used after the template changes.
  const mine = await make(s, token, { templateKey: 'versioned', steps: [step('still', 'image', { requiresShot: true })] });
  const before = await instantiate(s, token, mine.id, { mode: 'plan', shotId: shot.id });
  const changed = await s.call('PATCH', `/api/workflows/templates/${mine.id}`, { token, body: { steps: STEPS } });
  assert.equal(changed.body.version, 2);
  const after = await instantiate(s, token, mine.id, { mode: 'plan', shotId: shot.id });
  const old = (await s.call('GET', `/api/workflows/runs/${before.id}`, { token })).body;
  assert.deepEqual([old.templateVersion, old.template.version, old.template.steps.length, old.steps.length], [1, 1, 1, 1]);
  const now = (await s.call('GET', `/api/workflows/runs/${after.id}`, { token })).body;
  assert.deepEqual([now.templateVersion, now.template.version, now.template.steps.length, now.steps.length], [2, 2, 2, 2]);
});

test('workflow access: 401 without a session, 403 without the permission, another tenant\u2019s template or run 404, lists tenant-scoped', async (t) => {
  const { s, token, tree } = await jobWorld(t, { env: { SVC_WORKER_ENABLED: '0' } });
  const shot = await starterShot(s, tree.projectId);
  const tpl = await make(s, token, { templateKey: 'ours', steps: [step('still', 'image', { requiresShot: true })] });
  const run = await instantiate(s, token, tpl.id, { mode: 'queue', shotId: shot.id });
  const routes: Route[] = [
    ['GET', '/api/workflows/templates'], ['POST', '/api/workflows/templates', { name: 'x', templateKey: 'x', steps: STEPS }],
    ['GET', `/api/workflows/templates/${tpl.id}`], ['PATCH', `/api/workflows/templates/${tpl.id}`, { name: 'y' }],
    ['POST', `/api/workflows/templates/${tpl.id}/instantiate`, { shotId: shot.id }], ['GET', '/api/workflows/runs'], ['GET', `/api/workflows/runs/${run.id}`],
  ];
  await runScenarios(s, matrix(routes, [{ as: 'no session', status: 401 }]));

  // A writer reads templates, plans and queues runs (the reference's access column); writing templates needs workflow:manage.
  const writer = await member(s, 'writer', tree);
  assert.equal((await s.call('GET', '/api/workflows/templates', { token: writer.token })).status, 200);
  assert.equal((await s.call('POST', '/api/workflows/templates', { token: writer.token, body: { name: 'x', templateKey: 'x', steps: STEPS } })).status, 403);
  assert.equal((await s.call('PATCH', `/api/workflows/templates/${tpl.id}`, { token: writer.token, body: { name: 'y' } })).status, 403);
  assert.equal((await instantiate(s, writer.token, tpl.id, { mode: 'plan', shotId: shot.id })).status, 'planned');
  const queue = await instantiate(s, writer.token, tpl.id, { mode: 'queue', shotId: shot.id });
  assert.equal(queue.mode, 'queue');
  assert.equal((await s.call('GET', `/api/workflows/runs/${run.id}`, { token: writer.token })).status, 200);
  // An organization member without a workspace or project role holds none of the read permissions.
  const bare = await member(s, 'org_member', tree);
  assert.equal((await s.call('GET', '/api/workflows/templates', { token: bare.token })).status, 403);
  const viewer = await member(s, 'project_guest', tree);
  await runScenarios(s, matrix(routes, [{ as: 'project_guest without permission', token: viewer.token, status: 403 }]));

  // Organization templates: owners and admins only; a producer writes the workspace's.
  const producer = await member(s, 'producer', tree);
  const orgByProducer = await s.call('POST', '/api/workflows/templates', { token: producer.token, body: { name: 'x', templateKey: 'x', scope: 'organization', steps: STEPS } });
  assert.deepEqual([orgByProducer.status, orgByProducer.body.error.code], [403, 'permission_denied']);
  await make(s, producer.token, { templateKey: 'producers' });
  const admin = await member(s, 'org_admin', tree);
  const orgTpl = await make(s, admin.token, { templateKey: 'house', scope: 'organization' });
  assert.equal((await s.call('PATCH', `/api/workflows/templates/${orgTpl.id}`, { token: producer.token, body: { name: 'z' } })).status, 403);
  assert.equal((await s.call('PATCH', `/api/workflows/templates/${orgTpl.id}`, { token: admin.token, body: { name: 'z' } })).body.version, 2);

  // Another workspace of the organization does not see this workspace's template; another project not this run.
  const otherWs = await makeWorkspace(s, tree.organizationId);
  const neighbour = await member(s, 'producer', { organizationId: tree.organizationId, workspaceId: otherWs.id, projectId: (await makeProject(s, otherWs.id)).id });
  await runScenarios(s, matrix(routes.filter(([, p]) => p.includes(tpl.id)), [{ as: 'other workspace', token: neighbour.token, status: 404 }]));
  const sibling = await member(s, 'project_editor', { ...tree, projectId: (await makeProject(s, tree.workspaceId)).id });
  assert.equal((await s.call('GET', `/api/workflows/runs/${run.id}`, { token: sibling.token })).status, 404);
  assert.deepEqual((await s.call('GET', '/api/workflows/runs', { token: sibling.token })).body.items, []);

  // Another organization: our template and run do not exist for it, and its lists hold none of ours.
  const stranger = await member(s, 'org_owner');
  await runScenarios(s, matrix(routes.filter(([, p]) => p !== '/api/workflows/templates' && p !== '/api/workflows/runs'), [
    { as: 'another organization', token: stranger.token, status: 404 },
  ]));
  assert.equal((await list(s, stranger.token)).some((x) => x.organizationId === tree.organizationId), false);
  assert.deepEqual((await s.call('GET', '/api/workflows/runs', { token: stranger.token })).body.items, []);
  await connector(s, stranger.token, 'http://127.0.0.1:9', { probe: false });
  const theirs = await instantiate(s, stranger.token, 'wft_builtin_voice_over', { mode: 'plan', shotId: (await starterShot(s, stranger.tree.projectId)).id });
  assert.equal((await s.call('GET', `/api/workflows/runs/${theirs.id}`, { token })).status, 404);
  const mine = await s.call('GET', '/api/workflows/runs', { token });
  assert.ok(mine.body.items.length >= 2);
  assert.deepEqual(new Set(mine.body.items.map((r: any) => r.projectId)), new Set([tree.projectId]));
  assert.deepEqual((await s.call('GET', '/api/workflows/runs', { token: stranger.token })).body.items.map((r: any) => r.id), [theirs.id]);
});

/** Polls a run until its status is one of `statuses`. */
async function waitRun(s: TestServer, token: string, id: string, statuses: string[], timeoutMs = 60_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const r = await s.call('GET', `/api/workflows/runs/${id}`, { token });
    assert.equal(r.status, 200, r.text);
    if (statuses.includes(r.body.status)) return r.body;
    if (Date.now() > until) assert.fail(`run ${id} is ${r.body.status} after ${timeoutMs} ms, expected ${statuses.join('|')}: ${r.text}`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

test('a run follows its jobs: a failing middle step blocks it and the later steps never start; retrying the step completes it', async (t) => {
  // Stills and voice from one model server, clips from another that fails every attempt of the first clip.
  const { s, token, tree } = await jobWorld(t, { connector: { capability: ['image', 'tts'], label: 'Stills and voice' } });
  const clips = await startModel(t);
  await connector(s, token, clips.url, { capability: ['video'], label: 'Clips' });
  await clips.control({ failNext: 3, failStatus: 500 });
  const shot = await starterShot(s, tree.projectId);
  const tpl = await make(s, token, {
    templateKey: 'three', steps: [...STEPS, step('voice', 'tts', { requiresShot: true, prompt: '{{shot.title}} says hello' })],
  });
  const run = await instantiate(s, token, tpl.id, { mode: 'queue', shotId: shot.id });
  const blocked = await waitRun(s, token, run.id, ['blocked', 'completed']);
  assert.equal(blocked.status, 'blocked');
  assert.deepEqual(blocked.steps.map((x: any) => [x.key, x.status]), [['still', 'completed'], ['clip', 'failed'], ['voice', 'blocked']]);
  assert.equal(blocked.currentStep, 'clip');
  assert.deepEqual([blocked.error.stepKey, blocked.error.jobId, blocked.error.status], ['clip', blocked.steps[1].jobId, 'failed']);
  assert.ok(blocked.error.code && blocked.error.message, JSON.stringify(blocked.error));
  const voiceJob = (await s.call('GET', `/api/jobs/${blocked.steps[2].jobId}`, { token })).body;
  assert.deepEqual([voiceJob.status, voiceJob.attempt, voiceJob.attempts, voiceJob.startedAt], ['blocked', 0, [], null], 'the later step never started');
  const listed = await s.call('GET', '/api/workflows/runs?status=blocked', { token });
  assert.deepEqual(listed.body.items.map((r: any) => r.id), [run.id]);
  assert.deepEqual(listed.body.pagination, { limit: 50, total: 1 });
  assert.deepEqual((await s.call('GET', '/api/workflows/runs?status=completed', { token })).body.items, []);

  const retried = await s.call('POST', `/api/jobs/${blocked.steps[1].jobId}/retry`, { token, body: {} });
  assert.equal(retried.status, 200, retried.text);
  const done = await waitRun(s, token, run.id, ['completed', 'blocked']);
  assert.equal(done.status, 'completed', JSON.stringify(done.steps));
  assert.deepEqual([done.currentStep, done.error], [null, null]);
  assert.deepEqual(done.steps.map((x: any) => x.status), ['completed', 'completed', 'completed']);
  const [clip, voice] = await Promise.all(done.steps.slice(1).map(async (x: any) => (await s.call('GET', `/api/jobs/${x.jobId}`, { token })).body));
  assert.ok(voice.startedAt >= clip.finishedAt, 'the voice line started after the clip completed');
  assert.deepEqual((await s.call('GET', '/api/workflows/runs?status=completed', { token })).body.items.map((r: any) => r.id), [run.id]);
  // Each step's job names the run (the trigger that follows a run's jobs fires for those only).
  const named = await s.db.all<{ workflow_run_id: string | null }>('SELECT workflow_run_id FROM generation_jobs WHERE id IN (?, ?, ?)', ...done.steps.map((x: any) => x.jobId as string));
  assert.deepEqual(named.map((r) => r.workflow_run_id), [run.id, run.id, run.id]);
});

test('the built-in shot-to-episode-cut run against the model server produces the episode cut, then waits for QA', async (t) => {
  const { s, token, tree } = await jobWorld(t);
  const shot = await starterShot(s, tree.projectId);
  const patched = await s.call('PATCH', `/api/production/shots/${shot.id}`, { token, body: { prompt: 'a lighthouse at dusk, slow push in', description: 'The keeper looks out.' } });
  assert.equal(patched.status, 200, patched.text);
  const run = await instantiate(s, token, 'wft_builtin_shot_to_cut', { mode: 'queue', shotId: shot.id });
  const done = await waitRun(s, token, run.id, ['awaiting_qa', 'blocked', 'completed'], 120_000);
  assert.equal(done.status, 'awaiting_qa', JSON.stringify(done));
  assert.deepEqual(done.steps.map((x: any) => x.status), ['completed', 'completed', 'completed', 'completed']);
  assert.deepEqual(done.gates.map((g: any) => [g.key, g.status]), [['picture_qa', 'pending'], ['voice_qa', 'pending']]);

  const artifactsOf = async (jobId: string) => (await s.call('GET', `/api/production/media-artifacts?jobId=${jobId}`, { token })).body.items;
  const [still] = await artifactsOf(done.steps[0].jobId);
  const [clip] = await artifactsOf(done.steps[1].jobId);
  const [voice] = await artifactsOf(done.steps[2].jobId);
  const [cut] = await artifactsOf(done.steps[3].jobId);
  assert.deepEqual([still.kind, clip.kind, voice.kind, cut.kind, cut.source], ['image', 'video', 'audio', 'video', 'composition']);
  // The clip was made from the still, and every artifact names the run step that made it.
  assert.deepEqual(clip.provenance.inputs.map((i: any) => [i.artifactId, i.contentSha256]), [[still.id, still.contentSha256]]);
  assert.deepEqual(cut.provenance.workflow, { templateId: 'wft_builtin_shot_to_cut', templateVersion: 1, runId: run.id, stepKey: 'episode_cut' });
  assert.equal(clip.provenance.workflow.stepKey, 'shot_video');
  assert.deepEqual(cut.provenance.inputs, [
    { role: 'video', shotId: shot.id, artifactId: clip.id, contentSha256: clip.contentSha256 },
    { role: 'voice', shotId: shot.id, artifactId: voice.id, contentSha256: voice.contentSha256 },
  ]);
  // The cut: the shot's clip with its voice line, real first and last frames.
  assert.ok(Math.abs(cut.durationMs - clip.durationMs) < 100, `${cut.durationMs} vs ${clip.durationMs}`);
  assert.deepEqual([cut.hasVideo, cut.hasAudio, cut.width, cut.height], [true, true, clip.width, clip.height]);
  assert.ok(cut.firstFrame && cut.lastFrame, JSON.stringify(cut));
  const composition = cut.composition;
  assert.equal(composition.inputs[0].artifactId, clip.id);
  assert.equal(composition.inputs[0].audioArtifactId, voice.id);
  const content = await s.call('GET', `/api/production/media-artifacts/${cut.id}/content`, { token });
  assert.equal(content.status, 200);
  assert.equal(content.headers.get('content-type'), 'video/mp4');

  // QA decides the gates: the non-blocking one changes nothing, passing the blocking one completes the run.
  const gate = (key: string, status: string, who = token) => s.call('POST', `/api/workflows/runs/${run.id}/gates/${key}`, { token: who, body: { status, note: 'checked frames' } });
  assert.equal((await gate('voice_qa', 'failed')).body.status, 'awaiting_qa');
  const passed = await gate('picture_qa', 'passed');
  assert.equal(passed.status, 200, passed.text);
  assert.equal(passed.body.status, 'completed');
  assert.deepEqual(passed.body.gates.map((g: any) => [g.key, g.status, g.note]), [['picture_qa', 'passed', 'checked frames'], ['voice_qa', 'failed', 'checked frames']]);
  assert.equal((await gate('picture_qa', 'failed')).body.status, 'failed');
  assert.equal((await s.call('GET', `/api/workflows/runs?status=failed`, { token })).body.items[0].id, run.id);
  assert.equal((await gate('picture_qa', 'pending')).body.status, 'awaiting_qa');
  assert.equal((await gate('nope', 'passed')).status, 404);
  const writer = await member(s, 'writer', tree);
  assert.equal((await gate('picture_qa', 'passed', writer.token)).status, 403, 'deciding a gate needs qa:review');
  const decisions = await s.call('GET', `/api/audit?targetId=${run.id}&action=workflow.gate_decided`, { token });
  assert.deepEqual(decisions.body.auditLog.map((a: any) => a.metadata.to).reverse(), ['failed', 'passed', 'failed', 'pending']);
});

test('the built-in voice-over pass records the shot\u2019s dialogue and transcribes that recording', async (t) => {
  const { s, token, tree } = await jobWorld(t);
  const shot = await starterShot(s, tree.projectId);
  await s.call('PATCH', `/api/production/shots/${shot.id}`, { token, body: { sceneId: 'sc_dock' } });
  const script = await s.call('PUT', `/api/production/script/episodes/${shot.episode_id}`, {
    token,
    body: { baseRevision: 0, scenes: [{ id: 'sc_dock', heading: 'EXT. DOCK - NIGHT', lines: [
      { kind: 'action', text: 'Fog rolls in.' }, { kind: 'dialogue', character: 'MEI', text: 'The last ferry left without us.' },
    ] }] },
  });
  assert.ok([200, 201].includes(script.status), script.text);
  const run = await instantiate(s, token, 'wft_builtin_voice_over', { mode: 'queue', shotId: shot.id });
  assert.equal(run.steps[0].job.prompt, 'The last ferry left without us.');
  const done = await waitRun(s, token, run.id, ['awaiting_qa', 'blocked'], 60_000);
  assert.equal(done.status, 'awaiting_qa', JSON.stringify(done));
  const [voice] = (await s.call('GET', `/api/production/media-artifacts?jobId=${done.steps[0].jobId}`, { token })).body.items;
  const transcript = (await s.call('GET', `/api/jobs/${done.steps[1].jobId}`, { token })).body;
  assert.deepEqual(transcript.input.useDependencyOutputs, true);
  assert.equal(voice.kind, 'audio');
  // The model server names the bytes it transcribed: the recording the first step made.
  assert.equal(transcript.output.text, `transcript of ${voice.fileName}: ${voice.fileSize} bytes, sha256 ${voice.contentSha256.slice(0, 12)}`);
});

test('a writer (script:read) queues a run, under the same clip quota, local-runner-only and external-cost rules; other tenants and members without the read permissions cannot', async (t) => {
  const { s, token, tree } = await jobWorld(t, { env: { SVC_WORKER_ENABLED: '0' } });
  const shot = await starterShot(s, tree.projectId);
  const tpl = await make(s, token, { templateKey: 'writer-run', steps: STEPS });
  const writer = await member(s, 'writer', tree);
  const run = await instantiate(s, writer.token, tpl.id, { mode: 'queue', shotId: shot.id });
  assert.deepEqual([run.mode, run.status, run.steps.length], ['queue', 'queued', 2]);
  const jobs = await s.db.all<any>(`SELECT id, kind, status, created_by, depends_on FROM generation_jobs WHERE project_id = ? ORDER BY ${s.db.dialect.rowKey}`, tree.projectId);
  assert.deepEqual(jobs.map((j) => [j.kind, j.created_by]), [['image', writer.user.id], ['video', writer.user.id]]);
  assert.equal((await s.db.all("SELECT * FROM audit_log WHERE action = 'workflow.instantiated' AND actor_user_id = ?", writer.user.id)).length, 1);
  assert.equal((await s.call('GET', `/api/workflows/runs/${run.id}`, { token: writer.token })).status, 200);

  // The clip quota still applies: the video step is over a quota of one clip (the first run's video is unfinished).
  await s.db.run('UPDATE billing_accounts SET monthly_clip_quota = 1 WHERE organization_id = ?', tree.organizationId);
  assert.equal((await instantiate(s, writer.token, tpl.id, { mode: 'queue', shotId: shot.id }, 409)).error.code, 'clip_quota_exceeded');
  await s.db.run('UPDATE billing_accounts SET monthly_clip_quota = 1000 WHERE organization_id = ?', tree.organizationId);
  // A cloud adapter needs approveExternal, and none in a local-runner-only organization.
  const cloud = await connector(s, token, 'http://127.0.0.1:9', { costMode: 'cloud', probe: false, label: 'Cloud' });
  assert.equal((await instantiate(s, writer.token, tpl.id, { mode: 'queue', shotId: shot.id, adapter: cloud }, 409)).error.code, 'external_approval_required');
  await s.db.run('UPDATE billing_accounts SET local_runner_only = 1 WHERE organization_id = ?', tree.organizationId);
  assert.equal((await instantiate(s, writer.token, tpl.id, { mode: 'queue', shotId: shot.id, adapter: cloud, approveExternal: true }, 409)).error.code, 'local_runner_only');
  assert.equal((await s.db.get<any>('SELECT count(*) AS n FROM generation_jobs WHERE project_id = ?', tree.projectId)).n, 2, 'refusals write nothing');

  // No read permission: 403; another organization's writer: the template does not exist for it.
  const bare = await member(s, 'org_member', tree);
  const denied = await s.call('POST', `/api/workflows/templates/${tpl.id}/instantiate`, { token: bare.token, body: { mode: 'queue', shotId: shot.id } });
  assert.equal(denied.status, 403, denied.text);
  const stranger = await member(s, 'writer');
  assert.equal((await instantiate(s, stranger.token, tpl.id, { mode: 'queue', shotId: shot.id }, 404)).error.code, 'not_found');
  assert.equal((await s.call('POST', `/api/workflows/templates/${tpl.id}/instantiate`, { body: { mode: 'queue' } })).status, 401);
});
