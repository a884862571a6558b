// Figures, side by side in one run: the worker's burn-down of chat jobs (each a real POST to svc
// model-server, the result committed) by the single SQLite node (`svc serve`, role all) against 1, 2
// and 4 worker processes (`svc serve --role worker`) on one PostgreSQL database (on the bench's own
// durable cluster, freshPostgresUrl in lib.ts), and the enqueue-to-start latency across processes
// (POST /api/jobs to an API process, the job started by a worker process woken by NOTIFY; on SQLite
// one process). The svc side is bench/svc-queue.ts.
// BENCH_ENGINE_JOBS (5000), BENCH_WORKERS (1,2,4) and BENCH_SPACED (100) change the run. Each
// worker process runs SVC_WORKER_CONCURRENCY=2.
import { BENCH_POSTGRES, NO_BENCH_POSTGRES, freshPostgresUrl, SVC_BIN, goal, num, percentile, printTable, report, startProcess } from './lib.ts';
import { burnDown, cloneSvcQueue, enqueueToStart, seedSvcQueue } from './svc-queue.ts';

const JOBS = Number(process.env.BENCH_ENGINE_JOBS ?? 5000);
const WORKERS = (process.env.BENCH_WORKERS ?? '1,2,4').split(',').map(Number);
const SPACED = Number(process.env.BENCH_SPACED ?? 100);
const CONCURRENCY = 2;
const GOAL_P99_MS = 10;

const model = await startProcess([SVC_BIN, 'model-server', '--port', '0']);

try {
  const rows: string[][] = [['engine', 'worker processes', 'jobs', 'seconds', 'jobs/s', 'not completed']];
  const sqlite = await burnDown(await seedSvcQueue(model.url, JOBS), { workers: 0, concurrency: CONCURRENCY });
  rows.push(['SQLite (one node, role all)', '1 (thread)', num(JOBS), num(sqlite.seconds, 2), num(JOBS / sqlite.seconds), String(sqlite.notCompleted)]);
  report({ figure: 'SQLite burn-down jobs/s', value: JOBS / sqlite.seconds, unit: 'jobs/s', better: 'higher' });
  const latency: string[][] = [['engine', 'jobs', 'p50 ms', 'p99 ms', 'max ms', `goal p99 <= ${GOAL_P99_MS} ms`]];
  const lat = await enqueueToStart(await seedSvcQueue(model.url, 0), { spaced: SPACED, workerProcess: false, concurrency: CONCURRENCY });
  latency.push(['SQLite (one process)', String(SPACED), num(percentile(lat, 50), 1), num(percentile(lat, 99), 1), num(Math.max(...lat), 1), goal(percentile(lat, 99) <= GOAL_P99_MS)]);
  report({ figure: 'SQLite enqueue-to-start p99', value: percentile(lat, 99), unit: 'ms', better: 'lower', goal: GOAL_P99_MS });
  const url = await freshPostgresUrl();
  if (url) {
    // Seeded once; each run gets a copy (its database made from this one as a template).
    const seeded = await seedSvcQueue(model.url, JOBS, { SVC_DATABASE: 'postgres', SVC_POSTGRES_URL: url });
    for (const n of WORKERS) {
      const r = await burnDown(await cloneSvcQueue(seeded), { workers: n, concurrency: CONCURRENCY });
      rows.push(['PostgreSQL (api + workers)', String(n), num(JOBS), num(r.seconds, 2), num(JOBS / r.seconds), String(r.notCompleted)]);
      report({ figure: `PostgreSQL burn-down jobs/s, ${n} worker process${n === 1 ? '' : 'es'}`, value: JOBS / r.seconds, unit: 'jobs/s', better: 'higher' });
    }
    const idle = await seedSvcQueue(model.url, 0, { SVC_DATABASE: 'postgres', SVC_POSTGRES_URL: (await freshPostgresUrl())! });
    const l = await enqueueToStart(idle, { spaced: SPACED, workerProcess: true, concurrency: CONCURRENCY });
    latency.push(['PostgreSQL (api process -> worker process)', String(SPACED), num(percentile(l, 50), 1), num(percentile(l, 99), 1), num(Math.max(...l), 1), goal(percentile(l, 99) <= GOAL_P99_MS)]);
    report({ figure: 'PostgreSQL enqueue-to-start p99', value: percentile(l, 99), unit: 'ms', better: 'lower', goal: GOAL_P99_MS });
  }
  printTable('Worker burn-down: chat jobs against svc model-server, by engine and worker processes', rows, [
    `each worker process: concurrency ${CONCURRENCY}; SQLite synchronous=FULL`,
    url ? BENCH_POSTGRES : NO_BENCH_POSTGRES,
  ]);
  printTable('Enqueue-to-start latency (POST /api/jobs 25 ms apart, started_at - created_at)', latency, ['timestamps have millisecond resolution']);
} finally {
  await model.stop();
}
