// Figure: throughput and p99 latency of an authenticated GET /api/context on svc, against a bare
// node:http hello world on the same Node, both loaded by autocannon in this process while the
// server runs in its own child process. Goal: svc at least 40% of the raw req/s, 0 non-2xx.
import fs from 'node:fs';
import path from 'node:path';
import autocannon, { type Result } from 'autocannon';
import { goal, login, num, printTable, report, setupSvc, startProcess, startSvc, svcCli, type Running } from './lib.ts';

const CONNECTIONS = 50;
const PIPELINING = 1;
const DURATION_S = Number(process.env.BENCH_DURATION ?? 12);
const WARMUP_S = 2;
const GOAL = 0.4;
const ROUNDS = 3;

/** utime + stime of a process in seconds, from /proc (Linux); null elsewhere. */
function cpuSecondsOf(pid: number): number | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / 100; // fields 14 and 15, in USER_HZ (100 on Linux)
  } catch {
    return null;
  }
}

interface Measured { requests: number; seconds: number; p50: number; p99: number; non2xx: number; errors: number; bytes: number; serverCpu: number | null; clientCpu: number }

/** One measured round against a running server (after its warm-up). */
async function round(server: Running, path: string, headers: Record<string, string>, seconds: number): Promise<Measured> {
  const cpu0 = cpuSecondsOf(server.pid);
  const client0 = process.cpuUsage();
  const r: Result = await autocannon({ url: server.url + path, connections: CONNECTIONS, pipelining: PIPELINING, headers, duration: seconds });
  const client = process.cpuUsage(client0);
  const cpu1 = cpuSecondsOf(server.pid);
  return {
    requests: r.requests.total ?? 0, seconds: r.duration, p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx,
    errors: r.errors + r.timeouts, bytes: r.throughput.total ?? 0,
    serverCpu: cpu0 === null || cpu1 === null ? null : cpu1 - cpu0, clientCpu: (client.user + client.system) / 1e6,
  };
}

/** Rounds added up: req/s over the whole time, p50 averaged, p99 the worst round's. */
function combine(rounds: Measured[]): Measured {
  const sum = (f: (m: Measured) => number) => rounds.reduce((a, m) => a + f(m), 0);
  const seconds = sum((m) => m.seconds);
  return {
    requests: sum((m) => m.requests), seconds, p50: sum((m) => m.p50) / rounds.length, p99: Math.max(...rounds.map((m) => m.p99)),
    non2xx: sum((m) => m.non2xx), errors: sum((m) => m.errors), bytes: sum((m) => m.bytes),
    serverCpu: rounds.some((m) => m.serverCpu === null) ? null : sum((m) => m.serverCpu!) / seconds,
    clientCpu: sum((m) => m.clientCpu) / seconds,
  };
}

// Both servers run at once and are measured in alternating rounds, so that a change in the
// machine's speed during the run (a shared 2-core machine) weighs on both figures alike.
const hello = await startProcess([path.join(import.meta.dirname, 'hello-server.ts')]);
// svc: a user who owns one organization, logged in with a Bearer token; default log level
// (info), so every request writes its access-log line, to a file.
const setup = setupSvc();
svcCli(setup, ['orgs', 'create', '--name', 'Studio', '--owner', setup.email]);
const svc = await startSvc(setup);
let raw: Measured;
let ctx: Measured;
try {
  const token = await login(svc.url, setup.email, setup.password);
  const headers = { authorization: `Bearer ${token}` };
  const check = await fetch(`${svc.url}/api/context`, { headers });
  const body = (await check.json()) as { organization?: { name?: string } | null };
  if (check.status !== 200 || body.organization?.name !== 'Studio') {
    throw new Error(`GET /api/context before the run: ${check.status} ${JSON.stringify(body)}`);
  }
  await round(hello, '/', {}, WARMUP_S);
  await round(svc, '/api/context', headers, WARMUP_S);
  const rawRounds: Measured[] = [];
  const svcRounds: Measured[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    rawRounds.push(await round(hello, '/', {}, DURATION_S / ROUNDS));
    svcRounds.push(await round(svc, '/api/context', headers, DURATION_S / ROUNDS));
  }
  raw = combine(rawRounds);
  ctx = combine(svcRounds);
} finally {
  await hello.stop();
  const how = await svc.stop();
  if (how !== 0) process.stderr.write(`svc serve exited with ${how}\n`);
}
const log = fs.readFileSync(setup.logFile, 'utf8');
const logLines = log.split('\n').filter((l) => l.includes('"msg":"request"')).length;
const logBytes = Buffer.byteLength(log);

const perSecond = (m: Measured) => m.requests / m.seconds;
const row = (name: string, m: Measured) => [
  name, num(perSecond(m)), num(m.p50, 1) + ' ms', num(m.p99) + ' ms', num(m.requests),
  num(m.non2xx), num(m.errors), num(m.bytes / Math.max(1, m.requests)),
  m.serverCpu === null ? '?' : num(m.serverCpu * 100) + '%', num(m.clientCpu * 100) + '%',
];
const ratio = perSecond(ctx) / perSecond(raw);
const ok = ctx.non2xx === 0 && ctx.errors === 0 && raw.non2xx === 0;

printTable(`HTTP: authenticated GET /api/context vs raw node:http (${CONNECTIONS} connections, pipelining ${PIPELINING}, ${ROUNDS} alternating rounds of ${DURATION_S / ROUNDS} s each after ${WARMUP_S} s warm-up)`, [
  ['target', 'req/s avg', 'p50', 'p99', 'requests', 'non-2xx', 'err+timeout', 'bytes/resp', 'server CPU', 'client CPU'],
  row('raw node:http hello world', raw),
  row('svc GET /api/context', ctx),
], [
  `svc / raw req/s: ${num(ratio * 100, 1)}% (goal >= ${GOAL * 100}%: ${goal(ratio >= GOAL)}); svc non-2xx: ${num(ctx.non2xx)} (must be 0)`,
  `svc: default log level info, access log on (${num(logLines)} request lines, ${num(logBytes / 2 ** 20, 1)} MiB) written to a file; synchronous=full; SQLite in a temp dir`,
  'context: 1 user, owner of 1 organization (no workspace), Bearer session; client is autocannon in the bench process, server a separate process',
  'latencies: autocannon, whole ms. CPU columns: share of one core over the measured run (server from /proc); a client near 100% caps the raw figure, so the true ratio is lower',
]);
report({ figure: 'GET /api/context req/s', value: perSecond(ctx), unit: 'req/s', better: 'higher' });
report({ figure: 'GET /api/context p99', value: ctx.p99, unit: 'ms', better: 'lower' });
if (!ok) {
  process.stderr.write('http-context: non-2xx responses, errors or timeouts; the figure is not valid\n');
  process.exitCode = 1;
}
