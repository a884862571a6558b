// Image-to-video: the model server's POST /v1/videos takes a reference picture as multipart
// (`input_reference`) and opens the video on it; the openai-compatible protocol sends the first image
// input that way (the dry run shows the form); a video job with dependsOn + useDependencyOutputs gets
// the image its dependency generated as that input, with the artifact in its provenance.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { runFfmpeg } from '../../src/media-tools/ffmpeg.ts';
import { decodeFirstAndLast } from '../../src/media-tools/frames.ts';
import { compareSignatures, signatureOf } from '../../src/media-tools/signature.ts';
import { parseMultipart } from '../../tools/model-server/multipart.ts';
import { MAX_REFERENCE_SIDE, MAX_VIDEO_UPLOADS } from '../../tools/model-server/openai.ts';
import { pictureSize } from '../../tools/model-server/picture.ts';
import { createRenderer } from '../../tools/model-server/render.ts';
import { startModelServer, type RunningModelServer } from '../../tools/model-server/server.ts';
import { dryRun } from '../../src/generation/connectors/protocols/index.ts';
import { connectorSpec } from '../../src/generation/connectors/present.ts';
import { connectorById } from '../../src/generation/connectors/store.ts';
import type { ConnectorSpec, ContractInput, ProductionContract } from '../../src/generation/connectors/protocols/types.ts';
import { buildContract, stageInputs } from '../../src/generation/jobs/contract.ts';
import { jobById } from '../../src/generation/jobs/store.ts';
import { createJob, jobWorld, waitJob } from '../helpers/jobs.ts';
import { credentialPolicy } from '../../src/kernel/credentials.ts';
import { loadConfig } from '../../src/kernel/config.ts';
import { storageOf } from '../../src/kernel/storage/index.ts';
import { serversRunTheWorker } from '../helpers/server.ts';

serversRunTheWorker();

const CREDENTIALS = credentialPolicy(loadConfig({}, {}));

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

/** A PNG's signature and IHDR chunk (with its CRC) declaring `width`x`height`, then IEND: no pixels. */
function pngHeader(width: number, height: number): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const typed = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const out = Buffer.alloc(typed.length + 8);
    out.writeUInt32BE(data.length, 0);
    typed.copy(out, 4);
    out.writeUInt32BE(zlib.crc32(typed), typed.length + 4);
    return out;
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr), chunk('IEND', Buffer.alloc(0))]);
}

/** A JPEG segment: marker, 16-bit length (counting itself) and payload. */
const segment = (marker: number, payload: Buffer | number[]) => {
  const data = Buffer.from(payload);
  const head = Buffer.from([0xff, marker, 0, 0]);
  head.writeUInt16BE(data.length + 2, 2);
  return Buffer.concat([head, data]);
};
/** A frame header (SOF0, SOF2, ...) of three components declaring `width`x`height`. */
const frameHeader = (marker: number, width: number, height: number) =>
  segment(marker, [8, height >> 8, height & 0xff, width >> 8, width & 0xff, 3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]);
const SOI = Buffer.from([0xff, 0xd8]);
const EOI = Buffer.from([0xff, 0xd9]);

test('pictureSize: PNG IHDR and JPEG frame headers, walked past APP segments; cut or malformed headers are null', async () => {
  assert.deepEqual(pictureSize(await picture('testsrc2=s=320x180:d=1')), { width: 320, height: 180 });
  assert.deepEqual(pictureSize(await picture('testsrc2=s=320x180:d=1', 'mjpeg')), { width: 320, height: 180 });
  assert.deepEqual(pictureSize(pngHeader(16000, 16000)), { width: 16000, height: 16000 });
  assert.deepEqual(pictureSize(pngHeader(16000, 9)), { width: 16000, height: 9 });

  const jfif = segment(0xe0, [...Buffer.from('JFIF\0'), 1, 1, 0, 0, 1, 0, 1, 0, 0]);
  // An APP1 whose payload holds what looks like a frame header: segments are skipped by length.
  const exif = segment(0xe1, [...Buffer.from('Exif\0\0'), 0xff, 0xc0, 0x00, 0x11, 8, 0x3e, 0x80, 0x3e, 0x80]);
  const dqt = segment(0xdb, [0, ...Array(64).fill(1)]);
  const dht = segment(0xc4, [0, ...Array(16).fill(0)]); // in the SOF range, but not a frame header
  const progressive = Buffer.concat([SOI, jfif, exif, dqt, dht, frameHeader(0xc2, 640, 480), segment(0xda, [1, 1, 0, 0, 63, 0]), EOI]);
  assert.deepEqual(pictureSize(progressive), { width: 640, height: 480 });
  // Fill bytes before a marker, and markers without a length (RST0, TEM, another SOI) between segments.
  const padded = Buffer.concat([SOI, Buffer.from([0xff, 0xff]), jfif, Buffer.from([0xff, 0xd0, 0xff, 0x01, 0xff, 0xd8]), frameHeader(0xc0, 33, 17), EOI]);
  assert.deepEqual(pictureSize(padded), { width: 33, height: 17 });
  assert.deepEqual(pictureSize(Buffer.concat([SOI, frameHeader(0xc0, 0, 0)])), { width: 0, height: 0 });

  const nulls: Array<[string, Buffer]> = [
    ['JPEG cut inside its frame header', progressive.subarray(0, progressive.indexOf(Buffer.from([0xff, 0xc2])) + 6)],
    ['JPEG cut inside an APP segment', Buffer.concat([SOI, jfif]).subarray(0, 10)],
    ['JPEG cut after SOI', SOI],
    ['JPEG with a scan before any frame header', Buffer.concat([SOI, jfif, segment(0xda, [1, 1, 0, 0, 63, 0]), frameHeader(0xc0, 8, 8)])],
    ['JPEG ending before any frame header', Buffer.concat([SOI, jfif, EOI, frameHeader(0xc0, 8, 8)])],
    ['JPEG with garbage where a marker belongs', Buffer.concat([SOI, jfif, Buffer.from([0x00]), frameHeader(0xc0, 8, 8)])],
    ['JPEG segment length below 2', Buffer.concat([SOI, Buffer.from([0xff, 0xe0, 0x00, 0x01]), frameHeader(0xc0, 8, 8)])],
    ['PNG cut inside IHDR', pngHeader(64, 64).subarray(0, 20)],
    ['PNG whose first chunk is not IHDR', Buffer.concat([pngHeader(64, 64).subarray(0, 12), Buffer.from('IDAT'), pngHeader(64, 64).subarray(16)])],
    ['not a picture', Buffer.from('GIF89a\x01\x00\x01\x00', 'latin1')],
    ['empty', Buffer.alloc(0)],
  ];
  for (const [what, bytes] of nulls) assert.equal(pictureSize(bytes), null, what);
});

test('model server: a reference picture over 4096 pixels a side, of 0 pixels or with an unreadable header is 400', async () => {
  assert.equal(MAX_REFERENCE_SIDE, 4096);
  const fields = { prompt: 'a huge picture', seconds: '1' };
  const upload = (bytes: Buffer, type = 'image/png') => createVideo(form(fields, { input_reference: { bytes, type, name: 'p' } }));
  const jpegOf = (width: number, height: number) => Buffer.concat([SOI, frameHeader(0xc0, width, height), EOI]);
  const cases: Array<[string, Buffer, RegExp]> = [
    ['PNG 16000 wide', pngHeader(16000, 64), /1 to 4096 pixels on each side, not 16000x64/],
    ['PNG 16000x16000', pngHeader(16000, 16000), /4096 pixels on each side, not 16000x16000/],
    ['PNG 4097 high', pngHeader(64, 4097), /4096/],
    ['PNG 0 wide', pngHeader(0, 64), /1 to 4096/],
    ['JPEG 5000 wide', jpegOf(5000, 100), /4096 pixels on each side, not 5000x100/],
    ['JPEG 0 high', jpegOf(100, 0), /1 to 4096/],
    ['truncated JPEG', Buffer.concat([SOI, frameHeader(0xc0, 64, 64)]).subarray(0, 9), /unreadable JPEG header/],
    ['PNG without IHDR', pngHeader(64, 64).subarray(0, 16), /unreadable PNG header/],
  ];
  for (const [what, bytes, message] of cases) {
    const r = await upload(bytes);
    assert.equal(r.status, 400, `${what}: ${JSON.stringify(r.json)}`);
    assert.equal(r.json.error.type, 'invalid_request_error', what);
    assert.match(r.json.error.message, message, what);
  }
  // 4096 on a side is allowed (the header is all this picture has: its render fails, the request does not).
  const edge = await upload(pngHeader(4096, 16));
  assert.equal(edge.status, 200, JSON.stringify(edge.json));
  assert.equal((await waitVideo(ms.url, edge.json.id)).status, 'failed');
});

test('parseMultipart: part data are views of the body, not copies; with or without a preamble', () => {
  const form = '--b\r\ncontent-disposition: form-data; name="prompt"\r\n\r\nhi\r\n'
    + '--b\r\ncontent-disposition: form-data; name="input_reference"; filename="a.png"\r\ncontent-type: image/png\r\n\r\n\x89PNG\r\n--b--\r\n';
  for (const body of [Buffer.from(form, 'latin1'), Buffer.from(`preamble\r\n${form}`, 'latin1')]) {
    const parts = parseMultipart('multipart/form-data; boundary=b', body);
    assert.deepEqual(parts.map((p) => [p.name, p.fileName, p.data.toString('latin1')]), [['prompt', null, 'hi'], ['input_reference', 'a.png', '\x89PNG']]);
    body[body.indexOf('hi')] = 0x48; // an edit of the body shows in its part
    assert.equal(parts[0].data.toString(), 'Hi');
  }
});

/** A multipart video creation sent in part: its first bytes now, the rest by finish(). */
async function stalledUpload(body: FormData): Promise<{ finish(): Promise<{ status: number; json: any }> }> {
  const encoded = new Response(body);
  const bytes = Buffer.from(await encoded.arrayBuffer());
  const req = http.request(`${ms.url}/v1/videos`, {
    method: 'POST', headers: { 'content-type': encoded.headers.get('content-type')!, 'content-length': bytes.length },
  });
  const answered = new Promise<{ status: number; json: any }>((resolve, reject) => {
    req.once('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.once('end', () => resolve({ status: res.statusCode!, json: JSON.parse(Buffer.concat(chunks).toString('utf8')) }));
    });
    req.once('error', reject);
  });
  req.write(bytes.subarray(0, 64));
  return { finish: () => (req.end(bytes.subarray(64)), answered) };
}

test('model server: at most 4 multipart video uploads at once; the next is 429 with Retry-After: 1, JSON ones go on', async () => {
  assert.equal(MAX_VIDEO_UPLOADS, 4);
  const png = await picture('color=c=navy:s=64x64:d=1');
  const body = () => form({ prompt: 'a navy square', seconds: '1' }, { input_reference: { bytes: png, type: 'image/png', name: 'n.png' } });
  const videoCalls = async () => ((await (await fetch(`${ms.url}/control`)).json()) as any).calls.byRoute['POST /v1/videos'] ?? 0;
  const before = await videoCalls();
  const held = await Promise.all(Array.from({ length: MAX_VIDEO_UPLOADS }, () => stalledUpload(body())));
  // Each counted call has taken its slot before this server answers another request.
  for (const until = Date.now() + 5000; (await videoCalls()) < before + MAX_VIDEO_UPLOADS;) {
    assert.ok(Date.now() < until, 'the held uploads reached the server');
    await new Promise((r) => setTimeout(r, 10));
  }

  const refused = await fetch(`${ms.url}/v1/videos`, { method: 'POST', body: body() });
  assert.equal(refused.status, 429);
  assert.equal(refused.headers.get('retry-after'), '1');
  const error = ((await refused.json()) as any).error;
  assert.equal(error.type, 'rate_limit_exceeded');
  assert.match(error.message, /too many video uploads at once \(4 at most\)/);
  // A JSON creation holds no upload: not limited.
  const json = await createVideo({ prompt: 'a navy square', seconds: '1' });
  assert.equal(json.status, 200, JSON.stringify(json.json));

  // The held uploads complete, and their slots are free again afterwards.
  for (const answer of await Promise.all(held.map((h) => h.finish()))) {
    assert.equal(answer.status, 200, JSON.stringify(answer.json));
    assert.equal(answer.json.input_reference.sha256, crypto.hash('sha256', png, 'hex'));
  }
  const after = await createVideo(body());
  assert.equal(after.status, 200, JSON.stringify(after.json));
  assert.equal((await waitVideo(ms.url, after.json.id)).status, 'completed');
});

test('renderer: references/ goes with a temporary cache directory on close; a given cache directory keeps them', async () => {
  const png = await picture('color=c=olive:s=32x32:d=1');
  const sha = crypto.hash('sha256', png, 'hex');

  const owned = await createRenderer();
  assert.equal(await owned.keepReference(png), sha);
  assert.deepEqual(fs.readFileSync(path.join(owned.dir, 'references', sha)), png);
  // A picture still being written when close() starts is waited for, not left behind in a recreated directory.
  const big = Buffer.alloc(4 << 20, 7);
  const late = owned.keepReference(big);
  await owned.close();
  assert.equal(await late, crypto.hash('sha256', big, 'hex'));
  assert.equal(fs.existsSync(owned.dir), false);
  await assert.rejects(owned.keepReference(png), /closed/);

  const cacheDir = path.join(dir, 'cache');
  const given = await createRenderer({ cacheDir });
  assert.equal(await given.keepReference(png), sha);
  await given.close();
  assert.deepEqual(fs.readFileSync(path.join(cacheDir, 'references', sha)), png);
  const reopened = await createRenderer({ cacheDir });
  assert.equal(await reopened.keepReference(png), sha);
  assert.deepEqual(fs.readdirSync(path.join(cacheDir, 'references')), [sha]);
  await reopened.close();
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
  const multi = dryRun(connector('http://h:1'), contract([audio, image]), execution, CREDENTIALS);
  assert.equal(multi.url, 'http://h:1/v1/videos');
  assert.equal(multi.contentType, 'multipart/form-data');
  assert.deepEqual(multi.body, {
    model: 'svc-video', prompt: 'the harbour at dawn', seconds: '2', size: '320x180',
    input_reference: { fileName: 'image-1.png', mimeType: 'image/png', fileSize: 1234 },
  });
  const json = dryRun(connector('http://h:1'), contract([audio]), execution, CREDENTIALS);
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
  const row = (await jobById(s.db, video.id))!;
  const { contract: c } = await buildContract(s.db, row);
  assert.deepEqual(c.inputs, [{
    artifactId: still.id, jobId: image.id, fileName: 'image-1.png', mimeType: 'image/png', fileSize: still.fileSize, contentSha256: still.contentSha256,
  }]);
  const staged = await stageInputs(storageOf(s.config), (await buildContract(s.db, row)).inputs);
  t.after(() => staged.release());
  assert.equal(staged.files.length, 1);
  assert.equal(fs.readFileSync(staged.files[0].path).length, still.fileSize);
  const spec = connectorSpec((await connectorById(s.db, row.organization_id, id))!);
  const shown = dryRun(spec, c, { ...execution, model: 'svc-video' }, CREDENTIALS);
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
