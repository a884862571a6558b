// Media tools and the composite check: ffmpeg/ffprobe discovery in the contract's order, runFfmpeg's
// errors, time-out and abort; then detectComposite on real images: the model server's single
// picture, 2x2 collage and split screen, a 3x3 contact sheet built with ffmpeg, and pictures that
// must pass (a smooth gradient, an off-centre edge, stripes).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { analyzeFrame, detectComposite } from '../src/media/collage.ts';
import { findMediaTools, MediaToolError, runFfmpeg } from '../src/media/ffmpeg.ts';
import { startModelServer, type RunningModelServer } from '../src/modelserver/server.ts';

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
    fs.accessSync(npm.ffprobe!.path, fs.constants.X_OK);
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
  assert.deepEqual(result, { composite: 'contact_sheet', seams: { vertical: [0.333, 0.667], horizontal: [0.333, 0.667] } });
});

test('smooth gradients, an off-centre edge in the scene and stripes are single pictures', async () => {
  const gradient = await drawn('gradient.png', 'color=c=black:s=320x240:d=1', "geq=r='X*255/W':g='Y*255/H':b='128'");
  assert.equal((await detectComposite(gradient)).composite, null);
  const edge = await drawn('door.png', 'color=c=0x404040:s=320x240:d=1', 'drawbox=x=64:y=0:w=256:h=240:color=0xe0e0e0:t=fill');
  const door = await detectComposite(edge);
  assert.deepEqual(door, { composite: null, seams: { vertical: [0.2], horizontal: [] } }, 'the seam is seen, but it is no panel border');
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

test('a file ffmpeg cannot decode is an error, not a verdict', async () => {
  const file = path.join(dir, 'not-an-image.png');
  fs.writeFileSync(file, 'hello');
  await assert.rejects(detectComposite(file), MediaToolError);
});
