// The protocol layer's pure pieces: URL joining, dry runs (one builder shared with the call), capability
// checks, workflow placeholders, output files (hash, replacement, limits, traversal), a missing
// credential and an unreachable service. Real HTTP calls are in test/generation/protocols-http.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { ConnectorError } from '../../src/generation/connectors/protocols/types.ts';
import { callConnector, dryRun, probeConnector, routeFor, supportsKind } from '../../src/generation/connectors/protocols/index.ts';
import { joinUrl } from '../../src/generation/connectors/protocols/urls.ts';
import { fillWorkflow, placeholders, seedOf } from '../../src/generation/connectors/protocols/comfyui.ts';
import { mimeFor, outputName, saveOutput } from '../../src/generation/connectors/protocols/outputs.ts';
import { tmp, CREDENTIALS, connector, WORKFLOW, contract, execution, request } from './protocols-setup.ts';
import { LocalStore } from '../../src/kernel/storage/local.ts';

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
  const a = await saveOutput({ storage: new LocalStore(dir), jobId: 'job_x', name: 'image-1.png', role: 'image', mimeType: 'image/png', source: Readable.from([bytes.subarray(0, 1000), bytes.subarray(1000)]), maxBytes: 1e6 });
  assert.deepEqual(a, { path: 'outputs/job_x/image-1.png', role: 'image', mimeType: 'image/png', fileSize: bytes.length, sha256: sha });
  assert.equal(crypto.hash('sha256', fs.readFileSync(path.join(dir, a.path)), 'hex'), sha);
  // A later attempt replaces the file: one copy only.
  const again = await saveOutput({ storage: new LocalStore(dir), jobId: 'job_x', name: 'image-1.png', role: 'image', mimeType: 'image/png', source: Buffer.from('second'), maxBytes: 1e6 });
  assert.equal(again.fileSize, 6);
  assert.deepEqual(fs.readdirSync(path.join(dir, 'outputs/job_x')), ['image-1.png']);
  // A web ReadableStream.
  const web = await saveOutput({ storage: new LocalStore(dir), jobId: 'job_x', name: 'audio-1.wav', role: 'audio', mimeType: 'audio/wav', source: new Blob([bytes]).stream(), maxBytes: 1e6 });
  assert.equal(web.sha256, sha);
  // Over the limit: nothing left behind, neither in outputs nor in tmp.
  await assert.rejects(
    saveOutput({ storage: new LocalStore(dir), jobId: 'job_x', name: 'video-1.mp4', role: 'video', mimeType: 'video/mp4', source: Readable.from([bytes, bytes]), maxBytes: 400_000 }),
    (e: ConnectorError) => e.code === 'output_too_large' && e.retryable === false,
  );
  await assert.rejects(
    saveOutput({ storage: new LocalStore(dir), jobId: 'job_x', name: 'video-1.mp4', role: 'video', mimeType: 'video/mp4', source: bytes, maxBytes: 1000 }),
    (e: ConnectorError) => e.code === 'output_too_large',
  );
  assert.ok(!fs.existsSync(path.join(dir, 'outputs/job_x/video-1.mp4')));
  assert.deepEqual(fs.readdirSync(path.join(dir, 'tmp')), []);
  for (const [jobId, name] of [['job_x', '../escape.png'], ['job_x', '..'], ['../x', 'a.png'], ['job_x', 'a/b.png'], ['job_x', '.hidden']]) {
    await assert.rejects(
      saveOutput({ storage: new LocalStore(dir), jobId, name, role: 'image', mimeType: 'image/png', source: Buffer.from('x'), maxBytes: 10 }),
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
