// Generation jobs end to end through HTTP with the worker thread and the project's own model server:
// chains with depends_on, claim conditions, retries with backoff, failures that block dependents,
// image checks that fail at once, cloud connectors that run only through /run, clip usage and quota.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import { openDatabase } from '../../src/db/open.ts';
import { startTestServer, serversRunTheWorker } from '../helpers/server.ts';
import { member, makeUser, login, grant } from '../helpers/factories.ts';
import { WORKER_ENV, connector, createJob, jobWorld, sleep, startModel, waitJob } from '../helpers/jobs.ts';

serversRunTheWorker();

test('image -> video chain on a local connector completes; files are stored with their hashes; one clip usage event', async (t) => {
  const s = await startTestServer(t, WORKER_ENV);
  const m = await startModel(t);
  const { token, tree } = await member(s, 'org_owner');
  const connectorId = await connector(s, token, m.url);
  const image = await createJob(s, token, { kind: 'image', connectorId });
  const video = await createJob(s, token, { kind: 'video', connectorId, dependsOn: image.id, prompt: 'the lantern swings' });
  const doneVideo = await waitJob(s, token, video.id, ['completed', 'failed']);
  const doneImage = await waitJob(s, token, image.id, ['completed', 'failed']);
  assert.equal(doneImage.status, 'completed', JSON.stringify(doneImage));
  assert.equal(doneVideo.status, 'completed', JSON.stringify(doneVideo));
  assert.ok(Date.parse(doneVideo.startedAt) >= Date.parse(doneImage.finishedAt), 'the video started after its dependency completed');
  for (const [job, mime] of [[doneImage, 'image/png'], [doneVideo, 'video/mp4']] as const) {
    assert.equal(job.attempt, 1);
    assert.equal(job.attempts.length, 1);
    assert.equal(job.attempts[0].outcome, 'completed');
    assert.ok(job.attempts[0].latencyMs >= 0);
    assert.equal(job.connector.id, connectorId);
    assert.equal(job.connector.endpoint, undefined, 'job readers never see the endpoint');
    const files = job.output.files as Array<{ path: string; sha256: string; mimeType: string; fileSize: number }>;
    assert.equal(files.length, 1);
    assert.equal(files[0].mimeType, mime);
    const bytes = fs.readFileSync(path.join(s.config.storageDir, files[0].path));
    assert.equal(bytes.length, files[0].fileSize);
    assert.equal(crypto.createHash('sha256').update(bytes).digest('hex'), files[0].sha256);
    assert.match(files[0].path, new RegExp(`^outputs/${job.id}/`));
  }
  const usage = await s.db.all<{ kind: string; job_id: string; organization_id: string; project_id: string }>('SELECT * FROM usage_events');
  assert.deepEqual(usage.map((u) => [u.kind, u.job_id, u.organization_id, u.project_id]), [['clip', video.id, tree.organizationId, tree.projectId]]);
  const list = await s.call('GET', '/api/jobs?status=completed&kind=video', { token });
  assert.deepEqual(list.body.items.map((j: { id: string }) => j.id), [video.id]);
  assert.equal(list.body.pagination.total, 1);
});

test('a cloud connector\u2019s job stays queued under the worker and runs only through /run, approved, with approveExternal (audited)', async (t) => {
  const { s, token, user, id } = await jobWorld(t, { connector: { costMode: 'cloud', label: 'Cloud chat', capability: ['chat'], probe: false } });
  const job = await createJob(s, token, { kind: 'chat', connectorId: id });
  let run = await s.call('POST', `/api/jobs/${job.id}/run`, { token, body: { approveExternal: true } });
  assert.equal(run.status, 409);
  assert.equal(run.body.error.code, 'connector_not_approved');
  assert.equal((await s.call('POST', `/api/platform/models/${id}/approve`, { token, body: { note: 'budget ok' } })).status, 200);
  assert.equal((await s.call('POST', `/api/platform/models/${id}/probe`, { token })).body.status, 'ready');
  await sleep(600); // six worker polls
  const still = await s.call('GET', `/api/jobs/${job.id}`, { token });
  assert.equal(still.body.status, 'queued');
  assert.equal(still.body.attempt, 0);
  run = await s.call('POST', `/api/jobs/${job.id}/run`, { token, body: {} });
  assert.equal(run.status, 409);
  assert.equal(run.body.error.code, 'external_approval_required');
  run = await s.call('POST', `/api/jobs/${job.id}/run`, { token, body: { approveExternal: true } });
  assert.equal(run.status, 200, run.text);
  assert.equal(run.body.idempotent, false);
  assert.equal(run.body.job.status, 'completed');
  assert.equal(typeof run.body.result.text, 'string');
  const again = await s.call('POST', `/api/jobs/${job.id}/run`, { token, body: { approveExternal: true } });
  assert.equal(again.body.idempotent, true);
  assert.deepEqual(again.body.result, run.body.job.output);
  const audit = await s.db.all<{ actor_user_id: string; metadata: string }>("SELECT * FROM audit_log WHERE action = 'job.external_run_approved'");
  assert.equal(audit.length, 1);
  assert.equal(audit[0].actor_user_id, user.id);
  assert.equal(JSON.parse(audit[0].metadata).costMode, 'cloud');
});

test('claim condition, connector status: pending, unreachable and disabled connectors hold the job; ready releases it at once', async (t) => {
  const { s, token, id } = await jobWorld(t, { connector: { probe: false } });
  const job = await createJob(s, token, { kind: 'chat', connectorId: id });
  await sleep(300);
  assert.equal((await waitJob(s, token, job.id, ['queued'])).attempt, 0, 'pending: not claimed');
  await s.db.run("UPDATE model_connectors SET status = 'unreachable' WHERE id = ?", id);
  await sleep(300);
  assert.equal((await waitJob(s, token, job.id, ['queued'])).attempt, 0, 'unreachable: not claimed');
  assert.equal((await s.call('POST', `/api/platform/models/${id}/disable`, { token })).status, 200);
  await sleep(300);
  assert.equal((await waitJob(s, token, job.id, ['queued'])).attempt, 0, 'disabled: not claimed');
  assert.equal((await s.call('POST', `/api/platform/models/${id}/enable`, { token })).status, 200);
  assert.equal((await s.call('POST', `/api/platform/models/${id}/probe`, { token })).body.status, 'ready');
  const done = await waitJob(s, token, job.id, ['completed'], 2000);
  assert.equal(done.attempt, 1);
});

test('a connector changed between two jobs: the next claim calls it as changed, the job before ran as it was claimed', async (t) => {
  const { s, token, id } = await jobWorld(t);
  const first = await waitJob(s, token, (await createJob(s, token, { kind: 'chat', connectorId: id })).id, ['completed', 'failed']);
  assert.equal(first.output.model, 'svc-chat', JSON.stringify(first));
  const patched = await s.call('PATCH', `/api/platform/models/${id}`, { token, body: { protocol: { models: { chat: 'svc-chat-2' } } } });
  assert.equal(patched.status, 200, patched.text);
  if (patched.body.status !== 'ready') assert.equal((await s.call('POST', `/api/platform/models/${id}/probe`, { token })).body.status, 'ready');
  const second = await waitJob(s, token, (await createJob(s, token, { kind: 'chat', connectorId: id })).id, ['completed', 'failed']);
  assert.equal(second.output.model, 'svc-chat-2', JSON.stringify(second));
  assert.equal(first.output.model, 'svc-chat');
});

test('claim condition, dependency: a job starts only after the job it depends on completed', async (t) => {
  const { s, m, token, id } = await jobWorld(t);
  await m.control({ latencyMs: 300 });
  const first = await createJob(s, token, { kind: 'chat', connectorId: id });
  const second = await createJob(s, token, { kind: 'chat', connectorId: id, dependsOn: first.id });
  await waitJob(s, token, first.id, ['running']);
  assert.equal((await waitJob(s, token, second.id, ['queued'])).attempt, 0, 'a free slot is not enough');
  const a = await waitJob(s, token, first.id, ['completed']);
  const b = await waitJob(s, token, second.id, ['completed']);
  assert.ok(Date.parse(b.startedAt) >= Date.parse(a.finishedAt));
});

test('claim condition, cost mode: a mixed connector, approved and ready, is never picked up by the worker', async (t) => {
  const { s, m, token, id } = await jobWorld(t, { connector: { costMode: 'mixed', probe: false } });
  assert.equal((await s.call('POST', `/api/platform/models/${id}/approve`, { token, body: {} })).status, 200);
  assert.equal((await s.call('POST', `/api/platform/models/${id}/probe`, { token })).body.status, 'ready');
  const job = await createJob(s, token, { kind: 'chat', connectorId: id });
  const d = await s.call('POST', '/api/system/worker/dispatch', { token });
  assert.deepEqual(d.body, { dispatched: true, claimed: null }, 'not even by dispatch');
  await sleep(500);
  const still = await waitJob(s, token, job.id, ['queued']);
  assert.equal(still.attempt, 0);
  assert.equal(m.faults.calls().generation, 0, 'the model server was never called');
});

test('claim condition, concurrency slot: never more running jobs than SVC_WORKER_CONCURRENCY', async (t) => {
  const { s, m, token, id } = await jobWorld(t, { env: { SVC_WORKER_CONCURRENCY: '2' } });
  await m.control({ latencyMs: 150 });
  const jobs = [];
  for (let i = 0; i < 7; i++) jobs.push(await createJob(s, token, { kind: 'chat', connectorId: id, prompt: `line ${i}` }));
  let most = 0;
  for (;;) {
    most = Math.max(most, (await s.db.get<{ n: number }>("SELECT count(*) AS n FROM generation_jobs WHERE status = 'running'"))!.n);
    if ((await s.db.get<{ n: number }>("SELECT count(*) AS n FROM generation_jobs WHERE status <> 'completed'"))!.n === 0) break;
    await sleep(5);
  }
  assert.equal(most, 2, 'two at a time, never more');
  assert.equal(jobs.length, 7);
});

test('SVC_WORKER_CONCURRENCY is clamped to 1..8', async (t) => {
  const s = await startTestServer(t, { SVC_WORKER_CONCURRENCY: '99' });
  assert.equal(s.config.workerConcurrency, 8);
  const admin = await makeUser(s, { systemAdmin: true });
  const st = await s.call('GET', '/api/system/worker', { token: await login(s, admin) });
  assert.equal(st.body.concurrency, 8);
});

test('fails twice then succeeds: completed at attempt 3 with two audited failures and a notification', async (t) => {
  const { s, m, token, user, id } = await jobWorld(t);
  await m.control({ failNext: 2, failStatus: 503 });
  const job = await createJob(s, token, { kind: 'chat', connectorId: id });
  const done = await waitJob(s, token, job.id, ['completed', 'failed']);
  assert.equal(done.status, 'completed', JSON.stringify(done));
  assert.equal(done.attempt, 3);
  assert.deepEqual(done.attempts.map((a: { outcome: string }) => a.outcome), ['retry', 'retry', 'completed']);
  assert.match(done.attempts[0].error, /503/);
  const failures = await s.db.all<{ result: string; metadata: string }>("SELECT * FROM audit_log WHERE action = 'job.attempt_failed' AND target_id = ?", job.id);
  assert.equal(failures.length, 2);
  assert.ok(failures.every((f) => f.result === 'failure'));
  const inbox = await s.db.all<{ category: string; type: string }>('SELECT * FROM notifications WHERE user_id = ?', user.id);
  assert.ok(inbox.some((n) => n.category === 'generation_jobs' && n.type === 'job.attempt_failed'), JSON.stringify(inbox));
});

test('failing always: failed at max_attempts; its dependents become blocked, and unblock when a retry succeeds', async (t) => {
  const { s, m, token, id } = await jobWorld(t);
  await m.control({ failNext: 1000 });
  const job = await createJob(s, token, { kind: 'image', connectorId: id, maxAttempts: 2 });
  const child = await createJob(s, token, { kind: 'video', connectorId: id, dependsOn: job.id });
  const grandchild = await createJob(s, token, { kind: 'chat', connectorId: id, dependsOn: child.id });
  const failed = await waitJob(s, token, job.id, ['failed', 'completed']);
  assert.equal(failed.status, 'failed');
  assert.equal(failed.attempt, 2);
  assert.deepEqual(failed.attempts.map((a: { outcome: string }) => a.outcome), ['retry', 'failed']);
  await waitJob(s, token, child.id, ['blocked']);
  await waitJob(s, token, grandchild.id, ['blocked']);
  assert.equal((await s.db.get<{ n: number }>("SELECT count(*) AS n FROM audit_log WHERE action = 'job.failed' AND target_id = ?", job.id))!.n, 1);
  await m.control({ reset: true });
  const retried = await s.call('POST', `/api/jobs/${job.id}/retry`, { token, body: {} });
  assert.equal(retried.status, 200, retried.text);
  assert.equal((await waitJob(s, token, grandchild.id, ['completed'])).attempt, 1);
  assert.equal((await waitJob(s, token, job.id, ['completed'])).attempt, 3);
});

for (const [fault, code] of [[{ imageCount: 2 }, 'image_count_mismatch'], [{ collage: true }, 'image_composite_detected'], [{ split: true }, 'image_composite_detected']] as const) {
  test(`an image answer with ${JSON.stringify(fault)} fails at once, no second attempt, and the dependent video never starts`, async (t) => {
    const s = await startTestServer(t, WORKER_ENV);
    const m = await startModel(t);
    const { token } = await member(s, 'org_owner');
    const id = await connector(s, token, m.url);
    await m.control(fault);
    const image = await createJob(s, token, { kind: 'image', connectorId: id });
    const video = await createJob(s, token, { kind: 'video', connectorId: id, dependsOn: image.id });
    const failed = await waitJob(s, token, image.id, ['failed', 'completed']);
    assert.equal(failed.status, 'failed');
    assert.equal(failed.attempt, 1);
    assert.match(failed.error, new RegExp(code));
    const v = await waitJob(s, token, video.id, ['blocked']);
    assert.equal(v.attempt, 0);
    assert.equal(v.startedAt, null);
    const outputs = path.join(s.config.storageDir, 'outputs');
    const kept = fs.readdirSync(outputs, { recursive: true, encoding: 'utf8' }).filter((f) => fs.statSync(path.join(outputs, f)).isFile());
    assert.deepEqual(kept, [], 'no output file kept');
  });
}

test('SVC_WORKER_ENABLED=0 shows paused and runs nothing until dispatch; worker status has every field with live values', async (t) => {
  const s = await startTestServer(t, { ...WORKER_ENV, SVC_WORKER_ENABLED: '0', SVC_WORKER_ID: 'worker-under-test' });
  const m = await startModel(t);
  const { token } = await member(s, 'org_owner');
  const admin = await login(s, await makeUser(s, { systemAdmin: true }));
  const id = await connector(s, token, m.url);
  const job = await createJob(s, token, { kind: 'chat', connectorId: id });
  const second = await createJob(s, token, { kind: 'chat', connectorId: id });
  await sleep(400);
  assert.equal((await waitJob(s, token, job.id, ['queued'])).attempt, 0);
  let st = await s.call('GET', '/api/system/worker', { token: admin });
  assert.equal(st.status, 200);
  for (const f of ['workerId', 'healthStatus', 'heartbeatAgeMs', 'staleThresholdMs', 'concurrency', 'pollIntervalMs', 'queueDepth', 'queueAlerts',
    'runningCount', 'lastClaimedAt', 'lastCompletedAt', 'lastFailedAt', 'lastReclaimedAt', 'lastRetriedAt', 'lastError']) {
    assert.ok(f in st.body, `worker status has ${f}`);
  }
  assert.equal(st.body.workerId, 'worker-under-test');
  assert.equal(st.body.healthStatus, 'paused');
  assert.ok(st.body.heartbeatAgeMs < 1000, 'heartbeat is live');
  assert.equal(st.body.staleThresholdMs, 30000);
  assert.equal(st.body.pollIntervalMs, 100);
  assert.equal(st.body.queueDepth.queued, 2);
  assert.ok(st.body.queueAlerts.some((a: { code: string }) => a.code === 'worker_paused'));
  assert.equal(st.body.lastClaimedAt, null);
  const other = await member(s, 'org_owner');
  const none = await s.call('POST', '/api/system/worker/dispatch', { token: other.token });
  assert.deepEqual(none.body, { dispatched: true, claimed: null }, 'dispatch claims only the caller\u2019s organization');
  const d = await s.call('POST', '/api/system/worker/dispatch', { token });
  assert.deepEqual(d.body, { dispatched: true, claimed: job.id });
  const done = await waitJob(s, token, job.id, ['completed']);
  // Last-event times reach the status with the next heartbeat at the latest (poll interval 100 ms).
  const until = Date.now() + 2000;
  do {
    st = await s.call('GET', '/api/system/worker', { token: admin });
  } while (!st.body.lastCompletedAt && Date.now() < until && await sleep(20) === undefined);
  assert.ok(st.body.lastClaimedAt && st.body.lastCompletedAt, JSON.stringify(st.body));
  assert.ok(Date.parse(st.body.lastCompletedAt) >= Date.parse(done.startedAt));
  assert.equal(st.body.queueDepth.completed, 1);
  // The slot the dispatched job freed is not filled: a paused worker claims only on dispatch.
  await sleep(300);
  assert.equal((await waitJob(s, token, second.id, ['queued'])).attempt, 0, 'the paused worker claimed nothing after the dispatched job');
});

test('jobs routes: 401 without a session, 403 without job:create/queue:manage, another project\u2019s job 404, lists scoped to the project', async (t) => {
  const s = await startTestServer(t, WORKER_ENV);
  const m = await startModel(t);
  const owner = await member(s, 'org_owner');
  const id = await connector(s, owner.token, m.url, { probe: false });
  const job = await createJob(s, owner.token, { kind: 'chat', connectorId: id });
  const writer = await member(s, 'writer', owner.tree);
  const artist = await member(s, 'art_director', owner.tree);
  const stranger = await member(s, 'org_owner');
  assert.equal((await s.call('GET', '/api/jobs')).status, 401);
  assert.equal((await s.call('POST', '/api/jobs', { body: { kind: 'chat', prompt: 'x' } })).status, 401);
  for (const [method, p] of [['GET', '/api/jobs'], ['GET', `/api/jobs/${job.id}`], ['POST', '/api/jobs'], ['POST', `/api/jobs/${job.id}/cancel`], ['POST', '/api/adapters/dry-run']] as const) {
    const r = await s.call(method, p, { token: writer.token, body: method === 'POST' ? { kind: 'chat', prompt: 'x' } : undefined });
    assert.equal(r.status, 403, `${method} ${p}`);
    assert.equal(r.body.error.code, 'permission_denied');
  }
  assert.equal((await s.call('GET', `/api/jobs/${job.id}`, { token: artist.token })).status, 200, 'job:create holders read jobs');
  assert.equal((await s.call('GET', `/api/jobs/${job.id}`, { token: stranger.token })).status, 404);
  assert.equal((await s.call('POST', `/api/jobs/${job.id}/cancel`, { token: stranger.token })).status, 404);
  assert.equal((await s.call('POST', `/api/jobs/${job.id}/run`, { token: stranger.token, body: {} })).status, 404);
  const strangerList = await s.call('GET', '/api/jobs', { token: stranger.token });
  assert.deepEqual(strangerList.body.items, []);
  // Another organization's connector cannot be named.
  const sid = await connector(s, stranger.token, m.url, { probe: false });
  const cross = await s.call('POST', '/api/jobs', { token: owner.token, body: { kind: 'chat', prompt: 'x', connectorId: sid } });
  assert.equal(cross.status, 422);
  assert.ok(cross.body.error.details.fields.connectorId);
});

test('job creation validates kind, shot, dependency and inputs before writing anything', async (t) => {
  const s = await startTestServer(t, WORKER_ENV);
  const m = await startModel(t);
  const owner = await member(s, 'org_owner');
  const other = await member(s, 'org_owner');
  const chatOnly = await connector(s, owner.token, m.url, { capability: ['chat'], probe: false });
  const otherJob = await createJob(s, other.token, { kind: 'chat', connectorId: await connector(s, other.token, m.url, { probe: false }) });
  const before = (await s.db.get<{ n: number }>('SELECT count(*) AS n FROM generation_jobs'))!.n;
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ kind: 'image', connectorId: chatOnly }, 'kind'],
    [{ kind: 'chat', connectorId: chatOnly, shotId: 'sht_nope' }, 'shotId'],
    [{ kind: 'chat', connectorId: chatOnly, dependsOn: otherJob.id }, 'dependsOn'],
    [{ kind: 'chat', connectorId: chatOnly, inputs: [{ assetId: 'ast_nope' }] }, 'inputs[0].assetId'],
    [{ kind: 'chat', connectorId: 'mdl_nope' }, 'connectorId'],
    [{ kind: 'Chat!', connectorId: chatOnly }, 'kind'],
    [{ kind: 'chat', connectorId: chatOnly, priority: 1000 }, 'priority'],
  ];
  for (const [body, field] of cases) {
    const r = await s.call('POST', '/api/jobs', { token: owner.token, body: { prompt: 'p', ...body } });
    assert.equal(r.status, 422, `${JSON.stringify(body)}: ${r.text}`);
    assert.ok(field in r.body.error.details.fields, `${field} in ${r.text}`);
  }
  assert.equal((await s.db.get<{ n: number }>('SELECT count(*) AS n FROM generation_jobs'))!.n, before);
});

test('cancel, retry and priority; a cancelled running call is aborted and its result never lands', async (t) => {
  const { s, m, token, id } = await jobWorld(t);
  await m.control({ latencyMs: 800 });
  const job = await createJob(s, token, { kind: 'chat', connectorId: id });
  const child = await createJob(s, token, { kind: 'chat', connectorId: id, dependsOn: job.id });
  await waitJob(s, token, job.id, ['running']);
  const c = await s.call('POST', `/api/jobs/${job.id}/cancel`, { token });
  assert.equal(c.status, 200);
  assert.equal(c.body.status, 'cancelled');
  await waitJob(s, token, child.id, ['blocked']);
  await sleep(1000);
  const after = await waitJob(s, token, job.id, ['cancelled']);
  assert.equal(after.output, null, 'the aborted call wrote no result');
  assert.equal(after.attempts[0].outcome, 'cancelled');
  assert.equal((await s.call('POST', `/api/jobs/${job.id}/cancel`, { token })).body.error.code, 'job_finished');
  const p = await s.call('POST', `/api/jobs/${child.id}/priority`, { token, body: { priority: 50 } });
  assert.equal(p.body.priority, 50);
  await m.control({ reset: true });
  const r = await s.call('POST', `/api/jobs/${job.id}/retry`, { token, body: { attempts: 1 } });
  assert.equal(r.body.status, 'queued');
  await waitJob(s, token, child.id, ['completed']);
  assert.equal((await s.call('POST', `/api/jobs/${child.id}/retry`, { token, body: {} })).body.error.code, 'job_not_retryable');
  const audit = await s.db.all<{ action: string }>("SELECT action FROM audit_log WHERE action IN ('job.cancelled', 'job.retried', 'job.priority_changed') ORDER BY seq");
  assert.deepEqual(audit.map((a) => a.action), ['job.cancelled', 'job.priority_changed', 'job.retried']);
});

test('dry run shows the exact request with header names only; the credential is read at call time and never shown', async (t) => {
  const s = await startTestServer(t, WORKER_ENV);
  const m = await startModel(t);
  const { token } = await member(s, 'org_owner');
  const secret = `sk-test-${crypto.randomUUID()}`;
  process.env.SVC_CONNECTOR_SECRET_TEST_MODEL_KEY = secret;
  t.after(() => { delete process.env.SVC_CONNECTOR_SECRET_TEST_MODEL_KEY; });
  const id = await connector(s, token, m.url, { authEnv: 'SVC_CONNECTOR_SECRET_TEST_MODEL_KEY' });
  const dry = await s.call('POST', '/api/adapters/dry-run', { token, body: { kind: 'image', connectorId: id, prompt: 'a blue door' } });
  assert.equal(dry.status, 200, dry.text);
  assert.equal(dry.body.method, 'POST');
  assert.equal(dry.body.route, '/v1/images/generations');
  assert.equal(dry.body.model, 'svc-image');
  assert.equal(dry.body.body.n, 1);
  assert.equal(dry.body.body.prompt.includes('a blue door'), true);
  assert.ok(dry.body.headers.includes('authorization'));
  assert.equal((await s.db.get<{ n: number }>('SELECT count(*) AS n FROM generation_jobs'))!.n, 0, 'a dry run stores nothing');
  const job = await createJob(s, token, { kind: 'chat', connectorId: id });
  await waitJob(s, token, job.id, ['completed']);
  delete process.env.SVC_CONNECTOR_SECRET_TEST_MODEL_KEY;
  const missing = await createJob(s, token, { kind: 'chat', connectorId: id });
  const failed = await waitJob(s, token, missing.id, ['failed']);
  assert.equal(failed.attempt, 1, 'a missing credential is not retried');
  assert.match(failed.error, /SVC_CONNECTOR_SECRET_TEST_MODEL_KEY/);
  s.log.flush();
  const everything = [dry.text, JSON.stringify(failed), ...s.logs, JSON.stringify(await s.db.all('SELECT * FROM audit_log')), JSON.stringify(await s.db.all('SELECT * FROM generation_jobs'))].join('\n');
  assert.equal(everything.includes(secret), false);
});

test('clip quota: video creation is refused with 409 clip_quota_exceeded once this month\u2019s clips reach the quota', async (t) => {
  const s = await startTestServer(t, WORKER_ENV);
  const m = await startModel(t);
  const { token, tree } = await member(s, 'org_owner');
  await s.db.run('UPDATE billing_accounts SET monthly_clip_quota = 1, clip_unit_price_e4 = 2500000 WHERE organization_id = ?', tree.organizationId);
  const id = await connector(s, token, m.url);
  const first = await createJob(s, token, { kind: 'video', connectorId: id });
  await waitJob(s, token, first.id, ['completed']);
  const event = (await s.db.get<{ estimated_cost_e4: number; currency: string }>('SELECT * FROM usage_events WHERE job_id = ?', first.id))!;
  assert.equal(event.estimated_cost_e4, 2500000);
  const second = await s.call('POST', '/api/jobs', { token, body: { kind: 'video', connectorId: id, prompt: 'again' } });
  assert.equal(second.status, 409);
  assert.equal(second.body.error.code, 'clip_quota_exceeded');
  assert.equal((await s.call('POST', '/api/jobs', { token, body: { kind: 'image', connectorId: id, prompt: 'stills are not clips' } })).status, 201);
});

test('admin queue and batch: administrators only, scoped to their organization, one outcome per job', async (t) => {
  const s = await startTestServer(t, WORKER_ENV);
  const m = await startModel(t);
  const owner = await member(s, 'org_owner');
  const producer = await member(s, 'producer', owner.tree);
  const other = await member(s, 'org_owner');
  const id = await connector(s, owner.token, m.url, { probe: false });
  const jobs = [await createJob(s, owner.token, { kind: 'chat', connectorId: id }), await createJob(s, owner.token, { kind: 'chat', connectorId: id, priority: 5 })];
  const otherJob = await createJob(s, other.token, { kind: 'chat', connectorId: await connector(s, other.token, m.url, { probe: false }) });
  assert.equal((await s.call('GET', '/api/admin/queue')).status, 401);
  assert.equal((await s.call('GET', '/api/admin/queue', { token: producer.token })).status, 403);
  assert.equal((await s.call('POST', '/api/admin/queue/batch', { token: producer.token, body: { action: 'cancel', ids: [jobs[0].id] } })).status, 403);
  assert.equal((await s.call('POST', '/api/system/worker/dispatch', { token: producer.token })).status, 403);
  assert.equal((await s.call('GET', '/api/system/worker', { token: owner.token })).status, 403);
  const q = await s.call('GET', '/api/admin/queue', { token: owner.token });
  assert.equal(q.status, 200);
  assert.equal(q.body.depth.queued, 2, 'only this organization\u2019s jobs');
  assert.deepEqual(q.body.byPriority, [{ priority: 5, queued: 1 }, { priority: 0, queued: 1 }]);
  assert.equal(q.body.byConnector[0].queued, 2);
  assert.equal(q.body.oldestWaiting.jobId, jobs[0].id);
  assert.ok(q.body.alerts.some((a: { code: string }) => a.code === 'connector_not_ready'));
  const b = await s.call('POST', '/api/admin/queue/batch', { token: owner.token, body: { action: 'priority', priority: 9, ids: [jobs[0].id, otherJob.id] } });
  assert.equal(b.status, 200, b.text);
  assert.deepEqual(b.body.results.map((r: { outcome: string }) => r.outcome), ['updated', 'not_found']);
  const c = await s.call('POST', '/api/admin/queue/batch', { token: owner.token, body: { action: 'cancel', filter: { status: 'queued' } } });
  assert.deepEqual(c.body.summary, { cancelled: 2 });
  const r = await s.call('POST', '/api/admin/queue/batch', { token: owner.token, body: { action: 'retry', ids: [jobs[0].id, jobs[1].id] } });
  assert.deepEqual(r.body.results.map((x: { status: string }) => x.status), ['queued', 'queued']);
  assert.equal((await s.call('POST', '/api/admin/queue/batch', { token: owner.token, body: { action: 'retry' } })).status, 422);
  assert.equal((await s.db.get<{ status: string }>('SELECT status FROM generation_jobs WHERE id = ?', otherJob.id))!.status, 'queued');
  await grant(s, producer.user.id, 'organization', owner.tree.organizationId, 'org_admin');
  assert.equal((await s.call('GET', '/api/admin/queue', { token: producer.token })).status, 200);
});

test('a manual run in flight when the service stops is answered and its job put back in the queue', async (t) => {
  const { s, m, token, id } = await jobWorld(t, { env: { SVC_WORKER_ENABLED: '0' } });
  await m.control({ hang: true });
  const job = await createJob(s, token, { kind: 'chat', connectorId: id });
  const run = s.call('POST', `/api/jobs/${job.id}/run`, { token, body: {} });
  await waitJob(s, token, job.id, ['running']);
  const t0 = Date.now();
  const closing = s.close();
  const answer = await run;
  await closing;
  assert.ok(Date.now() - t0 < 2000, `closed in ${Date.now() - t0} ms`);
  assert.equal(answer.status, 200, answer.text);
  assert.equal(answer.body.job.status, 'queued');
  assert.match(answer.body.error, /stopping|aborted/);
  // The server is closed: its database is read again from outside (the SQLite file or the PostgreSQL database).
  const db = await openDatabase(s.config, { readOnly: true });
  t.after(() => db.close());
  const row = await db.get('SELECT status, attempt, leased_by FROM generation_jobs WHERE id = ?', job.id);
  assert.deepEqual({ ...row }, { status: 'queued', attempt: 0, leased_by: null });
});

test('dispatch: a system administrator with no organization in scope claims from any organization; owners claim only their own; others 403', async (t) => {
  const s = await startTestServer(t, { ...WORKER_ENV, SVC_WORKER_ENABLED: '0' });
  const m = await startModel(t);
  const owner = await member(s, 'org_owner');
  const job = await createJob(s, owner.token, { kind: 'chat', connectorId: await connector(s, owner.token, m.url) });
  const admin = await login(s, await makeUser(s, { systemAdmin: true }));
  const ctx = await s.call('GET', '/api/context', { token: admin });
  assert.equal(ctx.body.organization, null, 'the administrator holds no membership: no organization in scope');
  assert.equal((await s.call('POST', '/api/system/worker/dispatch')).status, 401);
  const producer = await member(s, 'producer', owner.tree);
  const byProducer = await s.call('POST', '/api/system/worker/dispatch', { token: producer.token });
  assert.deepEqual([byProducer.status, byProducer.body.error.code], [403, 'permission_denied']);
  const otherOwner = await member(s, 'org_owner');
  assert.deepEqual((await s.call('POST', '/api/system/worker/dispatch', { token: otherOwner.token })).body, { dispatched: true, claimed: null },
    'another organization\u2019s owner claims nothing of this one');
  const d = await s.call('POST', '/api/system/worker/dispatch', { token: admin });
  assert.equal(d.status, 200, d.text);
  assert.deepEqual(d.body, { dispatched: true, claimed: job.id });
  await waitJob(s, owner.token, job.id, ['completed']);
  assert.deepEqual((await s.call('POST', '/api/system/worker/dispatch', { token: admin })).body, { dispatched: true, claimed: null }, 'nothing left to claim');
});
