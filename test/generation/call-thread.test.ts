// SQLite's worker makes its calls on a call thread (src/generation/worker/calls.ts): what the worker
// thread says in one turn crosses as one list, in order. A claim's calls are each answered; an abort
// said in the same turn as its call stops that call before its request leaves; a call that cannot
// cross (a value that cannot be cloned) fails alone, the call beside it is answered.
import test from 'node:test';
import assert from 'node:assert/strict';
import { createContext } from '../../src/directory/context.ts';
import { openDatabase } from '../../src/db/open.ts';
import { createLogger } from '../../src/kernel/log.ts';
import { claimJobs } from '../../src/generation/jobs/claim.ts';
import type { LeasedJob } from '../../src/generation/jobs/runner.ts';
import { startCallThread } from '../../src/generation/worker/calls.ts';
import { workerActor } from '../../src/generation/worker/host.ts';
import { testDatabase } from '../helpers/server.ts';
import { createJob, jobWorld } from '../helpers/jobs.ts';

test('the call thread takes a turn\'s messages in order: calls answered, an abort of the same turn sends nothing, an uncloneable call fails alone', {
  skip: testDatabase() === 'postgres' && 'the call thread is SQLite\'s (on PostgreSQL the calls run in the worker thread)',
}, async (t) => {
  const { s, m, token, id } = await jobWorld(t); // an API server: its worker does not run here
  for (let i = 0; i < 5; i++) await createJob(s, token, { kind: 'chat', connectorId: id, prompt: `line ${i}` });
  const db = await openDatabase(s.config);
  t.after(() => db.close());
  const config = { ...s.config, workerId: 'calls' };
  const log = createLogger('silent');
  const jobs: LeasedJob[] = await db.tx(() => claimJobs(db, 'calls', new Date().toISOString(), 5));
  assert.equal(jobs.length, 5);
  const thread = await startCallThread(config, log);
  t.after(() => thread.stop());
  const ctx = createContext({ db, config, log, actor: workerActor('calls'), requestId: 'calls-test' });
  const generationCalls = async () => ((await (await fetch(`${m.url}/control`)).json()) as { calls: { generation: number } }).calls.generation;
  const call = (job: LeasedJob, signal = new AbortController().signal) => thread.producer(ctx, job, signal, async () => {});

  // One turn: three calls, then the third is aborted.
  const before = await generationCalls();
  const stopped = new AbortController();
  const turn = Promise.allSettled([call(jobs[0]), call(jobs[1]), call(jobs[2], stopped.signal)]);
  stopped.abort(new Error('cancelled'));
  const [first, second, third] = await turn;
  const text = (r: PromiseSettledResult<{ result: { output: Record<string, unknown> } }>) => {
    assert.equal(r.status, 'fulfilled');
    return (r as PromiseFulfilledResult<{ result: { output: Record<string, unknown> } }>).value.result.output.text;
  };
  assert.match(String(text(first)), /: line 0$/); // each call answered with its own job's prompt
  assert.match(String(text(second)), /: line 1$/);
  assert.equal(third.status, 'rejected');
  assert.equal(await generationCalls() - before, 2, 'the aborted call sent no request');

  // One turn: a call that cannot be cloned, and one that can.
  const uncloneable = { ...jobs[3], call: { ...jobs[3].call!, hook: () => null } } as LeasedJob;
  const [failed, fine] = await Promise.allSettled([call(uncloneable), call(jobs[4])]);
  assert.equal(failed.status, 'rejected');
  assert.equal((failed.reason as Error).name, 'DataCloneError');
  assert.match(String(text(fine)), /: line 4$/);
  assert.equal(await generationCalls() - before, 3);
});
