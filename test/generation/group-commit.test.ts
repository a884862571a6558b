// SQLite's group commit posts the calls of the jobs it claims before its COMMIT, so that they run
// while the fsync does. A commit that then fails (a disk error, injected here into a real SQLite
// connection on the test's database) must abort those calls and write nothing for them: the jobs
// are claimed again and complete once, and no job ever runs twice at once. On PostgreSQL the chat
// completions that end while one statement of completions is being written share the next.
import test from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import type { DatabaseSync } from 'node:sqlite';
import { SqliteDb, type Param } from '../../src/db/db.ts';
import { createContext } from '../../src/directory/context.ts';
import { openDatabase } from '../../src/db/open.ts';
import { produceHere, type Producer } from '../../src/generation/jobs/runner.ts';
import { startWorkerLoop } from '../../src/generation/worker/loop.ts';
import { workerActor } from '../../src/generation/worker/host.ts';
import { testDatabase } from '../helpers/server.ts';
import { createJob, jobWorld, sleep } from '../helpers/jobs.ts';

/** A SQLite connection whose next COMMIT fails once armed (rolled back, as SQLite does on a disk error). */
class FailingCommit extends SqliteDb {
  armed = false;
  /** True from BEGIN to the end of a transaction. */
  open = false;
  readonly events: string[] = [];
  protected override begin(): Promise<DatabaseSync> | DatabaseSync {
    const begun = super.begin();
    const opened = (conn: DatabaseSync) => { this.open = true; return conn; };
    return begun instanceof Promise ? begun.then(opened) : opened(begun);
  }
  protected override end(): void {
    this.open = false;
    super.end();
  }
  protected override commit(conn: DatabaseSync): void {
    if (!this.armed) return super.commit(conn);
    this.armed = false;
    conn.exec('ROLLBACK');
    this.events.push('commit failed');
    throw new Error('disk I/O error (injected)');
  }
}

test('a group commit that fails after its claim aborts the calls it posted; those jobs run again and complete once', {
  skip: testDatabase() === 'postgres' && 'SQLite group commit (PostgreSQL settles one statement at a time)',
}, async (t) => {
  const { s, token, id } = await jobWorld(t); // an API server: its worker does not run here
  const jobs = [];
  for (let i = 0; i < 2; i++) jobs.push(await createJob(s, token, { kind: 'chat', connectorId: id, prompt: `line ${i}` }));

  const db = new FailingCommit(path.join(s.config.dataDir, 'svc.db'));
  const config = { ...s.config, workerId: 'grouped', workerConcurrency: 1, workerPollMs: 50, workerLeaseMs: 600, workerEnabled: true };
  const running = new Set<string>();
  const calls: Array<{ jobId: string; aborted: boolean }> = [];
  let overlapped = false;
  const producer: Producer = async (base, job, signal, onRef) => {
    overlapped ||= running.has(job.id);
    running.add(job.id);
    const call = { jobId: job.id, aborted: false };
    calls.push(call);
    db.events.push(`call ${job.id}${db.open ? ' inside a transaction' : ''}`);
    // The second job's first call is posted by the commit that settles the first job, which then fails.
    if (job.id !== calls[0].jobId && calls.filter((c) => c.jobId === job.id).length === 1) db.armed = true;
    try {
      return await produceHere(base, job, signal, onRef);
    } finally {
      call.aborted = signal.aborted;
      running.delete(job.id);
    }
  };
  const loop = await startWorkerLoop(createContext({ db, config, log: s.log, actor: workerActor(config.workerId) }), producer);
  t.after(async () => { await loop.stop(1000); db.close(); });
  loop.wake();

  const statuses = async () => (await s.db.all<{ status: string }>('SELECT status FROM generation_jobs ORDER BY created_at')).map((r) => r.status);
  const until = Date.now() + 20_000;
  while ((await statuses()).some((st) => st !== 'completed')) {
    if (Date.now() > until) assert.fail(`jobs not completed: ${JSON.stringify(await statuses())}; ${JSON.stringify(calls)}`);
    await sleep(50);
  }

  const [first, second] = [calls[0].jobId, calls.find((c) => c.jobId !== calls[0].jobId)!.jobId];
  assert.deepEqual(db.events.slice(0, 3), [`call ${first}`, `call ${second} inside a transaction`, 'commit failed'], 'the claimed call was posted before the commit');
  assert.deepEqual(calls.filter((c) => c.jobId === second).map((c) => c.aborted), [true, false], 'its call aborted, then run once more');
  assert.equal(overlapped, false, 'no job ran twice at once');
  for (const job of jobs) {
    const attempts = await s.db.all<{ outcome: string }>('SELECT outcome FROM job_attempts WHERE job_id = ? ORDER BY attempt', job.id);
    assert.equal(attempts.filter((a) => a.outcome === 'completed').length, 1, `${job.id} completed once: ${JSON.stringify(attempts)}`);
  }
  const secondAttempts = await s.db.all<{ attempt: number }>('SELECT attempt FROM job_attempts WHERE job_id = ?', second);
  assert.deepEqual(secondAttempts.map((a) => a.attempt), [1], 'the rolled-back claim took no attempt');
});

test('postgres: chat completions that end while one statement of completions is being written share the next, each job completed once', {
  skip: testDatabase() !== 'postgres' && 'PostgreSQL only (SQLite commits the settles of one turn together, above)',
}, async (t) => {
  const { s, token, id } = await jobWorld(t); // an API server: its worker does not run here
  const JOBS = 4;
  for (let i = 0; i < JOBS; i++) await createJob(s, token, { kind: 'chat', connectorId: id, prompt: `line ${i}` });

  const db = await openDatabase(s.config, { claims: true });
  // The completions of each statement of completions, read from its parameter (a spy: the statement runs unchanged).
  const statements: string[][] = [];
  const all = db.all.bind(db);
  db.all = (sql: string, ...params: Param[]) => {
    if (sql.trimStart().startsWith('WITH input AS')) statements.push((JSON.parse(params[0] as string) as Array<{ id: string }>).map((c) => c.id));
    return all(sql, ...params);
  };
  // The calls are held until all are in, then end together: the first completion is written at once,
  // the others while it is.
  const held: Array<() => void> = [];
  const gate = () => new Promise<void>((resolve) => {
    held.push(resolve);
    if (held.length === JOBS) for (const go of held) go();
  });
  const producer: Producer = async (base, job, signal, onRef) => {
    const produced = await produceHere(base, job, signal, onRef);
    await gate();
    return produced;
  };
  const config = { ...s.config, workerId: 'batched', workerConcurrency: JOBS, workerPollMs: 50, workerEnabled: true };
  const loop = await startWorkerLoop(createContext({ db, config, log: s.log, actor: workerActor(config.workerId) }), producer);
  t.after(async () => { await loop.stop(1000); await db.close(); });
  loop.wake();

  const until = Date.now() + 20_000;
  while ((await s.db.get<{ n: number }>("SELECT count(*) AS n FROM generation_jobs WHERE status = 'completed'"))!.n < JOBS) {
    if (Date.now() > until) assert.fail(`jobs not completed; statements: ${JSON.stringify(statements)}`);
    await sleep(50);
  }
  assert.deepEqual(statements.map((c) => c.length), [1, JOBS - 1], 'one completion alone, then the three that ended while it was written');
  const attempts = await s.db.all<{ job_id: string; attempt: number; outcome: string }>('SELECT job_id, attempt, outcome FROM job_attempts ORDER BY job_id');
  assert.deepEqual(attempts.map((a) => [a.attempt, a.outcome]), Array.from({ length: JOBS }, () => [1, 'completed']));
  assert.deepEqual(attempts.map((a) => a.job_id).sort(), statements.flat().sort(), 'each job completed once, by the statement that carried it');
  const docs = await s.db.all<{ status: string }>("SELECT status FROM search_documents WHERE type = 'job'");
  assert.deepEqual(docs.map((d) => d.status), Array.from({ length: JOBS }, () => 'completed'));
});
