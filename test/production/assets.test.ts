// Assets and voice: access per route, streamed uploads (hash equal to sha256sum, sniffed MIME type,
// per-file maximum, storage quota, deduplication, flat memory on 200 MB), verify, restore, content
// with ETag/304/Range, unsafe stored paths, archived projects, and storage usage.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync, spawn } from 'node:child_process';
import http from 'node:http';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { TEST_ENV, databaseEnvOf, startTestServer, tempDir, type TestServer } from '../helpers/server.ts';
import { makeTree, member } from '../helpers/factories.ts';
import { changeLifecycle } from '../../src/production/projects/service.ts';
import { addVersionFromBytes } from '../../src/production/assets/service.ts';
import { withScope } from '../../src/directory/context.ts';

const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), crypto.randomBytes(3000)]);

async function setup(t: any, env: Record<string, string> = {}) {
  const s = await startTestServer(t, env);
  const tree = await makeTree(s);
  const producer = await member(s, 'producer', tree);
  return { s, tree, producer };
}

async function createAsset(s: TestServer, token: string, kind = 'image', name = `asset ${kind}`) {
  const r = await s.call('POST', '/api/assets', { token, body: { kind, name, tags: ['hero'] } });
  assert.equal(r.status, 201, r.text);
  return r.body;
}

function upload(s: TestServer, token: string | undefined, assetId: string, body: Buffer | string, o: { fileName?: string; type?: string; headers?: Record<string, string> } = {}) {
  const q = o.fileName === undefined ? '?fileName=file.bin' : o.fileName === '' ? '' : `?fileName=${encodeURIComponent(o.fileName)}`;
  return s.call('POST', `/api/assets/${assetId}/versions/upload${q}`, {
    token, raw: body, headers: { 'content-type': o.type ?? 'application/octet-stream', ...o.headers },
  });
}

/** A POST whose body is a stream (chunked, no Content-Length); a refused upload may end in a reset. */
async function streamUpload(s: TestServer, token: string, assetId: string, source: Readable, fileName = 'big.bin'): Promise<{ status: number; body: any } | { error: string }> {
  try {
    const res = await fetch(`${s.url}/api/assets/${assetId}/versions/upload?fileName=${fileName}`, {
      method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/octet-stream' },
      body: Readable.toWeb(source) as ReadableStream, duplex: 'half',
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  } catch (err) {
    return { error: String((err as Error).cause ?? err) };
  }
}

function filesUnder(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((d) => d.isFile()).map((d) => path.join(d.parentPath, d.name));
}

const storageFiles = (s: TestServer) => [...filesUnder(path.join(s.config.storageDir, 'assets')), ...filesUnder(path.join(s.config.storageDir, 'tmp'))];
const versionCount = async (s: TestServer) => (await s.db.get<{ n: number }>('SELECT count(*) AS n FROM asset_versions'))!.n;

test('asset routes: 401 without a session, 403 without the kind\'s permission, 404 across projects, success with it', async (t) => {
  const { s, tree, producer } = await setup(t);
  const writer = await member(s, 'writer', tree);
  const reviewer = await member(s, 'reviewer', tree);
  const voice = await member(s, 'voice_editor', tree);
  const art = await member(s, 'art_director', tree);
  const image = await createAsset(s, art.token, 'image');
  const vo = await createAsset(s, voice.token, 'voice');
  assert.equal(image.status, 'active');
  assert.deepEqual(image.tags, ['hero']);

  assert.equal((await s.call('GET', '/api/assets')).status, 401);
  assert.equal((await s.call('POST', '/api/assets', { body: { kind: 'image', name: 'x' } })).status, 401);
  assert.equal((await upload(s, undefined, image.id, PNG)).status, 401);
  assert.equal((await s.call('GET', `/api/assets/${image.id}/content`)).status, 401);
  assert.equal((await s.call('GET', '/api/usage/storage')).status, 401);

  const denied = await s.call('POST', '/api/assets', { token: writer.token, body: { kind: 'image', name: 'x' } });
  assert.equal(denied.status, 403);
  assert.equal(denied.body.error.code, 'permission_denied');
  assert.equal((await upload(s, writer.token, image.id, PNG)).status, 403, 'a writer cannot upload');
  assert.equal((await upload(s, reviewer.token, vo.id, PNG)).status, 403, 'a reviewer cannot upload voice');
  assert.equal((await s.call('POST', '/api/assets', { token: reviewer.token, body: { kind: 'voice', name: 'x' } })).status, 403);
  assert.equal((await s.call('POST', '/api/assets', { token: voice.token, body: { kind: 'image', name: 'x' } })).status, 403, 'voice:edit is not asset:edit');
  assert.equal((await upload(s, art.token, vo.id, PNG)).status, 403, 'an art director cannot upload voice');
  assert.equal((await upload(s, voice.token, image.id, PNG)).status, 403, 'a voice editor cannot upload images');
  assert.equal((await s.call('PATCH', `/api/assets/${vo.id}`, { token: art.token, body: { name: 'y' } })).status, 403);
  assert.equal((await s.call('POST', `/api/assets/${vo.id}/verify`, { token: writer.token })).status, 403);

  const up = await upload(s, voice.token, vo.id, Buffer.from('RIFF\x24\x00\x00\x00WAVEfmt ', 'latin1'), { fileName: 'line 1.wav' });
  assert.equal(up.status, 201, up.text);
  assert.equal(up.body.mimeType, 'audio/wav');
  assert.equal((await upload(s, art.token, image.id, PNG, { fileName: 'still.png' })).status, 201);
  for (const token of [writer.token, reviewer.token, voice.token, producer.token]) {
    assert.equal((await s.call('GET', '/api/assets', { token })).status, 200);
    assert.equal((await s.call('GET', `/api/assets/${vo.id}/content`, { token })).status, 200);
  }
  const list = await s.call('GET', '/api/assets?kind=voice', { token: writer.token });
  assert.deepEqual(list.body.items.map((a: any) => a.id), [vo.id]);
  assert.equal(list.body.items[0].currentVersion.fileName, 'line 1.wav');

  const outsider = await member(s, 'producer');
  assert.equal((await s.call('GET', `/api/assets/${image.id}`, { token: outsider.token })).status, 404);
  assert.equal((await s.call('GET', `/api/assets/${image.id}/content`, { token: outsider.token })).status, 404);
  assert.equal((await upload(s, outsider.token, image.id, PNG)).status, 404);
  assert.equal((await s.call('POST', `/api/assets/${image.id}/verify`, { token: outsider.token })).status, 404);
  assert.equal((await s.call('DELETE', `/api/assets/${image.id}`, { token: outsider.token })).status, 404);

  const patched = await s.call('PATCH', `/api/assets/${image.id}`, { token: art.token, body: { name: 'Key art', description: 'final', tags: ['a', 'a', 'b'] } });
  assert.equal(patched.status, 200, patched.text);
  assert.deepEqual([patched.body.name, patched.body.tags], ['Key art', ['a', 'b']]);
  const archived = await s.call('DELETE', `/api/assets/${image.id}`, { token: art.token });
  assert.equal(archived.body.status, 'archived');
  assert.equal((await upload(s, art.token, image.id, PNG)).body.error.code, 'asset_archived');
  assert.equal((await s.call('GET', '/api/assets', { token: art.token })).body.items.length, 1);
  assert.equal((await s.call('GET', '/api/assets?includeArchived=1', { token: art.token })).body.items.length, 2);
  const actions = (await s.db.all<any>("SELECT action FROM audit_log WHERE target_type = 'asset' AND target_id = ? ORDER BY seq", image.id)).map((r) => r.action);
  assert.deepEqual(actions, ['asset.created', 'asset.version_uploaded', 'asset.updated', 'asset.archived']);
});

test('an upload is hashed like sha256sum, its MIME type sniffed (not trusted), and served with ETag, 304 and Range', async (t) => {
  const { s, tree, producer } = await setup(t);
  const a = await createAsset(s, producer.token);
  const dir = tempDir(t);
  const file = path.join(dir, 'still.png');
  fs.writeFileSync(file, PNG);
  const r = await upload(s, producer.token, a.id, fs.readFileSync(file), { fileName: 'Ünïcode still "1".png', type: 'text/plain' });
  assert.equal(r.status, 201, r.text);
  const expected = execFileSync('sha256sum', [file], { encoding: 'utf8' }).split(' ')[0];
  assert.equal(r.body.contentSha256, expected);
  assert.equal(r.body.fileSize, PNG.length);
  assert.equal(r.body.mimeType, 'image/png');
  assert.equal(r.body.declaredMimeType, 'text/plain');
  assert.equal(r.body.number, 1);
  assert.equal(r.body.storagePath, `assets/${tree.organizationId}/${expected.slice(0, 2)}/${expected}`);
  assert.equal(execFileSync('sha256sum', [path.join(s.config.storageDir, r.body.storagePath)], { encoding: 'utf8' }).split(' ')[0], expected);
  assert.deepEqual(fs.readdirSync(path.join(s.config.storageDir, 'tmp')), []);

  const content = await fetch(`${s.url}/api/assets/${a.id}/content`, { headers: { authorization: `Bearer ${producer.token}` } });
  assert.equal(content.status, 200);
  assert.equal(content.headers.get('content-type'), 'image/png');
  assert.equal(content.headers.get('content-length'), String(PNG.length));
  assert.equal(content.headers.get('etag'), `"${expected}"`);
  assert.equal(content.headers.get('accept-ranges'), 'bytes');
  assert.match(content.headers.get('content-disposition')!, /^inline; filename="_n_code still _1_.png"; filename\*=UTF-8''%C3%9Cn%C3%AFcode%20still%20%221%22.png$/);
  assert.ok(Buffer.from(await content.arrayBuffer()).equals(PNG));

  const get = (headers: Record<string, string>, p = `/api/assets/${a.id}/content`) =>
    fetch(`${s.url}${p}`, { headers: { authorization: `Bearer ${producer.token}`, ...headers } });
  const notModified = await get({ 'if-none-match': `"${expected}"` });
  assert.equal(notModified.status, 304);
  assert.equal(notModified.headers.get('etag'), `"${expected}"`);
  assert.equal((await notModified.arrayBuffer()).byteLength, 0);
  assert.equal((await get({ 'if-none-match': '"other"' })).status, 200);
  const part = await get({ range: 'bytes=0-9' });
  assert.equal(part.status, 206);
  assert.equal(part.headers.get('content-range'), `bytes 0-9/${PNG.length}`);
  assert.equal(part.headers.get('content-length'), '10');
  assert.ok(Buffer.from(await part.arrayBuffer()).equals(PNG.subarray(0, 10)));
  const tail = await get({ range: 'bytes=-5' });
  assert.equal(tail.headers.get('content-range'), `bytes ${PNG.length - 5}-${PNG.length - 1}/${PNG.length}`);
  assert.ok(Buffer.from(await tail.arrayBuffer()).equals(PNG.subarray(-5)));
  const open = await get({ range: `bytes=${PNG.length - 3}-` });
  assert.ok(Buffer.from(await open.arrayBuffer()).equals(PNG.subarray(-3)));
  const beyond = await get({ range: `bytes=${PNG.length}-` });
  assert.equal(beyond.status, 416);
  assert.equal(beyond.headers.get('content-range'), `bytes */${PNG.length}`);
  await beyond.arrayBuffer();
  const head = await fetch(`${s.url}/api/assets/${a.id}/content`, { method: 'HEAD', headers: { authorization: `Bearer ${producer.token}` } });
  assert.equal(head.headers.get('content-length'), String(PNG.length));
  const byVersion = await get({}, `/api/assets/${a.id}/versions/${r.body.id}/content`);
  assert.equal(byVersion.status, 200);
  assert.ok(Buffer.from(await byVersion.arrayBuffer()).equals(PNG));
  assert.equal((await get({}, `/api/assets/${a.id}/versions/asv_nope/content`)).status, 404);

  // Sniffing: the bytes decide, whatever the client says.
  const cases: Array<[Buffer | string, string]> = [
    [Buffer.from([0xff, 0xd8, 0xff, 0xe0, 1, 2]), 'image/jpeg'], ['GIF89a....', 'image/gif'], ['RIFF\x00\x00\x00\x00WEBPVP8 ', 'image/webp'],
    [Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypisom')]), 'video/mp4'], [Buffer.concat([Buffer.from([0, 0, 0, 0x14]), Buffer.from('ftypqt  ')]), 'video/quicktime'],
    [Buffer.concat([Buffer.from([0x1a, 0x45, 0xdf, 0xa3, 0x9f, 0x42, 0x82, 0x84]), Buffer.from('webm')]), 'video/webm'],
    ['ID3\x04\x00', 'audio/mpeg'], ['OggS\x00\x02', 'audio/ogg'], ['fLaC\x00\x00', 'audio/flac'], ['%PDF-1.7\n', 'application/pdf'],
    ['{"scene": 1}', 'application/json'], ['INT. TRAIN - NIGHT\n', 'text/plain; charset=utf-8'], [Buffer.from([0, 1, 2, 3, 0xfe]), 'application/octet-stream'],
  ];
  for (const [bytes, mime] of cases) {
    const v = await upload(s, producer.token, a.id, Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes, 'latin1'), { type: 'image/png' });
    assert.equal(v.body.mimeType, mime, String(bytes));
  }
  const cd = await upload(s, producer.token, a.id, 'hello', { fileName: '', headers: { 'content-disposition': 'attachment; filename="plain.txt"; filename*=UTF-8\'\'%E5%89%A7%E6%9C%AC.txt' } });
  assert.equal(cd.body.fileName, '剧本.txt');
  const unnamed = await upload(s, producer.token, a.id, 'hello', { fileName: '' });
  assert.equal(unnamed.status, 422);
  assert.equal((await upload(s, producer.token, a.id, 'x', { type: 'multipart/mixed; boundary=x' })).status, 415);
  assert.equal((await upload(s, producer.token, a.id, 'x', { type: 'multipart/form-data; boundary=x' })).status, 422, 'no file part');
});

test('multipart/form-data uploads stream the first file part (fields before it skipped), hashed like a raw body', async (t) => {
  const { s, producer } = await setup(t);
  const a = await createAsset(s, producer.token, 'image');
  // 5 MB of random bytes with the start of a delimiter planted inside, so chunk edges and near-misses are crossed.
  const data = Buffer.concat([PNG, crypto.randomBytes(5 * 1024 * 1024), Buffer.from('\r\n--'), crypto.randomBytes(1000)]);
  const form = new FormData();
  form.append('note', 'a text field before the file');
  form.append('file', new Blob([data], { type: 'application/octet-stream' }), 'poster final.png');
  form.append('after', 'ignored');
  const res = await fetch(`${s.url}/api/assets/${a.id}/versions/upload`, { method: 'POST', headers: { authorization: `Bearer ${producer.token}` }, body: form });
  const body = await res.json() as any;
  assert.equal(res.status, 201, JSON.stringify(body));
  assert.equal(body.fileName, 'poster final.png');
  assert.equal(body.fileSize, data.length);
  assert.equal(body.contentSha256, crypto.createHash('sha256').update(data).digest('hex'));
  assert.equal(body.mimeType, 'image/png', 'sniffed from the bytes, not the part\'s type');
  const content = await fetch(`${s.url}/api/assets/${a.id}/content`, { headers: { authorization: `Bearer ${producer.token}` } });
  assert.ok(Buffer.from(await content.arrayBuffer()).equals(data), 'byte-identical');
  const noFile = new FormData();
  noFile.append('note', 'only a field');
  const refused = await fetch(`${s.url}/api/assets/${a.id}/versions/upload`, { method: 'POST', headers: { authorization: `Bearer ${producer.token}` }, body: noFile });
  assert.equal(refused.status, 422);
  assert.deepEqual(fs.readdirSync(path.join(s.config.storageDir, 'tmp')), [], 'nothing left in tmp');
});

test('verify detects a byte flipped on disk, marks the version corrupt and audits both results; restore makes a new version', async (t) => {
  const { s, producer } = await setup(t);
  const a = await createAsset(s, producer.token, 'video');
  const v1 = (await upload(s, producer.token, a.id, PNG, { fileName: 'v1.png' })).body;
  const other = Buffer.from('second version text');
  const v2 = (await upload(s, producer.token, a.id, other, { fileName: 'v2.txt' })).body;
  assert.equal(v2.number, 2);
  const ok = await s.call('POST', `/api/assets/${a.id}/verify`, { token: producer.token });
  assert.equal(ok.status, 200, ok.text);
  assert.deepEqual([ok.body.ok, ok.body.reason, ok.body.versionId, ok.body.status], [true, 'match', v2.id, 'ok']);

  const restored = await s.call('POST', `/api/assets/${a.id}/versions/${v1.id}/restore`, { token: producer.token });
  assert.equal(restored.status, 201, restored.text);
  assert.deepEqual([restored.body.number, restored.body.contentSha256, restored.body.storagePath, restored.body.restoredFromVersionId],
    [3, v1.contentSha256, v1.storagePath, v1.id]);
  assert.equal(restored.body.asset.currentVersionId, restored.body.id);
  const served = await fetch(`${s.url}/api/assets/${a.id}/content`, { headers: { authorization: `Bearer ${producer.token}` } });
  assert.ok(Buffer.from(await served.arrayBuffer()).equals(PNG));
  const detail = await s.call('GET', `/api/assets/${a.id}`, { token: producer.token });
  assert.deepEqual(detail.body.versions.map((v: any) => v.number), [3, 2, 1]);
  assert.equal((await s.call('POST', `/api/assets/${a.id}/versions/asv_nope/restore`, { token: producer.token })).status, 404);

  const onDisk = path.join(s.config.storageDir, v1.storagePath);
  const bytes = fs.readFileSync(onDisk);
  bytes[100] ^= 0x01;
  fs.writeFileSync(onDisk, bytes);
  const bad = await s.call('POST', `/api/assets/${a.id}/verify`, { token: producer.token });
  assert.equal(bad.status, 200);
  assert.deepEqual([bad.body.ok, bad.body.reason, bad.body.status, bad.body.expectedSha256], [false, 'hash_mismatch', 'corrupt', v1.contentSha256]);
  assert.notEqual(bad.body.actualSha256, v1.contentSha256);
  assert.equal((await s.db.get<any>('SELECT status FROM asset_versions WHERE id = ?', restored.body.id))!.status, 'corrupt');
  const audits = await s.db.all<any>("SELECT result, metadata FROM audit_log WHERE action = 'asset.verified' AND target_id = ? ORDER BY seq", a.id);
  assert.deepEqual(audits.map((x) => x.result), ['success', 'failure']);
  assert.equal(JSON.parse(audits[1].metadata).reason, 'hash_mismatch');
  assert.equal((await s.call('POST', `/api/assets/${a.id}/versions/${restored.body.id}/restore`, { token: producer.token })).body.error.code, 'version_corrupt');
  // Uploading the right content again repairs the shared file.
  const again = await upload(s, producer.token, a.id, PNG, { fileName: 'v1.png' });
  assert.equal(again.status, 201);
  assert.ok(fs.readFileSync(onDisk).equals(PNG));
  fs.rmSync(onDisk);
  const missing = await s.call('POST', `/api/assets/${a.id}/verify`, { token: producer.token });
  assert.deepEqual([missing.body.ok, missing.body.reason], [false, 'missing']);
  assert.equal((await s.call('GET', `/api/assets/${a.id}/content`, { token: producer.token })).status, 404, 'registered but not on disk');
});

test('identical content in the same project is stored once', async (t) => {
  const { s, tree, producer } = await setup(t);
  const a = await createAsset(s, producer.token, 'image', 'one');
  const b = await createAsset(s, producer.token, 'reference', 'two');
  const first = await upload(s, producer.token, a.id, PNG);
  const second = await upload(s, producer.token, b.id, PNG);
  assert.equal(first.body.deduplicated, false);
  assert.equal(second.body.deduplicated, true);
  assert.equal(first.body.storagePath, second.body.storagePath);
  assert.equal(filesUnder(path.join(s.config.storageDir, 'assets')).length, 1);
  // In-process registration (workers, generated files) takes the same path.
  const c = await createAsset(s, producer.token, 'audio', 'three');
  const inProcess = await addVersionFromBytes(withScope(s.operator(), tree), c.id, PNG, 'same.png');
  assert.deepEqual([inProcess.deduplicated, inProcess.version.storage_path, inProcess.version.mime_type], [true, first.body.storagePath, 'image/png']);
  assert.equal(filesUnder(path.join(s.config.storageDir, 'assets')).length, 1);
  const usage = await s.call('GET', '/api/usage/storage', { token: producer.token });
  assert.equal(usage.body.usedBytes, PNG.length, 'counted once');
});

test('uploads over the storage quota are refused (409 storage_quota_exceeded) with nothing left in storage/ or the database', async (t) => {
  const { s, tree, producer } = await setup(t);
  const a = await createAsset(s, producer.token);
  await s.db.run('UPDATE billing_accounts SET storage_gb = ? WHERE organization_id = ?', 4096 / 1024 ** 3, tree.organizationId);
  const fits = await upload(s, producer.token, a.id, Buffer.alloc(3000, 1));
  assert.equal(fits.status, 201, fits.text);
  const known = await upload(s, producer.token, a.id, Buffer.alloc(2000, 2));
  assert.equal(known.status, 409);
  assert.equal(known.body.error.code, 'storage_quota_exceeded');
  assert.deepEqual([known.body.error.details.usedBytes, known.body.error.details.limitBytes], [3000, 4096]);
  // Unknown length: aborted as soon as the running total passes the quota.
  const streamed = await streamUpload(s, producer.token, a.id, Readable.from((function* () { for (let i = 0; i < 64; i++) yield Buffer.alloc(1024, i); })()));
  t.diagnostic(`streamed over quota: ${JSON.stringify('status' in streamed ? streamed.status : streamed)}`);
  if ('status' in streamed) {
    assert.equal(streamed.status, 409);
    assert.equal(streamed.body.error.code, 'storage_quota_exceeded');
  }
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(await versionCount(s), 1);
  assert.equal(storageFiles(s).length, 1, 'only the first file');
  const usage = await s.call('GET', '/api/usage/storage', { token: producer.token });
  assert.deepEqual([usage.body.usedBytes, usage.body.limitBytes, usage.body.remainingBytes], [3000, 4096, 1096]);
  assert.equal(usage.body.occupancyRatio, Math.round((3000 / 4096) * 1e6) / 1e6);
});

test('an upload over SVC_MAX_UPLOAD_BYTES is 413 payload_too_large, known length or not, leaving nothing behind', async (t) => {
  const { s, producer } = await setup(t, { SVC_MAX_UPLOAD_BYTES: '10000' });
  const a = await createAsset(s, producer.token);
  const big = await upload(s, producer.token, a.id, Buffer.alloc(10_001));
  assert.equal(big.status, 413);
  assert.equal(big.body.error.code, 'payload_too_large');
  const streamed = await streamUpload(s, producer.token, a.id, Readable.from((function* () { for (let i = 0; i < 100; i++) yield Buffer.alloc(1024, i); })()));
  t.diagnostic(`streamed over the maximum: ${JSON.stringify('status' in streamed ? streamed.status : streamed)}`);
  if ('status' in streamed) assert.equal(streamed.status, 413);
  assert.equal((await upload(s, producer.token, a.id, Buffer.alloc(10_000))).status, 201, 'exactly the maximum is fine');
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(await versionCount(s), 1);
  assert.equal(storageFiles(s).length, 1);
});

test('unsafe stored paths are 422, registered files missing on disk 404', async (t) => {
  const { s, producer } = await setup(t);
  const a = await createAsset(s, producer.token);
  const v = (await upload(s, producer.token, a.id, PNG)).body;
  const outside = path.join(tempDir(t), 'secret.txt');
  fs.writeFileSync(outside, 'secret');
  fs.symlinkSync(outside, path.join(s.config.storageDir, 'assets', 'link'));
  const content = () => s.call('GET', `/api/assets/${a.id}/content`, { token: producer.token });
  for (const unsafe of ['../../etc/passwd', '/etc/passwd', 'assets/../../x', outside, 'assets/link']) {
    await s.db.run('UPDATE asset_versions SET storage_path = ? WHERE id = ?', unsafe, v.id);
    const r = await content();
    assert.equal(r.status, 422, `${unsafe}: ${r.text}`);
    assert.equal(r.body.error.code, 'unsafe_path');
    assert.ok(!r.text.includes(s.config.storageDir), 'no absolute path in the answer');
  }
  await s.db.run('UPDATE asset_versions SET storage_path = ? WHERE id = ?', 'assets/00/not-there', v.id);
  assert.equal((await content()).status, 404);
});

test('on an archived project asset writes are 409 project_archived; reads stay', async (t) => {
  const { s, tree, producer } = await setup(t);
  const a = await createAsset(s, producer.token);
  await upload(s, producer.token, a.id, PNG);
  await changeLifecycle(s.operator(), tree.projectId, 'archive');
  for (const r of [
    await upload(s, producer.token, a.id, PNG),
    await s.call('POST', '/api/assets', { token: producer.token, body: { kind: 'image', name: 'x' } }),
    await s.call('POST', `/api/assets/${a.id}/verify`, { token: producer.token }),
    await s.call('PATCH', `/api/assets/${a.id}`, { token: producer.token, body: { name: 'x' } }),
  ]) {
    assert.equal(r.status, 409);
    assert.equal(r.body.error.code, 'project_archived');
  }
  assert.equal((await s.call('GET', `/api/assets/${a.id}/content`, { token: producer.token })).status, 200);
});

test('GET /api/usage/storage splits by visible project and lists the largest files', async (t) => {
  const { s, tree, producer } = await setup(t);
  const a = await createAsset(s, producer.token);
  await upload(s, producer.token, a.id, Buffer.alloc(500, 1), { fileName: 'small.bin' });
  await upload(s, producer.token, a.id, Buffer.alloc(1500, 2), { fileName: 'large.bin' });
  const second = await makeTree(s);
  await s.db.run('UPDATE projects SET workspace_id = ? WHERE id = ?', tree.workspaceId, second.projectId);
  const owner = await member(s, 'org_owner', tree);
  const guest = await member(s, 'project_viewer', tree);
  const usage = await s.call('GET', '/api/usage/storage', { token: owner.token });
  assert.equal(usage.status, 200, usage.text);
  assert.equal(usage.body.usedBytes, 2000);
  assert.equal(usage.body.limitBytes, 100 * 1024 ** 3);
  assert.deepEqual(usage.body.projects.map((p: any) => [p.projectId, p.usedBytes, p.files]), [[tree.projectId, 2000, 2]]);
  assert.deepEqual(usage.body.largestFiles.map((f: any) => [f.fileName, f.fileSize]), [['large.bin', 1500], ['small.bin', 500]]);
  assert.equal(usage.body.scope.organizationId, tree.organizationId);
  assert.equal((await s.call('GET', '/api/usage/storage', { token: guest.token })).status, 200);
  const stranger = await member(s, 'producer');
  const theirs = await s.call('GET', '/api/usage/storage', { token: stranger.token });
  assert.deepEqual([theirs.body.usedBytes, theirs.body.projects, theirs.body.largestFiles], [0, [], []]);
});

test('largestFiles names a file shared by versions (a restore) once, by its newest version, even when created in the same millisecond', async (t) => {
  const { s, tree, producer } = await setup(t);
  const a = await createAsset(s, producer.token);
  const v1 = (await upload(s, producer.token, a.id, Buffer.alloc(700, 3), { fileName: 'shared.bin' })).body;
  const v2 = (await upload(s, producer.token, a.id, Buffer.alloc(300, 4), { fileName: 'other.bin' })).body;
  const v3 = await s.call('POST', `/api/assets/${a.id}/versions/${v1.id}/restore`, { token: producer.token });
  assert.equal(v3.status, 201, v3.text);
  // Every version the same instant: the id orders them (ids are monotonic within a process).
  await s.db.run('UPDATE asset_versions SET created_at = ? WHERE asset_id = ?', '2026-01-01T00:00:00.000Z', a.id);
  const owner = await member(s, 'org_owner', tree);
  const usage = await s.call('GET', '/api/usage/storage', { token: owner.token });
  assert.equal(usage.status, 200, usage.text);
  assert.deepEqual(usage.body.largestFiles.map((f: any) => [f.fileName, f.fileSize, f.versionId, f.versionNumber]),
    [['shared.bin', 700, v3.body.id, 3], ['other.bin', 300, v2.id, 2]]);
});

function vmRss(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}

test('a 200 MB upload keeps the server\'s RSS growth under 64 MB and hashes like sha256sum', async (t) => {
  const { s, producer } = await setup(t);
  const a = await createAsset(s, producer.token, 'video');
  const MB = 1024 * 1024;
  const file = path.join(tempDir(t), 'big.bin');
  {
    const fd = fs.openSync(file, 'w');
    const block = Buffer.allocUnsafe(MB);
    for (let i = 0; i < 200; i++) {
      crypto.randomFillSync(block);
      fs.writeSync(fd, block);
    }
    fs.closeSync(fd);
  }
  const expected = execFileSync('sha256sum', [file], { encoding: 'utf8' }).split(' ')[0];
  // The server measured is `svc serve` in a child process over the same database and storage folder,
  // so that the client's buffers do not count.
  const child = spawn(process.execPath, ['bin/svc', 'serve', '--port', '0', '--data-dir', s.config.dataDir, '--storage-dir', s.config.storageDir], {
    cwd: path.resolve(import.meta.dirname, '../..'), env: { ...process.env, ...TEST_ENV, ...databaseEnvOf(s.config), SVC_LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.after(() => { if (child.exitCode === null) child.kill('SIGKILL'); });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (c) => {
      out += c;
      const m = /listening on (\S+)/.exec(out);
      if (m) resolve(m[1]);
    });
    child.once('exit', (code) => reject(new Error(`svc serve exited ${code}`)));
  });
  const send = (size: number, source: Readable) => new Promise<{ status: number; body: any }>((resolve, reject) => {
    const req = http.request(`${url}/api/assets/${a.id}/versions/upload?fileName=big.bin`, {
      method: 'POST', headers: { authorization: `Bearer ${producer.token}`, 'content-type': 'application/octet-stream', 'content-length': String(size) },
    }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (c) => { text += c; }).on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    pipeline(source, req).catch(reject);
  });
  // Warm-up: a first 4 MB upload loads and compiles the code paths, as on a running server.
  assert.equal((await send(4 * MB, fs.createReadStream(file, { end: 4 * MB - 1 }))).status, 201);
  const before = vmRss(child.pid!);
  let peak = before;
  const timer = setInterval(() => { peak = Math.max(peak, vmRss(child.pid!)); }, 10);
  const started = performance.now();
  const r = await send(200 * MB, fs.createReadStream(file));
  clearInterval(timer);
  peak = Math.max(peak, vmRss(child.pid!));
  child.kill('SIGTERM');
  assert.equal(r.status, 201, JSON.stringify(r.body));
  assert.equal(r.body.contentSha256, expected);
  assert.equal(r.body.fileSize, 200 * MB);
  assert.equal(execFileSync('sha256sum', [path.join(s.config.storageDir, r.body.storagePath)], { encoding: 'utf8' }).split(' ')[0], expected);
  const growth = (peak - before) / MB;
  t.diagnostic(`200 MB in ${Math.round(performance.now() - started)} ms; server RSS ${(before / MB).toFixed(1)} MB -> peak ${(peak / MB).toFixed(1)} MB (growth ${growth.toFixed(1)} MB)`);
  assert.ok(growth < 64, `RSS grew by ${growth.toFixed(1)} MB`);
});
