// A crash during an asset upload, on each storage driver (s3 against the test gateway: `npm run
// s3:start`): `svc serve` is killed with kill -9 while a large streamed body is being stored (on s3
// once some parts of its multipart upload went up; on local once its temporary file holds bytes).
// After a restart on the same data folder and store: no asset version is half-registered (the asset
// still heads its first version, the only one), every object the database references is there with
// its recorded SHA-256, nothing new is under assets/; the killed writer's leftover — an incomplete
// multipart upload on s3, a temporary file on local — is found by the cleanup preview at once (its
// writer is gone: src/system/storage-rules.ts) and aborted or removed by a reclaim.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { S3Client, ListPartsCommand } from '@aws-sdk/client-s3';
import { Sandbox } from '../helpers/cli.ts';
import { startTestServer } from '../helpers/server.ts';
import { login, makeUser, member } from '../helpers/factories.ts';
import { sha256 } from '../helpers/package.ts';
import { cleanUpPrefix, freshPrefix, s3Env } from '../helpers/s3.ts';
import { sleep } from '../helpers/jobs.ts';
import { storageOf } from '../../src/kernel/storage/index.ts';
import { writerOf, type ObjectStore } from '../../src/kernel/storage/store.ts';
import { hashObject } from '../../src/kernel/storage/verify.ts';
import { migrationItems } from '../../src/system/storage-migrate.ts';

const MiB = 1024 * 1024;

async function keysUnder(store: ObjectStore, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of store.list(prefix)) keys.push(o.key);
  return keys;
}

/** A body of 1 MiB chunks that ends only once the server is killed (then `stop()`). */
function endless() {
  let stopped = false;
  const chunk = randomBytes(MiB);
  const body = Readable.from((async function* () {
    while (!stopped) {
      yield chunk;
      await sleep(5);
    }
  })());
  return { body, stop: () => { stopped = true; body.destroy(); } };
}

/** Waits until the killed server's write is under way on `store`: its temporary key, once bytes were stored. */
async function writeUnderWay(store: ObjectStore, pid: number, env: Record<string, string>): Promise<string | undefined> {
  const s3 = store.driver === 's3' ? new S3Client({
    endpoint: env.SVC_S3_ENDPOINT, region: env.SVC_S3_REGION, forcePathStyle: true,
    credentials: { accessKeyId: env.SVC_S3_ACCESS_KEY_ID, secretAccessKey: env.SVC_S3_SECRET_ACCESS_KEY },
  }) : null;
  try {
    for (let i = 0; i < 600; i++) {
      if (s3) {
        for await (const u of store.incompleteUploads('tmp/')) {
          if (writerOf(u.key)?.pid !== pid) continue;
          const parts = await s3.send(new ListPartsCommand({ Bucket: env.SVC_S3_BUCKET, Key: env.SVC_S3_PREFIX + u.key, UploadId: u.uploadId }));
          if ((parts.Parts ?? []).length >= 1) return u.key;
        }
      } else {
        for await (const o of store.list('tmp/')) if (writerOf(o.key)?.pid === pid && o.size > 0) return o.key;
      }
      await sleep(50);
    }
  } finally {
    s3?.destroy();
  }
}

async function killedUpload(t: TestContext, driver: 'local' | 's3') {
  const sb = new Sandbox(t);
  const prefix = freshPrefix();
  const env: Record<string, string> = driver === 's3' ? s3Env(prefix) : { SVC_STORAGE_DRIVER: 'local' };
  if (driver === 's3') cleanUpPrefix(t, prefix, sb.storage);
  const opts = { dataDir: sb.data, storageDir: sb.storage };

  // An asset with one version and a system administrator, set up on an in-process server that is closed again.
  const setup = await startTestServer(t, { SVC_WORKER_ENABLED: '0', ...env }, opts);
  const producer = await member(setup, 'producer');
  const admin = await login(setup, await makeUser(setup, { systemAdmin: true }));
  const asset = await setup.call('POST', '/api/assets', { token: producer.token, body: { kind: 'image', name: 'hero still' } });
  assert.equal(asset.status, 201, asset.text);
  const first = randomBytes(64 * 1024);
  const v1 = await setup.call('POST', `/api/assets/${asset.body.id}/versions/upload?fileName=first.bin`, {
    token: producer.token, raw: first, headers: { 'content-type': 'application/octet-stream' },
  });
  assert.equal(v1.status, 201, v1.text);
  await setup.close();

  // `svc serve` receives an endless upload and is killed with -9 once its write is under way.
  const served = await sb.serve([...sb.dirs, '--port', '0'], { ...env, SVC_WORKER_ENABLED: '0' });
  const pid = served.child.pid!;
  const source = endless();
  const upload = fetch(`${served.url}/api/assets/${asset.body.id}/versions/upload?fileName=big.bin`, {
    method: 'POST', headers: { authorization: `Bearer ${producer.token}`, 'content-type': 'application/octet-stream' },
    body: Readable.toWeb(source.body), duplex: 'half',
  }).then((r) => r.status, (err: Error) => `failed: ${err.message}`);
  const store = storageOf(setup.config);
  const tmpKey = await writeUnderWay(store, pid, env);
  assert.ok(tmpKey, 'the upload got under way');
  served.child.kill('SIGKILL');
  assert.equal((await served.done).signal, 'SIGKILL');
  source.stop();
  assert.match(String(await upload), /^failed/, 'the client saw the connection end');

  // Restarted on the same data and store: the asset heads its first version, the only one.
  const s = await startTestServer(t, env, opts);
  const detail = await s.call('GET', `/api/assets/${asset.body.id}`, { token: producer.token });
  assert.equal(detail.status, 200, detail.text);
  assert.deepEqual(detail.body.versions.map((v: { id: string }) => v.id), [v1.body.id], 'no half-registered version');
  assert.equal(detail.body.currentVersionId, v1.body.id);
  assert.equal((await s.db.get<{ n: number }>('SELECT count(*) AS n FROM asset_versions'))!.n, 1);
  const verified = await s.call('POST', `/api/assets/${asset.body.id}/verify`, { token: producer.token });
  assert.equal(verified.status, 200, verified.text);
  assert.equal(verified.body.ok, true, verified.text);

  // Every object the database references is there, whole; nothing new under assets/.
  const items = await migrationItems(s.db, store);
  assert.deepEqual(items.map((i) => i.key), [v1.body.storagePath]);
  for (const item of items) assert.deepEqual(await hashObject(store, item.key), { size: item.size, sha256: item.sha256 }, item.key);
  assert.equal(items[0].sha256, sha256(first));
  assert.deepEqual(await keysUnder(store, 'assets/'), [v1.body.storagePath]);

  // The leftover of the killed writer is a candidate at once, and a reclaim removes it.
  const preview = await s.call('GET', '/api/system/storage/cleanup-preview', { token: admin });
  assert.equal(preview.status, 200, preview.text);
  const reclaim = () => s.call('POST', '/api/system/storage/reclaim', { token: admin, body: {} });
  if (driver === 's3') {
    // A multipart upload never completed leaves no object at its temporary key, only the upload.
    assert.deepEqual(preview.body.candidates, []);
    assert.deepEqual(preview.body.incompleteUploads.map((u: { key: string }) => u.key), [tmpKey]);
    const r = await reclaim();
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.abortedUploads.map((u: { key: string }) => u.key), [tmpKey]);
    const left = [];
    for await (const u of store.incompleteUploads('')) left.push(u.key);
    assert.deepEqual(left, [], 'the upload is aborted');
  } else {
    assert.deepEqual(preview.body.candidates.map((c: { path: string; folder: string }) => [c.path, c.folder]), [[tmpKey, 'tmp']]);
    assert.ok(preview.body.candidates[0].bytes > 0);
    const r = await reclaim();
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.deleted.map((d: { path: string }) => d.path), [tmpKey]);
  }
  assert.deepEqual(await keysUnder(store, 'tmp/'), []);
  assert.deepEqual((await s.call('GET', '/api/system/storage/cleanup-preview', { token: admin })).body.candidates, []);
  assert.deepEqual(await keysUnder(store, ''), [v1.body.storagePath], 'the store holds the first version alone');
}

test('kill -9 during an asset upload on local: no version registered, the temporary file is a candidate at once', (t) => killedUpload(t, 'local'));

test('kill -9 during a multipart asset upload on s3: no version registered, the incomplete upload is listed and aborted', (t) => killedUpload(t, 's3'));
