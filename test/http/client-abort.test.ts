// A client that closes its connection in the middle of its request body (a raw or chunked asset
// upload, a multipart upload, a JSON body) is not a server error: no error-level log line, one
// access-log line with status 499 at info, no temporary file left, nothing registered; the server
// keeps answering. Sent over a raw TCP socket, destroyed mid-body.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Readable } from 'node:stream';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { makeTree, member } from '../helpers/factories.ts';

interface Aborted { requestId: string; headers: Record<string, string>; path: string; first: Buffer; contentLength: number | null }

const tmpFiles = (s: TestServer) => fs.readdirSync(path.join(s.config.storageDir, 'tmp'));

async function until(what: string, ok: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * Sends the request line, the headers and `first` (part of the body), waits until `ready()` (e.g. a
 * temporary upload file exists), then destroys the socket without sending the rest.
 */
async function abortMidBody(s: TestServer, a: Aborted, ready: () => boolean = () => true): Promise<void> {
  const sock = net.connect(s.port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => { sock.once('connect', resolve); sock.once('error', reject); });
  sock.on('error', () => { /* reset by the destroy */ });
  const framing = a.contentLength === null ? { 'transfer-encoding': 'chunked' } : { 'content-length': String(a.contentLength) };
  const head = [`POST ${a.path} HTTP/1.1`, `host: 127.0.0.1:${s.port}`, `x-request-id: ${a.requestId}`,
    ...Object.entries({ ...framing, ...a.headers }).map(([k, v]) => `${k}: ${v}`), '', ''].join('\r\n');
  sock.write(head);
  sock.write(a.contentLength === null ? Buffer.concat([Buffer.from(`${a.first.length.toString(16)}\r\n`), a.first, Buffer.from('\r\n')]) : a.first);
  await until('the server to start reading the body', ready);
  sock.destroy();
}

/** The parsed log lines of one request id, once its access line is there. */
async function linesOf(s: TestServer, requestId: string): Promise<any[]> {
  const mine = () => s.logs.map((l) => JSON.parse(l)).filter((l) => l.requestId === requestId);
  await until(`the access line of ${requestId}`, () => {
    s.log.flush();
    return mine().some((l) => l.msg === 'request');
  });
  return mine();
}

function assertClientClosed(s: TestServer, lines: any[], requestId: string): void {
  assert.deepEqual(lines.filter((l) => l.level === 'error'), [], `no error line for ${requestId}`);
  assert.ok(!s.logs.some((l) => JSON.parse(l).level === 'error'), 'no error line at all');
  const access = lines.filter((l) => l.msg === 'request');
  assert.equal(access.length, 1, 'one access line');
  assert.equal(access[0].status, 499, `client closed request: ${JSON.stringify(access[0])}`);
  assert.equal(access[0].level, 'info');
}

async function setup(t: any) {
  const s = await startTestServer(t);
  const tree = await makeTree(s);
  const producer = await member(s, 'producer', tree);
  const asset = await s.call('POST', '/api/assets', { token: producer.token, body: { kind: 'image', name: 'upload target' } });
  assert.equal(asset.status, 201, asset.text);
  const auth = { authorization: `Bearer ${producer.token}` };
  return { s, tree, producer, auth, assetId: asset.body.id as string };
}

const versionCount = async (s: TestServer) => (await s.db.get<{ n: number }>('SELECT count(*) AS n FROM asset_versions'))!.n;
const assetFiles = (s: TestServer) => fs.readdirSync(path.join(s.config.storageDir, 'assets'), { recursive: true })
  .filter((f) => fs.statSync(path.join(s.config.storageDir, 'assets', String(f))).isFile());

test('an asset upload dropped mid-body (Content-Length, chunked, multipart) is a 499 at info, leaves no temporary file and registers nothing', async (t) => {
  const { s, auth, assetId } = await setup(t);
  const uploadPath = `/api/assets/${assetId}/versions/upload`;
  const bytes = Buffer.alloc(256 * 1024, 7);
  const cases: Aborted[] = [
    { requestId: 'abort-raw', path: `${uploadPath}?fileName=big.bin`, headers: { ...auth, 'content-type': 'application/octet-stream' }, first: bytes, contentLength: 8 * 1024 * 1024 },
    { requestId: 'abort-chunked', path: `${uploadPath}?fileName=big.bin`, headers: { ...auth, 'content-type': 'application/octet-stream' }, first: bytes, contentLength: null },
    {
      requestId: 'abort-multipart', path: uploadPath, headers: { ...auth, 'content-type': 'multipart/form-data; boundary=cut' },
      first: Buffer.concat([Buffer.from('--cut\r\ncontent-disposition: form-data; name="file"; filename="big.bin"\r\ncontent-type: application/octet-stream\r\n\r\n'), bytes]),
      contentLength: 8 * 1024 * 1024,
    },
  ];
  for (const c of cases) {
    // Destroyed once the upload is being written to storage/tmp: the half-written file must go.
    await abortMidBody(s, c, () => tmpFiles(s).length > 0);
    assertClientClosed(s, await linesOf(s, c.requestId), c.requestId);
    await until('the temporary file to be removed', () => tmpFiles(s).length === 0);
  }
  assert.equal(await versionCount(s), 0, 'no version registered');
  assert.deepEqual(assetFiles(s), [], 'nothing under storage/assets');
  // The server is fine and the same upload, complete, works.
  const ok = await s.call('POST', `${uploadPath}?fileName=big.bin`, { headers: { ...auth, 'content-type': 'application/octet-stream' }, raw: bytes });
  assert.equal(ok.status, 201, ok.text);
});

test('a JSON body dropped mid-way is a 499 at info and changes nothing; a thrown bug is still a 500 at error level', async (t) => {
  const { s, tree, auth } = await setup(t);
  const before = (await s.db.get<{ n: number }>('SELECT count(*) AS n FROM assets WHERE project_id = ?', tree.projectId))!.n;
  await abortMidBody(s, {
    requestId: 'abort-json', path: '/api/assets', headers: { ...auth, 'content-type': 'application/json' }, first: Buffer.from('{"kind":"image","na'), contentLength: 4096,
  }, () => true);
  assertClientClosed(s, await linesOf(s, 'abort-json'), 'abort-json');
  assert.equal((await s.db.get<{ n: number }>('SELECT count(*) AS n FROM assets WHERE project_id = ?', tree.projectId))!.n, before);
  // Reading a body that is complete, then failing, is not a client abort.
  s.app.router.post('/api/test/abort-boom', { summary: 'test only', auth: 'none' }, async ({ req }) => {
    for await (const _ of req) { /* read it all */ }
    throw Object.assign(new Error('boom after the body'), { code: 'ECONNRESET' });
  });
  const boom = await s.call('POST', '/api/test/abort-boom', { raw: 'whole body', headers: { 'x-request-id': 'boom-after-body' } });
  assert.equal(boom.status, 500);
  const lines = await linesOf(s, 'boom-after-body');
  assert.equal(lines.filter((l) => l.level === 'error').length, 1);
  assert.equal(lines.find((l) => l.msg === 'request').status, 500);
});

test('a client that leaves before its reply is written gets nothing written: its stream is not started, the access line says 499', async (t) => {
  const s = await startTestServer(t);
  let entered = false;
  let left = false;
  let release = (): void => {};
  const held = new Promise<void>((resolve) => { release = resolve; });
  let produced = 0;
  const stream = new Readable({ read() { produced++; this.push(Buffer.alloc(64 * 1024)); } });
  s.app.router.get('/api/test/late-stream', { summary: 'test only', auth: 'none' }, async ({ res }) => {
    entered = true;
    res.once('close', () => { left = true; });
    await held; // the reply is ready only after the client has gone
    return { status: 200, raw: stream, headers: { 'content-type': 'application/octet-stream' } };
  });
  const sock = net.connect(s.port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => { sock.once('connect', resolve); sock.once('error', reject); });
  sock.on('error', () => { /* reset by us */ });
  sock.write(`GET /api/test/late-stream HTTP/1.1\r\nhost: 127.0.0.1:${s.port}\r\nx-request-id: late-stream\r\n\r\n`);
  await until('the handler to start', () => entered);
  sock.resetAndDestroy();
  await until('the server to see the client leave', () => left);
  release();
  assertClientClosed(s, await linesOf(s, 'late-stream'), 'late-stream');
  await until('the stream to be destroyed', () => stream.destroyed);
  assert.equal(produced, 0, 'nothing was read from the stream');
  // The server still answers.
  assert.equal((await s.call('GET', '/api/health')).status, 200);
});
