// A BullMQ worker process for bench/queues.bench.ts: concurrency CONCURRENCY on queue QUEUE of the
// Redis at REDIS_PORT; each job is one chat call to MODEL_URL (chat.ts), its answer the job's
// return value (stored in Redis by BullMQ as the job completes). The worker runs from the "go" line.
import { Worker } from 'bullmq';
import { chat, env, peerMain } from './chat.ts';

peerMain(async () => {
  const modelUrl = env('MODEL_URL');
  const worker = new Worker(env('QUEUE'), async (job) => {
    const startedAt = Date.now();
    const answer = await chat(modelUrl, (job.data as { prompt: string }).prompt);
    return { startedAt, content: answer.choices[0].message.content };
  }, {
    connection: { host: '127.0.0.1', port: Number(env('REDIS_PORT')) },
    concurrency: Number(env('CONCURRENCY')), autorun: false,
  });
  worker.on('failed', (job, err) => process.stderr.write(`job ${job?.id} failed: ${err.message}\n`));
  await worker.waitUntilReady();
  return { go: () => { void worker.run(); }, stop: () => worker.close() };
});
