// svc serve --role (SVC_ROLE): an api process serves HTTP and runs no jobs; a worker process on the
// same database runs them and answers HTTP only on GET /api/health; all does both (the default).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { loadConfig } from '../../src/kernel/config.ts';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.ts';
import { schemaDatabaseUrl } from '../helpers/postgres.ts';
import { WORKER_ENV, connector, createJob, sleep, startModel, waitJob } from '../helpers/jobs.ts';
import { login, makeUser, member } from '../helpers/factories.ts';

test('an api process queues jobs without running them; a worker process on the same database runs them', async (t) => {
  const dir = tempDir(t);
  const dirs = { dataDir: path.join(dir, 'data'), storageDir: path.join(dir, 'storage') };
  const api = await startTestServer(t, { ...WORKER_ENV, SVC_ROLE: 'api', SVC_WORKER_ID: 'api-1' }, dirs);
  const m = await startModel(t);
  const owner = await member(api, 'org_owner');
  await connector(api, owner.token, m.url, { capability: ['chat'] });
  const job = await createJob(api, owner.token, { kind: 'chat' });
  await sleep(600); // six of the worker's poll intervals: an api process would have claimed it by now
  assert.equal((await api.call('GET', `/api/jobs/${job.id}`, { token: owner.token })).body.status, 'queued');
  const admin = await login(api, await makeUser(api, { systemAdmin: true }));
  const status = await api.call('GET', '/api/system/worker', { token: admin });
  assert.equal(status.status, 200, status.text);
  assert.equal(status.body.healthStatus, 'not_started', 'no worker runs on this database yet');

  const worker = await startTestServer(t, { ...WORKER_ENV, SVC_ROLE: 'worker', SVC_WORKER_ID: 'worker-1' }, dirs);
  const done = await waitJob(api, owner.token, job.id, ['completed']);
  assert.equal(done.status, 'completed');
  const attempts = await api.db.all<{ runner: string }>('SELECT runner FROM job_attempts WHERE job_id = ?', job.id);
  assert.deepEqual(attempts.map((a) => a.runner), ['worker-1']);
  const live = await api.call('GET', '/api/system/worker', { token: admin });
  assert.equal(live.body.workerId, 'worker-1');
  assert.equal(live.body.healthStatus, 'ok');
  assert.deepEqual(live.body.workers.map((w: { workerId: string; healthStatus: string }) => [w.workerId, w.healthStatus]), [['worker-1', 'ok']], 'the live workers');

  // A second worker process on the same database joins the list; a stopped one leaves it.
  const second = await startTestServer(t, { ...WORKER_ENV, SVC_ROLE: 'worker', SVC_WORKER_ID: 'worker-2' }, dirs);
  const both = await api.call('GET', '/api/system/worker', { token: admin });
  assert.deepEqual(both.body.workers.map((w: { workerId: string }) => w.workerId), ['worker-1', 'worker-2']);
  await second.close();
  const after = await api.call('GET', '/api/system/worker', { token: admin });
  assert.deepEqual(after.body.workers.map((w: { workerId: string }) => w.workerId), ['worker-1']);

  // The worker process answers the liveness probe, and nothing else.
  const health = await worker.call('GET', '/api/health');
  assert.deepEqual([health.status, health.body], [200, { status: 'ok' }]);
  for (const p of ['/api/context', '/api/jobs', '/', '/api/system/health']) {
    const r = await worker.call('GET', p, { token: owner.token });
    assert.equal(r.status, 404, `${p}: ${r.text}`);
    assert.equal(r.body.error.code, 'not_found');
    assert.match(r.body.error.message, /worker role \(SVC_ROLE=worker\)/);
  }
});

test('postgres: a job cancelled through an API process stops its call on a worker process at once, through the notification', async (t) => {
  const dir = tempDir(t);
  const dirs = { dataDir: path.join(dir, 'data'), storageDir: path.join(dir, 'storage') };
  const servers: TestServer[] = [];
  const url = await schemaDatabaseUrl(t, async () => { for (const s of servers) await s.close(); });
  const pg = { SVC_DATABASE: 'postgres', SVC_POSTGRES_URL: url, SVC_POSTGRES_POOL: '4' };
  const api = await startTestServer(t, { ...WORKER_ENV, ...pg, SVC_ROLE: 'api', SVC_WORKER_ID: 'api-1' }, dirs);
  servers.push(api);
  // The default lease (300 s) is renewed every 100 s: a renewal cannot be what notices the cancel here.
  servers.push(await startTestServer(t, { ...WORKER_ENV, ...pg, SVC_ROLE: 'worker', SVC_WORKER_ID: 'worker-1' }, dirs));
  const m = await startModel(t);
  const owner = await member(api, 'org_owner');
  const id = await connector(api, owner.token, m.url, { capability: ['chat'] });
  await m.control({ hang: true }); // the model server holds the call until the client leaves
  const job = await createJob(api, owner.token, { kind: 'chat', connectorId: id });
  await waitJob(api, owner.token, job.id, ['running']);
  // The worker writes its running count with every heartbeat (every 100 ms here).
  const running = async () => (await api.db.get<{ running: number }>("SELECT running FROM worker_state WHERE worker_id = 'worker-1'"))?.running;
  while (await running() !== 1) await sleep(20);
  const c = await api.call('POST', `/api/jobs/${job.id}/cancel`, { token: owner.token });
  assert.equal(c.body.status, 'cancelled', c.text);
  const until = Date.now() + 10_000;
  while (await running() !== 0) {
    assert.ok(Date.now() < until, 'the worker process still runs the cancelled call 10 s later (only the notification could have stopped it that soon)');
    await sleep(20);
  }
  const after = await waitJob(api, owner.token, job.id, ['cancelled']);
  assert.equal(after.output, null, 'the aborted call wrote no result');
  assert.deepEqual(after.attempts.map((a: { outcome: string }) => a.outcome), ['cancelled']);
});

test('SVC_ROLE and --role take all, api or worker; anything else stops the start', () => {
  assert.equal(loadConfig({}, {}).role, 'all');
  assert.equal(loadConfig({}, { SVC_ROLE: 'api' }).role, 'api');
  assert.equal(loadConfig({ role: 'worker' }, { SVC_ROLE: 'api' }).role, 'worker');
  assert.throws(() => loadConfig({}, { SVC_ROLE: 'both' }), /SVC_ROLE/);
});
