// The protocol layer's real HTTP calls of every protocol and kind against the project's own model server
// (faults, credentials, time-outs, aborts, image count and composite checks, ComfyUI and video resumption).
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { ConnectorError } from '../../src/generation/connectors/protocols/types.ts';
import type { Execution } from '../../src/generation/connectors/protocols/types.ts';
import { callConnector, dryRun, probeConnector } from '../../src/generation/connectors/protocols/index.ts';
import { tuning as comfyTuning } from '../../src/generation/connectors/protocols/comfyui.ts';
import { tuning as openaiTuning } from '../../src/generation/connectors/protocols/openai.ts';
import { startModelServer, type RunningModelServer } from '../../tools/model-server/server.ts';
import { chatReply, transcript } from '../../tools/model-server/text.ts';
import { tmp, CREDENTIALS, connector, WORKFLOW, contract, execution, request } from './protocols-setup.ts';

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
