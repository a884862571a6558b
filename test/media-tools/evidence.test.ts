// Media evidence on real files made by ffmpeg in a temporary storage root: the acceptance videos
// (red, green, blue segments at 23.976 fps with B-frames, at 25 fps with sound, at a variable frame
// rate) give a red first frame and a blue last frame at full resolution, pixel values checked;
// frames are exactly ffmpeg's own first and last frames; frame counts match ffprobe -count_frames;
// images, audio, documents, rotation, unreadable files, a missing tool, failures that leave tmp/
// empty; signatures and the PNG encoder.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LocalStore } from '../../src/kernel/storage/local.ts';
import { analyzeMedia, MediaError, type MediaEvidence } from '../../src/media-tools/evidence.ts';
import { MediaToolError, runFfmpeg, runFfprobe } from '../../src/media-tools/ffmpeg.ts';
import { encodePng } from '../../src/media-tools/png.ts';
import { reduceFraction } from '../../src/media-tools/probe.ts';
import { compareSignatures, SIGNATURE_SIZE, signatureOf } from '../../src/media-tools/signature.ts';

let storage: string;
before(() => {
  storage = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-media-'));
  fs.mkdirSync(path.join(storage, 'outputs'));
});
after(() => fs.rmSync(storage, { recursive: true, force: true }));

const abs = (rel: string) => path.join(storage, rel);
const ff = (args: string[]) => runFfmpeg(['-v', 'error', '-y', ...args], { timeoutMs: 60_000 });
const sha = (file: string) => crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');
const analyze = (relPath: string, framesPrefix = `frames/job_t/${path.basename(relPath)}`, extra: { signal?: AbortSignal } = {}) =>
  analyzeMedia({ store: new LocalStore(storage), relPath, framesPrefix, ...extra });

/** Red, green and blue segments of one second each, H.264 with B-frames forced (b-adapt=0). */
async function rgbVideo(rel: string, size: string, rate: string, opts: { audio?: boolean } = {}): Promise<string> {
  const seg = (c: string) => ['-f', 'lavfi', '-i', `color=c=${c}:s=${size}:r=${rate}:d=1`];
  await ff([
    ...seg('red'), ...seg('green'), ...seg('blue'),
    ...(opts.audio ? ['-f', 'lavfi', '-i', 'sine=f=440:d=3'] : []),
    '-filter_complex', '[0][1][2]concat=n=3:v=1:a=0[v]', '-map', '[v]', ...(opts.audio ? ['-map', '3:a', '-c:a', 'aac'] : []),
    '-c:v', 'libx264', '-preset', 'veryfast', '-x264-params', 'bframes=3:b-adapt=0', '-pix_fmt', 'yuv420p', abs(rel),
  ]);
  return rel;
}

/** Red at 30 fps, green at 10 fps, blue at 25 fps, one second each, kept as they come (-vsync vfr). */
async function vfrVideo(rel: string): Promise<string> {
  const seg = (c: string, r: number) => ['-f', 'lavfi', '-i', `color=c=${c}:s=640x360:r=${r}:d=1`];
  await ff([
    ...seg('red', 30), ...seg('green', 10), ...seg('blue', 25),
    '-filter_complex', '[0]settb=1/90000[a];[1]settb=1/90000[b];[2]settb=1/90000[c];[a][b][c]concat=n=3:v=1:a=0',
    '-vsync', 'vfr', '-c:v', 'libx264', '-preset', 'veryfast', '-x264-params', 'bframes=3:b-adapt=0', '-pix_fmt', 'yuv420p',
    '-video_track_timescale', '90000', abs(rel),
  ]);
  return rel;
}

interface Stream { has_b_frames?: number; nb_read_frames?: string; avg_frame_rate?: string; r_frame_rate?: string }
async function videoStream(rel: string, countFrames = false): Promise<Stream> {
  const { json } = await runFfprobe<{ streams: Stream[] }>(['-v', 'error', ...(countFrames ? ['-count_frames'] : []), '-select_streams', 'v:0',
    '-show_entries', 'stream=has_b_frames,nb_read_frames,avg_frame_rate,r_frame_rate', '-of', 'json', abs(rel)]);
  return json!.streams[0];
}

/** Presentation time steps of the video packets (pts sorted), as a set. */
async function ptsSteps(rel: string): Promise<Set<number>> {
  const { stdout } = await runFfprobe(['-v', 'error', '-select_streams', 'v:0', '-show_entries', 'packet=pts', '-of', 'csv=p=0', abs(rel)]);
  const pts = stdout.toString().trim().split('\n').map(Number).sort((a, b) => a - b);
  return new Set(pts.slice(1).map((p, i) => p - pts[i]));
}

/** A PNG's size from its IHDR and its pixels decoded back to rgb24 by ffmpeg. */
async function pngPixels(rel: string): Promise<{ width: number; height: number; rgb: Buffer }> {
  const file = fs.readFileSync(abs(rel));
  assert.equal(file.subarray(1, 4).toString(), 'PNG', `${rel} is a PNG`);
  const { stdout } = await runFfmpeg(['-v', 'error', '-i', abs(rel), '-f', 'rawvideo', '-pix_fmt', 'rgb24', 'pipe:1']);
  return { width: file.readUInt32BE(16), height: file.readUInt32BE(20), rgb: stdout };
}

/** Pixels at the corners, the centre and the quarter points are all `colour` (within YUV rounding). */
function assertColour(img: { width: number; height: number; rgb: Buffer }, colour: [number, number, number], what: string): void {
  const { width: w, height: h } = img;
  assert.equal(img.rgb.length, w * h * 3);
  const points = [[0, 0], [w - 1, 0], [0, h - 1], [w - 1, h - 1], [w >> 1, h >> 1], [w >> 2, h >> 2], [(3 * w) >> 2, (3 * h) >> 2]];
  for (const [x, y] of points) {
    const px = [...img.rgb.subarray((y * w + x) * 3, (y * w + x) * 3 + 3)];
    assert.ok(px.every((v, c) => Math.abs(v - colour[c]) <= 4), `${what} at (${x},${y}) is ${String(px)}, expected ${String(colour)}`);
  }
}

const RED: [number, number, number] = [255, 0, 0];
const BLUE: [number, number, number] = [0, 0, 255];

async function assertRedToBlue(e: MediaEvidence, rel: string, width: number, height: number): Promise<void> {
  assert.equal(e.kind, 'video');
  assert.equal(e.mimeType, 'video/mp4');
  assert.deepEqual([e.width, e.height], [width, height]);
  const prefix = `frames/job_t/${path.basename(rel)}`;
  assert.equal(e.firstFrame?.path, `${prefix}-first.png`);
  assert.equal(e.lastFrame?.path, `${prefix}-last.png`);
  for (const [frame, colour, name] of [[e.firstFrame, RED, 'first'], [e.lastFrame, BLUE, 'last']] as const) {
    assert.equal(frame.sha256, sha(abs(frame.path)));
    assert.equal(frame.size, fs.statSync(abs(frame.path)).size);
    const img = await pngPixels(frame.path);
    assert.deepEqual([img.width, img.height], [width, height], `${name} frame at full resolution`);
    assertColour(img, colour, `${name} frame of ${rel}`);
  }
  assert.equal(e.sha256, sha(abs(rel)));
  assert.equal(e.fileSize, fs.statSync(abs(rel)).size);
  assert.equal(e.frameCount, Number((await videoStream(rel, true)).nb_read_frames), 'frame count = ffprobe -count_frames');
  assert.ok(compareSignatures(e.firstSignature!, e.lastSignature!).score < 0.3, 'red and blue signatures differ');
}

test('23.976 fps with B-frames at 1280x720: first frame red, last frame blue, 72 frames', async () => {
  const rel = await rgbVideo('outputs/rgb-23976.mp4', '1280x720', '24000/1001');
  const s = await videoStream(rel);
  assert.ok((s.has_b_frames ?? 0) > 0, 'the file has B-frames');
  const e = await analyze(rel);
  await assertRedToBlue(e, rel, 1280, 720);
  assert.equal(e.frameRate, '24000/1001');
  assert.equal(e.frameCount, 72);
  assert.equal(e.durationMs, 3003);
  assert.deepEqual([e.videoCodec, e.audioCodec, e.hasVideo, e.hasAudio], ['h264', null, true, false]);
});

test('25 fps with sound: red to blue, both codecs, 75 frames', async () => {
  const rel = await rgbVideo('outputs/rgb-25.mp4', '1280x720', '25', { audio: true });
  assert.ok(((await videoStream(rel)).has_b_frames ?? 0) > 0);
  const e = await analyze(rel);
  await assertRedToBlue(e, rel, 1280, 720);
  assert.equal(e.frameRate, '25/1');
  assert.equal(e.frameCount, 75);
  assert.deepEqual([e.videoCodec, e.audioCodec, e.hasVideo, e.hasAudio], ['h264', 'aac', true, true]);
  assert.ok(Math.abs(e.durationMs! - 3000) <= 50, `duration ${e.durationMs}`);
});

test('variable frame rate: red to blue, every frame counted, avg_frame_rate reported', async () => {
  const rel = await vfrVideo('outputs/rgb-vfr.mp4');
  const s = await videoStream(rel);
  assert.notEqual(s.avg_frame_rate, s.r_frame_rate, 'avg and r frame rates differ');
  assert.ok((await ptsSteps(rel)).size > 1, 'frame durations differ');
  const e = await analyze(rel);
  await assertRedToBlue(e, rel, 640, 360);
  assert.equal(e.frameCount, 65);
  assert.equal(e.frameRate, reduceFraction(s.avg_frame_rate));
});

test('frames are exactly ffmpeg\'s own first and last frames (moving picture, B-frames)', async () => {
  const rel = 'outputs/moving.mp4';
  await ff(['-f', 'lavfi', '-i', 'testsrc2=s=320x240:r=24000/1001:d=2', '-c:v', 'libx264', '-preset', 'veryfast',
    '-x264-params', 'bframes=3', '-pix_fmt', 'yuv420p', abs(rel)]);
  const e = await analyze(rel);
  const rgb = ['-f', 'rawvideo', '-pix_fmt', 'rgb24', 'pipe:1'];
  const first = (await runFfmpeg(['-v', 'error', '-i', abs(rel), '-frames:v', '1', ...rgb])).stdout;
  // ffmpeg's own last frame: every frame written over one file, what remains is the last.
  await ff(['-i', abs(rel), '-vsync', '0', '-f', 'image2', '-update', '1', '-c:v', 'ppm', '-pix_fmt', 'rgb24', abs('last.ppm')]);
  const last = (await runFfmpeg(['-v', 'error', '-i', abs('last.ppm'), ...rgb])).stdout;
  fs.rmSync(abs('last.ppm'));
  assert.ok((await pngPixels(e.firstFrame!.path)).rgb.equals(first), 'first frame identical');
  assert.ok((await pngPixels(e.lastFrame!.path)).rgb.equals(last), 'last frame identical');
  assert.ok(!first.equals(last));
  assert.equal(compareSignatures(e.firstSignature!, signatureOf(first, 320, 240)).score, 1);
  assert.equal(compareSignatures(e.lastSignature!, signatureOf(last, 320, 240)).score, 1);
});

test('a rotated phone video reports the size its frames are shown at', async () => {
  const plain = 'outputs/sideways.mp4';
  await ff(['-f', 'lavfi', '-i', 'color=c=red:s=160x180:r=25:d=0.2', '-f', 'lavfi', '-i', 'color=c=blue:s=160x180:r=25:d=0.2',
    '-filter_complex', '[0][1]hstack', '-c:v', 'libx264', '-preset', 'veryfast', '-pix_fmt', 'yuv420p', abs(plain)]);
  const rel = 'outputs/rotated.mp4';
  await ff(['-i', abs(plain), '-c', 'copy', '-metadata:s:v:0', 'rotate=90', abs(rel)]);
  const e = await analyze(rel);
  assert.deepEqual([e.width, e.height], [180, 320]);
  assert.equal(e.rotation % 180, 90);
  const img = await pngPixels(e.firstFrame!.path);
  assert.deepEqual([img.width, img.height], [180, 320]);
  const shown = (await runFfmpeg(['-v', 'error', '-i', abs(rel), '-frames:v', '1', '-f', 'rawvideo', '-pix_fmt', 'rgb24', 'pipe:1'])).stdout;
  assert.ok(img.rgb.equals(shown), 'as ffmpeg shows it');
  // Turned a quarter: the red and blue halves are now above each other.
  const top = img.rgb.subarray(0, 3);
  const bottom = img.rgb.subarray(img.rgb.length - 3);
  assert.notDeepEqual([...top], [...bottom]);
  assert.deepEqual([...img.rgb.subarray(0, 3)], [...img.rgb.subarray(179 * 3, 180 * 3)], 'first row one colour');
});

test('a PNG is its own first and last frame; a JPEG gets one PNG under frames/', async () => {
  await ff(['-f', 'lavfi', '-i', 'testsrc=s=320x240', '-frames:v', '1', abs('outputs/still.png')]);
  const png = await analyze('outputs/still.png');
  const own = { path: 'outputs/still.png', sha256: sha(abs('outputs/still.png')), size: fs.statSync(abs('outputs/still.png')).size };
  assert.deepEqual([png.kind, png.mimeType, png.width, png.height, png.frameCount, png.durationMs, png.frameRate], ['image', 'image/png', 320, 240, 1, null, null]);
  assert.deepEqual(png.firstFrame, own);
  assert.deepEqual(png.lastFrame, own);
  assert.equal(png.sha256, own.sha256);
  assert.equal(png.firstSignature!.length, SIGNATURE_SIZE * SIGNATURE_SIZE * 3);
  assert.equal(fs.existsSync(abs('frames/job_t/still.png-first.png')), false, 'no copy');

  await ff(['-f', 'lavfi', '-i', 'testsrc=s=320x240', '-frames:v', '1', abs('outputs/still.jpg')]);
  const jpg = await analyze('outputs/still.jpg');
  assert.deepEqual([jpg.kind, jpg.mimeType, jpg.width, jpg.height, jpg.frameCount, jpg.videoCodec], ['image', 'image/jpeg', 320, 240, 1, 'mjpeg']);
  assert.equal(jpg.firstFrame?.path, 'frames/job_t/still.jpg-first.png');
  assert.deepEqual(jpg.lastFrame, jpg.firstFrame);
  assert.equal(jpg.firstFrame.sha256, sha(abs(jpg.firstFrame.path)));
  const decoded = (await runFfmpeg(['-v', 'error', '-i', abs('outputs/still.jpg'), '-f', 'rawvideo', '-pix_fmt', 'rgb24', 'pipe:1'])).stdout;
  assert.ok((await pngPixels(jpg.firstFrame.path)).rgb.equals(decoded), 'the JPEG\'s own pixels');
});

test('audio has a duration and a codec, no frames; an mp4 with only sound is audio/mp4', async () => {
  await ff(['-f', 'lavfi', '-i', 'sine=f=440:d=1.5', '-c:a', 'pcm_s16le', abs('outputs/voice.wav')]);
  const wav = await analyze('outputs/voice.wav');
  assert.deepEqual(
    [wav.kind, wav.mimeType, wav.durationMs, wav.audioCodec, wav.hasAudio, wav.hasVideo, wav.frameCount, wav.width, wav.frameRate],
    ['audio', 'audio/wav', 1500, 'pcm_s16le', true, false, null, null, null]);
  assert.deepEqual([wav.firstFrame, wav.lastFrame, wav.firstSignature, wav.lastSignature], [null, null, null, null]);
  await ff(['-f', 'lavfi', '-i', 'sine=f=440:d=1', '-c:a', 'aac', abs('outputs/voice.mp4')]);
  const m4a = await analyze('outputs/voice.mp4');
  assert.deepEqual([m4a.kind, m4a.mimeType, m4a.audioCodec, m4a.firstFrame], ['audio', 'audio/mp4', 'aac', null]);
});

test('documents are "other" without a probe; unreadable media is a MediaError', async () => {
  fs.writeFileSync(abs('outputs/script.json'), '{"scene": 1}\n');
  const doc = await analyze('outputs/script.json');
  assert.deepEqual([doc.kind, doc.mimeType, doc.fileSize, doc.firstFrame], ['other', 'application/json', 13, null]);
  // Noise, the same bytes every run (a SHA-256 chain).
  const noise = (n: number) => {
    const parts = [crypto.createHash('sha256').update('noise').digest()];
    while (parts.length * 32 < n) parts.push(crypto.createHash('sha256').update(parts[parts.length - 1]).digest());
    return Buffer.concat(parts).subarray(0, n);
  };
  fs.writeFileSync(abs('outputs/noise.dat'), noise(4096));
  await assert.rejects(analyze('outputs/noise.dat'), (e: unknown) => e instanceof MediaError && e.code === 'media_unreadable' && /ffprobe/.test(e.message));
  // Named .bin, ffprobe takes noise for binary text art (a picture of the bytes): not media either.
  fs.writeFileSync(abs('outputs/noise.bin'), noise(4000));
  const { json } = await runFfprobe<{ format: { format_name: string } }>(['-v', 'error', '-show_format', '-of', 'json', abs('outputs/noise.bin')]);
  assert.equal(json!.format.format_name, 'bin');
  await assert.rejects(analyze('outputs/noise.bin'), (e: unknown) => e instanceof MediaError && e.code === 'media_unreadable' && /text art/.test(e.message));
  // The head of an mp4 without its index: sniffs as video/mp4, but ffprobe cannot read it.
  fs.writeFileSync(abs('outputs/cut.mp4'), fs.readFileSync(abs('outputs/rgb-23976.mp4')).subarray(0, 2000));
  await assert.rejects(analyze('outputs/cut.mp4'), (e: unknown) => e instanceof MediaError && e.code === 'media_unreadable');
});

test('a missing ffprobe is a MediaToolError; an abort stops the work; tmp/ is left empty', async () => {
  const saved = process.env.SVC_FFPROBE_PATH;
  process.env.SVC_FFPROBE_PATH = abs('no-such-ffprobe');
  try {
    await assert.rejects(analyze('outputs/rgb-25.mp4'), (e: unknown) => e instanceof MediaToolError && e.reason === 'missing' && e.tool === 'ffprobe');
  } finally {
    if (saved === undefined) delete process.env.SVC_FFPROBE_PATH;
    else process.env.SVC_FFPROBE_PATH = saved;
  }
  await assert.rejects(analyze('outputs/rgb-25.mp4', 'frames/job_t/aborted', { signal: AbortSignal.abort() }),
    (e: unknown) => e instanceof MediaToolError && e.reason === 'aborted');
  await assert.rejects(analyze('outputs/rgb-25.mp4', '../escape'), /unsafe/);
  assert.deepEqual(fs.readdirSync(abs('tmp')), []);
});

test('frames are renamed into place over an earlier attempt; a failed rename leaves tmp/ empty', async () => {
  const rel = 'outputs/moving.mp4';
  fs.mkdirSync(abs('frames/job_r'), { recursive: true });
  fs.writeFileSync(abs('frames/job_r/again-first.png'), 'left by an earlier attempt');
  const e = await analyze(rel, 'frames/job_r/again');
  assert.equal(sha(abs('frames/job_r/again-first.png')), e.firstFrame!.sha256);
  // A directory where the last frame should go: the rename fails, the temporary file is removed.
  fs.mkdirSync(abs('frames/job_r/blocked-last.png/x'), { recursive: true });
  await assert.rejects(analyze(rel, 'frames/job_r/blocked'), (e: NodeJS.ErrnoException) => ['EISDIR', 'ENOTEMPTY', 'EEXIST'].includes(e.code ?? ''));
  assert.deepEqual(fs.readdirSync(abs('tmp')), []);
});

test('signatures: 32x32 area averages; identical frames score 1, red against blue low', () => {
  const frame = (w: number, h: number, at: (x: number, y: number) => [number, number, number]) => {
    const b = Buffer.alloc(w * h * 3);
    for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) b.set(at(x, y), (y * w + x) * 3);
    return b;
  };
  // Left half red, right half blue, at a width that does not divide by 32.
  const split = signatureOf(frame(100, 50, (x) => (x < 50 ? RED : BLUE)), 100, 50);
  assert.equal(split.length, 3072);
  assert.deepEqual([...split.subarray(0, 3)], RED);
  assert.deepEqual([...split.subarray(31 * 3, 32 * 3)], BLUE);
  assert.deepEqual([...split.subarray(15 * 3, 16 * 3)], RED);
  assert.deepEqual([...split.subarray(16 * 3, 17 * 3)], BLUE);
  // One bright column of 3 in a 3-pixel-wide frame: each pixel spans 32/3 cells, area-averaged.
  const thin = signatureOf(frame(3, 2, (x) => (x === 1 ? [255, 255, 255] : [0, 0, 0])), 3, 2);
  assert.equal(thin[16 * 3], 255);
  assert.equal(thin[10 * 3], Math.round(255 / 3), 'cell 10: two parts of pixel 0, one of pixel 1');
  const red = signatureOf(frame(64, 36, () => RED), 64, 36);
  const blue = signatureOf(frame(64, 36, () => BLUE), 64, 36);
  assert.deepEqual(compareSignatures(red, red), { score: 1, meanAbsDiff: 0, histogramSimilarity: 1 });
  const rb = compareSignatures(red, blue);
  assert.equal(rb.meanAbsDiff, 170);
  assert.ok(rb.score < 0.15, `red vs blue ${rb.score}`);
  assert.ok(compareSignatures(split, red).score > rb.score);
});

test('encodePng output decodes back (ffmpeg) to the same bytes', async () => {
  for (const [w, h] of [[1, 1], [37, 23], [256, 3]]) {
    const rgb = crypto.randomBytes(w * h * 3);
    fs.writeFileSync(abs('roundtrip.png'), encodePng(rgb, w, h));
    const back = await pngPixels('roundtrip.png');
    assert.deepEqual([back.width, back.height], [w, h]);
    assert.ok(back.rgb.equals(rgb), `${w}x${h}`);
  }
  assert.throws(() => encodePng(Buffer.alloc(5), 2, 1), RangeError);
});
