// The studio's default path, over HTTP, from a fresh project, with zero manual edits of the delivery
// spec: an organization, workspace and project; the starter shot given a scene, a line of dialogue,
// a prompt and a duration target; the built-in "Shot to episode cut" template (whose plan names the
// capability and step it misses before a connector exists) run through the project's own model
// server; QA of the episode passing every blocking check (and loudness and duration too); the
// workflow gate passed by QA; the shot out of the work items and its status moved on; a review
// approving the cut; the delivery approved on its hashes; an export package written.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startModelServer } from '../../tools/model-server/server.ts';
import { DEFAULT_SPEC } from '../../src/production/projects/spec.ts';
import { startTestServer, serversRunTheWorker } from '../helpers/server.ts';
import { login, makeUser } from '../helpers/factories.ts';
import { WORKER_ENV } from '../helpers/jobs.ts';

serversRunTheWorker();

const TEMPLATE = 'wft_builtin_shot_to_cut';

test('the default path: project, script, built-in template on the bundled model server, QA passing, review, delivery, export', async (t) => {
  const s = await startTestServer(t, WORKER_ENV);
  const m = await startModelServer({ port: 0 });
  t.after(() => m.close());
  const admin = await makeUser(s, { systemAdmin: true });
  const token = await login(s, admin);
  const call = async (method: string, p: string, body?: unknown, status = method === 'POST' ? 201 : 200) => {
    const r = await s.call(method, p, { token, body });
    assert.equal(r.status, status, `${method} ${p}: ${r.text}`);
    return r.body;
  };

  // Organization, workspace, project (with its pilot episode and starter shot); the project is current.
  const org = await call('POST', '/api/organizations', { name: 'Night Train Studio', ownerUserId: admin.id });
  const ws = await call('POST', `/api/organizations/${org.id}/workspaces`, { name: 'Season one' });
  const project = await call('POST', `/api/workspaces/${ws.id}/projects`, { name: 'Night Train' });
  await call('PATCH', '/api/context', { projectId: project.id });
  const [shot] = (await call('GET', '/api/production/shots')).items;
  assert.equal(shot.aspectRatio, '9:16');

  // Script: one scene with a line of dialogue; the shot takes the scene, a prompt and a 1 s target.
  await call('PUT', `/api/production/script/episodes/${shot.episodeId}`, {
    baseRevision: 0,
    scenes: [{ id: 'platform', heading: 'EXT. PLATFORM - NIGHT', lines: [{ kind: 'dialogue', character: 'MIRA', text: 'The last train never stops here.' }] }],
  });
  await call('PATCH', `/api/production/shots/${shot.id}`, { sceneId: 'platform', prompt: 'a sunlit yellow platform sign', durationTargetMs: 1000 });

  // The built-in template names the capabilities it needs; its plan without a connector says which
  // capability each step misses.
  const tpl = await call('GET', `/api/workflows/templates/${TEMPLATE}`);
  assert.deepEqual(tpl.capabilities, ['image', 'video', 'tts']);
  assert.deepEqual(tpl.steps.map((st: { key: string; capability: string | null }) => [st.key, st.capability]),
    [['shot_image', 'image'], ['shot_video', 'video'], ['voice_line', 'tts'], ['episode_cut', null]]);
  const plan = await s.call('POST', `/api/workflows/templates/${TEMPLATE}/instantiate`, { token, body: { mode: 'plan', shotId: shot.id } });
  assert.equal(plan.status, 422, plan.text);
  assert.deepEqual(plan.body.error.details.missingCapabilities.map((x: { step: string; capability: string }) => [x.step, x.capability]),
    [['shot_image', 'image'], ['shot_video', 'video'], ['voice_line', 'tts']]);
  assert.match(plan.body.error.message, /step "shot_video" \(Image to video\) needs a connector with capability "video"/);

  // The bundled model server as the organization's connector, with exactly those capabilities.
  const connector = await call('POST', '/api/platform/models/register', {
    label: 'Bundled model server', endpoint: m.url, kind: 'openai-compatible', capability: tpl.capabilities, costMode: 'local',
  });
  await call('POST', `/api/platform/models/${connector.id}/probe`, undefined, 200);

  // The plan now shows each step's job in the shot's format: the spec's 1080x1920 for a 9:16 shot, 1 s.
  const planned = await call('POST', `/api/workflows/templates/${TEMPLATE}/instantiate`, { mode: 'plan', shotId: shot.id });
  const params = Object.fromEntries(planned.steps.map((st: { key: string; job: { parameters: unknown } }) => [st.key, st.job.parameters]));
  assert.deepEqual(params, { shot_image: { width: 1080, height: 1920 }, shot_video: { width: 1080, height: 1920, seconds: 1 }, voice_line: {}, episode_cut: {} });

  // Queue it and wait until every job completed.
  const queued = await call('POST', `/api/workflows/templates/${TEMPLATE}/instantiate`, { mode: 'queue', shotId: shot.id });
  assert.equal((await call('GET', `/api/production/shots/${shot.id}`)).status, 'generating', 'a video job is on its way');
  let run = queued;
  for (const until = Date.now() + 240_000; !['awaiting_qa', 'failed', 'completed', 'cancelled'].includes(run.status);) {
    assert.ok(Date.now() < until, `run still ${run.status}: ${JSON.stringify(run.steps.map((st: { status: string }) => st.status))}`);
    await new Promise((res) => setTimeout(res, 200));
    run = await call('GET', `/api/workflows/runs/${queued.id}`);
  }
  assert.equal(run.status, 'awaiting_qa', JSON.stringify(run.error));

  // The spec was never touched; the shot is still to generate until QA passed its video.
  assert.equal((await call('GET', '/api/production/delivery-spec')).isDefault, true);
  const todo = async () => (await call('GET', '/api/work-items')).items.filter((i: { kind: string }) => i.kind === 'shot_without_media').map((i: { id: string }) => i.id);
  assert.deepEqual(await todo(), [shot.id]);

  // QA of the episode: every blocking check of every artifact passes, and so do duration and loudness.
  const qa = await call('POST', '/api/production/qa/run', { episodeId: shot.episodeId });
  assert.deepEqual(qa.spec, DEFAULT_SPEC);
  assert.deepEqual(qa.artifacts.map((a: { kind: string; source: string }) => `${a.kind}/${a.source}`).sort(),
    ['audio/generation', 'image/generation', 'video/composition', 'video/generation']);
  const failing = qa.artifacts.flatMap((a: { kind: string; checks: Array<{ key: string; blocking: boolean; result: string; message: string }> }) =>
    a.checks.filter((c) => c.result !== 'pass' && (c.blocking || c.key === 'loudness' || c.key === 'duration')).map((c) => `${a.kind}: ${c.key} ${c.message}`));
  assert.deepEqual(failing, []);
  assert.equal(qa.summary.blockingFailed, 0);
  const clip = qa.artifacts.find((a: { kind: string; source: string }) => a.kind === 'video' && a.source === 'generation');
  const check = (key: string) => clip.checks.find((c: { key: string }) => c.key === key);
  assert.deepEqual(check('resolution').measured, { width: 1080, height: 1920 });
  assert.equal(Math.abs(check('duration').measured.offByMs) <= DEFAULT_SPEC.durationToleranceMs, true);
  assert.deepEqual(qa.gatesDecided.map((g: { gateKey: string; status: string; runStatus: string }) => [g.gateKey, g.status, g.runStatus]), [['picture_qa', 'passed', 'completed']]);

  // The shot's video passed QA: no longer a shot to generate, and its status moved on to review.
  assert.deepEqual(await todo(), []);
  assert.equal((await call('GET', `/api/production/shots/${shot.id}`)).status, 'review');

  // Review approves the cut; the shot it was made of is approved.
  const cut = qa.artifacts.find((a: { source: string }) => a.source === 'composition');
  const review = await call('POST', '/api/production/reviews', { artifactId: cut.artifactId, title: 'Episode 1 cut' });
  await call('POST', `/api/production/reviews/${review.id}/decisions`, { decision: 'approve' });
  assert.equal((await call('GET', `/api/production/shots/${shot.id}`)).status, 'approved');

  // Delivery approved on the cut's hash, then the export package.
  const delivery = await call('POST', '/api/production/deliveries', { title: 'Episode 1' });
  assert.deepEqual(delivery.items.map((i: { artifactId: string; sha256: string }) => [i.artifactId, i.sha256]), [[cut.artifactId, cut.sha256]]);
  const approved = await call('POST', `/api/production/deliveries/${delivery.id}/approve`, undefined, 200);
  assert.equal(approved.status, 'approved');
  const exported = await call('POST', '/api/exports/write', { deliveryId: delivery.id });
  assert.equal(exported.deliveryId, delivery.id);
});
