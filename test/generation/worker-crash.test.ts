// A crash never loses a job nor runs it twice: `svc serve` is killed with SIGKILL while a job runs
// (the model server takes 5 s), restarted with a 2 s lease, and the job is reclaimed and completes
// with exactly one output file and one result.
import test, { type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Sandbox } from '../helpers/cli.ts';
import { startTestServer } from '../helpers/server.ts';
import { openDataFolderDb } from '../helpers/postgres.ts';
import { member } from '../helpers/factories.ts';
import { connector, createJob, sleep, startModel } from '../helpers/jobs.ts';

async function until<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/**
 * A sandbox whose database holds `count` queued jobs of `kind` on a ready local connector, set up
 * through HTTP on an in-process server (its worker paused) that is closed again: `svc serve` runs
 * them. `row` reads that database (read-only) from this process.
 */
async function stagedJobs(t: TestContext, kind: string, count: number) {
  const sb = new Sandbox(t);
  const m = await startModel(t);
  const setup = await startTestServer(t, { SVC_WORKER_ENABLED: '0' }, { dataDir: sb.data, storageDir: sb.storage });
  const { token } = await member(setup, 'org_owner');
  const id = await connector(setup, token, m.url);
  const jobs: Array<{ id: string }> = [];
  for (let i = 0; i < count; i++) jobs.push(await createJob(setup, token, { kind, connectorId: id, prompt: `line ${i}` }));
  await setup.close();
  // The database `svc serve` uses, read from this process: the SQLite file, or the folder's PostgreSQL database.
  const db = await openDataFolderDb(t, sb.data);
  const row = async <T>(sql: string, ...params: string[]): Promise<T> => (await db.get<T>(sql, ...params))!;
  return { sb, m, jobs, db, row };
}

/** One queued job of `kind` (see stagedJobs). */
async function stagedJob(t: TestContext, kind: string) {
  const { jobs: [job], ...rest } = await stagedJobs(t, kind, 1);
  return { job, ...rest };
}

test('kill -9 during a running job: after a restart with a 2 s lease the job is reclaimed and completes once', async (t) => {
  const { sb, m, job, db, row } = await stagedJob(t, 'image');

  await m.control({ latencyMs: 5000 });
  const first = await sb.serve([...sb.dirs, '--port', '0'], { SVC_WORKER_POLL_MS: '100', SVC_WORKER_ID: 'first' });
  await until('the job to run', async () => (await row<{ status: string }>('SELECT status FROM generation_jobs WHERE id = ?', job.id)).status === 'running');
  first.child.kill('SIGKILL');
  const killed = await first.done;
  assert.equal(killed.signal, 'SIGKILL');
  const stranded = await row<{ status: string; leased_by: string; attempt: number }>('SELECT * FROM generation_jobs WHERE id = ?', job.id);
  assert.deepEqual([stranded.status, stranded.leased_by, stranded.attempt], ['running', 'first', 1]);

  await m.control({ latencyMs: 300 });
  const second = await sb.serve([...sb.dirs, '--port', '0'], { SVC_WORKER_POLL_MS: '100', SVC_WORKER_LEASE_MS: '2000', SVC_WORKER_ID: 'second' });
  const done = await until('the job to complete', async () => {
    const r = await row<{ status: string; attempt: number; output: string | null; leased_by: string | null }>('SELECT * FROM generation_jobs WHERE id = ?', job.id);
    return r.status === 'completed' || r.status === 'failed' ? r : undefined;
  });
  assert.equal(done.status, 'completed');
  assert.equal(done.attempt, 2);
  const rows = await db.all<{ attempt: number; runner: string; outcome: string }>('SELECT attempt, runner, outcome FROM job_attempts WHERE job_id = ? ORDER BY attempt', job.id);
  const reclaimed = await row<{ n: number }>("SELECT count(*) AS n FROM audit_log WHERE action = 'job.attempt_failed' AND target_id = ?", job.id);
  assert.deepEqual(rows.map((r) => [r.attempt, r.runner, r.outcome]), [[1, 'first', 'reclaimed'], [2, 'second', 'completed']]);
  assert.equal(reclaimed.n, 1, 'the reclaimed attempt is audited');
  const files = JSON.parse(done.output!).files as Array<{ path: string }>;
  assert.equal(files.length, 1, 'one result');
  assert.deepEqual(fs.readdirSync(path.join(sb.storage, 'outputs', job.id)), [path.basename(files[0].path)], 'exactly one output file');
  second.child.kill('SIGTERM');
  assert.equal((await second.done).code, 0);
});

test('SIGTERM during a running job: the service exits 0 within 10 s and the job is back in the queue, its attempt forgotten', async (t) => {
  const { sb, m, job, row } = await stagedJob(t, 'chat');
  await m.control({ hang: true });
  const server = await sb.serve([...sb.dirs, '--port', '0'], { SVC_WORKER_POLL_MS: '100' });
  await until('the job to run', async () => (await row<{ status: string }>('SELECT status FROM generation_jobs WHERE id = ?', job.id)).status === 'running');
  const started = Date.now();
  server.child.kill('SIGTERM');
  const r = await server.done;
  assert.equal(r.code, 0, `signal ${r.signal}; stderr: ${r.stderr}`);
  assert.ok(Date.now() - started < 10_000, `stopped in ${Date.now() - started} ms`);
  const after = await row<{ status: string; attempt: number; leased_by: string | null }>('SELECT * FROM generation_jobs WHERE id = ?', job.id);
  assert.deepEqual([after.status, after.attempt, after.leased_by], ['queued', 0, null]);
  assert.equal((await row<{ n: number }>('SELECT count(*) AS n FROM job_attempts WHERE job_id = ?', job.id)).n, 0);
});

test('kill -9 while completions are committed in groups: every completion seen before the kill is kept, none runs or completes twice', async (t) => {
  const total = 240;
  const { sb, m, jobs, db } = await stagedJobs(t, 'chat', total);
  const completed = async () => new Set((await db.all<{ id: string }>("SELECT id FROM generation_jobs WHERE status = 'completed'")).map((r) => r.id));
  // Eight slots and instant answers: results come back together and are settled several to a commit.
  // Its PostgreSQL connections are named (PGAPPNAME, read by the pg driver) so that the test can wait for them below.
  const first = await sb.serve([...sb.dirs, '--port', '0'], { SVC_WORKER_CONCURRENCY: '8', SVC_WORKER_POLL_MS: '100', SVC_WORKER_ID: 'first', PGAPPNAME: 'svc-crash-first' });
  // What a reader of the database saw completed: acknowledged. Kill while the rest is still flowing.
  const seen = await until('completions to flow', async () => { const c = await completed(); return c.size >= 60 ? c : undefined; });
  first.child.kill('SIGKILL');
  assert.equal((await first.done).signal, 'SIGKILL');
  // On PostgreSQL a statement the killed process had already sent still runs to its end, and commits,
  // in its server backend, which exits only then: the database is final once those backends are gone.
  if (db.engine === 'postgres') {
    await until('the killed process\'s server backends to end', async () => Number((await db.get<{ n: number }>(
      "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'svc-crash-first'"))!.n) === 0);
  }
  const atKill = await completed();
  assert.ok(atKill.size < total, 'killed before the queue was empty');
  for (const id of seen) assert.ok(atKill.has(id), `${id}, seen completed, is still completed after the kill`);
  const callsBefore = m.faults.calls().generation;

  const second = await sb.serve([...sb.dirs, '--port', '0'], { SVC_WORKER_CONCURRENCY: '8', SVC_WORKER_POLL_MS: '100', SVC_WORKER_LEASE_MS: '2000', SVC_WORKER_ID: 'second' });
  await until('every job to complete', async () => (await completed()).size === total, 60_000);
  second.child.kill('SIGTERM');
  assert.equal((await second.done).code, 0);

  // Each job completed exactly once: one completed attempt, its result written once.
  const attempts = await db.all<{ job_id: string; outcome: string; runner: string; n: number }>(
    'SELECT job_id, outcome, runner, count(*) AS n FROM job_attempts GROUP BY job_id, outcome, runner');
  const completions = attempts.filter((a) => a.outcome === 'completed');
  assert.equal(completions.length, total);
  assert.ok(completions.every((a) => Number(a.n) === 1), 'no job completed twice');
  for (const a of completions) assert.equal(a.runner, atKill.has(a.job_id) ? 'first' : 'second', `${a.job_id} completed by the runner that was running when it settled`);
  // Only the jobs not completed at the kill were called again: one call each (those the kill
  // interrupted after their reclaim, the others as they were claimed).
  assert.equal(m.faults.calls().generation - callsBefore, total - atKill.size, 'no completed job was called again');
  const reclaimed = attempts.filter((a) => a.outcome === 'reclaimed');
  assert.ok(reclaimed.every((a) => a.runner === 'first' && !atKill.has(a.job_id) && Number(a.n) === 1), 'only the interrupted attempts were reclaimed');
  assert.equal(jobs.length, total);
});

/** Every regular file under the storage folders that storage reclaim scans, relative to the root. */
function storedFiles(storage: string): string[] {
  return ['outputs', 'frames', 'tmp', 'cache'].flatMap((folder) => {
    const dir = path.join(storage, folder);
    if (!fs.existsSync(dir)) return [];
    return (fs.readdirSync(dir, { recursive: true }) as string[])
      .map((f) => `${folder}/${f}`)
      .filter((f) => fs.statSync(path.join(storage, f)).isFile());
  }).sort();
}

test('kill -9 between an output file written and its registration: no half-registered artifact, the retry registers once under the same names and leaves no stray file', async (t) => {
  const { sb, job, db, row } = await stagedJob(t, 'video');
  const output = path.join(sb.storage, 'outputs', job.id, 'video-1.mp4');
  const first = await sb.serve([...sb.dirs, '--port', '0'], { SVC_WORKER_POLL_MS: '100', SVC_WORKER_ID: 'first' });
  // The file is renamed into place before ffprobe and the frame decoding start: kill as soon as it is there.
  const end = Date.now() + 20_000;
  while (!fs.existsSync(output)) {
    assert.ok(Date.now() < end, 'the output file was never written');
    await sleep(2);
  }
  first.child.kill('SIGKILL');
  assert.equal((await first.done).signal, 'SIGKILL');
  const stranded = await row<{ status: string; output: string | null }>('SELECT * FROM generation_jobs WHERE id = ?', job.id);
  assert.deepEqual([stranded.status, stranded.output], ['running', null]);
  assert.equal((await row<{ n: number }>('SELECT count(*) AS n FROM media_artifacts')).n, 0, 'no artifact row without a completed job');
  const left = storedFiles(sb.storage);
  assert.ok(left.includes(`outputs/${job.id}/video-1.mp4`), left.join(', '));
  // While the job may still run (its lease will be reclaimed), its folders are kept; every other file is a candidate.
  const preview = await sb.run(['storage', 'preview', '--older-than-days', '0', '--json', ...sb.dirs]);
  assert.equal(preview.code, 0, preview.stderr);
  const found = (JSON.parse(preview.stdout).candidates as Array<{ path: string }>).map((c) => c.path).sort();
  assert.deepEqual(found.filter((f) => f.includes(job.id)), [], 'the running job\'s files are protected');
  assert.deepEqual(left.filter((f) => !f.includes(job.id) && !found.includes(f)), []);

  const second = await sb.serve([...sb.dirs, '--port', '0'], { SVC_WORKER_POLL_MS: '100', SVC_WORKER_LEASE_MS: '2000', SVC_WORKER_ID: 'second' });
  const done = await until('the job to complete', async () => {
    const r = await row<{ status: string; output: string | null }>('SELECT * FROM generation_jobs WHERE id = ?', job.id);
    return r.status === 'completed' || r.status === 'failed' ? r : undefined;
  });
  assert.equal(done.status, 'completed');
  const artifacts = await db.all<{ id: string; storage_path: string; first_frame_path: string; last_frame_path: string }>('SELECT * FROM media_artifacts WHERE job_id = ?', job.id);
  assert.equal(artifacts.length, 1, 'registered once');
  assert.deepEqual(JSON.parse(done.output!).artifactIds, [artifacts[0].id]);
  assert.deepEqual([artifacts[0].storage_path, artifacts[0].first_frame_path, artifacts[0].last_frame_path],
    [`outputs/${job.id}/video-1.mp4`, `frames/${job.id}/video-1-first.png`, `frames/${job.id}/video-1-last.png`]);
  // The retry wrote the same names again: nothing of this job is left unreferenced.
  const after = await sb.run(['storage', 'preview', '--older-than-days', '0', '--json', ...sb.dirs]);
  const stray = (JSON.parse(after.stdout).candidates as Array<{ path: string }>).map((c) => c.path);
  assert.deepEqual(stray.filter((p) => p.includes(job.id)), []);
  assert.deepEqual(storedFiles(sb.storage).filter((f) => f.includes(job.id)).sort(),
    [artifacts[0].first_frame_path, artifacts[0].last_frame_path, artifacts[0].storage_path].sort());
  second.child.kill('SIGTERM');
  assert.equal((await second.done).code, 0);
});
