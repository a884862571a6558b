// Episode composition on real clips made by ffmpeg: red 1.0 s at 24 fps 320x180 with a tone, green
// 1.5 s at 25 fps 640x360 without audio, blue 0.7 s at 30 fps portrait 180x320 with a tone. The cut
// is checked with ffprobe (duration, frame count, audio layout) and by decoding: every frame's
// centre colour belongs to its segment (so the joins are in order and exact), the portrait clip is
// pillarboxed, the silent clip is silent. Then voice lines (WAV sine tones) mixed over their
// segments, measured on the graph's own output (exact sample counts) and in the encoded cut; a cut at
// 24000/1001 whose frame count only the cumulative rounding gets right, the arithmetic alone, and
// the errors.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { composeGraph, composeTarget, composeVideos, parseFrameRate, planSegments, type ComposeInput } from '../../src/media-tools/compose.ts';
import { MediaToolError, runFfmpeg, runFfprobe } from '../../src/media-tools/ffmpeg.ts';

let dir: string;
let red: ComposeInput;
let green: ComposeInput;
let blue: ComposeInput;
/** Voice lines: a 1 kHz tone of 0.6 s (mono, 24 kHz) and a 1.6 kHz tone of 3 s (stereo, 44.1 kHz). */
let shortVoice: string;
let longVoice: string;

/** A solid-colour H.264 clip, with a mono 44.1 kHz tone when `tone` is set. */
async function clip(name: string, colour: string, size: string, fps: number, seconds: number, tone: number | null): Promise<ComposeInput> {
  const file = path.join(dir, name);
  const [width, height] = size.split('x').map(Number);
  await runFfmpeg([
    '-v', 'error', '-f', 'lavfi', '-i', `color=c=${colour}:s=${size}:r=${fps}:d=${seconds}`,
    ...(tone ? ['-f', 'lavfi', '-i', `sine=frequency=${tone}:sample_rate=44100:duration=${seconds}`] : []),
    '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-threads', '2',
    ...(tone ? ['-c:a', 'aac', '-ac', '1'] : []), '-f', 'mp4', '-y', file,
  ]);
  return { path: file, durationMs: seconds * 1000, width, height, frameRate: `${fps}/1`, hasAudio: tone !== null };
}

/** A WAV sine tone. */
async function tone(name: string, frequency: number, seconds: number, rate: number, channels: number): Promise<string> {
  const file = path.join(dir, name);
  await runFfmpeg(['-v', 'error', '-f', 'lavfi', '-i', `sine=frequency=${frequency}:sample_rate=${rate}:duration=${seconds}`,
    '-ac', String(channels), '-c:a', 'pcm_s16le', '-f', 'wav', '-y', file]);
  return file;
}

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-compose-test-'));
  [red, green, blue, shortVoice, longVoice] = await Promise.all([
    clip('red.mp4', '0xFF0000', '320x180', 24, 1.0, 440),
    clip('green.mp4', '0x00FF00', '640x360', 25, 1.5, null),
    clip('blue.mp4', '0x0000FF', '180x320', 30, 0.7, 660),
    tone('voice-1k.wav', 1000, 0.6, 24_000, 1),
    tone('voice-1600.wav', 1600, 3, 44_100, 2),
  ]);
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

interface Stream { codec_type: string; duration: string; nb_frames?: string; r_frame_rate: string; width?: number; height?: number; sample_rate?: string; channels?: number }

async function streams(file: string): Promise<{ video: Stream; audio: Stream | undefined }> {
  const { json } = await runFfprobe<{ streams: Stream[] }>(['-v', 'error', '-show_streams', '-of', 'json', file]);
  const all = json!.streams;
  return { video: all.find((s) => s.codec_type === 'video')!, audio: all.find((s) => s.codec_type === 'audio') };
}

/** All frames decoded as rgb24. */
async function decodedFrames(file: string, width: number, height: number): Promise<Buffer[]> {
  const { stdout } = await runFfmpeg(['-v', 'error', '-i', file, '-map', '0:v:0', '-vsync', '0', '-f', 'rawvideo', '-pix_fmt', 'rgb24', 'pipe:1']);
  const size = width * height * 3;
  assert.equal(stdout.length % size, 0);
  return Array.from({ length: stdout.length / size }, (_, i) => stdout.subarray(i * size, (i + 1) * size));
}

/** 'red' | 'green' | 'blue' | 'black' | '?' of the pixel at (x, y). */
function colourAt(frame: Buffer, width: number, x: number, y: number): string {
  const i = (y * width + x) * 3;
  const [r, g, b] = [frame[i], frame[i + 1], frame[i + 2]];
  if (r < 40 && g < 40 && b < 40) return 'black';
  if (r > 200 && g < 60 && b < 60) return 'red';
  if (g > 200 && r < 60 && b < 60) return 'green';
  if (b > 200 && r < 60 && g < 60) return 'blue';
  return `?(${r},${g},${b})`;
}

/** RMS (0..1) of the mono-mixed audio between two times, decoded as 48 kHz s16. */
function rms(pcm: Int16Array, fromS: number, toS: number): number {
  let sum = 0;
  const [a, b] = [Math.round(fromS * 48_000), Math.round(toS * 48_000)];
  for (let i = a; i < b; i++) sum += (pcm[2 * i] / 32768) ** 2 + (pcm[2 * i + 1] / 32768) ** 2;
  return Math.sqrt(sum / (2 * (b - a)));
}

/** Amplitude (0..1, both channels averaged) of one frequency between two times: a single DFT bin. */
function toneLevel(pcm: Int16Array | Float32Array, frequency: number, fromS: number, toS: number): number {
  const scale = pcm instanceof Int16Array ? 32768 : 1;
  const [a, b] = [Math.round(fromS * 48_000), Math.round(toS * 48_000)];
  let level = 0;
  for (const channel of [0, 1]) {
    let [re, im] = [0, 0];
    for (let i = a; i < b; i++) {
      const phase = (2 * Math.PI * frequency * i) / 48_000;
      re += (pcm[2 * i + channel] / scale) * Math.cos(phase);
      im += (pcm[2 * i + channel] / scale) * Math.sin(phase);
    }
    level += (Math.hypot(re, im) * 2) / (b - a) / 2;
  }
  return level;
}

/** A file's (or the cut's) audio decoded to interleaved 48 kHz stereo s16. */
async function decodedAudio(file: string): Promise<Int16Array> {
  const { stdout } = await runFfmpeg(['-v', 'error', '-i', file, '-map', '0:a:0', '-f', 's16le', '-ac', '2', '-ar', '48000', 'pipe:1']);
  return new Int16Array(stdout.buffer, stdout.byteOffset, stdout.length >> 1);
}

test('parseFrameRate reads rationals, integers and decimals, reduced; null for 0/0 and junk', () => {
  assert.deepEqual(parseFrameRate('24000/1001'), { num: 24000, den: 1001 });
  assert.deepEqual(parseFrameRate('25/1'), { num: 25, den: 1 });
  assert.deepEqual(parseFrameRate('25'), { num: 25, den: 1 });
  assert.deepEqual(parseFrameRate('50/2'), { num: 25, den: 1 });
  assert.deepEqual(parseFrameRate('29.97'), { num: 2997, den: 100 });
  for (const junk of ['0/0', '0', '25/0', '-25', 'abc', '', '25/1/1', '1e3']) assert.equal(parseFrameRate(junk), null, junk);
});

test('composeTarget takes the first input\'s size (even) and rate unless overridden', () => {
  const odd = { ...red, width: 321, height: 181, frameRate: '30000/1001' };
  assert.deepEqual(composeTarget([odd, green]), { width: 320, height: 180, frameRate: '30000/1001' });
  assert.deepEqual(composeTarget([odd], { frameRate: '25' }), { width: 320, height: 180, frameRate: '25' });
  assert.deepEqual(composeTarget([], { width: 1920, height: 1080, frameRate: '24/1' }), { width: 1920, height: 1080, frameRate: '24/1' });
  assert.throws(() => composeTarget([]), /no inputs/);
});

test('segments round the cumulative time, so the total is within half a frame of the sum', () => {
  const rate = { num: 24000, den: 1001 };
  // Rounded alone, four segments of 0.7/1.5/0.7/0.7 s would be 17+36+17+17 = 87 frames; the sum is 86.31.
  const plan = planSegments([700, 1500, 700, 700], rate);
  assert.deepEqual(plan.map((s) => [s.startFrame, s.frames]), [[0, 17], [17, 36], [53, 17], [70, 16]]);
  // 24000/1001 has 2002 samples a frame exactly.
  assert.deepEqual(plan.map((s) => s.samples), [17 * 2002, 36 * 2002, 17 * 2002, 16 * 2002]);
  // 30000/1001: 1601.6 samples a frame; each join's sample count is rounded from its frame count.
  const ntsc = planSegments([1000, 1000, 1000], { num: 30000, den: 1001 });
  assert.deepEqual(ntsc.map((s) => s.frames), [30, 30, 30]);
  assert.deepEqual(ntsc.map((s) => s.samples), [48048, 48048, 48048]);
  const many = planSegments(Array(100).fill(33), { num: 24, den: 1 });
  assert.equal(many.reduce((n, s) => n + s.frames, 0), Math.round(3.3 * 24));
  assert.ok(many.every((s) => s.frames === 0 || s.frames === 1));
});

test('three shots are joined in order, normalized, with the duration of their sum', async () => {
  const target = composeTarget([red, green, blue]);
  assert.deepEqual(target, { width: 320, height: 180, frameRate: '24/1' });
  const out = path.join(dir, 'episode.mp4');
  const result = await composeVideos([red, green, blue], target, out);
  // C = 1.0, 2.5, 3.2 s -> 24, 60, 77 frames.
  assert.deepEqual(result, {
    durationMs: 3208, frames: 77, frameRate: '24/1', width: 320, height: 180,
    segments: [
      { index: 0, startFrame: 0, frames: 24, startMs: 0, durationMs: 1000 },
      { index: 1, startFrame: 24, frames: 36, startMs: 1000, durationMs: 1500 },
      { index: 2, startFrame: 60, frames: 17, startMs: 2500, durationMs: 708 },
    ],
  });

  const { video, audio } = await streams(out);
  const frame = 1 / 24;
  assert.equal(video.width, 320);
  assert.equal(video.height, 180);
  assert.equal(video.r_frame_rate, '24/1');
  assert.equal(Number(video.nb_frames), 77);
  assert.ok(Math.abs(Number(video.duration) - 3.2) <= frame, `video ${video.duration}`);
  assert.ok(audio, 'an audio stream');
  assert.equal(audio.sample_rate, '48000');
  assert.equal(audio.channels, 2);
  assert.ok(Math.abs(Number(audio.duration) - 3.2) <= frame, `audio ${audio.duration}`);

  const frames = await decodedFrames(out, 320, 180);
  assert.equal(frames.length, 77);
  const centre = frames.map((f) => colourAt(f, 320, 160, 90));
  // The joins: frames 0, 23 | 24, 59 | 60, 76; and every frame in between.
  assert.deepEqual([centre[0], centre[23], centre[24], centre[59], centre[60], centre[76]], ['red', 'red', 'green', 'green', 'blue', 'blue']);
  assert.deepEqual(centre, [...Array(24).fill('red'), ...Array(36).fill('green'), ...Array(17).fill('blue')]);
  // Landscape clips fill the frame; the portrait one is pillarboxed (about 102 px wide, centred).
  assert.equal(colourAt(frames[10], 320, 2, 2), 'red');
  assert.equal(colourAt(frames[40], 320, 2, 2), 'green');
  assert.deepEqual([colourAt(frames[70], 320, 10, 90), colourAt(frames[70], 320, 310, 90)], ['black', 'black']);
  assert.deepEqual([colourAt(frames[70], 320, 115, 90), colourAt(frames[70], 320, 205, 90)], ['blue', 'blue']);

  // Tone, silence (added for the clip without audio), tone: away from the joins.
  const pcm = await decodedAudio(out);
  const levels = [rms(pcm, 0.2, 0.8), rms(pcm, 1.2, 2.3), rms(pcm, 2.7, 3.0)];
  assert.ok(levels[0] > 0.02 && levels[1] < 0.001 && levels[2] > 0.02, levels.join(' '));
});

test('a voice line starts with its shot, is padded or cut at the segment end, and is added to the segment\'s audio', async () => {
  // Shot 1: the silent green clip (1.5 s) with the 0.6 s 1 kHz line; shot 2: red (1.0 s, 440 Hz) with the 3 s 1.6 kHz line.
  const inputs = [{ ...green, voicePath: shortVoice }, { ...red, voicePath: longVoice }];
  const target = composeTarget(inputs, { frameRate: '24' });
  const plan = planSegments(inputs.map((i) => i.durationMs), { num: 24, den: 1 });
  assert.deepEqual(plan.map((s) => [s.frames, s.samples]), [[36, 72_000], [24, 48_000]]);
  // The voice lines alone, converted to 48 kHz stereo as the graph does: the levels the cut must keep (a sum, not halved).
  const voiceLevel = toneLevel(await decodedAudio(shortVoice), 1000, 0.05, 0.55);
  const longLevel = toneLevel(await decodedAudio(longVoice), 1600, 0.05, 0.95);
  const redLevel = toneLevel(await decodedAudio(red.path), 440, 0.05, 0.95);
  assert.ok(voiceLevel > 0.05 && longLevel > 0.05 && redLevel > 0.05, `${voiceLevel} ${longLevel} ${redLevel}`);

  // The graph's own audio, before the AAC encoder: exactly the planned samples, the lines where they belong.
  const { graph, files } = composeGraph(inputs, target, { num: 24, den: 1 }, plan);
  assert.deepEqual(files, [green.path, red.path, shortVoice, longVoice]);
  const { stdout } = await runFfmpeg([
    '-v', 'error', ...files.flatMap((f) => ['-i', f]), '-filter_complex', graph,
    '-map', '[a]', '-c:a', 'pcm_f32le', '-f', 'f32le', 'pipe:1', '-map', '[v]', '-f', 'null', '-',
  ]);
  const raw = new Float32Array(stdout.buffer.slice(stdout.byteOffset, stdout.byteOffset + stdout.length));
  assert.equal(raw.length / 2, 72_000 + 48_000, 'total samples unchanged by the voice lines');
  const near = (v: number, expected: number, tolerance: number) => Math.abs(v - expected) <= expected * tolerance;
  const exact = {
    voice: toneLevel(raw, 1000, 0.05, 0.55), voiceAfter: toneLevel(raw, 1000, 0.65, 2.5),
    longBefore: toneLevel(raw, 1600, 0.05, 1.45), long: toneLevel(raw, 1600, 1.55, 2.4), longLast: toneLevel(raw, 1600, 2.45, 2.5),
    red: toneLevel(raw, 440, 1.55, 2.45),
  };
  assert.ok(near(exact.voice, voiceLevel, 0.02) && exact.voiceAfter < voiceLevel / 100, JSON.stringify(exact));
  assert.ok(near(exact.long, longLevel, 0.02) && near(exact.longLast, longLevel, 0.02) && exact.longBefore < longLevel / 100, JSON.stringify(exact));
  assert.ok(near(exact.red, redLevel, 0.05), `the clip's own audio is kept under the line: ${JSON.stringify(exact)}`);
  let tail = 0;
  for (let i = Math.round(0.65 * 48_000) * 2; i < 72_000 * 2; i++) tail = Math.max(tail, Math.abs(raw[i]));
  assert.ok(tail < 1e-3, `silence after the short line ends, in its segment: peak ${tail}`);

  // The encoded cut: same frames and duration as without voice lines, the same levels within the codec's error.
  const out = path.join(dir, 'voiced.mp4');
  const result = await composeVideos(inputs, target, out);
  assert.deepEqual([result.frames, result.durationMs], [60, 2500]);
  const { video, audio } = await streams(out);
  assert.equal(Number(video.nb_frames), 60);
  assert.ok(Math.abs(Number(audio!.duration) - 2.5) <= 1 / 24, `audio ${audio!.duration}`);
  const pcm = await decodedAudio(out);
  const coded = {
    voice: toneLevel(pcm, 1000, 0.05, 0.55), voiceAfter: toneLevel(pcm, 1000, 0.7, 2.45), quietAfter: rms(pcm, 0.7, 1.45),
    longBefore: toneLevel(pcm, 1600, 0.05, 1.45), long: toneLevel(pcm, 1600, 1.55, 2.45), red: toneLevel(pcm, 440, 1.55, 2.45),
  };
  assert.ok(near(coded.voice, voiceLevel, 0.1) && coded.voiceAfter < voiceLevel / 20 && coded.quietAfter < 0.002, JSON.stringify(coded));
  assert.ok(near(coded.long, longLevel, 0.1) && coded.longBefore < longLevel / 20 && near(coded.red, redLevel, 0.1), JSON.stringify(coded));
});

test('a cut at 24000/1001 from 25 and 30 fps inputs has round(sum * rate) frames', async () => {
  const inputs = [blue, green, blue, blue];
  const target = composeTarget(inputs, { frameRate: '24000/1001' });
  assert.deepEqual(target, { width: 180, height: 320, frameRate: '24000/1001' });
  const out = path.join(dir, 'ntsc.mp4');
  const result = await composeVideos(inputs, target, out);
  assert.equal(result.frames, 86);
  assert.equal(result.frameRate, '24000/1001');
  const frame = 1001 / 24000;
  assert.ok(Math.abs(result.durationMs / 1000 - 3.6) <= frame / 2);
  const { video, audio } = await streams(out);
  assert.equal(video.r_frame_rate, '24000/1001');
  assert.equal(Number(video.nb_frames), 86);
  assert.ok(Math.abs(Number(video.duration) - 3.6) <= frame, `video ${video.duration}`);
  assert.ok(Math.abs(Number(audio!.duration) - 3.6) <= frame, `audio ${audio!.duration}`);
  const centre = (await decodedFrames(out, 180, 320)).map((f) => colourAt(f, 180, 90, 160));
  assert.deepEqual(centre, [...Array(17).fill('blue'), ...Array(36).fill('green'), ...Array(33).fill('blue')]);
});

test('an input shorter than announced is held on its last frame, a longer one cut, one without a frame left out', async () => {
  // Red (1.0 s) announced as 1.5 s: 36 frames; blue announced as 10 ms: no frame (its voice line goes with it); green (1.5 s) as 0.5 s: 12.
  const inputs = [{ ...red, durationMs: 1500 }, { ...blue, durationMs: 10, voicePath: shortVoice }, { ...green, durationMs: 500 }];
  const out = path.join(dir, 'held.mp4');
  const result = await composeVideos(inputs, composeTarget(inputs), out);
  assert.deepEqual(result.segments.map((s) => [s.startFrame, s.frames]), [[0, 36], [36, 0], [36, 12]]);
  assert.equal(result.frames, 48);
  const { video, audio } = await streams(out);
  assert.equal(Number(video.nb_frames), 48);
  assert.ok(Math.abs(Number(audio!.duration) - 2) <= 1 / 24, `audio ${audio!.duration}`);
  const centre = (await decodedFrames(out, 320, 180)).map((f) => colourAt(f, 320, 160, 90));
  assert.deepEqual(centre, [...Array(36).fill('red'), ...Array(12).fill('green')]);
});

test('errors: no inputs, bad target or input, unreadable file, missing audio (of a clip or a voice line), abort', async () => {
  const out = path.join(dir, 'bad.mp4');
  const target = { width: 320, height: 180, frameRate: '24/1' };
  await assert.rejects(composeVideos([], target, out), /at least one input/);
  await assert.rejects(composeVideos([red], { ...target, frameRate: '0/0' }, out), /frame rate "0\/0"/);
  await assert.rejects(composeVideos([red], { ...target, width: 321 }, out), /size 321x180/);
  await assert.rejects(composeVideos([{ ...red, width: 0 }], target, out), /input 0 .* size 0x180/);
  await assert.rejects(composeVideos([{ ...red, durationMs: Number.NaN }], target, out), /duration/);
  await assert.rejects(composeVideos([{ ...red, path: 'red.mp4' }], target, out), /absolute/);
  await assert.rejects(composeVideos([{ ...red, voicePath: 'voice.wav' }], target, out), /voice line path must be absolute/);
  const junk = path.join(dir, 'junk.mp4');
  fs.writeFileSync(junk, 'not a video at all');
  await assert.rejects(composeVideos([red, { ...red, path: junk }], target, out),
    (e: unknown) => e instanceof MediaToolError && e.reason === 'failed' && e.message.includes('junk.mp4'));
  await assert.rejects(composeVideos([red, { ...green, hasAudio: true }], target, out),
    (e: unknown) => e instanceof MediaToolError && e.reason === 'failed');
  await assert.rejects(composeVideos([{ ...red, voicePath: green.path }], target, out),
    (e: unknown) => e instanceof MediaToolError && e.reason === 'failed', 'a voice line without sound');
  await assert.rejects(composeVideos([red], target, out, { signal: AbortSignal.abort() }),
    (e: unknown) => e instanceof MediaToolError && e.reason === 'aborted');
});
