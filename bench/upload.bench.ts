// Figure: upload throughput of a 256 MiB file through HTTP (POST /api/assets/:id/versions/upload to
// `svc serve` in a child process: streamed to a temporary key while hashed, placed, registered) on
// the `local` driver and on the `s3` driver (the Ceph RADOS Gateway of `npm run s3:start`), beside
// `sha256sum` of the same file measured in the same run; goal: on local, upload at least 70% of
// sha256sum's MB/s. Also the server's resident memory growth during the upload (VmRSS,
// /proc/PID/status). BENCH_UPLOAD_MB (default 256), BENCH_UPLOAD_RUNS (default 3).
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { goal, login, num, printTable, rssBytes, runExitHooks, setupSvc, startSvc, svcCli, tempDir, type EnvOverrides } from './lib.ts';
import { benchBucket, LOCAL_ENV } from './s3.ts';

const MB = 1024 * 1024;
const SIZE_MB = Number(process.env.BENCH_UPLOAD_MB ?? 256);
const RUNS = Number(process.env.BENCH_UPLOAD_RUNS ?? 3);
const GOAL = 0.7;

async function api(url: string, token: string, method: string, p: string, body?: unknown): Promise<any> {
  const res = await fetch(url + p, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const json = await res.json();
  if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

function upload(url: string, token: string, assetId: string, file: string, size: number): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}/api/assets/${assetId}/versions/upload?fileName=bench.bin`, {
      method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/octet-stream', 'content-length': String(size) },
    }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (c) => { text += c; }).on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    pipeline(fs.createReadStream(file, { highWaterMark: MB }), req).catch(reject);
  });
}

function sha256sum(file: string): { seconds: number; sha: string } {
  const t0 = performance.now();
  const r = spawnSync('sha256sum', [file], { encoding: 'utf8' });
  const seconds = (performance.now() - t0) / 1000;
  if (r.status !== 0) throw new Error(`sha256sum failed: ${r.stderr}`);
  return { seconds, sha: r.stdout.split(' ')[0] };
}

// The file: random bytes, written 1 MB at a time.
const file = path.join(tempDir(), 'upload.bin');
{
  const fd = fs.openSync(file, 'w');
  const block = Buffer.allocUnsafe(MB);
  for (let i = 0; i < SIZE_MB; i++) {
    crypto.randomFillSync(block);
    fs.writeSync(fd, block);
  }
  fs.closeSync(fd);
}
const size = SIZE_MB * MB;

interface DriverResult { best: number; maxGrowth: number }

/**
 * RUNS uploads of the file to one asset on a fresh server of `driver` (runs after the first store
 * the same bytes again: a new version whose object is already in place), each after a sha256sum.
 */
async function uploads(driver: string, env: EnvOverrides, rows: string[][], sums: number[]): Promise<DriverResult> {
  const setup = setupSvc({ env });
  const org = svcCli(setup, ['orgs', 'create', '--name', 'Bench Studio', '--owner', setup.email], { env }) as { id: string };
  const svc = await startSvc(setup, env);
  let best = 0;
  let maxGrowth = 0;
  try {
    const token = await login(svc.url, setup.email, setup.password);
    const ws = await api(svc.url, token, 'POST', `/api/organizations/${org.id}/workspaces`, { name: 'Bench' });
    const project = await api(svc.url, token, 'POST', `/api/workspaces/${ws.id}/projects`, { name: 'Upload bench' });
    await api(svc.url, token, 'PATCH', '/api/context', { organizationId: org.id, workspaceId: ws.id, projectId: project.id });
    const asset = await api(svc.url, token, 'POST', '/api/assets', { kind: 'video', name: 'bench file' });
    for (let run = 1; run <= RUNS; run++) {
      const sum = sha256sum(file);
      sums.push(SIZE_MB / sum.seconds);
      rows.push([driver, String(run), 'sha256sum', sum.seconds.toFixed(2), num(SIZE_MB / sum.seconds, 0), '']);

      const before = rssBytes(svc.pid);
      let peak = before;
      const timer = setInterval(() => { peak = Math.max(peak, rssBytes(svc.pid)); }, 20);
      const t1 = performance.now();
      const up = await upload(svc.url, token, asset.id, file, size).finally(() => clearInterval(timer));
      const upSeconds = (performance.now() - t1) / 1000;
      peak = Math.max(peak, rssBytes(svc.pid));
      if (up.status !== 201) throw new Error(`${driver} upload: ${up.status} ${JSON.stringify(up.body)}`);
      if (up.body.contentSha256 !== sum.sha) throw new Error(`${driver} upload hash ${up.body.contentSha256} differs from sha256sum ${sum.sha}`);
      const growth = (peak - before) / MB;
      maxGrowth = Math.max(maxGrowth, growth);
      best = Math.max(best, SIZE_MB / upSeconds);
      rows.push([driver, String(run), `HTTP upload${up.body.deduplicated ? ' (deduplicated)' : ''}`, upSeconds.toFixed(2), num(SIZE_MB / upSeconds, 0), `${num(growth, 1)} MB`]);
    }
  } finally {
    await svc.stop();
  }
  return { best, maxGrowth };
}

const rows: string[][] = [['driver', 'run', 'what', 'seconds', 'MB/s', 'server RSS growth']];
const sums: number[] = [];
const notes: string[] = [];
try {
  spawnSync('sha256sum', [file]); // warm-up: the page cache holds the file for every contender
  const bucket = await benchBucket();
  const local = await uploads('local', LOCAL_ENV, rows, sums);
  const s3 = bucket ? await uploads('s3', bucket.env, rows, sums) : null;
  const bestSum = Math.max(...sums);
  const ratio = local.best / bestSum;
  rows.push(['local', 'best', 'upload / best sha256sum', '', `${num(ratio * 100, 0)}%`, '']);
  if (s3) rows.push(['s3', 'best', 'upload / best sha256sum', '', `${num((s3.best / bestSum) * 100, 0)}%`, '']);
  notes.push(
    `goal (local): upload at least ${GOAL * 100}% of sha256sum's MB/s -> ${goal(ratio >= GOAL)} (${num(local.best, 0)} vs ${num(bestSum, 0)} MB/s)`,
    'local: node:http client streaming the file -> svc serve (hash + write to storage/tmp with fsync, rename, one transaction); the file is read from the page cache',
    s3
      ? `s3: the same into ${bucket!.location} (a multipart upload of 8 MiB parts, 4 at once, hashed on the way; placed by a server-side copy); gateway on this machine, memstore OSD`
      : 's3: skipped (no gateway; `npm run s3:start`)',
    `server RSS growth at most ${num(local.maxGrowth, 1)} MB on local${s3 ? `, ${num(s3.maxGrowth, 1)} MB on s3` : ''}; every upload's content hash equals sha256sum's`,
  );
} finally {
  await runExitHooks();
}
printTable(`Asset upload of a ${SIZE_MB} MB file on each storage driver (MB = 2^20 bytes)`, rows, notes);
