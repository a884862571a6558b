// The local model server over real HTTP, its media checked with the real ffmpeg and ffprobe: PNG
// colour and caption chunk, MP4 streams and changing frames, WAV, transcription multipart, chat,
// every http-json kind, the ComfyUI submit/history/view cycle, every fault control, the API key,
// determinism across instances, and `svc model-server` as a child process.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runFfmpeg, runFfprobe } from '../../src/media-tools/ffmpeg.ts';
import { startModelServer, type RunningModelServer } from '../../tools/model-server/server.ts';

let ms: RunningModelServer;
before(async () => { ms = await startModelServer(); });
after(() => ms.close());

interface Answer { status: number; type: string | null; json: any; bytes: Buffer }

async function call(method: string, url: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const init: RequestInit = { method, headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers } };
  if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body);
  const res = await fetch(url.startsWith('http') ? url : ms.url + url, init);
  const bytes = Buffer.from(await res.arrayBuffer());
  const type = res.headers.get('content-type');
  return { status: res.status, type, json: type === 'application/json' ? JSON.parse(bytes.toString('utf8')) : null, bytes };
}

const post = (path: string, body: unknown, headers?: Record<string, string>) => call('POST', path, body, headers);
const get = (path: string) => call('GET', path);
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const control = async (patch: Record<string, unknown>) => {
  const r = await post('/control', patch);
  assert.equal(r.status, 200, r.bytes.toString());
  return r.json;
};

/** Every frame of a media file (piped in) through `filter`, which must end at w x h, as rgb24. */
async function decode(media: Buffer, filter: string, w: number, h: number): Promise<Buffer[]> {
  const { stdout } = await runFfmpeg(['-v', 'error', '-i', 'pipe:0', '-vf', filter, '-f', 'rawvideo', '-pix_fmt', 'rgb24', 'pipe:1'], { input: media });
  const size = w * h * 3;
  return Array.from({ length: stdout.length / size }, (_, i) => stdout.subarray(i * size, (i + 1) * size));
}

const frames = (media: Buffer, w: number, h: number) => decode(media, `scale=${w}:${h}`, w, h);

/** The colour of the pixel at (x, y) of an image. */
async function pixel(png: Buffer, x: number, y: number): Promise<number[]> {
  return [...(await decode(png, `crop=1:1:${x}:${y}`, 1, 1))[0]];
}

/** ffprobe's streams and format of a media file (written to a file: durations need a seekable input). */
async function probe(media: Buffer): Promise<{ streams: any[]; format: any }> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'svc-probe-'));
  try {
    const file = path.join(dir, 'media');
    await fs.writeFile(file, media);
    return (await runFfprobe<{ streams: any[]; format: any }>(['-v', 'error', '-show_streams', '-show_format', '-print_format', 'json', file])).json!;
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}

const near = (actual: number[], expected: number[], tolerance = 12) =>
  actual.every((v, i) => Math.abs(v - expected[i]) <= tolerance);

const until = async <T>(fn: () => Promise<T | null>, what: string, ms = 10_000): Promise<T> => {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== null) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
};

test('health, models, ComfyUI system stats; unknown routes 404 and wrong methods 405 with the OpenAI error shape', async () => {
  assert.deepEqual((await get('/health')).json, { status: 'ok' });
  const models = (await get('/v1/models')).json;
  assert.equal(models.object, 'list');
  assert.deepEqual(models.data.map((m: any) => m.id), ['svc-image', 'svc-video', 'svc-tts', 'svc-asr', 'svc-chat']);
  assert.ok(models.data.every((m: any) => m.object === 'model'));
  const stats = (await get('/system_stats')).json;
  assert.equal(typeof stats.system, 'object');
  assert.deepEqual(stats.devices, []);
  const missing = await get('/nope');
  assert.equal(missing.status, 404);
  assert.equal(typeof missing.json.error.message, 'string');
  assert.equal((await get('/v1/chat/completions')).status, 405);
});

test('images: a real PNG in the prompt\'s colour carrying the prompt; b64_json is the same bytes; n images; bad input 400/422', async () => {
  const r = await post('/v1/images/generations', { model: 'svc-image', prompt: 'a red door at night', n: 1 });
  assert.equal(r.status, 200, r.bytes.toString());
  assert.equal(typeof r.json.created, 'number');
  assert.equal(r.json.data.length, 1);
  const url: string = r.json.data[0].url;
  assert.match(url, new RegExp(`^${ms.url}/files/[0-9a-f]{64}\\.png$`));
  const file = await get(url);
  assert.equal(file.status, 200);
  assert.equal(file.type, 'image/png');
  assert.equal(file.bytes.subarray(0, 8).toString('hex'), '89504e470d0a1a0a');
  const info = await probe(file.bytes);
  assert.deepEqual([info.streams[0].codec_name, info.streams[0].width, info.streams[0].height], ['png', 256, 256]);
  assert.ok(near(await pixel(file.bytes, 3, 3), [220, 20, 20]), 'the corner is red');
  assert.ok(file.bytes.includes(Buffer.from('iTXtDescription')) && file.bytes.includes(Buffer.from('a red door at night')));

  const b64 = await post('/v1/images/generations', { prompt: 'a red door at night', response_format: 'b64_json' });
  assert.ok(Buffer.from(b64.json.data[0].b64_json, 'base64').equals(file.bytes));

  const two = await post('/v1/images/generations', { prompt: 'a blue kite', n: 2, size: '128x96' });
  assert.equal(two.json.data.length, 2);
  const [a, b] = await Promise.all(two.json.data.map((d: any) => get(d.url)));
  assert.notEqual(sha(a.bytes), sha(b.bytes), 'each image differs');
  assert.deepEqual([(await probe(a.bytes)).streams[0].width, (await probe(a.bytes)).streams[0].height], [128, 96]);

  assert.equal((await post('/v1/images/generations', '{not json')).status, 400);
  for (const body of [{}, { prompt: 'x', size: '10x10' }, { prompt: 'x', n: 0 }, { prompt: 'x', response_format: 'gif' }]) {
    const bad = await post('/v1/images/generations', body);
    assert.equal(bad.status, 422, JSON.stringify(body));
    assert.equal(typeof bad.json.error.message, 'string');
  }
  assert.equal((await get('/files/0000.png')).status, 404);
});

test('videos: created queued, polled to completed, content is H.264 + AAC whose first and last frames differ', async () => {
  const created = await post('/v1/videos', { model: 'svc-video', prompt: 'a green field at dawn', seconds: '2' });
  assert.equal(created.status, 200, created.bytes.toString());
  assert.match(created.json.id, /^video_/);
  assert.equal(created.json.object, 'video');
  assert.equal(created.json.status, 'queued');
  const first = (await get(`/v1/videos/${created.json.id}`)).json;
  assert.ok(['in_progress', 'completed'].includes(first.status), first.status);
  const done = await until(async () => {
    const v = (await get(`/v1/videos/${created.json.id}`)).json;
    return v.status === 'completed' ? v : null;
  }, 'the video');
  assert.equal(done.progress, 100);
  const content = await get(`/v1/videos/${created.json.id}/content`);
  assert.equal(content.status, 200);
  assert.equal(content.type, 'video/mp4');
  const info = await probe(content.bytes);
  const video = info.streams.find((s) => s.codec_type === 'video');
  const audio = info.streams.find((s) => s.codec_type === 'audio');
  assert.deepEqual([video.codec_name, video.pix_fmt, video.width, video.height], ['h264', 'yuv420p', 320, 180]);
  assert.equal(audio.codec_name, 'aac');
  assert.ok(Math.abs(Number(info.format.duration) - 2) < 0.2, info.format.duration);
  const all = await frames(content.bytes, 8, 8);
  assert.ok(all.length >= 40, `${all.length} frames`);
  const diff = all[0].reduce((s, v, i) => s + Math.abs(v - all[all.length - 1][i]), 0) / all[0].length;
  assert.ok(diff > 40, `first and last frames differ visibly (mean ${diff.toFixed(1)})`);

  assert.equal((await get('/v1/videos/video_unknown')).status, 404);
  assert.equal((await post('/v1/videos', { prompt: 'x', seconds: 99 })).status, 422);
});

test('speech is a WAV whose length follows the text; transcription reads multipart and names the file', async () => {
  const input = 'Hello there, this line is spoken by the narrator.';
  const speech = await post('/v1/audio/speech', { model: 'svc-tts', input, voice: 'nova', response_format: 'wav' });
  assert.equal(speech.status, 200);
  assert.equal(speech.type, 'audio/wav');
  assert.equal(speech.bytes.subarray(0, 4).toString(), 'RIFF');
  const info = await probe(speech.bytes);
  assert.equal(info.streams[0].codec_name, 'pcm_s16le');
  assert.ok(Math.abs(Number(info.format.duration) - input.length * 0.06) < 0.05, info.format.duration);
  assert.notEqual(sha((await post('/v1/audio/speech', { input, voice: 'onyx' })).bytes), sha(speech.bytes), 'the voice changes the pitch');
  assert.equal((await post('/v1/audio/speech', { input, response_format: 'mp3' })).status, 422);

  const form = new FormData();
  form.append('model', 'svc-asr');
  form.append('file', new Blob([speech.bytes], { type: 'audio/wav' }), 'line 1.wav');
  const res = await fetch(`${ms.url}/v1/audio/transcriptions`, { method: 'POST', body: form });
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { text: `transcript of line 1.wav: ${speech.bytes.length} bytes, sha256 ${sha(speech.bytes).slice(0, 12)}` });
  const noModel = new FormData();
  noModel.append('file', new Blob([Buffer.from('x')]), 'a.wav');
  assert.equal((await fetch(`${ms.url}/v1/audio/transcriptions`, { method: 'POST', body: noModel })).status, 422);
  assert.equal((await post('/v1/audio/transcriptions', { file: 'x' })).status, 400, 'not multipart');
});

test('chat completions: OpenAI shape, content deterministic from the last user message', async () => {
  const body = { model: 'svc-chat', messages: [{ role: 'system', content: 'You write short dramas.' }, { role: 'user', content: 'Pitch episode 3.' }] };
  const r = await post('/v1/chat/completions', body);
  assert.equal(r.status, 200);
  assert.equal(r.json.object, 'chat.completion');
  assert.equal(r.json.model, 'svc-chat');
  assert.equal(typeof r.json.id, 'string');
  assert.equal(r.json.choices.length, 1);
  const choice = r.json.choices[0];
  assert.deepEqual([choice.index, choice.message.role, choice.finish_reason], [0, 'assistant', 'stop']);
  assert.match(choice.message.content, /Pitch episode 3\./);
  const u = r.json.usage;
  assert.equal(u.total_tokens, u.prompt_tokens + u.completion_tokens);
  assert.equal((await post('/v1/chat/completions', body)).json.choices[0].message.content, choice.message.content);
  assert.notEqual((await post('/v1/chat/completions', { messages: [{ role: 'user', content: 'Other' }] })).json.choices[0].message.content, choice.message.content);
  assert.equal((await post('/v1/chat/completions', { messages: [] })).status, 422);
  assert.equal((await post('/v1/chat/completions', { messages: [{ content: 'no role' }] })).status, 422);
});

const job = (kind: string, contract: Record<string, unknown> = {}) => ({
  contract: { prompt: 'a purple umbrella in the rain', parameters: {}, shot: null, ...contract },
  execution: { jobId: 'job_1', attempt: 1, kind, model: null, deadline: new Date(Date.now() + 60_000).toISOString() },
});

test('http-json: every kind answers completed with the right outputs; unknown kind 422', async () => {
  const expect: Record<string, [string, string]> = { image: ['image', 'image/png'], video: ['video', 'video/mp4'], tts: ['audio', 'audio/wav'] };
  for (const [kind, [role, mime]] of Object.entries(expect)) {
    const r = await post('/generate', job(kind, { parameters: kind === 'video' ? { seconds: 1, size: '160x90' } : {} }));
    assert.equal(r.status, 200, `${kind}: ${r.bytes.toString()}`);
    assert.deepEqual([r.json.status, r.json.kind, r.json.model, r.json.outputs.length], ['completed', kind, `svc-${kind}`, 1]);
    const out = r.json.outputs[0];
    assert.deepEqual([out.role, out.mimeType], [role, mime]);
    const file = await get(out.url);
    assert.deepEqual([file.status, file.type], [200, mime]);
  }
  for (const kind of ['chat', 'prompt']) {
    const r = await post('/', { ...job(kind), execution: { ...job(kind).execution, model: 'my-llm' } });
    assert.equal(r.json.model, 'my-llm');
    assert.deepEqual(r.json.outputs.map((o: any) => [o.role, o.mimeType, 'url' in o]), [['text', 'text/plain', false]]);
    assert.match(r.json.outputs[0].text, /purple umbrella/);
  }
  const asr = await post('/generate', job('asr', { inputs: [{ fileName: 'take.wav', fileSize: 1234, contentSha256: 'ab'.repeat(32), mimeType: 'audio/wav' }] }));
  assert.equal(asr.json.outputs[0].text, `transcript of take.wav: 1234 bytes, sha256 ${'ab'.repeat(6)}`);
  assert.equal((await post('/generate', job('asr'))).status, 422, 'asr needs an input');
  const unknown = await post('/generate', job('hologram'));
  assert.equal(unknown.status, 422);
  assert.match(unknown.json.error.message, /hologram/);
  assert.equal((await post('/generate', { contract: {} })).status, 422);
});

const workflow = (text: string, save = 'SaveImage') => ({
  3: { class_type: 'KSampler', inputs: { seed: 7, model: ['4', 0] } },
  5: { class_type: 'EmptyLatentImage', inputs: { width: 200, height: 120, batch_size: 1 } },
  6: { class_type: 'CLIPTextEncode', inputs: { text, clip: ['4', 1] } },
  7: { class_type: 'CLIPTextEncode', inputs: { text: 'blurry', clip: ['4', 1] } },
  9: { class_type: save, inputs: { images: ['8', 0] } },
});

test('ComfyUI: submit, empty history and a running queue entry, then outputs viewable; videos in gifs', async () => {
  const submitted = await post('/prompt', { prompt: workflow(`a cyan lighthouse ${Date.now()}`), client_id: 'job_9' });
  assert.equal(submitted.status, 200, submitted.bytes.toString());
  const id: string = submitted.json.prompt_id;
  assert.deepEqual(submitted.json.node_errors, {});
  assert.equal(typeof submitted.json.number, 'number');
  const [history, queue] = await Promise.all([get(`/history/${id}`), get('/queue')]);
  assert.deepEqual(history.json, {}, 'not finished yet');
  assert.deepEqual(queue.json.queue_running.map((q: any) => q[1]), [id]);
  assert.equal(queue.json.queue_running[0][0], submitted.json.number);
  const entry = await until(async () => (await get(`/history/${id}`)).json[id] ?? null, 'the prompt');
  assert.deepEqual(entry.status, { status_str: 'success', completed: true, messages: [] });
  assert.deepEqual(Object.keys(entry.outputs), ['9']);
  const [image] = entry.outputs['9'].images;
  assert.deepEqual([image.subfolder, image.type], ['', 'output']);
  const view = await get(`/view?${String(new URLSearchParams({ filename: image.filename, subfolder: '', type: 'output' }))}`);
  assert.deepEqual([view.status, view.type], [200, 'image/png']);
  const info = await probe(view.bytes);
  assert.deepEqual([info.streams[0].width, info.streams[0].height], [200, 120], 'size from EmptyLatentImage');
  assert.ok(near(await pixel(view.bytes, 2, 2), [0, 220, 230]), 'cyan');
  assert.ok(id in (await get('/history')).json);
  assert.deepEqual((await get('/queue')).json.queue_running, []);

  const vid = await post('/prompt', { prompt: workflow('a moving train', 'VHS_VideoCombine') });
  const ventry = await until(async () => (await get(`/history/${vid.json.prompt_id}`)).json[vid.json.prompt_id] ?? null, 'the video prompt');
  const [gif] = ventry.outputs['9'].gifs;
  assert.equal(gif.format, 'video/h264-mp4');
  assert.equal((await get(`/view?filename=${gif.filename}&subfolder=&type=output`)).type, 'video/mp4');

  assert.equal((await post('/prompt', { prompt: { 1: { class_type: 'CLIPTextEncode', inputs: { text: 'x' } } } })).json.error.type, 'prompt_no_outputs');
  assert.equal((await post('/prompt', { prompt: { 1: { class_type: 'SaveImage', inputs: {} } } })).status, 422, 'no prompt text');
  assert.equal((await post('/prompt', { prompt: { 1: { inputs: {} } } })).status, 422);
  assert.equal((await get('/view?filename=nope.png')).status, 404);
});

test('faults: latency, failNext counting down with failStatus, call counts, reset; health stays untouched', async () => {
  await control({ reset: true, latencyMs: 150 });
  let started = performance.now();
  assert.equal((await post('/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }] })).status, 200);
  assert.ok(performance.now() - started >= 140, 'latency applied');
  started = performance.now();
  await get('/health');
  assert.ok(performance.now() - started < 140, 'not to health');

  const state = await control({ latencyMs: 0, failNext: 2, failStatus: 503 });
  assert.deepEqual(state.faults, { latencyMs: 0, failNext: 2, failStatus: 503, imageCount: null, collage: false, split: false, hang: false, videoDefect: null });
  const chat = { messages: [{ role: 'user', content: 'hi' }] };
  const first = await post('/v1/chat/completions', chat);
  assert.equal(first.status, 503);
  assert.match(first.json.error.message, /injected failure/);
  assert.equal((await control({})).faults.failNext, 1, 'counts down');
  assert.equal((await post('/generate', job('chat'))).status, 503, 'every protocol');
  assert.equal((await post('/v1/chat/completions', chat)).status, 200);
  const { calls } = await control({});
  assert.equal(calls.byRoute['POST /v1/chat/completions'], 3);
  assert.equal(calls.byRoute['POST /generate'], 1);
  assert.equal(calls.generation, 4);
  assert.equal(calls.total, 5, 'health counted too, /control not');
  const reset = await control({ reset: true });
  assert.deepEqual([reset.faults.failStatus, reset.calls.total], [500, 0]);
  assert.equal((await post('/control', { failNxt: 1 })).status, 422, 'unknown fields are refused');
  assert.equal((await post('/control', { failStatus: 200 })).status, 422);
});

test('faults: imageCount, collage and split shape image answers on all three protocols', async () => {
  await control({ reset: true, imageCount: 3 });
  assert.equal((await post('/v1/images/generations', { prompt: 'a yellow cab' })).json.data.length, 3);
  assert.equal((await post('/generate', job('image'))).json.outputs.length, 3);
  const c = await post('/prompt', { prompt: workflow('a yellow cab') });
  const entry = await until(async () => (await get(`/history/${c.json.prompt_id}`)).json[c.json.prompt_id] ?? null, 'the prompt');
  assert.equal(entry.outputs['9'].images.length, 3);

  await control({ reset: true, collage: true });
  const collage = await get((await post('/v1/images/generations', { prompt: 'a white wall' })).json.data[0].url);
  const quadrants = await Promise.all([[10, 10], [240, 10], [10, 240], [240, 240]].map(([x, y]) => pixel(collage.bytes, x, y)));
  assert.equal(new Set(quadrants.map((q) => q.join())).size, 4, 'four different tiles');
  assert.ok(near(quadrants[0], [255, 255, 255]), 'the first tile has the prompt\'s colour');

  await control({ reset: true, split: true });
  const split = await get((await post('/generate', job('image', { prompt: 'a black cat' }))).json.outputs[0].url);
  const [left, right, leftLow, rightLow] = await Promise.all([[10, 10], [240, 10], [10, 240], [240, 240]].map(([x, y]) => pixel(split.bytes, x, y)));
  assert.notDeepEqual(left, right);
  assert.deepEqual([leftLow, rightLow], [left, right], 'halves, not quadrants');
  await control({ reset: true });
});

test('faults: hang holds generation calls until released; a client may give up meanwhile', async () => {
  await control({ reset: true, hang: true });
  const pending = post('/v1/chat/completions', { messages: [{ role: 'user', content: 'wait' }] });
  let settled = false;
  void pending.then(() => { settled = true; });
  const gaveUp = fetch(`${ms.url}/generate`, { method: 'POST', body: JSON.stringify(job('chat')), signal: AbortSignal.timeout(100) });
  await assert.rejects(gaveUp);
  await new Promise((r) => setTimeout(r, 150));
  assert.equal(settled, false, 'still hanging');
  assert.equal((await get('/health')).status, 200, 'health answers while hanging');
  await control({ hang: false });
  assert.equal((await pending).status, 200);
  await control({ reset: true });
});

test('an API key guards generation routes only', async (t) => {
  const keyed = await startModelServer({ apiKey: 'sk-test-123' });
  t.after(() => keyed.close());
  const chat = { messages: [{ role: 'user', content: 'hi' }] };
  const noKey = await post(`${keyed.url}/v1/chat/completions`, chat);
  assert.equal(noKey.status, 401);
  assert.equal(noKey.json.error.type, 'authentication_error');
  assert.equal((await post(`${keyed.url}/v1/chat/completions`, chat, { authorization: 'Bearer wrong' })).status, 401);
  assert.equal((await post(`${keyed.url}/v1/chat/completions`, chat, { authorization: 'Bearer sk-test-123' })).status, 200);
  assert.equal((await get(`${keyed.url}/v1/models`)).status, 200, 'the probe route needs no key');
});

test('the same prompt renders the same bytes in a fresh server; the cache serves repeats', async (t) => {
  const other = await startModelServer();
  t.after(() => other.close());
  const render = async (base: string) => {
    const image = await get((await post(`${base}/v1/images/generations`, { prompt: 'an orange sunset' })).json.data[0].url);
    const video = await get((await post(`${base}/generate`, job('video', { prompt: 'an orange sunset', parameters: { seconds: 1 } }))).json.outputs[0].url);
    const speech = await post(`${base}/v1/audio/speech`, { input: 'an orange sunset' });
    return [image, video, speech].map((a) => sha(a.bytes));
  };
  const [mine, theirs] = await Promise.all([render(ms.url), render(other.url)]);
  assert.deepEqual(mine, theirs);
  const started = performance.now();
  assert.deepEqual(await render(ms.url), mine);
  assert.ok(performance.now() - started < 1000, 'repeats come from the cache');
});

test('svc model-server prints the listening line, serves with its fault flags and exits 0 on SIGTERM', async (t) => {
  const bin = fileURLToPath(new URL('../../bin/svc', import.meta.url));
  const child = spawn(process.execPath, [bin, 'model-server', '--port', '0', '--fail-next', '1', '--fail-status', '429'], { stdio: ['ignore', 'pipe', 'pipe'] });
  t.after(() => { if (child.exitCode === null) child.kill('SIGKILL'); });
  let stderr = '';
  child.stderr.on('data', (c) => { stderr += c; });
  const line = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (c) => {
      out += c;
      if (out.includes('\n')) resolve(out.split('\n')[0]);
    });
    child.on('exit', (code) => reject(new Error(`exited ${code}: ${stderr}`)));
  });
  const m = /^listening on (http:\/\/127\.0\.0\.1:(\d+))$/.exec(line);
  assert.ok(m, line);
  assert.notEqual(m[2], '0');
  const chat = { messages: [{ role: 'user', content: 'hi' }] };
  assert.equal((await post(`${m[1]}/v1/chat/completions`, chat)).status, 429);
  assert.equal((await post(`${m[1]}/v1/chat/completions`, chat)).status, 200);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  assert.equal(await exited, 0, stderr);
});
