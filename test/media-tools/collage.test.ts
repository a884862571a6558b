// Media tools and the composite check: ffmpeg/ffprobe discovery in the contract's order, runFfmpeg's
// errors, time-out and abort; then detectComposite on real images: the model server's single
// picture, 2x2 collage and split screen and the first frame of its videos, a 3x3 contact sheet built
// with ffmpeg, pictures that must pass (a smooth gradient, an off-centre edge, stripes), synthetic
// frames for the rules (gutters, thin lines, colour bars, repeated panels), and the test subset of
// the labelled set (test/helpers/collage-set.ts) with its detection and false-positive rates.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { analyzeFrame, detectComposite, type CompositeResult } from '../../src/media-tools/collage.ts';
import { findMediaTools, MediaToolError, runFfmpeg } from '../../src/media-tools/ffmpeg.ts';
import { startModelServer, type RunningModelServer } from '../../tools/model-server/server.ts';
import { buildCollageSet } from '../helpers/collage-set.ts';

let ms: RunningModelServer;
let dir: string;
before(async () => {
  ms = await startModelServer();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-collage-'));
});
after(async () => {
  await ms.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** An image from the model server with the given faults, saved to a file. */
async function served(name: string, prompt: string, faults: Record<string, unknown> = {}, size?: string): Promise<string> {
  ms.faults.set({ reset: true, ...faults });
  const answer = await fetch(`${ms.url}/v1/images/generations`, { method: 'POST', body: JSON.stringify({ prompt, size }) });
  const { data } = (await answer.json()) as { data: Array<{ url: string }> };
  const file = path.join(dir, name);
  fs.writeFileSync(file, Buffer.from(await (await fetch(data[0].url)).arrayBuffer()));
  return file;
}

/** The seams found are those expected, each within 0.01. */
function assertSeams(result: CompositeResult, vertical: number[], horizontal: number[], message = ''): void {
  const close = (got: number[], want: number[]) => got.length === want.length && got.every((v, i) => Math.abs(v - want[i]) <= 0.01);
  assert.ok(close(result.seams.vertical, vertical) && close(result.seams.horizontal, horizontal), `${message} ${JSON.stringify(result)}`);
}

/** A PNG drawn by ffmpeg from a lavfi source and filter chain. */
async function drawn(name: string, source: string, filter?: string): Promise<string> {
  const file = path.join(dir, name);
  await runFfmpeg(['-v', 'error', '-f', 'lavfi', '-i', source, ...(filter ? ['-vf', filter] : []), '-frames:v', '1', '-y', file]);
  return file;
}

test('tools are found through SVC_* variables first, then PATH, then the npm packages; answers are cached', () => {
  const bin = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bin-'));
  try {
    for (const name of ['ffmpeg', 'ffprobe']) fs.writeFileSync(path.join(bin, name), '#!/bin/sh\n', { mode: 0o755 });
    fs.writeFileSync(path.join(bin, 'not-executable'), '');
    const configured = findMediaTools({ SVC_FFMPEG_PATH: '/opt/ff/ffmpeg', PATH: bin });
    assert.deepEqual(configured.ffmpeg, { path: '/opt/ff/ffmpeg', source: 'SVC_FFMPEG_PATH' });
    assert.deepEqual(configured.ffprobe, { path: path.join(bin, 'ffprobe'), source: 'PATH' });
    const npm = findMediaTools({ PATH: path.join(bin, 'missing') });
    assert.equal(npm.ffmpeg?.source, 'npm');
    assert.equal(npm.ffprobe?.source, 'npm');
    fs.accessSync(npm.ffprobe.path, fs.constants.X_OK);
    assert.equal(findMediaTools({ PATH: path.join(bin, 'missing') }), npm, 'cached per environment');
  } finally {
    fs.rmSync(bin, { recursive: true, force: true });
  }
});

test('runFfmpeg: stdout as bytes, stdin input, failures with the end of stderr, time-out and abort', async () => {
  const png = await runFfmpeg(['-v', 'error', '-f', 'lavfi', '-i', 'color=c=0x102030:s=2x2:d=1', '-frames:v', '1', '-c:v', 'png', '-f', 'image2pipe', 'pipe:1']);
  assert.equal(png.stdout.subarray(1, 4).toString(), 'PNG');
  const raw = await runFfmpeg(['-v', 'error', '-i', 'pipe:0', '-f', 'rawvideo', '-pix_fmt', 'rgb24', 'pipe:1'], { input: png.stdout });
  // The colour source works in YUV: a unit or two of rounding on the way back to RGB.
  const expected = Array(4).fill([0x10, 0x20, 0x30]).flat();
  assert.equal(raw.stdout.length, expected.length);
  assert.ok([...raw.stdout].every((v, i) => Math.abs(v - expected[i]) <= 2), raw.stdout.toString('hex'));
  const failed = await runFfmpeg(['-v', 'error', '-i', path.join(dir, 'nothing-here.png'), '-f', 'null', '-']).catch((e: unknown) => e);
  assert.ok(failed instanceof MediaToolError);
  assert.equal(failed.reason, 'failed');
  assert.match(failed.message, /ffmpeg exited with 1: .*nothing-here\.png/);
  const slow = ['-v', 'error', '-re', '-f', 'lavfi', '-i', 'color=s=16x16:d=30', '-f', 'null', '-'];
  await assert.rejects(runFfmpeg(slow, { timeoutMs: 100 }), (e: MediaToolError) => e.reason === 'timeout');
  await assert.rejects(runFfmpeg(slow, { signal: AbortSignal.timeout(100) }), (e: MediaToolError) => e.reason === 'aborted');
});

test('the model server\'s single picture with its caption is not a composite', async () => {
  const file = await served('single.png', 'a gray cat in a hat, with a long caption drawn across the middle of the image');
  assert.deepEqual(await detectComposite(file), { composite: null, seams: { vertical: [], horizontal: [] } });
});

test('a 2x2 collage is a collage, seams at the middle both ways (also at an odd size)', async () => {
  for (const [name, size] of [['collage.png', undefined], ['collage-odd.png', '333x201']] as const) {
    const result = await detectComposite(await served(name, 'a blue boat', { collage: true }, size));
    assert.equal(result.composite, 'collage', name);
    assert.ok(Math.abs(result.seams.vertical[0] - 0.5) < 0.02 && Math.abs(result.seams.horizontal[0] - 0.5) < 0.02, JSON.stringify(result));
  }
});

test('a side-by-side split is a split screen', async () => {
  const result = await detectComposite(await served('split.png', 'a black cat', { split: true }));
  assert.deepEqual(result, { composite: 'split_screen', seams: { vertical: [0.5], horizontal: [] } });
});

test('a 3x3 contact sheet built with ffmpeg is a contact sheet', async () => {
  // Nine 100x80 frames, each rotated further round the colour wheel, tiled 3x3.
  const file = await drawn('sheet.png', 'color=c=red:s=100x80:r=9:d=1', 'hue=H=2*PI*n/9,tile=3x3');
  const result = await detectComposite(file);
  assert.equal(result.composite, 'contact_sheet');
  assertSeams(result, [1 / 3, 2 / 3], [1 / 3, 2 / 3]);
});

test('smooth gradients, an off-centre edge in the scene and stripes are single pictures', async () => {
  const gradient = await drawn('gradient.png', 'color=c=black:s=320x240:d=1', "geq=r='X*255/W':g='Y*255/H':b='128'");
  assert.equal((await detectComposite(gradient)).composite, null);
  const edge = await drawn('door.png', 'color=c=0x404040:s=320x240:d=1', 'drawbox=x=64:y=0:w=256:h=240:color=0xe0e0e0:t=fill');
  const door = await detectComposite(edge);
  assert.equal(door.composite, null);
  assertSeams(door, [0.2], [], 'the seam is seen, but it is no panel border');
  const stripes = await drawn('stripes.png', 'color=c=white:s=320x240:d=1', 'drawgrid=w=40:h=240:t=20:c=black');
  assert.equal((await detectComposite(stripes)).composite, null);
});

test('a seam that falls inside one pixel of the small frame is still found', () => {
  const size = 24;
  const rgb = new Uint8Array(size * size * 3);
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      // Left half dark, right half light, column 12 the average of both (an area-scaled edge).
      const v = x < 12 ? 30 : x === 12 ? 125 : 220;
      rgb.fill(v, (y * size + x) * 3, (y * size + x) * 3 + 3);
    }
  }
  const result = analyzeFrame(rgb, size, size);
  assert.equal(result.composite, 'split_screen');
  assert.ok(Math.abs(result.seams.vertical[0] - 12.5 / size) < 0.03, JSON.stringify(result.seams));
});

/** An rgb24 frame painted pixel by pixel. */
function paint(width: number, height: number, colour: (x: number, y: number) => readonly number[]): Uint8Array {
  const rgb = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) rgb.set(colour(x, y), (y * width + x) * 3);
  return rgb;
}

/** Deterministic noise in 0..1 per pixel. */
const hash = (x: number, y: number, seed = 1) => {
  let h = Math.imul(x * 374761393 + y * 668265263 + seed * 2147483647, 1274126177);
  h = Math.imul(h ^ (h >>> 13), 1103515245);
  return ((h ^ (h >>> 16)) >>> 0) / 2 ** 32;
};

test('a gutter between two panels of one texture is a border; a thin line on a plain background is not', () => {
  const n = 128;
  // Grey noise on both sides of a black gutter two pixels wide.
  const gutter = paint(n, n, (x, y) => (x === 63 || x === 64 ? [0, 0, 0] : Array(3).fill(88 + Math.floor(hash(x, y) * 80))));
  const split = analyzeFrame(gutter, n, n);
  assert.equal(split.composite, 'split_screen');
  assertSeams(split, [0.5], []);
  // The same two-pixel line across a plain picture: both sides alike, nothing flatter than them.
  const line = paint(n, n, (x) => (x === 63 || x === 64 ? [250, 250, 250] : [30, 60, 200]));
  assert.equal(analyzeFrame(line, n, n).composite, null);
});

test('bands that vary only along their length are colour bars; bands that hold pictures are panels', () => {
  const n = 120;
  const band = (y: number) => Math.min(2, Math.floor((y * 3) / n));
  // Three gradients stacked, like ffmpeg's rgbtestsrc.
  const bars = paint(n, n, (x, y) => [0, 1, 2].map((ch) => (ch === band(y) ? Math.round((x * 255) / n) : 0)));
  assert.equal(analyzeFrame(bars, n, n).composite, null);
  // Three pictures stacked: each its own colour with a box in it.
  const colours = [[200, 40, 40], [40, 160, 60], [40, 60, 200]];
  const boxes = paint(n, n, (x, y) => (x > 30 + band(y) * 20 && x < 60 + band(y) * 20 && y % 40 > 10 && y % 40 < 30 ? [240, 240, 240] : colours[band(y)]));
  const stacked = analyzeFrame(boxes, n, n);
  assert.equal(stacked.composite, 'split_screen');
  assertSeams(stacked, [], [1 / 3, 2 / 3]);
});

test('one picture twice side by side is a split screen though nothing marks the border', () => {
  const n = 128;
  // Soft blobs on a plain background, the left half repeated on the right: the edges match.
  const blob = (x: number, y: number) => Math.max(0, 1 - Math.hypot(x - 20, y - 40) / 14) + Math.max(0, 1 - Math.hypot(x - 44, y - 90) / 18);
  const twice = paint(n, n, (x, y) => {
    const v = blob(x % 64, y);
    return [60 + v * 180, 90 + v * 100, 140 - v * 90].map(Math.round);
  });
  assert.equal(analyzeFrame(twice, n, n).composite, 'split_screen');
  // The same blobs once, across the whole width: one picture.
  const once = paint(n, n, (x, y) => {
    const v = blob(x / 2, y);
    return [60 + v * 180, 90 + v * 100, 140 - v * 90].map(Math.round);
  });
  assert.equal(analyzeFrame(once, n, n).composite, null);
});

test('a line of text across the middle is no panel border', () => {
  const n = 128;
  // Dark strokes on a light background between rows 58 and 70, across the width.
  const text = paint(n, n, (x, y) => (y >= 58 && y < 70 && (x % 7 === 2 || (y === 63 && x % 7 < 5) || hash(x, y) < 0.15) ? [20, 20, 20] : [230, 230, 220]));
  assert.equal(analyzeFrame(text, n, n).composite, null);
});

test('the first frame of a model server video is a single picture', async () => {
  ms.faults.set({ reset: true });
  const created = await fetch(`${ms.url}/v1/videos`, { method: 'POST', body: JSON.stringify({ prompt: 'a red door at dawn', size: '576x1024', seconds: 1 }) });
  const { id } = (await created.json()) as { id: string };
  for (let status = ''; status !== 'completed';) {
    ({ status } = (await (await fetch(`${ms.url}/v1/videos/${id}`)).json()) as { status: string });
    assert.notEqual(status, 'failed');
    if (status !== 'completed') await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const file = path.join(dir, 'video.mp4');
  fs.writeFileSync(file, Buffer.from(await (await fetch(`${ms.url}/v1/videos/${id}/content`)).arrayBuffer()));
  // detectComposite decodes the first frame of a video as it does an image.
  assert.equal((await detectComposite(file)).composite, null);
});

test('the labelled test set: composites are found and single pictures pass', async () => {
  const setDir = fs.mkdtempSync(path.join(dir, 'set-'));
  const set = await buildCollageSet(setDir, { size: 'test' });
  const results = new Array<CompositeResult>(set.length);
  let next = 0;
  await Promise.all([0, 1].map(async () => {
    for (let i = next++; i < set.length; i = next++) results[i] = await detectComposite(set[i].file);
  }));
  const composites = set.filter((e) => e.label === 'composite');
  const singles = set.filter((e) => e.label === 'single');
  assert.ok(composites.length >= 20 && singles.length >= 25, `${composites.length} composites, ${singles.length} singles`);
  const wrong = set.flatMap((e, i) => ((results[i].composite !== null) === (e.label === 'composite')
    ? [] : [`${e.label} ${e.family} ${e.layout ?? ''} (${e.detail}): ${JSON.stringify(results[i])}`]));
  const missed = wrong.filter((w) => w.startsWith('composite')).length;
  const flagged = wrong.length - missed;
  // The bench's goal on the full set is 95% found and 2% flagged; on this smaller set one of each may go wrong.
  assert.ok(missed <= Math.floor(composites.length * 0.05) + 1, `missed ${missed} of ${composites.length}:\n${wrong.join('\n')}`);
  assert.ok(flagged <= 1, `flagged ${flagged} of ${singles.length}:\n${wrong.join('\n')}`);
  // The verdict mostly names the layout the composite was built as (a grid whose panels look
  // alike along one border may be seen as panels on one axis only).
  const named = set.filter((e, i) => {
    if (e.label !== 'composite' || results[i].composite === null) return false;
    const [cols, rows] = e.layout!.split('x').map(Number);
    return results[i].composite === (cols >= 3 && rows >= 3 ? 'contact_sheet' : cols >= 2 && rows >= 2 ? 'collage' : 'split_screen');
  });
  assert.ok(named.length >= 0.8 * (composites.length - missed), `${named.length} of ${composites.length - missed} named as built`);
});

test('a file ffmpeg cannot decode is an error, not a verdict', async () => {
  const file = path.join(dir, 'not-an-image.png');
  fs.writeFileSync(file, 'hello');
  await assert.rejects(detectComposite(file), MediaToolError);
});
