// Several processes on several "hosts": two API processes and two worker processes (`svc serve --role`),
// real child processes sharing one PostgreSQL database (the test cluster, tools/pg/pg.sh) and one Ceph
// gateway bucket (tools/s3/rgw.sh), and no folder of their own in common that they rely on. The studio's
// path (generate, QA, review, deliver, export) is driven round-robin across the API processes; a worker
// is killed with SIGKILL in the middle of a job and the other reclaims it after the lease; then: no job
// ever ran on two workers at once (from the attempts), every webhook arrived once, the audit chain
// verifies, and the failed-login limit holds across the API processes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Sandbox, describe } from '../helpers/cli.ts';
import { callerOf, TEST_ENV } from '../helpers/server.ts';
import { freshDatabaseUrl } from '../helpers/postgres.ts';
import { freshPrefix, s3Env } from '../helpers/s3.ts';
import { WORKER_ENV, sleep } from '../helpers/jobs.ts';
import { episodeCut, mediaWorld, shotVideo } from '../helpers/media.ts';
import { login, makeUser, member } from '../helpers/factories.ts';

async function until<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 60_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

test('two API and two worker processes on one PostgreSQL and one bucket: the studio path, a worker killed mid-job, nothing twice', async (t) => {
  const sb = new Sandbox(t);
  const url = await freshDatabaseUrl(t);
  const env = {
    ...TEST_ENV, ...WORKER_ENV, ...s3Env(freshPrefix()), SVC_DATABASE: 'postgres', SVC_POSTGRES_URL: url, SVC_POSTGRES_POOL: '4',
    SVC_WORKER_LEASE_MS: '3000', SVC_LOGIN_MAX_FAILURES_PER_EMAIL: '4', SVC_LOG_LEVEL: 'warn',
  };
  // The set-up (users, organization, connector, shots) goes through an API server in this process;
  // everything after it goes to the child processes.
  const w = await mediaWorld(t, { shots: 2, storage: 's3', env: { ...env, SVC_ROLE: 'api', SVC_WORKER_ID: 'setup' } });
  const serve = (role: string, id: string) => sb.serve([...sb.dirs, '--port', '0', '--role', role], { ...env, SVC_WORKER_ID: id });
  const apis = [await serve('api', 'api-1'), await serve('api', 'api-2')];
  const workers = new Map([['worker-1', await serve('worker', 'worker-1')], ['worker-2', await serve('worker', 'worker-2')]]);
  let turn = 0;
  const s = { ...w.s, call: callerOf(() => apis[turn++ % apis.length].url) };
  const world = { ...w, s };
  const db = w.s.db;

  // A webhook receiver hears every notification of the organization.
  const received = new Map<string, number>();
  const rx = http.createServer((req, res) => {
    const id = String(req.headers['webhook-id']);
    received.set(id, (received.get(id) ?? 0) + 1);
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  await new Promise<void>((resolve) => rx.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => { rx.closeAllConnections(); rx.close(() => resolve()); }));
  const admin = await login(s, await makeUser(s, { systemAdmin: true }));
  const channel = await s.call('POST', '/api/system/notifications/channels', {
    token: admin, body: { organizationId: w.tree.organizationId, kind: 'webhook', url: `http://127.0.0.1:${(rx.address() as AddressInfo).port}/hooks` },
  });
  assert.equal(channel.status, 201, channel.text);

  // The studio's path, round-robin across the API processes; the workers share the jobs.
  const [v1, v2] = await Promise.all([
    shotVideo(world, w.shotIds[0], 'a lantern in the rain', { seconds: 1, size: '180x320' }),
    shotVideo(world, w.shotIds[1], 'a pier at night', { seconds: 1, size: '180x320' }),
  ]);
  const cut = await episodeCut(world);
  assert.deepEqual(cut.composition.inputs.map((i: { artifactId: string }) => i.artifactId), [v1.id, v2.id]);
  const call = (method: string, p: string, body?: unknown) => s.call(method, p, { token: w.token, body });
  assert.equal((await call('PUT', '/api/production/delivery-spec', { width: 180, height: 320, loudnessToleranceLu: 20 })).status, 200);
  const qa = await call('POST', '/api/production/qa/run', { episodeId: w.episodeId });
  assert.equal(qa.status, 201, qa.text);
  const delivery = await call('POST', '/api/production/deliveries', { title: 'Episode 1' });
  assert.equal(delivery.status, 201, delivery.text);
  const reviewer = (await member(s, 'reviewer', w.tree)).token;
  const review = await call('POST', '/api/production/reviews', { artifactId: cut.id, title: 'Episode 1 cut' });
  assert.equal(review.status, 201, review.text);
  const decided = await s.call('POST', `/api/production/reviews/${review.body.id}/decisions`, { token: reviewer, body: { decision: 'approve' } });
  assert.equal(decided.status, 201, decided.text);
  const approved = await call('POST', `/api/production/deliveries/${delivery.body.id}/approve`);
  assert.equal(approved.status, 200, approved.text);
  const exported = await call('POST', '/api/exports/write', { deliveryId: delivery.body.id });
  assert.equal(exported.status, 201, exported.text);
  const runners = await db.all<{ runner: string }>('SELECT DISTINCT runner FROM job_attempts ORDER BY runner');
  assert.ok(runners.every((r) => workers.has(r.runner)), `jobs ran only on the worker processes: ${runners.map((r) => r.runner).join(', ')}`);

  // kill -9 of the worker running a slow job: the other reclaims it after the lease and completes it.
  await w.m.control({ latencyMs: 8000 });
  const slow = await call('POST', '/api/jobs', { kind: 'image', connectorId: w.id, prompt: 'a slow one' });
  assert.equal(slow.status, 201, slow.text);
  const leased = await until('the slow job to run', async () =>
    (await db.get<{ leased_by: string }>("SELECT leased_by FROM generation_jobs WHERE id = ? AND status = 'running' AND leased_by IS NOT NULL", slow.body.id))?.leased_by);
  const victim = workers.get(leased)!;
  victim.child.kill('SIGKILL');
  assert.equal((await victim.done).signal, 'SIGKILL');
  await w.m.control({ latencyMs: 0 });
  const done = await until('the slow job to complete', async () => {
    const r = await s.call('GET', `/api/jobs/${slow.body.id}`, { token: w.token });
    return ['completed', 'failed'].includes(r.body.status) ? r.body : undefined;
  });
  assert.equal(done.status, 'completed', JSON.stringify(done));
  const survivor = [...workers.keys()].find((id) => id !== leased)!;
  const attempts = await db.all<{ attempt: number; runner: string; outcome: string }>(
    'SELECT attempt, runner, outcome FROM job_attempts WHERE job_id = ? ORDER BY attempt', slow.body.id);
  assert.deepEqual(attempts.map((a) => [a.attempt, a.runner, a.outcome]), [[1, leased, 'reclaimed'], [2, survivor, 'completed']]);

  // No job ever ran on two workers at once: each attempt started after the previous one ended.
  const all = await db.all<{ job_id: string; attempt: number; started_at: string; finished_at: string | null }>(
    'SELECT job_id, attempt, started_at, finished_at FROM job_attempts ORDER BY job_id, attempt');
  for (let i = 1; i < all.length; i++) {
    const [a, b] = [all[i - 1], all[i]];
    if (a.job_id !== b.job_id) continue;
    assert.ok(a.finished_at !== null && b.started_at >= a.finished_at, `${b.job_id} attempt ${b.attempt} overlaps attempt ${a.attempt}`);
  }

  // Every webhook arrived, once.
  const outbox = await until('every webhook delivered', async () => {
    const rows = await db.all<{ id: string; status: string }>('SELECT id, status FROM notification_outbox WHERE channel_id = ?', channel.body.channel.id);
    return rows.length > 0 && rows.every((r) => r.status === 'delivered') ? rows : undefined;
  });
  assert.deepEqual([...received.keys()].sort(), outbox.map((r) => r.id).sort());
  assert.deepEqual([...received.values()].filter((n) => n !== 1), [], 'no webhook delivered twice');

  // The failed-login limit is shared: 8 wrong passwords spread over both API processes at once, 4 allowed.
  const victimUser = await makeUser(s);
  const tries = await Promise.all(Array.from({ length: 8 }, () =>
    s.call('POST', '/api/auth/login', { body: { email: victimUser.email, password: 'not the password' } })));
  const statuses = tries.map((r) => r.status).sort();
  assert.deepEqual(statuses, [401, 401, 401, 401, 429, 429, 429, 429], JSON.stringify(statuses));

  // The audit chain written by four processes verifies.
  const verify = await sb.run(['audit', 'verify', '--json', ...sb.dirs], { env });
  assert.equal(verify.code, 0, describe(verify));
  assert.equal(JSON.parse(verify.stdout).ok, true, verify.stdout);
});
