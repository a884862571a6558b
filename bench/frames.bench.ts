// Figure: first/last frame extraction of a 60 s 1080x1920 video (H.264 + AAC, as generated clips are)
// on each storage driver, the way the service registers a generated video: analyzeMedia() on the
// store (sniff, ffprobe, one decode pass for the real first and last frames, the PNGs written to the
// store, the SHA-256). On `s3` it also compares the two ways ffmpeg can read an object, both timed:
// the decode reading a signed URL with range requests (store.mediaInput) against staging the object
// in a local file first (store.localCopy) then decoding that; the faster one is what the service
// should use. The local file decoded directly is the reference. BENCH_FRAMES_SECONDS (default 60),
// BENCH_FRAMES_SIZE (default 1080x1920), BENCH_FRAMES_RUNS (default 3; the median is shown).
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../src/kernel/config.ts';
import { storageOf } from '../src/kernel/storage/index.ts';
import type { ObjectStore } from '../src/kernel/storage/store.ts';
import { analyzeMedia } from '../src/media-tools/evidence.ts';
import { runFfmpeg } from '../src/media-tools/ffmpeg.ts';
import { decodeFirstAndLast } from '../src/media-tools/frames.ts';
import { exitSignal, num, printTable, runExitHooks, tempDir } from './lib.ts';
import { benchBucket } from './s3.ts';

const SECONDS = Number(process.env.BENCH_FRAMES_SECONDS ?? 60);
const SIZE = process.env.BENCH_FRAMES_SIZE ?? '1080x1920';
const RUNS = Number(process.env.BENCH_FRAMES_RUNS ?? 3);
const KEY = 'outputs/job_bench/video-1.mp4';
const TIMEOUT_MS = 30 * 60_000;

const dir = tempDir('svc-bench-frames-');
const video = path.join(dir, 'source.mp4');
// testsrc2 (moving) + a sine, H.264 veryfast + AAC, the index (moov) at the end as ffmpeg writes it.
await runFfmpeg([
  '-v', 'error', '-y', '-f', 'lavfi', '-i', `testsrc2=s=${SIZE}:r=25:d=${SECONDS}`, '-f', 'lavfi', '-i', `sine=f=440:d=${SECONDS}`,
  '-c:v', 'libx264', '-preset', 'veryfast', '-pix_fmt', 'yuv420p', '-c:a', 'aac', video,
], { timeoutMs: TIMEOUT_MS, signal: exitSignal() });
const bytes = fs.statSync(video).size;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** The median seconds of RUNS calls, and the last call's answer. */
async function timed<T>(fn: (run: number) => Promise<T>): Promise<{ seconds: number; last: T }> {
  const samples: number[] = [];
  let last!: T;
  for (let run = 1; run <= RUNS; run++) {
    const t0 = performance.now();
    last = await fn(run);
    samples.push((performance.now() - t0) / 1000);
  }
  return { seconds: median(samples), last };
}

const decode = (input: string) => decodeFirstAndLast(input, { timeoutMs: TIMEOUT_MS, signal: exitSignal() });
/** What registration does with a stored video (frames under frames/job_bench/run-N). */
const register = (store: ObjectStore) => timed((run) => analyzeMedia({ store, relPath: KEY, framesPrefix: `frames/job_bench/run-${run}`, timeoutMs: TIMEOUT_MS, signal: exitSignal() }));

const rows: string[][] = [['driver', 'what', 'seconds', 'vs local file decode']];
const notes: string[] = [];
try {
  const bucket = await benchBucket();
  const local = storageOf(loadConfig({ dataDir: path.join(dir, 'data'), storageDir: path.join(dir, 'storage') }, {}));
  await local.putFile(KEY, video);
  const direct = await timed(() => decode(video));
  const ratio = (s: number) => `${num(s / direct.seconds, 2)}x`;
  rows.push(['local', 'decode first/last, local file', num(direct.seconds, 2), '1.00x']);
  const onLocal = await register(local);
  rows.push(['local', 'registration (analyzeMedia)', num(onLocal.seconds, 2), ratio(onLocal.seconds)]);
  if (bucket) {
    const s3 = bucket.store;
    await s3.putFile(KEY, video);
    const viaUrl = await timed(async () => decode(await s3.mediaInput(KEY)));
    rows.push(['s3', 'decode first/last, signed URL (mediaInput)', num(viaUrl.seconds, 2), ratio(viaUrl.seconds)]);
    const staged = await timed(async () => {
      const copy = await s3.localCopy(KEY);
      try {
        return await decode(copy.path);
      } finally {
        await copy.release();
      }
    });
    rows.push(['s3', 'stage (localCopy) + decode the copy', num(staged.seconds, 2), ratio(staged.seconds)]);
    const onS3 = await register(s3);
    rows.push(['s3', 'registration (analyzeMedia)', num(onS3.seconds, 2), ratio(onS3.seconds)]);
    for (const [what, frames] of [['URL', viaUrl.last], ['staged', staged.last]] as const) {
      if (frames.count !== direct.last.count || !frames.last.rgb.equals(direct.last.last.rgb)) throw new Error(`the ${what} decode differs from the local file's (${frames.count} vs ${direct.last.count} frames)`);
    }
    if (onS3.last.lastFrame?.sha256 !== onLocal.last.lastFrame?.sha256) throw new Error('the last frame registered on s3 differs from the one on local');
    const faster = viaUrl.seconds <= staged.seconds ? 'the signed URL' : 'the staged copy';
    notes.push(
      `s3: ${bucket.location}; faster: ${faster} (${num(Math.min(viaUrl.seconds, staged.seconds), 2)} s against ${num(Math.max(viaUrl.seconds, staged.seconds), 2)} s)`,
      's3: the same frames come out of every path (frame count and last frame compared with the local decode)',
    );
  } else {
    notes.push('s3: skipped (no gateway; `npm run s3:start`)');
  }
  notes.push(
    `video: ${SECONDS} s ${SIZE} testsrc2 + sine, H.264 veryfast + AAC, ${num(bytes / 2 ** 20, 1)} MiB (moov at the end); median of ${RUNS} runs`,
    'registration: sniff, ffprobe, one ffmpeg decode pass keeping the first and last frames, both encoded as PNG and written to the store, the file hashed',
  );
} finally {
  await runExitHooks();
}
printTable(`First/last frames of a ${SECONDS} s ${SIZE} video on each storage driver`, rows, notes);
