// Figure: a client's download of a 1 GiB delivered file through its delivery link
// (GET /api/client/delivery/files/1?token=...) on the `local` driver (streamed by the service) and on
// the `s3` driver (the link counts and audits the download, then redirects to a short-lived signed URL
// the gateway answers): bytes/s of the whole download (the redirect followed) and the CPU seconds
// the `svc serve` process spent meanwhile (utime + stime of /proc/PID/stat, every thread of it).
// The delivery is made the honest way, through HTTP on a real `svc serve`: a video job of an http-json
// connector (a stub in this script answering with the 1 GiB clip) stores and registers the file
// (probe, first/last frames), a QA run passes it, a review approves it, the delivery is approved and
// a link made. The clip: uncompressed 1080x1920 video with a tone in a .mov (cheap to make and decode,
// so the setup is quick). BENCH_DELIVERY_MB (default 1024), BENCH_DELIVERY_RUNS (default 2).
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { runFfmpeg } from '../src/media-tools/ffmpeg.ts';
import { exitSignal, login, num, printTable, runExitHooks, setupSvc, startSvc, svcCli, tempDir, type EnvOverrides } from './lib.ts';
import { benchBucket, LOCAL_ENV } from './s3.ts';

const MiB = 1024 * 1024;
const SIZE_MB = Number(process.env.BENCH_DELIVERY_MB ?? 1024);
const RUNS = Number(process.env.BENCH_DELIVERY_RUNS ?? 2);
const [W, H, FPS, RATE] = [1080, 1920, 25, 44100];
const CLK_TCK = 100; // USER_HZ on Linux

// The clip: raw uyvy422 frames (W*H*2 bytes each; what .mov stores uncompressed) and 16-bit stereo PCM, as many frames as fill SIZE_MB.
const dir = tempDir('svc-bench-delivery-');
const clip = path.join(dir, 'clip.mov');
{
  const perFrame = W * H * 2 + (RATE * 4) / FPS;
  const seconds = (Math.floor((SIZE_MB * MiB) / perFrame) / FPS).toFixed(2);
  await runFfmpeg([
    '-v', 'error', '-y',
    '-f', 'lavfi', '-i', `color=c=0x2a6f97:s=${W}x${H}:r=${FPS}:d=${seconds}`,
    '-f', 'lavfi', '-i', `color=c=0xf2c14e:s=240x240:r=${FPS}:d=${seconds}`,
    '-f', 'lavfi', '-i', `aevalsrc=exprs=0.25*sin(2*PI*440*t)|0.25*sin(2*PI*440*t):s=${RATE}:d=${seconds}`,
    '-filter_complex', `[0:v][1:v]overlay=x='mod(t*300,${W - 240})':y='mod(t*500,${H - 240})'[v]`,
    '-map', '[v]', '-map', '2:a', '-c:v', 'rawvideo', '-pix_fmt', 'uyvy422', '-c:a', 'pcm_s16le', '-f', 'mov', clip,
  ], { timeoutMs: 10 * 60_000, signal: exitSignal() });
}
const clipSize = fs.statSync(clip).size;

/** An http-json model service answering every video job with the clip (GET /files/clip.mov). */
async function stubModel(): Promise<{ url: string; close(): void }> {
  const server = http.createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/health') return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    if (req.method === 'GET' && req.url === '/files/clip.mov') {
      res.writeHead(200, { 'content-type': 'video/quicktime', 'content-length': clipSize });
      return void fs.createReadStream(clip, { highWaterMark: MiB }).pipe(res);
    }
    if (req.method === 'POST' && req.url === '/generate') {
      req.resume().on('end', () => {
        const outputs = [{ role: 'video', mimeType: 'video/quicktime', url: '/files/clip.mov' }];
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'completed', outputs, model: 'bench-clip' }));
      });
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => server.close() };
}

async function api(url: string, token: string, method: string, p: string, body?: unknown): Promise<any> {
  const res = await fetch(url + p, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const json = await res.json();
  if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** utime + stime of a process (all its threads), in seconds. */
function cpuSeconds(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields[0] is the state (field 3)
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
}

/** The approved delivery of the clip, through HTTP; answers the client link's file URL. */
async function approvedDelivery(url: string, token: string, modelUrl: string, org: string): Promise<string> {
  const ws = await api(url, token, 'POST', `/api/organizations/${org}/workspaces`, { name: 'Bench' });
  const project = await api(url, token, 'POST', `/api/workspaces/${ws.id}/projects`, { name: 'Delivery bench' });
  await api(url, token, 'PATCH', '/api/context', { organizationId: org, workspaceId: ws.id, projectId: project.id });
  const connector = await api(url, token, 'POST', '/api/platform/models/register', {
    label: 'Bench clip', endpoint: `${modelUrl}/generate`, kind: 'http-json', capability: ['video'], costMode: 'local',
  });
  const probed = await api(url, token, 'POST', `/api/platform/models/${connector.id}/probe`);
  if (!probed.ok && probed.status !== 'ready') throw new Error(`the stub model service did not probe ready: ${JSON.stringify(probed)}`);
  const shot = (await api(url, token, 'GET', '/api/production/shots')).items[0]; // a new project has one
  const job = await api(url, token, 'POST', '/api/jobs', { kind: 'video', connectorId: connector.id, shotId: shot.id, prompt: 'a lighthouse at dusk', parameters: {} });
  const until = Date.now() + 15 * 60_000;
  for (;;) {
    const j = await api(url, token, 'GET', `/api/jobs/${job.id}`);
    if (j.status === 'completed') break;
    if (j.status === 'failed' || Date.now() > until) throw new Error(`the video job is ${j.status}: ${JSON.stringify(j.error ?? j)}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  const artifact = (await api(url, token, 'GET', `/api/production/media-artifacts?jobId=${job.id}`)).items[0];
  if (artifact?.fileSize !== clipSize) throw new Error(`the registered artifact is not the clip: ${JSON.stringify(artifact)}`);
  const qa = await api(url, token, 'POST', '/api/production/qa/run', { artifactIds: [artifact.id] });
  const review = await api(url, token, 'POST', '/api/production/reviews', { artifactId: artifact.id, title: 'Final look' });
  await api(url, token, 'POST', `/api/production/reviews/${review.id}/decisions`, { decision: 'approve' });
  const delivery = await api(url, token, 'POST', '/api/production/deliveries', { title: 'Episode 1 for the client', artifactIds: [artifact.id] });
  const approved = await fetch(`${url}/api/production/deliveries/${delivery.id}/approve`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
  if (approved.status !== 200) throw new Error(`approval: ${approved.status} ${await approved.text()} (QA run: ${JSON.stringify(qa).slice(0, 2000)})`);
  const link = await api(url, token, 'POST', `/api/production/deliveries/${delivery.id}/links`, { label: 'Client A' });
  return `${url}/api/client/delivery/files/1?token=${encodeURIComponent(link.token)}`;
}

interface Measured { status: string; seconds: number; bytes: number; cpu: number }

/** One client download through the link, the redirect (if any) followed, timed as a whole. */
async function download(fileUrl: string, serverPid: number): Promise<Measured> {
  const cpu0 = cpuSeconds(serverPid);
  const t0 = performance.now();
  let res = await fetch(fileUrl, { redirect: 'manual' });
  let status = String(res.status);
  if (res.status >= 300 && res.status < 400) {
    const location = res.headers.get('location');
    if (!location) throw new Error(`a ${res.status} without a location`);
    await res.body?.cancel();
    res = await fetch(new URL(location, fileUrl));
    status += ` -> ${res.status} from ${new URL(location, fileUrl).host}`;
  }
  let bytes = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) bytes += chunk.length;
  const seconds = (performance.now() - t0) / 1000;
  if (res.status !== 200 || bytes !== clipSize) throw new Error(`download: ${status}, ${bytes} of ${clipSize} bytes`);
  return { status, seconds, bytes, cpu: cpuSeconds(serverPid) - cpu0 };
}

async function driverRuns(driver: string, env: EnvOverrides, rows: string[][]): Promise<{ setupSeconds: number; redirected: boolean }> {
  const setup = setupSvc({ env });
  const org = svcCli(setup, ['orgs', 'create', '--name', 'Bench Studio', '--owner', setup.email], { env }) as { id: string };
  const model = await stubModel();
  const svc = await startSvc(setup, { ...env, SVC_WORKER_POLL_MS: '100' });
  try {
    const token = await login(svc.url, setup.email, setup.password);
    const t0 = performance.now();
    const fileUrl = await approvedDelivery(svc.url, token, model.url, org.id);
    const setupSeconds = (performance.now() - t0) / 1000;
    let redirected = false;
    for (let run = 1; run <= RUNS; run++) {
      const m = await download(fileUrl, svc.pid);
      redirected ||= m.status.includes('->');
      rows.push([driver, run === 1 ? '1 (verifies)' : String(run), m.status, m.seconds.toFixed(2), num(m.bytes / MiB / m.seconds, 0), num(m.cpu, 2), num((m.cpu / m.seconds) * 100, 0) + '%']);
    }
    return { setupSeconds, redirected };
  } finally {
    await svc.stop();
    model.close();
  }
}

const rows: string[][] = [['driver', 'run', 'answer', 'seconds', 'MB/s', 'server CPU s', 'server CPU / wall']];
const notes: string[] = [];
try {
  const bucket = await benchBucket();
  const local = await driverRuns('local', LOCAL_ENV, rows);
  notes.push(`local: the service streams the file; setup ${num(local.setupSeconds, 0)} s`);
  if (bucket) {
    const s3 = await driverRuns('s3', bucket.env, rows);
    notes.push(s3.redirected
      ? `s3: the link answers a redirect to a signed URL of ${bucket.location}; the client reads the gateway (on this machine, memstore OSD); setup ${num(s3.setupSeconds, 0)} s`
      : `s3: NOT redirected: the service streamed the file itself (this build's client links do not hand out signed URLs yet); store ${bucket.location}; setup ${num(s3.setupSeconds, 0)} s`);
  } else {
    notes.push('s3: skipped (no gateway; `npm run s3:start`)');
  }
  notes.push(
    'setup: a video job of an http-json connector (this script) stores and registers the clip, a QA run, an approved review, the approved delivery and a link, all through HTTP',
    'client: fetch() reading the body through (no hashing); server CPU: utime + stime of svc serve (/proc/PID/stat) during the download',
    'run 1: the first download through the link in this process re-reads and re-hashes the whole object against the approved SHA-256 (410 when it changed); later ones reuse that while the object\'s version is unchanged',
  );
} finally {
  await runExitHooks();
}
printTable(`Client delivery download of a ${num(clipSize / MiB, 0)} MiB file through a delivery link, each storage driver (MB = 2^20 bytes)`, rows, notes);
