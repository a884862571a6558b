// Figures, side by side in one run: the svc worker beside the queues a studio would pick instead,
// every system doing the same per-job work (one keep-alive POST of a chat request to svc
// model-server's /v1/chat/completions, the answer stored durably):
// - svc on SQLite (`svc serve`, synchronous=FULL, the default) and BullMQ on Redis (Debian
//   redis-server with appendonly yes + appendfsync always, and with Redis's defaults: no AOF);
// - svc on PostgreSQL (`svc serve`, role all) and graphile-worker on the same PostgreSQL cluster (the
//   bench's own, fsync and synchronous_commit on: freshPostgresUrl in lib.ts), the answer inserted
//   into a table by the task.
// Each system burns down BENCH_QUEUE_JOBS (20,000) jobs queued before its workers start, at each
// concurrency of BENCH_CONCURRENCY (2,8), in BENCH_ROUNDS (5) alternating rounds, the systems'
// order reversed every other round (so that no system always runs right after the same one, for
// instance after a PostgreSQL burn-down whose checkpoint and autovacuum may still run); then the
// enqueue-to-start latency of BENCH_SPACED (200) jobs enqueued 25 ms apart on an idle worker of
// concurrency 2 (svc: POST /api/jobs, started_at - created_at; peers: the client's add, then the
// processor's first line). Printed: jobs/s per round and the median, the ratio svc/peer per round
// (svc SQLite / BullMQ appendfsync always, svc PostgreSQL / graphile-worker) and p50/p99.
// BENCH_QUEUE_SYSTEMS (svc-sqlite,bullmq-always,bullmq-defaults,svc-postgres,graphile) picks systems.
// The peers run as worker processes of their own (bench/peers/), started before the clock.
import net from 'node:net';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import {
  BENCH_POSTGRES, NO_BENCH_POSTGRES, freshPostgresUrl, goal, num, percentile, printTable, report, ROOT, startChild, startProcess, SVC_BIN, tempDir,
  type Child,
} from './lib.ts';
import { burnDown, chatPrompt, cloneSvcQueue, enqueueToStart, seedSvcQueue, type SvcQueue } from './svc-queue.ts';

const JOBS = Number(process.env.BENCH_QUEUE_JOBS ?? 20_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const CONCURRENCIES = (process.env.BENCH_CONCURRENCY ?? '2,8').split(',').map(Number);
const SPACED = Number(process.env.BENCH_SPACED ?? 200);
const LATENCY_CONCURRENCY = 2;
const GOAL_P99_MS = 10;
const WANTED = new Set((process.env.BENCH_QUEUE_SYSTEMS ?? 'svc-sqlite,bullmq-always,bullmq-defaults,svc-postgres,graphile').split(','));
/** A burn-down that completes nothing for this long has stalled: it stops and reports what is left. */
const STALL_MS = 30_000;

interface Burn { seconds: number; notCompleted: number }
interface System {
  key: string;
  name: string;
  burnDown(concurrency: number): Promise<Burn>;
  latency(): Promise<number[]>;
  /** Lets go of its servers and connections. */
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `remaining` every 50 ms until it is 0, or until it has not moved for STALL_MS; the seconds since `t0` and what is left. */
async function waitDone(t0: number, remaining: () => Promise<number>): Promise<Burn> {
  let last = Infinity;
  let movedAt = performance.now();
  for (;;) {
    const n = await remaining();
    if (n === 0) return { seconds: (performance.now() - t0) / 1000, notCompleted: 0 };
    if (n < last) { last = n; movedAt = performance.now(); }
    if (performance.now() - movedAt > STALL_MS) return { seconds: (performance.now() - t0) / 1000, notCompleted: n };
    await sleep(50);
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

const peerWorker = (script: string, env: Record<string, string>, logFile: string): Promise<Child> =>
  startChild(process.execPath, [path.join(ROOT, 'bench', 'peers', script)], { env, stderrFile: logFile, ready: /^ready$/ });

function svcSystem(key: string, name: string, seeded: SvcQueue, idle: SvcQueue): System {
  return {
    key, name,
    burnDown: async (concurrency) => await burnDown(await cloneSvcQueue(seeded), { workers: 0, concurrency }),
    latency: () => enqueueToStart(idle, { spaced: SPACED, workerProcess: false, concurrency: LATENCY_CONCURRENCY }),
    close: async () => {},
  };
}

/** BullMQ on a redis-server of its own (appendfsync always, or Redis's defaults). */
async function bullmqSystem(key: string, name: string, modelUrl: string, durable: boolean): Promise<System> {
  const { Queue } = await import('bullmq');
  const dir = tempDir('svc-bench-redis-');
  const port = await freePort();
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--daemonize', 'no', '--logfile', ''];
  if (durable) args.push('--appendonly', 'yes', '--appendfsync', 'always', '--save', '');
  const redis = await startChild('redis-server', args, { ready: /Ready to accept connections/, stderrFile: path.join(dir, 'redis.err') });
  const connection = { host: '127.0.0.1', port };
  let runs = 0;
  const logFile = path.join(dir, 'worker.log');
  const worker = (queue: string, concurrency: number) =>
    peerWorker('bullmq-worker.ts', { MODEL_URL: modelUrl, QUEUE: queue, REDIS_PORT: String(port), CONCURRENCY: String(concurrency) }, logFile);
  return {
    key, name,
    async burnDown(concurrency) {
      const queueName = `bench-${++runs}`;
      const queue = new Queue(queueName, { connection });
      try {
        for (let i = 0; i < JOBS; i += 1000) {
          await queue.addBulk(Array.from({ length: Math.min(1000, JOBS - i) }, (_, k) => ({ name: 'chat', data: { prompt: chatPrompt(i + k) } })));
        }
        const w = await worker(queueName, concurrency);
        try {
          const t0 = performance.now();
          w.send('go');
          return await waitDone(t0, async () => {
            const c = await queue.getJobCounts('completed', 'failed');
            return JOBS - c.completed - c.failed;
          });
        } finally {
          await w.stop();
        }
      } finally {
        await queue.obliterate({ force: true });
        await queue.close();
      }
    },
    async latency() {
      const queueName = `bench-latency-${++runs}`;
      const queue = new Queue(queueName, { connection });
      const w = await worker(queueName, LATENCY_CONCURRENCY);
      try {
        w.send('go');
        await sleep(200);
        const enqueued = new Map<string, number>();
        for (let i = 0; i < SPACED; i++) {
          const at = Date.now();
          const job = await queue.add('chat', { prompt: `spaced ${i}` });
          enqueued.set(job.id!, at);
          await sleep(25);
        }
        await waitDone(performance.now(), async () => SPACED - (await queue.getJobCounts('completed')).completed);
        const done = await queue.getJobs(['completed'], 0, SPACED);
        return done.map((j) => (j.returnvalue as { startedAt: number }).startedAt - enqueued.get(j.id!)!);
      } finally {
        await w.stop();
        await queue.obliterate({ force: true });
        await queue.close();
      }
    },
    close: async () => { await redis.stop(); },
  };
}

/** graphile-worker on a database of its own on the bench's PostgreSQL cluster. */
async function graphileSystem(modelUrl: string, url: string): Promise<System> {
  const { runMigrations, makeWorkerUtils } = await import('graphile-worker');
  const pg = (await import('pg')).default;
  await runMigrations({ connectionString: url, logger: quietLogger(await import('graphile-worker')) });
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query('CREATE TABLE bench_results (job_id bigint PRIMARY KEY, started_at_ms bigint NOT NULL, content text NOT NULL)');
  const utils = await makeWorkerUtils({ connectionString: url, logger: quietLogger(await import('graphile-worker')) });
  const logFile = path.join(tempDir('svc-bench-graphile-'), 'worker.log');
  const worker = (concurrency: number) => peerWorker('graphile-worker.ts', { MODEL_URL: modelUrl, PG_URL: url, CONCURRENCY: String(concurrency) }, logFile);
  const left = async () => Number((await client.query('SELECT count(*) AS n FROM graphile_worker._private_jobs')).rows[0].n);
  return {
    key: 'graphile', name: 'graphile-worker 0.18 (PostgreSQL)',
    async burnDown(concurrency) {
      await client.query('TRUNCATE bench_results');
      const w = await worker(concurrency);
      try {
        // One statement adds every job; its commit (and graphile-worker's NOTIFY) starts the clock.
        await utils.addJobs(Array.from({ length: JOBS }, (_, i) => ({ identifier: 'chat', payload: { prompt: chatPrompt(i) } })));
        const t0 = performance.now();
        const burn = await waitDone(t0, left);
        const stored = Number((await client.query('SELECT count(*) AS n FROM bench_results')).rows[0].n);
        return { seconds: burn.seconds, notCompleted: Math.max(burn.notCompleted, JOBS - stored) };
      } finally {
        await w.stop();
      }
    },
    async latency() {
      await client.query('TRUNCATE bench_results');
      const w = await worker(LATENCY_CONCURRENCY);
      try {
        await sleep(200);
        const enqueued = new Map<string, number>();
        for (let i = 0; i < SPACED; i++) {
          const at = Date.now();
          const job = await utils.addJob('chat', { prompt: `spaced ${i}` });
          enqueued.set(String(job.id), at);
          await sleep(25);
        }
        await waitDone(performance.now(), left);
        const rows = (await client.query<{ job_id: string; started_at_ms: string }>('SELECT job_id, started_at_ms FROM bench_results')).rows;
        return rows.map((r) => Number(r.started_at_ms) - enqueued.get(String(r.job_id))!);
      } finally {
        await w.stop();
      }
    },
    close: async () => {
      await client.end();
      await utils.release();
    },
  };
}

/** graphile-worker's logger, errors only (its info lines would fill the bench's output). */
function quietLogger(gw: typeof import('graphile-worker')) {
  return new gw.Logger(() => (level: string, message: string) => { if (level === 'error') process.stderr.write(`graphile-worker: ${message}\n`); });
}

const model = await startProcess([SVC_BIN, 'model-server', '--port', '0']);
const systems: System[] = [];
try {
  const notes: string[] = [];
  if (WANTED.has('svc-sqlite')) {
    systems.push(svcSystem('svc-sqlite', 'svc (SQLite, synchronous=FULL)', await seedSvcQueue(model.url, JOBS), await seedSvcQueue(model.url, 0)));
  }
  const redis = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
  if (redis.status !== 0) notes.push('BullMQ: skipped, no redis-server (apt-get install redis-server)');
  else {
    if (WANTED.has('bullmq-always')) systems.push(await bullmqSystem('bullmq-always', 'BullMQ 6.7 (Redis, appendfsync always)', model.url, true));
    if (WANTED.has('bullmq-defaults')) systems.push(await bullmqSystem('bullmq-defaults', 'BullMQ 6.7 (Redis defaults, no AOF)', model.url, false));
  }
  if (WANTED.has('svc-postgres') || WANTED.has('graphile')) {
    const url = await freshPostgresUrl();
    if (!url) notes.push(NO_BENCH_POSTGRES);
    else {
      notes.push(BENCH_POSTGRES);
      if (WANTED.has('svc-postgres')) {
        const env = (u: string) => ({ SVC_DATABASE: 'postgres', SVC_POSTGRES_URL: u });
        const seeded = await seedSvcQueue(model.url, JOBS, env(url));
        systems.push(svcSystem('svc-postgres', 'svc (PostgreSQL)', seeded, await seedSvcQueue(model.url, 0, env((await freshPostgresUrl())!))));
      }
      if (WANTED.has('graphile')) systems.push(await graphileSystem(model.url, (await freshPostgresUrl())!));
    }
  }

  // rates[system][concurrency] = jobs/s of each round
  const rates = new Map(systems.map((s) => [s.key, new Map(CONCURRENCIES.map((c) => [c, [] as number[]]))]));
  let incomplete = 0;
  for (let round = 1; round <= ROUNDS; round++) {
    for (const c of CONCURRENCIES) {
      for (const s of round % 2 === 1 ? systems : [...systems].reverse()) {
        const r = await s.burnDown(c);
        incomplete += r.notCompleted;
        if (r.notCompleted) process.stderr.write(`${s.name} C=${c} round ${round}: ${r.notCompleted} jobs not completed\n`);
        rates.get(s.key)!.get(c)!.push(JOBS / r.seconds);
        process.stdout.write(`  round ${round}, C=${c}: ${s.name} ${num(JOBS / r.seconds)} jobs/s\n`);
      }
    }
  }
  const median = (xs: number[]) => percentile(xs, 50);
  const rows: string[][] = [['system', ...CONCURRENCIES.flatMap((c) => [`C=${c} jobs/s (median)`, `C=${c} rounds`])]];
  for (const s of systems) {
    rows.push([s.name, ...CONCURRENCIES.flatMap((c) => {
      const xs = rates.get(s.key)!.get(c)!;
      return [num(median(xs)), xs.map((x) => num(x)).join(' / ')];
    })]);
    for (const c of CONCURRENCIES) report({ figure: `${s.name} C=${c} jobs/s`, value: median(rates.get(s.key)!.get(c)!), unit: 'jobs/s', better: 'higher' });
  }
  printTable(`Queues side by side: ${num(JOBS)} chat jobs burned down, ${ROUNDS} rounds, the order reversed every other round`, rows, [
    'each job: one POST /v1/chat/completions to svc model-server over keep-alive HTTP, the answer stored durably (svc: the job row; BullMQ: the return value; graphile-worker: a row the task inserts)',
    ...notes,
    ...(incomplete ? [`WARNING: ${incomplete} jobs were not completed in some burn-down (see above)`] : []),
  ]);

  const pairs: Array<[string, string]> = [['svc-sqlite', 'bullmq-always'], ['svc-postgres', 'graphile']];
  const ratioRows: string[][] = [['svc / peer', ...CONCURRENCIES.flatMap((c) => [`C=${c} per round`, `C=${c} median`, 'goal >= 1.0'])]];
  for (const [a, b] of pairs) {
    const ra = rates.get(a);
    const rb = rates.get(b);
    if (!ra || !rb) continue;
    ratioRows.push([`${a} / ${b}`, ...CONCURRENCIES.flatMap((c) => {
      const per = ra.get(c)!.map((x, i) => x / rb.get(c)![i]);
      const m = median(ra.get(c)!) / median(rb.get(c)!);
      report({ figure: `${a} / ${b} C=${c}`, value: m, unit: '×', better: 'higher', goal: 1 });
      return [per.map((x) => num(x, 2)).join(' / '), num(m, 2) + '×', goal(m >= 1)];
    })]);
  }
  printTable('Ratios (median of the rounds against median of the rounds; per round, each against the same round)', ratioRows);

  const latRows: string[][] = [['system', 'jobs', 'p50 ms', 'p99 ms', 'max ms', `goal p99 <= ${GOAL_P99_MS} ms`]];
  for (const s of systems) {
    const lat = await s.latency();
    const p99 = percentile(lat, 99);
    latRows.push([s.name, String(lat.length), num(percentile(lat, 50), 1), num(p99, 1), num(Math.max(...lat), 1), s.key.startsWith('svc') ? goal(p99 <= GOAL_P99_MS) : '']);
    if (s.key.startsWith('svc')) report({ figure: `${s.name} enqueue-to-start p99`, value: p99, unit: 'ms', better: 'lower', goal: GOAL_P99_MS });
  }
  printTable(`Enqueue-to-start latency (${SPACED} jobs 25 ms apart, idle worker of concurrency ${LATENCY_CONCURRENCY})`, latRows, [
    'svc: POST /api/jobs, started_at - created_at (millisecond timestamps); peers: Date.now() before the client\'s add to Date.now() on the processor\'s first line',
  ]);
  if (incomplete) process.exitCode = 1;
} finally {
  for (const s of systems) await s.close();
  await model.stop();
}
