// The protocol layer: URL joining, dry runs (one builder shared with the call), capability checks,
// workflow placeholders, output files (hash, replacement, limits, traversal), and real HTTP calls of
// every protocol and kind against the project's own model server (faults, credentials, time-outs,
// aborts, image count and composite checks, ComfyUI and video resumption).
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { TestContext } from 'node:test';
import { ConnectorError } from '../../src/generation/connectors/protocols/types.ts';
import type { CallRequest, ConnectorSpec, Execution, ProductionContract } from '../../src/generation/connectors/protocols/types.ts';
import { callConnector, dryRun, probeConnector, routeFor, supportsKind } from '../../src/generation/connectors/protocols/index.ts';
import { credentialPolicy } from '../../src/kernel/credentials.ts';
import { loadConfig } from '../../src/kernel/config.ts';
import { joinUrl } from '../../src/generation/connectors/protocols/transport.ts';
import { fillWorkflow, placeholders, seedOf, tuning as comfyTuning } from '../../src/generation/connectors/protocols/comfyui.ts';
import { tuning as openaiTuning } from '../../src/generation/connectors/protocols/openai.ts';
import { mimeFor, outputName, saveOutput } from '../../src/generation/connectors/protocols/outputs.ts';
import { startModelServer, type RunningModelServer } from '../../tools/model-server/server.ts';
import { chatReply, transcript } from '../../tools/model-server/text.ts';

// ---------------------------------------------------------------------------------------------
// Fixtures

function tmp(t: TestContext): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-proto-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** The default designation: variables named SVC_CONNECTOR_SECRET_*. */
const CREDENTIALS = credentialPolicy(loadConfig({}, {}));

function connector(kind: ConnectorSpec['kind'], endpoint: string, extra: Partial<ConnectorSpec> = {}): ConnectorSpec {
  return {
    id: 'mc_1',
    label: 'test',
    endpoint,
    kind,
    capability: ['image', 'video', 'tts', 'asr', 'chat', 'prompt'],
    costMode: 'local',
    authEnv: null,
    protocol: {},
    ...extra,
  };
}

const WORKFLOW = {
  '3': { class_type: 'KSampler', inputs: { seed: '{{seed}}', steps: 20, positive: ['6', 0], negative: ['7', 0] } },
  '5': { class_type: 'EmptyLatentImage', inputs: { width: '{{width}}', height: '{{height}}', batch_size: 1 } },
  '6': { class_type: 'CLIPTextEncode', inputs: { text: 'cinematic, {{prompt}}' } },
  '7': { class_type: 'CLIPTextEncode', inputs: { text: '{{negative_prompt}}' } },
  '9': { class_type: 'SaveImage', inputs: { filename_prefix: 'svc/{{job_id}}', images: ['8', 0] } },
};

function contract(extra: Partial<ProductionContract> = {}): ProductionContract {
  return {
    organization: { id: 'org_1', name: 'Org' },
    project: { id: 'prj_1', name: 'Night Train' },
    episode: { id: 'ep_1', title: 'Departure', number: 1 },
    shot: { id: 'sht_1', code: 'S01', title: 'Platform', description: 'A woman waits on a rainy platform.' },
    prompt: 'a woman on a rainy platform at night',
    negativePrompt: 'blurry',
    bible: [],
    inputs: [],
    parameters: {},
    ...extra,
  };
}

let jobSeq = 0;
function execution(kind: string, extra: Partial<Execution> = {}): Execution {
  return { jobId: `job_t${++jobSeq}_${crypto.randomBytes(3).toString('hex')}`, attempt: 1, kind, model: null, deadline: new Date(Date.now() + 60_000).toISOString(), ...extra };
}

// ---------------------------------------------------------------------------------------------
// Pure pieces

test('joinUrl: origin + path prefix, absolute routes, /v1 not doubled, origin-only', () => {
  assert.equal(joinUrl('http://h:1/api', '/v1/chat/completions'), 'http://h:1/api/v1/chat/completions');
  assert.equal(joinUrl('http://h:1/api/', '/v1/chat/completions'), 'http://h:1/api/v1/chat/completions');
  assert.equal(joinUrl('http://h:1', '/prompt'), 'http://h:1/prompt');
  assert.equal(joinUrl('http://h:1/', 'prompt'), 'http://h:1/prompt');
  assert.equal(joinUrl('https://x.example/v1', '/v1/models'), 'https://x.example/v1/models');
  assert.equal(joinUrl('http://h:1/api?x=1', '/health'), 'http://h:1/api/health');
  assert.equal(joinUrl('http://h:1/generate', '/health', false), 'http://h:1/health');
  assert.equal(joinUrl('http://h:1/api', 'https://cdn.example/a.png'), 'https://cdn.example/a.png');
  assert.throws(() => joinUrl('ftp://h/x', '/a'), (e: ConnectorError) => e.code === 'connector_bad_request');
});

test('dryRun: openai chat and image (n is 1), header names only, credential never read', () => {
  const env = { SVC_CONNECTOR_SECRET_KEY: 'sk-should-not-appear' };
  const c = connector('openai-compatible', 'http://h:1/api', { authEnv: 'SVC_CONNECTOR_SECRET_KEY', protocol: { models: { chat: 'chat-model', image: 'img-model' } } });
  const chat = dryRun(c, contract(), execution('chat'), CREDENTIALS);
  assert.equal(chat.method, 'POST');
  assert.equal(chat.url, 'http://h:1/api/v1/chat/completions');
  assert.equal(chat.route, '/v1/chat/completions');
  assert.equal(chat.model, 'chat-model');
  assert.deepEqual(chat.headers, ['content-type', 'authorization']);
  const body = chat.body as { model: string; messages: Array<{ role: string; content: string }> };
  assert.equal(body.model, 'chat-model');
  assert.equal(body.messages.length, 2);
  assert.equal(body.messages[0].role, 'system');
  assert.match(body.messages[0].content, /Night Train/);
  assert.match(body.messages[0].content, /S01/);
  assert.deepEqual(body.messages[1], { role: 'user', content: 'a woman on a rainy platform at night' });
  assert.ok(!JSON.stringify(chat).includes(env.SVC_CONNECTOR_SECRET_KEY));

  const image = dryRun(c, contract({ parameters: { size: '512x512', n: 4 } }), execution('image', { model: 'override' }), CREDENTIALS);
  assert.deepEqual(image.body, { model: 'override', prompt: 'a woman on a rainy platform at night', n: 1, size: '512x512', response_format: 'url' });
  assert.equal(image.model, 'override');

  // Without authEnv: no authorization header; a missing variable does not matter to a dry run.
  const open = dryRun(connector('openai-compatible', 'http://h:1'), contract(), execution('tts'), CREDENTIALS);
  assert.deepEqual(open.headers, ['content-type']);
  assert.deepEqual(open.body, { input: 'a woman on a rainy platform at night', response_format: 'wav' });
});

test('dryRun: video, asr, http-json and comfyui bodies', () => {
  const oa = connector('openai-compatible', 'http://h:1', { protocol: { routes: { video: '/custom/videos' } } });
  const video = dryRun(oa, contract({ parameters: { duration: 4, width: 640, height: 360 } }), execution('video'), CREDENTIALS);
  assert.equal(video.url, 'http://h:1/custom/videos');
  assert.deepEqual(video.body, { prompt: 'a woman on a rainy platform at night', seconds: '4', size: '640x360' });
  const inputs = [{ assetId: 'ast_1', versionId: 'ver_1', fileName: 'line.wav', mimeType: 'audio/wav', fileSize: 1234, contentSha256: 'a'.repeat(64) }];
  const asr = dryRun(oa, contract({ inputs }), execution('asr'), CREDENTIALS);
  assert.equal(asr.url, 'http://h:1/v1/audio/transcriptions');
  assert.deepEqual(asr.body, { file: { fileName: 'line.wav', mimeType: 'audio/wav', fileSize: 1234 } });

  const hj = connector('http-json', 'http://h:1/generate', { authEnv: 'SVC_CONNECTOR_SECRET_K', protocol: { models: { image: 'flux' }, routes: { video: '/video' } } });
  const ex = execution('image');
  const r = dryRun(hj, contract(), ex, CREDENTIALS);
  assert.equal(r.url, 'http://h:1/generate');
  assert.equal(r.route, '/generate');
  assert.deepEqual(r.headers, ['content-type', 'authorization']);
  assert.deepEqual(r.body, { contract: contract(), execution: { ...ex, model: 'flux' } });
  assert.equal(dryRun(hj, contract(), execution('video'), CREDENTIALS).url, 'http://h:1/generate/video');

  const cf = connector('comfyui', 'http://h:1', { protocol: { workflow: WORKFLOW } });
  const ce = execution('image');
  const c = dryRun(cf, contract({ parameters: { seed: 42, size: '768x512' } }), ce, CREDENTIALS);
  assert.equal(c.url, 'http://h:1/prompt');
  const body = c.body as { prompt: typeof WORKFLOW; client_id: string };
  assert.equal(body.client_id, ce.jobId);
  assert.equal(body.prompt['3'].inputs.seed, 42);
  assert.equal(body.prompt['5'].inputs.width, 768);
  assert.equal(body.prompt['5'].inputs.height, 512);
  assert.equal(body.prompt['6'].inputs.text, 'cinematic, a woman on a rainy platform at night');
  assert.equal(body.prompt['7'].inputs.text, 'blurry');
  assert.equal(body.prompt['9'].inputs.filename_prefix, `svc/${ce.jobId}`);
  assert.throws(() => dryRun(connector('comfyui', 'http://h:1'), contract(), execution('image'), CREDENTIALS), (e: ConnectorError) => e.code === 'connector_bad_request');
});

test('placeholders: seed from the job id is stable, numbers only for exact placeholders', () => {
  const ex = execution('image');
  const v = placeholders(contract(), ex);
  assert.equal(v.seed, seedOf(ex.jobId));
  assert.equal(seedOf(ex.jobId), seedOf(ex.jobId));
  assert.ok(Number.isSafeInteger(v.seed));
  assert.equal(v.width, 1024);
  assert.deepEqual(fillWorkflow({ a: ['{{seed}}', 'x{{seed}}', '{{unknown}}', 3, null, { b: '{{ width }}' }] }, { seed: 7, width: 9 }), {
    a: [7, 'x7', '{{unknown}}', 3, null, { b: 9 }],
  });
});

test('routeFor and supportsKind follow capability and routes', () => {
  const oa = connector('openai-compatible', 'http://h:1', { capability: ['chat', 'image', 'upscale'], protocol: { routes: { image: '' } } });
  assert.equal(routeFor(oa, 'chat'), '/v1/chat/completions');
  assert.equal(supportsKind(oa, 'chat'), true);
  assert.equal(supportsKind(oa, 'image'), false); // route disabled
  assert.equal(supportsKind(oa, 'upscale'), false); // no request shape
  assert.equal(supportsKind(oa, 'tts'), false); // not in capability
  const hj = connector('http-json', 'http://h:1/generate', { capability: ['image', 'upscale'] });
  assert.equal(supportsKind(hj, 'upscale'), true);
  assert.equal(routeFor(hj, 'image'), '/generate');
  assert.equal(supportsKind(hj, 'chat'), false);
  const cf = connector('comfyui', 'http://h:1', { capability: ['image'] });
  assert.equal(routeFor(cf, 'image'), '/prompt');
  assert.equal(supportsKind(cf, 'image'), true);
});

test('saveOutput: hash and size, replacement by name, limit, traversal, web streams', async (t) => {
  const dir = tmp(t);
  const bytes = crypto.randomBytes(300_000);
  const sha = crypto.hash('sha256', bytes, 'hex');
  const a = await saveOutput({ storageDir: dir, jobId: 'job_x', name: 'image-1.png', role: 'image', mimeType: 'image/png', source: Readable.from([bytes.subarray(0, 1000), bytes.subarray(1000)]), maxBytes: 1e6 });
  assert.deepEqual(a, { path: 'outputs/job_x/image-1.png', role: 'image', mimeType: 'image/png', fileSize: bytes.length, sha256: sha });
  assert.equal(crypto.hash('sha256', fs.readFileSync(path.join(dir, a.path)), 'hex'), sha);
  // A later attempt replaces the file: one copy only.
  const again = await saveOutput({ storageDir: dir, jobId: 'job_x', name: 'image-1.png', role: 'image', mimeType: 'image/png', source: Buffer.from('second'), maxBytes: 1e6 });
  assert.equal(again.fileSize, 6);
  assert.deepEqual(fs.readdirSync(path.join(dir, 'outputs/job_x')), ['image-1.png']);
  // A web ReadableStream.
  const web = await saveOutput({ storageDir: dir, jobId: 'job_x', name: 'audio-1.wav', role: 'audio', mimeType: 'audio/wav', source: new Blob([bytes]).stream(), maxBytes: 1e6 });
  assert.equal(web.sha256, sha);
  // Over the limit: nothing left behind, neither in outputs nor in tmp.
  await assert.rejects(
    saveOutput({ storageDir: dir, jobId: 'job_x', name: 'video-1.mp4', role: 'video', mimeType: 'video/mp4', source: Readable.from([bytes, bytes]), maxBytes: 400_000 }),
    (e: ConnectorError) => e.code === 'output_too_large' && e.retryable === false,
  );
  await assert.rejects(
    saveOutput({ storageDir: dir, jobId: 'job_x', name: 'video-1.mp4', role: 'video', mimeType: 'video/mp4', source: bytes, maxBytes: 1000 }),
    (e: ConnectorError) => e.code === 'output_too_large',
  );
  assert.ok(!fs.existsSync(path.join(dir, 'outputs/job_x/video-1.mp4')));
  assert.deepEqual(fs.readdirSync(path.join(dir, 'tmp')), []);
  for (const [jobId, name] of [['job_x', '../escape.png'], ['job_x', '..'], ['../x', 'a.png'], ['job_x', 'a/b.png'], ['job_x', '.hidden']]) {
    await assert.rejects(
      saveOutput({ storageDir: dir, jobId, name, role: 'image', mimeType: 'image/png', source: Buffer.from('x'), maxBytes: 10 }),
      (e: ConnectorError) => e.code === 'output_unsafe_name',
    );
  }
});

test('mimeFor and outputName: declared, content type, file name, role default', () => {
  assert.equal(mimeFor('image', ['image/jpeg; charset=binary']), 'image/jpeg');
  assert.equal(mimeFor('image', ['application/octet-stream'], 'x.webp'), 'image/webp');
  assert.equal(mimeFor('audio', [null, undefined]), 'audio/wav');
  assert.equal(mimeFor('video', ['text/html'], 'out.mp4'), 'video/mp4');
  assert.equal(outputName('image', 1, 'image/jpeg'), 'image-1.jpg');
  assert.equal(outputName('audio', 2, 'audio/x-wav'), 'audio-2.wav');
  assert.equal(outputName('video', 1, 'video/whatever'), 'video-1.mp4');
});

test('missing credential: not retryable, names the variable, nothing called', async (t) => {
  const dir = tmp(t);
  const c = connector('openai-compatible', 'http://127.0.0.1:9', { authEnv: 'SVC_CONNECTOR_SECRET_TEST_MODEL_KEY' });
  for (const env of [{}, { SVC_CONNECTOR_SECRET_TEST_MODEL_KEY: '' }]) {
    await assert.rejects(
      callConnector(request(c, 'chat', dir, { env })),
      (e: ConnectorError) => e instanceof ConnectorError && e.code === 'connector_credential_missing' && !e.retryable && e.message === 'environment variable SVC_CONNECTOR_SECRET_TEST_MODEL_KEY is not set',
    );
  }
  const probe = await probeConnector(c, { env: {}, credentials: CREDENTIALS, timeoutMs: 1000 });
  assert.equal(probe.ok, false);
  assert.match(probe.error!, /SVC_CONNECTOR_SECRET_TEST_MODEL_KEY is not set/);
});

test('unreachable service: retryable connector_unreachable; probe reports it', async (t) => {
  const dir = tmp(t);
  const c = connector('openai-compatible', 'http://127.0.0.1:9');
  await assert.rejects(callConnector(request(c, 'chat', dir)), (e: ConnectorError) => e.code === 'connector_unreachable' && e.retryable);
  const probe = await probeConnector(c, { env: {}, credentials: CREDENTIALS, timeoutMs: 1000 });
  assert.equal(probe.ok, false);
  assert.equal(probe.httpStatus, null);
  assert.match(probe.error!, /ECONNREFUSED/);
});

function request(c: ConnectorSpec, kind: string, storageDir: string, extra: Partial<CallRequest> = {}): CallRequest & { refs: string[] } {
  const refs: string[] = [];
  return {
    connector: c,
    contract: contract(),
    execution: execution(kind),
    inputFiles: [],
    resumeRef: null,
    onRef: (ref: string) => {
      refs.push(ref);
    },
    signal: new AbortController().signal,
    storageDir,
    maxOutputBytes: 50 * 1024 * 1024,
    timeoutMs: 5000,
    env: {},
    credentials: CREDENTIALS,
    ...extra,
    refs,
  };
}

// ---------------------------------------------------------------------------------------------
// Real HTTP against the project's model server

openaiTuning.pollMs = 20;
comfyTuning.pollMs = 20;

let shared: Promise<RunningModelServer> | null = null;
function modelServer(): Promise<RunningModelServer> {
  shared ??= startModelServer();
  return shared;
}
after(async () => {
  if (shared) await (await shared).close();
});

async function control(ms: RunningModelServer, patch: Record<string, unknown>): Promise<void> {
  const r = await fetch(`${ms.url}/control`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(patch) });
  assert.equal(r.status, 200, await r.text());
}

async function calls(ms: RunningModelServer): Promise<Record<string, number>> {
  const r = await fetch(`${ms.url}/control`);
  return ((await r.json()) as { calls: { byRoute: Record<string, number> } }).calls.byRoute;
}

/** A fresh model server state (faults off, counters zero) and a storage folder. */
async function setup(t: TestContext): Promise<{ ms: RunningModelServer; dir: string }> {
  const ms = await modelServer();
  await control(ms, { reset: true });
  return { ms, dir: tmp(t) };
}

function checkFile(dir: string, f: { path: string; sha256: string; fileSize: number }): Buffer {
  const bytes = fs.readFileSync(path.join(dir, f.path));
  assert.equal(bytes.length, f.fileSize);
  assert.equal(crypto.hash('sha256', bytes, 'hex'), f.sha256);
  return bytes;
}

const isPng = (b: Buffer) => b.readUInt32BE(0) === 0x89504e47;
const isMp4 = (b: Buffer) => b.toString('latin1', 4, 8) === 'ftyp';
const isWav = (b: Buffer) => b.toString('latin1', 0, 4) === 'RIFF' && b.toString('latin1', 8, 12) === 'WAVE';

const COMFY_VIDEO = {
  '1': { class_type: 'CLIPTextEncode', inputs: { text: '{{prompt}}' } },
  '2': { class_type: 'EmptyLatentImage', inputs: { width: '{{width}}', height: '{{height}}' } },
  '3': { class_type: 'VHS_VideoCombine', inputs: { filename_prefix: '{{job_id}}', frame_rate: 24 } },
};

test('openai chat: the answer is the server\'s reply to the dry-run body; no file work', async (t) => {
  const { ms, dir } = await setup(t);
  const c = connector('openai-compatible', ms.url, { protocol: { models: { chat: 'svc-chat-test' } } });
  const req = request(c, 'chat', dir);
  const shown = dryRun(c, req.contract, req.execution, CREDENTIALS);
  const body = shown.body as { model: string; messages: Array<{ content: string }> };
  const result = await callConnector(req);
  assert.deepEqual(result, { output: { text: chatReply(body.messages[1].content), model: body.model }, files: [] });
  assert.equal(shown.url, `${ms.url}/v1/chat/completions`);
  const prompt = await callConnector({ ...request(c, 'prompt', dir), contract: contract({ prompt: 'write a logline' }) });
  assert.equal(prompt.output.text, chatReply('write a logline'));
  assert.deepEqual(fs.readdirSync(dir), []); // text results touch no file
  assert.equal((await calls(ms))['POST /v1/chat/completions'], 2);
});

test('openai image, tts, asr: one file each, hashes match, n is 1', async (t) => {
  const { ms, dir } = await setup(t);
  const c = connector('openai-compatible', ms.url);
  const img = request(c, 'image', dir, { contract: contract({ parameters: { size: '128x96' } }) });
  const image = await callConnector(img);
  assert.equal(image.files.length, 1);
  assert.equal(image.files[0].path, `outputs/${img.execution.jobId}/image-1.png`);
  assert.equal(image.files[0].role, 'image');
  assert.equal(image.files[0].mimeType, 'image/png');
  assert.ok(isPng(checkFile(dir, image.files[0])));
  assert.equal((await calls(ms))['GET /files/:name'], 1);

  const speech = await callConnector(request(c, 'tts', dir, { contract: contract({ prompt: 'Hello there.', parameters: { voice: 'nova' } }) }));
  assert.equal(speech.files[0].role, 'audio');
  assert.equal(speech.files[0].mimeType, 'audio/wav');
  assert.match(speech.files[0].path, /\/audio-1\.wav$/);
  const wav = checkFile(dir, speech.files[0]);
  assert.ok(isWav(wav));
  assert.equal(speech.output.voice, 'nova');

  const input = path.join(dir, 'line.wav');
  fs.writeFileSync(input, wav);
  const asr = await callConnector(request(c, 'asr', dir, { inputFiles: [{ path: input, fileName: 'line.wav', mimeType: 'audio/wav' }], execution: execution('asr', { model: 'svc-asr' }) }));
  assert.equal(asr.output.text, transcript('line.wav', wav.length, crypto.hash('sha256', wav, 'hex')));
  assert.deepEqual(asr.files, []);
  await assert.rejects(callConnector(request(c, 'asr', dir)), (e: ConnectorError) => e.code === 'connector_bad_request' && !e.retryable);
});

test('openai video: create, onRef at once, poll, streamed content; resume polls the stored id', async (t) => {
  const { ms, dir } = await setup(t);
  const c = connector('openai-compatible', ms.url);
  const req = request(c, 'video', dir, { contract: contract({ prompt: `video ${crypto.randomUUID()}`, parameters: { seconds: 1, size: '160x96' } }) });
  const first = await callConnector(req);
  assert.equal(req.refs.length, 1);
  assert.match(req.refs[0], /^video_/);
  assert.equal(first.output.videoId, req.refs[0]);
  assert.equal(first.files.length, 1);
  assert.equal(first.files[0].path, `outputs/${req.execution.jobId}/video-1.mp4`);
  const bytes = checkFile(dir, first.files[0]);
  assert.ok(isMp4(bytes));
  assert.equal((await calls(ms))['POST /v1/videos'], 1);

  // A later attempt with the stored id: no new generation, the same content, the same single file.
  const again = request(c, 'video', dir, { execution: req.execution, resumeRef: req.refs[0] });
  const resumed = await callConnector(again);
  assert.equal(resumed.output.resumed, true);
  assert.deepEqual(again.refs, []);
  assert.equal(resumed.files[0].sha256, first.files[0].sha256);
  assert.deepEqual(fs.readdirSync(path.join(dir, 'outputs', req.execution.jobId)), ['video-1.mp4']);
  assert.equal((await calls(ms))['POST /v1/videos'], 1);

  // A stored id the service does not know (404): a new video is created and its id reported.
  const lost = request(c, 'video', dir, { resumeRef: 'video_unknown', contract: req.contract });
  const fresh = await callConnector(lost);
  assert.equal(lost.refs.length, 1);
  assert.notEqual(lost.refs[0], 'video_unknown');
  assert.equal(fresh.output.resumed, false);
  assert.equal((await calls(ms))['POST /v1/videos'], 2);
});

test('http-json: every kind, files from URLs, text inline, model from the contract', async (t) => {
  const { ms, dir } = await setup(t);
  const c = connector('http-json', `${ms.url}/generate`, { protocol: { models: { chat: 'house-chat' } } });
  const img = await callConnector(request(c, 'image', dir, { contract: contract({ parameters: { size: '64x64' } }) }));
  assert.equal(img.files.length, 1);
  assert.ok(isPng(checkFile(dir, img.files[0])));
  const vid = await callConnector(request(c, 'video', dir, { contract: contract({ prompt: `clip ${crypto.randomUUID()}`, parameters: { seconds: 1, size: '96x64' } }) }));
  assert.equal(vid.files[0].role, 'video');
  assert.ok(isMp4(checkFile(dir, vid.files[0])));
  const tts = await callConnector(request(c, 'tts', dir));
  assert.equal(tts.files[0].mimeType, 'audio/wav');
  assert.ok(isWav(checkFile(dir, tts.files[0])));
  const chatReq = request(c, 'chat', dir);
  const chat = await callConnector(chatReq);
  assert.deepEqual(chat, { output: { text: chatReply(chatReq.contract.prompt), model: 'house-chat' }, files: [] });
  assert.equal((dryRun(c, chatReq.contract, chatReq.execution, CREDENTIALS).body as { execution: Execution }).execution.model, 'house-chat');
  const inputs = [{ assetId: 'ast_1', versionId: 'ver_1', fileName: 'a.wav', mimeType: 'audio/wav', fileSize: 10, contentSha256: 'b'.repeat(64) }];
  const asr = await callConnector(request(c, 'asr', dir, { contract: contract({ inputs }) }));
  assert.equal(asr.output.text, transcript('a.wav', 10, 'b'.repeat(64)));
});

test('comfyui: workflow filled, history polled, /view downloads; video from gifs', async (t) => {
  const { ms, dir } = await setup(t);
  const c = connector('comfyui', ms.url, { protocol: { workflow: WORKFLOW } });
  const img = request(c, 'image', dir, { contract: contract({ parameters: { width: 96, height: 64 } }) });
  const image = await callConnector(img);
  assert.equal(img.refs.length, 1);
  assert.equal(image.output.promptId, img.refs[0]);
  assert.equal(image.files.length, 1);
  assert.equal(image.files[0].path, `outputs/${img.execution.jobId}/image-1.png`);
  assert.ok(isPng(checkFile(dir, image.files[0])));
  const cv = connector('comfyui', ms.url, { protocol: { workflow: COMFY_VIDEO } });
  const video = await callConnector(request(cv, 'video', dir, { contract: contract({ prompt: `comfy ${crypto.randomUUID()}`, parameters: { size: '96x64' } }) }));
  assert.equal(video.files.length, 1);
  assert.equal(video.files[0].role, 'video');
  assert.equal(video.files[0].mimeType, 'video/mp4');
  assert.ok(isMp4(checkFile(dir, video.files[0])));
  const n = await calls(ms);
  assert.equal(n['POST /prompt'], 2);
  assert.equal(n['GET /view'], 2);
});

test('comfyui resume: a finished prompt is taken, a running one polled, an unknown one resubmitted', async (t) => {
  const { ms, dir } = await setup(t);
  const c = connector('comfyui', ms.url, { protocol: { workflow: COMFY_VIDEO } });
  const first = request(c, 'video', dir, { contract: contract({ prompt: `resume ${crypto.randomUUID()}`, parameters: { size: '96x64' } }) });
  const done = await callConnector(first);
  const ref = first.refs[0];

  const finished = request(c, 'video', dir, { execution: first.execution, resumeRef: ref });
  const taken = await callConnector(finished);
  assert.equal(taken.output.resumed, true);
  assert.equal(taken.output.promptId, ref);
  assert.deepEqual(finished.refs, []);
  assert.equal(taken.files[0].sha256, done.files[0].sha256);
  assert.equal((await calls(ms))['POST /prompt'], 1);

  // Submitted by an attempt that then crashed: still rendering (or just done), never resubmitted.
  const submitted = (await (await fetch(`${ms.url}/prompt`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(dryRun(c, contract({ prompt: `crashed ${crypto.randomUUID()}`, parameters: { size: '96x64' } }), execution('video'), CREDENTIALS).body),
  })).json()) as { prompt_id: string };
  const running = request(c, 'video', dir, { resumeRef: submitted.prompt_id });
  const polled = await callConnector(running);
  assert.equal(polled.output.promptId, submitted.prompt_id);
  assert.deepEqual(running.refs, []);
  assert.equal(polled.files.length, 1);
  assert.equal((await calls(ms))['POST /prompt'], 2);

  const unknown = request(c, 'video', dir, { resumeRef: 'prompt-that-never-was', contract: first.contract });
  const redone = await callConnector(unknown);
  assert.equal(unknown.refs.length, 1);
  assert.notEqual(unknown.refs[0], 'prompt-that-never-was');
  assert.equal(redone.output.resumed, false);
  assert.equal((await calls(ms))['POST /prompt'], 3);
  assert.ok((await calls(ms))['GET /queue'] >= 1);
});

test('image count: two images fail every protocol before any download', async (t) => {
  const { ms, dir } = await setup(t);
  await control(ms, { imageCount: 2 });
  const targets = [
    connector('openai-compatible', ms.url),
    connector('http-json', `${ms.url}/generate`),
    connector('comfyui', ms.url, { protocol: { workflow: WORKFLOW } }),
  ];
  for (const c of targets) {
    const req = request(c, 'image', dir, { contract: contract({ prompt: `count ${c.kind}`, parameters: { size: '64x64' } }) });
    await assert.rejects(callConnector(req), (e: ConnectorError) => {
      assert.equal(e.code, 'image_count_mismatch', c.kind);
      assert.equal(e.retryable, false);
      assert.equal(e.message, 'the model answered 2 images; exactly one is required');
      return true;
    });
  }
  const n = await calls(ms);
  assert.equal(n['GET /files/:name'] ?? 0, 0);
  assert.equal(n['GET /view'] ?? 0, 0);
  assert.ok(!fs.existsSync(path.join(dir, 'outputs')));
});

test('composite images (collage, split screen) fail the call and leave no file', async (t) => {
  const { ms, dir } = await setup(t);
  for (const [fault, expected] of [[{ collage: true }, 'collage'], [{ split: true }, 'split_screen']] as const) {
    await control(ms, { reset: true, ...fault });
    for (const c of [connector('openai-compatible', ms.url), connector('comfyui', ms.url, { protocol: { workflow: WORKFLOW } })]) {
      const req = request(c, 'image', dir, { contract: contract({ prompt: `composite ${expected}`, parameters: { size: '256x256' } }) });
      await assert.rejects(callConnector(req), (e: ConnectorError) => {
        assert.equal(e.code, 'image_composite_detected');
        assert.equal(e.retryable, false);
        assert.equal(e.message, `the image is a ${expected}; exactly one single image is required`);
        return true;
      });
      assert.deepEqual(fs.readdirSync(path.join(dir, 'outputs', req.execution.jobId)), []);
    }
  }
});

test('HTTP statuses: 5xx, 408, 429 retryable; other 4xx not; messages short and useful', async (t) => {
  const { ms, dir } = await setup(t);
  const c = connector('openai-compatible', ms.url);
  for (const [status, code, retryable] of [[503, 'connector_http_error', true], [500, 'connector_http_error', true], [408, 'connector_http_error', true], [429, 'connector_http_error', true], [400, 'connector_rejected', false], [422, 'connector_rejected', false]] as const) {
    await control(ms, { failNext: 1, failStatus: status });
    await assert.rejects(callConnector(request(c, 'chat', dir)), (e: ConnectorError) => {
      assert.equal(e.code, code);
      assert.equal(e.retryable, retryable);
      assert.equal(e.httpStatus, status);
      assert.equal(e.message, `HTTP ${status} from POST /v1/chat/completions: injected failure: the model server was told to fail (status ${status})`);
      return true;
    });
  }
  // The next call succeeds on the same pooled connections.
  assert.equal(typeof (await callConnector(request(c, 'chat', dir))).output.text, 'string');
  // A route the service does not have: 404, not retryable.
  const wrong = connector('openai-compatible', ms.url, { protocol: { routes: { chat: '/v2/nothing' } } });
  await assert.rejects(callConnector(request(wrong, 'chat', dir)), (e: ConnectorError) => e.code === 'connector_rejected' && e.httpStatus === 404);
});

test('malformed answers, a stalled body, an echoed credential (a deliberately broken service)', async (t) => {
  const dir = tmp(t);
  const key = `sk-echo-${crypto.randomBytes(6).toString('hex')}`;
  const server = http.createServer((req, res) => {
    const send = (status: number, type: string, body: string) => {
      res.writeHead(status, { 'content-type': type });
      res.end(body);
    };
    req.resume();
    req.on('end', () => {
      if (req.url === '/v1/chat/completions') send(200, 'text/html', '<html>not json</html>');
      else if (req.url === '/shape/v1/chat/completions') send(200, 'application/json', '{"choices":[]}');
      else if (req.url === '/echo/v1/chat/completions') send(502, 'application/json', JSON.stringify({ error: { message: `bad gateway for ${req.headers.authorization}` } }));
      else if (req.url === '/v1/images/generations') send(200, 'application/json', JSON.stringify({ data: [{ url: '/stall.png' }] }));
      else if (req.url === '/stall.png') {
        res.writeHead(200, { 'content-type': 'image/png', 'content-length': 1000 });
        res.write(Buffer.alloc(10)); // and never the rest
      } else if (req.url === '/prompt') send(200, 'application/json', '{"number":1}');
      else if (req.url === '/hj/b64') {
        send(200, 'application/json', JSON.stringify({ status: 'completed', model: 'b64-model', outputs: [
          { role: 'audio', mimeType: 'audio/mpeg', base64: Buffer.from('ID3 fake mp3').toString('base64') },
          { role: 'text', mimeType: 'text/plain', text: 'a caption' },
        ] }));
      } else if (req.url === '/hj/failed') send(200, 'application/json', JSON.stringify({ status: 'failed', error: { message: 'out of memory' } }));
      else if (req.url === '/hj/refused') send(200, 'application/json', JSON.stringify({ status: 'failed', error: { message: 'content policy', retryable: false } }));
      else if (req.url === '/hj/odd') send(200, 'application/json', JSON.stringify({ status: 'completed', outputs: [{ role: 'hologram', url: '/x' }] }));
      else send(404, 'text/plain', 'nothing here');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const bad = (e: ConnectorError) => e.code === 'connector_bad_response' && !e.retryable;
  await assert.rejects(callConnector(request(connector('openai-compatible', base), 'chat', dir)), bad);
  await assert.rejects(callConnector(request(connector('openai-compatible', `${base}/shape`), 'chat', dir)), bad);
  await assert.rejects(callConnector(request(connector('comfyui', base, { protocol: { workflow: WORKFLOW } }), 'image', dir)), bad);
  const echo = connector('openai-compatible', `${base}/echo`, { authEnv: 'SVC_CONNECTOR_SECRET_K' });
  await assert.rejects(callConnector(request(echo, 'chat', dir, { env: { SVC_CONNECTOR_SECRET_K: key } })), (e: ConnectorError) => {
    assert.equal(e.code, 'connector_http_error');
    assert.equal(e.message, 'HTTP 502 from POST /echo/v1/chat/completions: bad gateway for Bearer [redacted]');
    return true;
  });
  const b64 = await callConnector(request(connector('http-json', `${base}/hj/b64`), 'tts', dir));
  assert.equal(b64.output.text, 'a caption');
  assert.equal(b64.output.model, 'b64-model');
  assert.equal(b64.files.length, 1);
  assert.match(b64.files[0].path, /\/audio-1\.mp3$/);
  assert.equal(b64.files[0].mimeType, 'audio/mpeg');
  assert.equal(checkFile(dir, b64.files[0]).toString(), 'ID3 fake mp3');
  await assert.rejects(callConnector(request(connector('http-json', `${base}/hj/failed`), 'tts', dir)), (e: ConnectorError) => e.code === 'connector_job_failed' && e.retryable && /out of memory/.test(e.message));
  await assert.rejects(callConnector(request(connector('http-json', `${base}/hj/refused`), 'tts', dir)), (e: ConnectorError) => e.code === 'connector_job_failed' && !e.retryable);
  await assert.rejects(callConnector(request(connector('http-json', `${base}/hj/odd`), 'tts', dir)), bad);
  const started = Date.now();
  const stalled = request(connector('openai-compatible', base), 'image', dir, { timeoutMs: 200 });
  await assert.rejects(callConnector(stalled), (e: ConnectorError) => e.code === 'connector_timeout' && e.retryable);
  assert.ok(Date.now() - started < 2000);
  assert.deepEqual(fs.readdirSync(path.join(dir, 'tmp')), []);
  assert.ok(!fs.existsSync(path.join(dir, 'outputs', stalled.execution.jobId, 'image-1.png')));
});

test('time-out and abort: retryable, prompt, the socket released', async (t) => {
  const { ms, dir } = await setup(t);
  const c = connector('openai-compatible', ms.url);
  await control(ms, { latencyMs: 3000 });
  let started = Date.now();
  await assert.rejects(callConnector(request(c, 'chat', dir, { timeoutMs: 150 })), (e: ConnectorError) => {
    assert.equal(e.code, 'connector_timeout');
    assert.equal(e.retryable, true);
    assert.match(e.message, /POST \/v1\/chat\/completions timed out after 150 ms/);
    return true;
  });
  assert.ok(Date.now() - started < 1500);

  await control(ms, { reset: true, hang: true });
  const ac = new AbortController();
  started = Date.now();
  setTimeout(() => ac.abort(), 100);
  await assert.rejects(callConnector(request(c, 'chat', dir, { signal: ac.signal, timeoutMs: 10_000 })), (e: ConnectorError) => e.code === 'connector_aborted' && e.retryable);
  assert.ok(Date.now() - started < 1500);
  // Already aborted: nothing is sent.
  await assert.rejects(callConnector(request(c, 'chat', dir, { signal: AbortSignal.abort() })), (e: ConnectorError) => e.code === 'connector_aborted');
  // Abort while a video is being polled.
  await control(ms, { reset: true });
  const ac2 = new AbortController();
  const vreq = request(c, 'video', dir, { signal: ac2.signal, contract: contract({ prompt: `abort ${crypto.randomUUID()}`, parameters: { seconds: 2 } }), onRef: () => ac2.abort() });
  await assert.rejects(callConnector(vreq), (e: ConnectorError) => e.code === 'connector_aborted');
  await control(ms, { reset: true });
  assert.equal(typeof (await callConnector(request(c, 'chat', dir))).output.text, 'string');
});

test('credential: sent as Bearer, wrong one rejected, never in messages or dry runs', async (t) => {
  const dir = tmp(t);
  const key = `sk-test-${crypto.randomBytes(8).toString('hex')}`;
  const guarded = await startModelServer({ apiKey: key });
  t.after(() => guarded.close());
  const c = connector('openai-compatible', guarded.url, { authEnv: 'SVC_CONNECTOR_SECRET_TEST_MODEL_KEY' });
  const ok = await callConnector(request(c, 'chat', dir, { env: { SVC_CONNECTOR_SECRET_TEST_MODEL_KEY: key } }));
  assert.equal(typeof ok.output.text, 'string');
  assert.ok(!JSON.stringify(ok).includes(key));
  const img = await callConnector(request(c, 'image', dir, { env: { SVC_CONNECTOR_SECRET_TEST_MODEL_KEY: key }, contract: contract({ parameters: { size: '32x32' } }) }));
  assert.equal(img.files.length, 1);
  const hj = connector('http-json', `${guarded.url}/generate`, { authEnv: 'SVC_CONNECTOR_SECRET_TEST_MODEL_KEY' });
  assert.equal((await callConnector(request(hj, 'chat', dir, { env: { SVC_CONNECTOR_SECRET_TEST_MODEL_KEY: key } }))).files.length, 0);

  const wrong = `sk-wrong-${crypto.randomBytes(8).toString('hex')}`;
  await assert.rejects(callConnector(request(c, 'chat', dir, { env: { SVC_CONNECTOR_SECRET_TEST_MODEL_KEY: wrong } })), (e: ConnectorError) => {
    assert.equal(e.code, 'connector_rejected');
    assert.equal(e.httpStatus, 401);
    assert.equal(e.retryable, false);
    assert.ok(!e.message.includes(wrong));
    return true;
  });
  await assert.rejects(callConnector(request(c, 'chat', dir)), (e: ConnectorError) => e.code === 'connector_credential_missing' && !e.message.includes(key));
  const shown = dryRun(c, contract(), execution('chat'), CREDENTIALS);
  assert.deepEqual(shown.headers, ['content-type', 'authorization']);
  assert.ok(!JSON.stringify(shown).includes(key));
  // Probes carry the credential too and never show it.
  const probe = await probeConnector(c, { env: { SVC_CONNECTOR_SECRET_TEST_MODEL_KEY: key }, credentials: CREDENTIALS, timeoutMs: 2000 });
  assert.equal(probe.ok, true);
});

test('probe: default health routes per kind, 2xx ok, failures as text', async (t) => {
  const { ms } = await setup(t);
  for (const c of [connector('http-json', `${ms.url}/generate`), connector('openai-compatible', ms.url), connector('comfyui', ms.url)]) {
    const r = await probeConnector(c, { env: {}, credentials: CREDENTIALS, timeoutMs: 2000 });
    assert.equal(r.ok, true, c.kind);
    assert.equal(r.httpStatus, 200);
    assert.equal(r.error, null);
    assert.ok(r.latencyMs >= 0 && r.latencyMs < 2000);
  }
  const n = await calls(ms);
  assert.equal(n['GET /health'], 1);
  assert.equal(n['GET /v1/models'], 1);
  assert.equal(n['GET /system_stats'], 1);
  const missing = await probeConnector(connector('openai-compatible', ms.url, { protocol: { healthRoute: '/nope' } }), { env: {}, credentials: CREDENTIALS, timeoutMs: 2000 });
  assert.equal(missing.ok, false);
  assert.equal(missing.httpStatus, 404);
  assert.match(missing.error!, /^HTTP 404 from GET \/nope/);
});
