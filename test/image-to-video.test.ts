// Image-to-video: the model server's POST /v1/videos takes a reference picture as multipart
// (`input_reference`) and opens the video on it; the openai-compatible protocol sends the first image
// input that way (the dry run shows the form); a video job with dependsOn + useDependencyOutputs gets
// the image its dependency generated as that input, with the artifact in its provenance.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runFfmpeg } from '../src/media/ffmpeg.ts';
import { decodeFirstAndLast } from '../src/media/frames.ts';
import { compareSignatures, signatureOf } from '../src/media/signature.ts';
import { startModelServer, type RunningModelServer } from '../src/modelserver/server.ts';
import { dryRun } from '../src/connectors/protocols/index.ts';
import { connectorSpec } from '../src/connectors/present.ts';
import { connectorById } from '../src/connectors/store.ts';
import type { ConnectorSpec, ContractInput, ProductionContract } from '../src/connectors/types.ts';
import { buildContract } from '../src/jobs/contract.ts';
import { jobById } from '../src/jobs/store.ts';
import { createJob, jobWorld, waitJob } from './helpers/jobs.ts';

let ms: RunningModelServer;
let dir: string;
before(async () => {
  ms = await startModelServer();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-i2v-'));
});
after(async () => {
  await ms.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

let fileSeq = 0;
const toFile = (bytes: Buffer) => {
  const file = path.join(dir, `f${++fileSeq}`);
  fs.writeFileSync(file, bytes);
  return file;
};

/** One picture from an ffmpeg source (and filters), as PNG or JPEG bytes. */
async function picture(source: string, codec: 'png' | 'mjpeg' = 'png', vf = 'null'): Promise<Buffer> {
  const { stdout } = await runFfmpeg(['-v', 'error', '-f', 'lavfi', '-i', source, '-vf', vf, '-frames:v', '1', '-f', 'image2pipe', '-c:v', codec, 'pipe:1'], { timeoutMs: 30_000 });
  return stdout;
}

/** The 32x32 signature of an image file's picture, or of a video file's first (or last) frame. */
async function signature(file: string, which: 'first' | 'last' = 'first'): Promise<Buffer> {
  const frames = await decodeFirstAndLast(file, { firstOnly: which === 'first' });
  const f = frames[which];
  return signatureOf(f.rgb, f.width, f.height);
}
const mad = (a: Buffer, b: Buffer) => compareSignatures(a, b).meanAbsDiff;

async function waitVideo(base: string, id: string): Promise<any> {
  const until = Date.now() + 20_000;
  for (;;) {
    const v = await (await fetch(`${base}/v1/videos/${id}`)).json() as any;
    if (v.status === 'completed' || v.status === 'failed') return v;
    if (Date.now() > until) assert.fail(`video ${id} is still ${v.status}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function createVideo(body: FormData | Record<string, unknown>) {
  const init: RequestInit = body instanceof FormData
    ? { method: 'POST', body }
    : { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
  const res = await fetch(`${ms.url}/v1/videos`, init);
  return { status: res.status, json: await res.json() as any };
}

function form(fields: Record<string, string>, files: Record<string, { bytes: Buffer; type: string; name: string }> = {}): FormData {
  const f = new FormData();
  for (const [k, v] of Object.entries(fields)) f.set(k, v);
  for (const [k, v] of Object.entries(files)) f.set(k, new Blob([new Uint8Array(v.bytes)], { type: v.type }), v.name);
  return f;
}

async function content(id: string): Promise<string> {
  const res = await fetch(`${ms.url}/v1/videos/${id}/content`);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'video/mp4');
  return toFile(Buffer.from(await res.arrayBuffer()));
}

test('model server: a multipart video with an input_reference opens on that picture and moves; JPEG too; JSON unchanged', async (t) => {
  const reference = await picture('testsrc2=s=320x180:d=1');
  // The same colours in another layout.
  const unrelated = await picture('testsrc2=s=320x180:d=1', 'png', 'hflip');
  const refSig = await signature(toFile(reference));
  const unrelatedSig = await signature(toFile(unrelated));

  const fields = { prompt: 'the test card comes alive', model: 'svc-video', seconds: '2', size: '320x180' };
  const created = await createVideo(form(fields, { input_reference: { bytes: reference, type: 'image/png', name: '../../etc/passwd' } }));
  assert.equal(created.status, 200, JSON.stringify(created.json));
  assert.equal(created.json.status, 'queued');
  assert.deepEqual(created.json.input_reference, { mime_type: 'image/png', size: reference.length, sha256: crypto.hash('sha256', reference, 'hex') });
  const done = await waitVideo(ms.url, created.json.id);
  assert.equal(done.status, 'completed', JSON.stringify(done));
  assert.equal(done.size, '320x180');
  const video = await content(created.json.id);
  const first = await signature(video);
  const last = await signature(video, 'last');
  const near = mad(first, refSig);
  const far = mad(unrelatedSig, refSig);
  t.diagnostic(`first frame vs reference ${near}, unrelated picture vs reference ${far}, first vs last ${mad(first, last)}`);
  assert.ok(near < 16, `the first frame is the reference (mean abs diff ${near})`);
  assert.ok(near * 5 < far, `far below an unrelated picture (${near} vs ${far})`);
  assert.ok(mad(first, last) > 3, `the picture moves (first vs last ${mad(first, last)})`);

  // The same picture and prompt: the same bytes (content-addressed cache).
  const again = await createVideo(form(fields, { input_reference: { bytes: reference, type: 'application/octet-stream', name: 'x.bin' } }));
  await waitVideo(ms.url, again.json.id);
  assert.deepEqual(fs.readFileSync(await content(again.json.id)), fs.readFileSync(video));

  // A JPEG reference works the same way (checked by its bytes, not its declared type).
  const jpeg = await picture('testsrc2=s=320x180:d=1', 'mjpeg');
  const viaJpeg = await createVideo(form(fields, { input_reference: { bytes: jpeg, type: 'text/plain', name: 'card.txt' } }));
  assert.equal(viaJpeg.json.input_reference.mime_type, 'image/jpeg');
  assert.equal((await waitVideo(ms.url, viaJpeg.json.id)).status, 'completed');
  assert.ok(mad(await signature(await content(viaJpeg.json.id)), refSig) < 16);

  // A square picture in a 16:9 video: scaled to fit and padded, still the opening picture.
  const square = await picture('testsrc2=s=256x256:d=1');
  const padded = await createVideo(form(fields, { input_reference: { bytes: square, type: 'image/png', name: 's.png' } }));
  assert.equal((await waitVideo(ms.url, padded.json.id)).status, 'completed');
  const fitted = await signature(toFile(await picture('testsrc2=s=256x256:d=1', 'png', 'scale=180:180,pad=320:180:70:0:black')));
  assert.ok(mad(await signature(await content(padded.json.id)), fitted) < 16);

  // Without a reference, JSON and multipart give today's colour scene.
  const plain = await createVideo(fields);
  assert.equal(plain.status, 200);
  assert.equal(plain.json.input_reference, undefined);
  assert.equal((await waitVideo(ms.url, plain.json.id)).status, 'completed');
  const plainFile = await content(plain.json.id);
  assert.ok(mad(await signature(plainFile), refSig) > near * 4);
  const plainForm = await createVideo(form(fields));
  await waitVideo(ms.url, plainForm.json.id);
  assert.deepEqual(fs.readFileSync(await content(plainForm.json.id)), fs.readFileSync(plainFile));
});

test('model server: bad multipart parts are 400 with the OpenAI error shape; bad fields 422', async () => {
  const png = await picture('color=c=red:s=64x64:d=1');
  const fields = { prompt: 'a red square', seconds: '1' };
  const cases: Array<[string, FormData, number, RegExp]> = [
    ['not a picture', form(fields, { input_reference: { bytes: Buffer.from('hello, not an image'), type: 'image/png', name: 'a.png' } }), 400, /PNG or JPEG/],
    ['a GIF', form(fields, { input_reference: { bytes: Buffer.from('GIF89a\x01\x00\x01\x00', 'latin1'), type: 'image/gif', name: 'a.gif' } }), 400, /PNG or JPEG/],
    ['a plain field', form({ ...fields, input_reference: 'https://example.com/a.png' }), 400, /file part/],
    ['another file', form(fields, { prompt_file: { bytes: png, type: 'image/png', name: 'a.png' } }), 400, /unexpected file part/],
    ['no prompt', form({ seconds: '1' }, { input_reference: { bytes: png, type: 'image/png', name: 'a.png' } }), 422, /prompt/],
    ['bad seconds', form({ ...fields, seconds: '99' }, { input_reference: { bytes: png, type: 'image/png', name: 'a.png' } }), 422, /seconds/],
  ];
  for (const [what, body, status, message] of cases) {
    const r = await createVideo(body);
    assert.equal(r.status, status, `${what}: ${JSON.stringify(r.json)}`);
    assert.equal(r.json.error.type, 'invalid_request_error', what);
    assert.match(r.json.error.message, message, what);
  }
  const malformed = await fetch(`${ms.url}/v1/videos`, { method: 'POST', headers: { 'content-type': 'multipart/form-data; boundary=xyz' }, body: '--xyz\r\nbroken' });
  assert.equal(malformed.status, 400);
  assert.match(((await malformed.json()) as any).error.message, /malformed multipart/);
});

const connector = (endpoint: string): ConnectorSpec => ({
  id: 'mdl_t', label: 'local', endpoint, kind: 'openai-compatible', capability: ['video'], costMode: 'local', authEnv: null,
  protocol: { models: { video: 'svc-video' } },
});
const contract = (inputs: ContractInput[]): ProductionContract => ({
  organization: { id: 'org_1', name: 'Org' }, project: { id: 'prj_1', name: 'P' }, episode: null, shot: null,
  prompt: 'the harbour at dawn', negativePrompt: null, bible: [], inputs, parameters: { seconds: 2, size: '320x180' },
});
const execution = { jobId: 'job_t', attempt: 1, kind: 'video', model: null, deadline: new Date(Date.now() + 60_000).toISOString() };

test('openai protocol dry run: the first image input goes as input_reference in a multipart form; none: JSON as before', () => {
  const audio: ContractInput = { assetId: 'ast_1', versionId: 'ver_1', fileName: 'line.wav', mimeType: 'audio/wav', fileSize: 10, contentSha256: 'a'.repeat(64) };
  const image: ContractInput = { artifactId: 'art_1', jobId: 'job_img', fileName: 'image-1.png', mimeType: 'image/png', fileSize: 1234, contentSha256: 'b'.repeat(64) };
  const multi = dryRun(connector('http://h:1'), contract([audio, image]), execution);
  assert.equal(multi.url, 'http://h:1/v1/videos');
  assert.equal(multi.contentType, 'multipart/form-data');
  assert.deepEqual(multi.body, {
    model: 'svc-video', prompt: 'the harbour at dawn', seconds: '2', size: '320x180',
    input_reference: { fileName: 'image-1.png', mimeType: 'image/png', fileSize: 1234 },
  });
  const json = dryRun(connector('http://h:1'), contract([audio]), execution);
  assert.equal(json.contentType, 'application/json');
  assert.deepEqual(json.body, { model: 'svc-video', prompt: 'the harbour at dawn', seconds: '2', size: '320x180' });
});

test('a video job depending on an image job with useDependencyOutputs starts on the generated picture', async (t) => {
  const { s, m, token, id } = await jobWorld(t);
  const image = await createJob(s, token, { kind: 'image', connectorId: id, prompt: 'a teal lighthouse', parameters: { size: '320x180' } });
  const video = await createJob(s, token, {
    kind: 'video', connectorId: id, prompt: 'waves at the lighthouse', parameters: { seconds: 2, size: '320x180' },
    dependsOn: image.id, useDependencyOutputs: true,
  });
  const done = await waitJob(s, token, video.id, ['completed', 'failed'], 30_000);
  assert.equal(done.status, 'completed', JSON.stringify(done));
  const artifactsOf = async (jobId: string) => (await s.call('GET', `/api/production/media-artifacts?jobId=${jobId}`, { token })).body.items as any[];
  const [still] = await artifactsOf(image.id);
  const [clip] = await artifactsOf(video.id);
  assert.equal(still.kind, 'image');
  assert.equal(clip.kind, 'video');

  // The contract the video job is called with, and the request its dry run shows.
  const row = jobById(s.db, video.id)!;
  const { contract: c } = buildContract(s.db, null, row);
  assert.deepEqual(c.inputs, [{
    artifactId: still.id, jobId: image.id, fileName: 'image-1.png', mimeType: 'image/png', fileSize: still.fileSize, contentSha256: still.contentSha256,
  }]);
  const { inputFiles } = buildContract(s.db, s.config.storageDir, row);
  assert.equal(inputFiles.length, 1);
  assert.equal(fs.readFileSync(inputFiles[0].path).length, still.fileSize);
  const spec = connectorSpec(connectorById(s.db, row.organization_id, id)!);
  const shown = dryRun(spec, c, { ...execution, model: 'svc-video' });
  assert.equal(shown.contentType, 'multipart/form-data');
  assert.deepEqual((shown.body as any).input_reference, { fileName: 'image-1.png', mimeType: 'image/png', fileSize: still.fileSize });
  // The HTTP dry run of the same job body shows the same request.
  const overHttp = await s.call('POST', '/api/adapters/dry-run', {
    token, body: { kind: 'video', connectorId: id, prompt: 'waves at the lighthouse', parameters: { seconds: 2, size: '320x180' }, dependsOn: image.id, useDependencyOutputs: true },
  });
  assert.equal(overHttp.status, 200, overHttp.text);
  assert.equal(overHttp.body.contentType, 'multipart/form-data');
  assert.deepEqual(overHttp.body.body.input_reference, { fileName: 'image-1.png', mimeType: 'image/png', fileSize: still.fileSize });
  const noDependency = await s.call('POST', '/api/adapters/dry-run', { token, body: { kind: 'video', connectorId: id, prompt: 'x', useDependencyOutputs: true } });
  assert.equal(noDependency.status, 422);
  assert.ok(noDependency.body.error.details.fields.useDependencyOutputs);

  // What the model server received: one video creation carrying exactly that picture.
  const calls = await (await fetch(`${m.url}/control`)).json() as any;
  assert.equal(calls.calls.byRoute['POST /v1/videos'], 1);
  const remote = await (await fetch(`${m.url}/v1/videos/${done.output.videoId}`)).json() as any;
  assert.deepEqual(remote.input_reference, { mime_type: 'image/png', size: still.fileSize, sha256: still.contentSha256 });

  // The stored video opens on the generated picture, unlike an unrelated one.
  const stored = (rel: string) => path.join(s.config.storageDir, rel);
  const pictureSig = await signature(stored(still.path));
  const firstSig = await signature(stored(clip.firstFrame.path));
  const near = mad(firstSig, pictureSig);
  const far = mad(await signature(toFile(await picture('color=c=crimson:s=320x180:d=1'))), pictureSig);
  t.diagnostic(`first frame vs generated picture ${near}, unrelated picture ${far}`);
  assert.ok(near < 16 && near * 5 < far, `first frame vs picture ${near}, unrelated ${far}`);

  // Provenance names the image artifact with its SHA-256.
  assert.deepEqual(clip.provenance.inputs, [{ artifactId: still.id, jobId: image.id, contentSha256: still.contentSha256 }]);
});
