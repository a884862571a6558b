// Figure: throughput and p99 latency of an authenticated GET /api/context on svc, against a bare
// node:http hello world on the same Node, both loaded by autocannon in this process while the
// server runs in its own child process. Goal: svc at least 40% of the raw req/s, 0 non-2xx.
import fs from 'node:fs';
import path from 'node:path';
import autocannon, { type Result } from 'autocannon';
import { login, num, printTable, setupSvc, startProcess, startSvc, svcCli, type Running } from './lib.ts';

const CONNECTIONS = 50;
const PIPELINING = 1;
const DURATION_S = Number(process.env.BENCH_DURATION ?? 10);
const WARMUP_S = 2;
const GOAL = 0.4;

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

interface Measured { result: Result; serverCpu: number | null; clientCpu: number }

async function measure(server: Running, headers: Record<string, string>): Promise<Measured> {
  const opts = { url: `${server.url}${headers.authorization ? '/api/context' : '/'}`, connections: CONNECTIONS, pipelining: PIPELINING, headers };
  await autocannon({ ...opts, duration: WARMUP_S });
  const cpu0 = cpuSecondsOf(server.pid);
  const client0 = process.cpuUsage();
  const result = await autocannon({ ...opts, duration: DURATION_S });
  const client = process.cpuUsage(client0);
  const cpu1 = cpuSecondsOf(server.pid);
  return {
    result,
    serverCpu: cpu0 === null || cpu1 === null ? null : (cpu1 - cpu0) / result.duration,
    clientCpu: (client.user + client.system) / 1e6 / result.duration,
  };
}

// (a) the baseline
const hello = await startProcess([path.join(import.meta.dirname, 'hello-server.ts')]);
const raw = await measure(hello, {});
await hello.stop();

// (b) svc: a user who owns one organization, logged in with a Bearer token; default log level
// (info), so every request writes its access-log line, to a file.
const setup = setupSvc();
svcCli(setup, ['orgs', 'create', '--name', 'Studio', '--owner', setup.email]);
const svc = await startSvc(setup);
let ctx: Measured;
try {
  const token = await login(svc.url, setup.email, setup.password);
  const headers = { authorization: `Bearer ${token}` };
  const check = await fetch(`${svc.url}/api/context`, { headers });
  const body = (await check.json()) as { organization?: { name?: string } | null };
  if (check.status !== 200 || body.organization?.name !== 'Studio') {
    throw new Error(`GET /api/context before the run: ${check.status} ${JSON.stringify(body)}`);
  }
  ctx = await measure(svc, headers);
} finally {
  const how = await svc.stop();
  if (how !== 0) process.stderr.write(`svc serve exited with ${how}\n`);
}
const log = fs.readFileSync(setup.logFile, 'utf8');
const logLines = log.split('\n').filter((l) => l.includes('"msg":"request"')).length;
const logBytes = Buffer.byteLength(log);

const row = (name: string, m: Measured) => {
  const r = m.result;
  return [
    name, num(r.requests.average), num(r.latency.p50) + ' ms', num(r.latency.p99) + ' ms', num(r.requests.total),
    num(r.non2xx), num(r.errors + r.timeouts), num(r.throughput.total / Math.max(1, r.requests.total)),
    m.serverCpu === null ? '?' : num(m.serverCpu * 100) + '%', num(m.clientCpu * 100) + '%',
  ];
};
const ratio = ctx.result.requests.average / raw.result.requests.average;
const ok = ctx.result.non2xx === 0 && ctx.result.errors === 0 && ctx.result.timeouts === 0 && raw.result.non2xx === 0;

printTable(`HTTP: authenticated GET /api/context vs raw node:http (${CONNECTIONS} connections, pipelining ${PIPELINING}, ${DURATION_S} s after ${WARMUP_S} s warm-up)`, [
  ['target', 'req/s avg', 'p50', 'p99', 'requests', 'non-2xx', 'err+timeout', 'bytes/resp', 'server CPU', 'client CPU'],
  row('raw node:http hello world', raw),
  row('svc GET /api/context', ctx),
], [
  `svc / raw req/s: ${num(ratio * 100, 1)}% (goal >= ${GOAL * 100}%: ${ratio >= GOAL ? 'met' : 'NOT MET'}); svc non-2xx: ${num(ctx.result.non2xx)} (must be 0)`,
  `svc: default log level info, access log on (${num(logLines)} request lines, ${num(logBytes / 2 ** 20, 1)} MiB) written to a file; synchronous=full; SQLite in a temp dir`,
  'context: 1 user, owner of 1 organization (no workspace), Bearer session; client is autocannon in the bench process, server a separate process',
  'latencies: autocannon, whole ms. CPU columns: share of one core over the measured run (server from /proc); a client near 100% caps the raw figure, so the true ratio is lower',
]);
if (!ok) {
  process.stderr.write('http-context: non-2xx responses, errors or timeouts; the figure is not valid\n');
  process.exitCode = 1;
}
