// Figure: upload throughput of a ~512 MB file through HTTP (POST /api/assets/:id/versions/upload to
// `svc serve` in a child process: streamed to storage/tmp, hashed, renamed, registered) beside
// `sha256sum` of the same file measured in the same run; goal: upload at least 70% of sha256sum's
// MB/s. Also the server's resident memory growth during the upload (VmRSS, /proc/PID/status).
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { login, num, printTable, rssBytes, setupSvc, startSvc, svcCli, tempDir } from './lib.ts';

const MB = 1024 * 1024;
const SIZE_MB = Number(process.env.BENCH_UPLOAD_MB ?? 512);
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

const setup = setupSvc();
const org = svcCli(setup, ['orgs', 'create', '--name', 'Bench Studio', '--owner', setup.email]) as { id: string };
const svc = await startSvc(setup);
const rows: Array<Array<string>> = [['run', 'what', 'seconds', 'MB/s', 'server RSS growth']];
let bestSum = 0;
let bestUpload = 0;
let maxGrowth = 0;
let sha = '';
try {
  const token = await login(svc.url, setup.email, setup.password);
  const ws = await api(svc.url, token, 'POST', `/api/organizations/${org.id}/workspaces`, { name: 'Bench' });
  const project = await api(svc.url, token, 'POST', `/api/workspaces/${ws.id}/projects`, { name: 'Upload bench' });
  await api(svc.url, token, 'PATCH', '/api/context', { organizationId: org.id, workspaceId: ws.id, projectId: project.id });
  const asset = await api(svc.url, token, 'POST', '/api/assets', { kind: 'video', name: 'bench file' });
  // Warm-up: the page cache holds the file for both contenders; the server's code paths are loaded.
  spawnSync('sha256sum', [file]);
  for (let run = 1; run <= RUNS; run++) {
    const t0 = performance.now();
    const r = spawnSync('sha256sum', [file], { encoding: 'utf8' });
    const sumSeconds = (performance.now() - t0) / 1000;
    if (r.status !== 0) throw new Error(`sha256sum failed: ${r.stderr}`);
    sha = r.stdout.split(' ')[0];
    bestSum = Math.max(bestSum, SIZE_MB / sumSeconds);
    rows.push([String(run), 'sha256sum', sumSeconds.toFixed(2), num(SIZE_MB / sumSeconds, 0), '']);

    const before = rssBytes(svc.pid);
    let peak = before;
    const timer = setInterval(() => { peak = Math.max(peak, rssBytes(svc.pid)); }, 20);
    const t1 = performance.now();
    const up = await upload(svc.url, token, asset.id, file, size);
    const upSeconds = (performance.now() - t1) / 1000;
    clearInterval(timer);
    peak = Math.max(peak, rssBytes(svc.pid));
    if (up.status !== 201) throw new Error(`upload: ${up.status} ${JSON.stringify(up.body)}`);
    if (up.body.contentSha256 !== sha) throw new Error(`upload hash ${up.body.contentSha256} differs from sha256sum ${sha}`);
    const growth = (peak - before) / MB;
    maxGrowth = Math.max(maxGrowth, growth);
    bestUpload = Math.max(bestUpload, SIZE_MB / upSeconds);
    rows.push([String(run), `HTTP upload${up.body.deduplicated ? ' (deduplicated)' : ''}`, upSeconds.toFixed(2), num(SIZE_MB / upSeconds, 0), `${num(growth, 1)} MB`]);
  }
} finally {
  await svc.stop();
}
const ratio = bestUpload / bestSum;
rows.push(['best', 'upload / sha256sum', '', `${num(ratio * 100, 0)}%`, '']);
printTable(`Asset upload of a ${SIZE_MB} MB file (MB = 2^20 bytes)`, rows, [
  `goal: upload at least ${GOAL * 100}% of sha256sum's MB/s -> ${ratio >= GOAL ? 'met' : 'NOT met'} (${num(bestUpload, 0)} vs ${num(bestSum, 0)} MB/s)`,
  'upload: node:http client streaming the file -> svc serve (hash + write to storage/tmp with fsync, rename, one transaction); both read the file from the page cache',
  `server RSS growth at most ${num(maxGrowth, 1)} MB; content hash equals sha256sum (${sha.slice(0, 16)}...)`,
]);
