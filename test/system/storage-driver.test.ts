// Which media store a server uses, and what it never shows: without SVC_STORAGE_DRIVER=s3 the server
// never calls an S3 endpoint (not even with PLATFORM_S3_ENDPOINT and every SVC_S3_* set); on the s3
// driver (the test gateway, `npm run s3:start`) the credentials appear in no answer, error or log line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { inspect } from 'node:util';
import { createLogger } from '../../src/kernel/log.ts';
import { storageOf } from '../../src/kernel/storage/index.ts';
import { S3Store } from '../../src/kernel/storage/s3.ts';
import { login, makeTree, makeUser, member } from '../helpers/factories.ts';
import { startTestServer, tempDir, serversRunTheWorker } from '../helpers/server.ts';
import { freshPrefix, s3Settings, testGateway } from '../helpers/s3.ts';

serversRunTheWorker();

const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(2000, 7)]);

test('without SVC_STORAGE_DRIVER=s3 the server never touches S3, even with PLATFORM_S3_ENDPOINT set', async (t) => {
  const requests: string[] = [];
  const fake = http.createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    res.writeHead(500).end();
  });
  await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
  t.after(() => fake.close());
  const endpoint = `http://127.0.0.1:${(fake.address() as AddressInfo).port}`;
  const before = process.env.PLATFORM_S3_ENDPOINT;
  process.env.PLATFORM_S3_ENDPOINT = endpoint;
  t.after(() => {
    if (before === undefined) delete process.env.PLATFORM_S3_ENDPOINT;
    else process.env.PLATFORM_S3_ENDPOINT = before;
  });
  const s = await startTestServer(t, {
    SVC_S3_ENDPOINT: endpoint, SVC_S3_BUCKET: 'media', SVC_S3_ACCESS_KEY_ID: 'AKIDNOTUSED', SVC_S3_SECRET_ACCESS_KEY: 'not-used-secret', SVC_S3_FORCE_PATH_STYLE: '1',
  }, { storage: 'local' });
  assert.equal(s.config.storageDriver, 'local');
  assert.equal(storageOf(s.config).driver, 'local');
  const tree = await makeTree(s);
  const producer = await member(s, 'producer', tree);
  const asset = await s.call('POST', '/api/assets', { token: producer.token, body: { kind: 'image', name: 'still' } });
  assert.equal(asset.status, 201, asset.text);
  const up = await s.call('POST', `/api/assets/${asset.body.id}/versions/upload?fileName=still.png`, {
    token: producer.token, raw: PNG, headers: { 'content-type': 'image/png' },
  });
  assert.equal(up.status, 201, up.text);
  assert.equal((await s.call('GET', `/api/assets/${asset.body.id}/content`, { token: producer.token })).status, 200);
  const admin = await login(s, await makeUser(s, { systemAdmin: true }));
  const readiness = await s.call('GET', '/api/system/readiness', { token: admin });
  assert.equal(readiness.body.targets.s3.configured, true, 'PLATFORM_S3_ENDPOINT marks the target configured');
  assert.equal(readiness.body.targets.s3.active, false);
  assert.equal((await s.call('GET', '/api/system/health', { token: admin })).status, 200);
  assert.deepEqual(requests, [], 'no request reached the S3 endpoint');
});

test('a failing S3 call carries no credential in its error, its log line, or the configuration report', async (t) => {
  const g = testGateway();
  const secret = `${g.secretAccessKey}-wrong`;
  const store = new S3Store({ ...s3Settings(freshPrefix(), g), secretAccessKey: secret }, tempDir(t));
  t.after(() => store.close());
  const failures: unknown[] = [];
  const drain = async (iter: AsyncIterable<unknown>) => {
    for await (const _ of iter);
  };
  for (const call of [
    () => store.stat('x/y'), () => store.putBytes('x/y', Buffer.from('x')), () => store.readBytes('x/y'), () => store.write((async function* () { yield Buffer.from('x'); })()),
    () => drain(store.list('')), () => drain(store.incompleteUploads('')), () => store.abortUpload({ key: 'tmp/x', uploadId: 'u', initiatedAt: new Date() }),
  ]) {
    await call().then(() => assert.fail('a wrong secret must fail'), (err: unknown) => failures.push(err));
  }
  const lines: string[] = [];
  const log = createLogger('debug', { write: (chunk: string) => { lines.push(chunk); } });
  for (const err of failures) log.error('storage call failed', { err });
  log.flush();
  const shown = [...failures.map((e) => `${(e as Error).message}\n${(e as Error).stack}\n${inspect(e, { depth: 5 })}\n${JSON.stringify(e)}`), ...lines].join('\n');
  assert.match(shown, /SignatureDoesNotMatch|HTTP 403/);
  for (const s of [secret, g.secretAccessKey, g.accessKeyId]) assert.ok(!shown.includes(s), 'no credential in errors or logs');

  const server = await startTestServer(t, {}, { storage: 's3' });
  assert.equal(storageOf(server.config).driver, 's3');
  const admin = await login(server, await makeUser(server, { systemAdmin: true }));
  const texts: string[] = [];
  for (const p of ['/api/system/config', '/api/system/readiness', '/api/system/health']) {
    const r = await server.call('GET', p, { token: admin });
    assert.equal(r.status, 200, r.text);
    texts.push(r.text);
  }
  const config = JSON.parse(texts[0]) as { settings: { env: string; secret: boolean; set?: boolean; value?: unknown }[] };
  for (const env of ['SVC_S3_ACCESS_KEY_ID', 'SVC_S3_SECRET_ACCESS_KEY']) {
    const row = config.settings.find((x) => x.env === env)!;
    assert.deepEqual([row.secret, row.set, row.value], [true, true, undefined], env);
  }
  assert.equal(config.settings.find((x) => x.env === 'SVC_STORAGE_DRIVER')?.value, 's3');
  for (const s of [g.secretAccessKey, g.accessKeyId]) assert.ok(!texts.join('\n').includes(s) && !server.logs.join('\n').includes(s));
});
