// A graphile-worker process for bench/queues.bench.ts: concurrency CONCURRENCY on the database
// PG_URL (migrated by the bench); each job (task "chat") is one chat call to MODEL_URL (chat.ts),
// its answer inserted into bench_results before graphile-worker completes the job. The runner starts
// at once and waits for jobs (LISTEN); graphile-worker's own defaults otherwise.
import { run } from 'graphile-worker';
import { chat, env, peerMain } from './chat.ts';

peerMain(async () => {
  const modelUrl = env('MODEL_URL');
  const runner = await run({
    connectionString: env('PG_URL'), concurrency: Number(env('CONCURRENCY')), noHandleSignals: true,
    taskList: {
      chat: async (payload, helpers) => {
        const startedAt = Date.now();
        const answer = await chat(modelUrl, (payload as { prompt: string }).prompt);
        await helpers.query('INSERT INTO bench_results (job_id, started_at_ms, content) VALUES ($1, $2, $3)',
          [helpers.job.id, startedAt, answer.choices[0].message.content]);
      },
    },
  });
  // Already listening for jobs: the bench adds them all in one statement, and that commit is its t0.
  return { go: () => {}, stop: () => runner.stop() };
});
