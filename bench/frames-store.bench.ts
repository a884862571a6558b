// Figure for issue #24: first/last frame extraction (decodeFirstAndLast, one decode pass) of a video
// kept in the object store, read three ways: the local file (the `local` driver's mediaInput), a URL
// that ffmpeg reads with HTTP range requests (what the `s3` driver's mediaInput gives: a signed URL),
// and a copy staged first with localCopy() then decoded from disk. With SVC_STORAGE_DRIVER=s3 (and
// its settings) the URL and staged rows use the configured bucket; without it they use a local HTTP
// server with range support over the same file (ffmpeg's own HTTP cost, no network).
// BENCH_FRAMES_SECONDS (default 60), BENCH_FRAMES_SIZE (default 1080x1920), BENCH_FRAMES_RUNS (default 3).
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { loadConfig } from '../src/kernel/config.ts';
import { storageOf } from '../src/kernel/storage/index.ts';
import { runFfmpeg } from '../src/media-tools/ffmpeg.ts';
import { decodeFirstAndLast } from '../src/media-tools/frames.ts';
import { num, printTable, tempDir } from './lib.ts';

const seconds = Number(process.env.BENCH_FRAMES_SECONDS ?? 60);
const size = process.env.BENCH_FRAMES_SIZE ?? '1080x1920';
const runs = Number(process.env.BENCH_FRAMES_RUNS ?? 3);
const dir = tempDir('svc-bench-frames-');
const key = 'outputs/job_bench/video-1.mp4';
const file = path.join(dir, 'source.mp4');

// The shape generated clips have: H.264 with sound, the index (moov) at the end as ffmpeg writes it by default.
await runFfmpeg([
  '-v', 'error', '-y', '-f', 'lavfi', '-i', `testsrc2=s=${size}:r=25:d=${seconds}`, '-f', 'lavfi', '-i', `sine=f=440:d=${seconds}`,
  '-c:v', 'libx264', '-preset', 'veryfast', '-pix_fmt', 'yuv420p', '-c:a', 'aac', file,
], { timeoutMs: 30 * 60_000 });
const bytes = fs.statSync(file).size;

const config = loadConfig({ dataDir: path.join(dir, 'data'), storageDir: path.join(dir, 'storage') }, process.env);
const store = storageOf(config);
await store.putFile(key, file);

/** A minimal range server over the file: what a signed URL answers, without the network. */
async function rangeServer(): Promise<{ url: string; close(): void }> {
  const server = http.createServer((req, res) => {
    const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    const start = m ? Number(m[1]) : 0;
    const end = m && m[2] ? Math.min(Number(m[2]), bytes - 1) : bytes - 1;
    res.writeHead(m ? 206 : 200, {
      'content-type': 'video/mp4', 'accept-ranges': 'bytes', 'content-length': end - start + 1,
      ...(m ? { 'content-range': `bytes ${start}-${end}/${bytes}` } : {}),
    });
    if (req.method === 'HEAD') return void res.end();
    fs.createReadStream(file, { start, end }).pipe(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/video-1.mp4`, close: () => server.close() };
}

async function timed(fn: () => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await fn();
    out.push((performance.now() - t0) / 1000);
  }
  return out;
}

const decode = (input: string) => decodeFirstAndLast(input, { timeoutMs: 30 * 60_000 });
const local = await timed(() => decode(file));
let viaUrl: number[];
let staged: number[];
let where: string;
if (store.driver === 's3') {
  where = store.location;
  viaUrl = await timed(async () => decode(await store.mediaInput(key)));
  staged = await timed(async () => {
    const copy = await store.localCopy(key);
    try {
      await decode(copy.path);
    } finally {
      await copy.release();
    }
  });
} else {
  where = 'a local HTTP range server (set SVC_STORAGE_DRIVER=s3 for the bucket)';
  const srv = await rangeServer();
  viaUrl = await timed(() => decode(srv.url));
  staged = await timed(async () => {
    const copy = path.join(dir, 'staged.mp4');
    const resp = await fetch(srv.url);
    await fs.promises.writeFile(copy, Buffer.from(await resp.arrayBuffer()));
    try {
      await decode(copy);
    } finally {
      fs.rmSync(copy, { force: true });
    }
  });
  srv.close();
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
printTable(`First/last frames of a ${seconds} s ${size} video (${num(bytes / 2 ** 20, 1)} MiB), median of ${runs}, URL and staged from ${where}`, [
  ['read from', 'seconds', 'vs local file'],
  ['local file (local mediaInput)', num(median(local), 2), '1.00'],
  ['URL with range requests (s3 mediaInput)', num(median(viaUrl), 2), num(median(viaUrl) / median(local), 2)],
  ['staged copy then file (localCopy)', num(median(staged), 2), num(median(staged) / median(local), 2)],
]);
