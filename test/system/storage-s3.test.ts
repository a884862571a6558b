// The system's storage parts on the s3 driver, against the real test gateway (npm run s3:start):
// a store migrated local -> s3 and back s3 -> local with every object verified; `svc storage migrate
// --to s3` killed with kill -9 mid-run and run again; readiness and health naming the driver without a
// credential, a failing bucket degraded; and the cleanup preview and reclaim over the bucket: stale
// temporaries found, an incomplete multipart upload whose writer is gone listed and aborted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { S3Client, CreateMultipartUploadCommand } from '@aws-sdk/client-s3';
import { startTestServer, tempDir } from '../helpers/server.ts';
import { login, makeUser } from '../helpers/factories.ts';
import { Sandbox, collect, describe, lines } from '../helpers/cli.ts';
import { cleanUpPrefix, freshPrefix, s3Env, s3Settings, testGateway, testS3Store } from '../helpers/s3.ts';
import { keysOf, storedWorld, worldKeys } from '../helpers/stored-world.ts';
import { storageOf } from '../../src/kernel/storage/index.ts';
import { S3Store } from '../../src/kernel/storage/s3.ts';
import { LocalStore } from '../../src/kernel/storage/local.ts';
import { THIS_WRITER } from '../../src/kernel/storage/store.ts';
import { migrateStorage } from '../../src/system/storage-migrate.ts';
import { previewCleanup, reclaimStorage } from '../../src/system/storage.ts';

test('migrate local -> s3 and back s3 -> local: every referenced object verified, a second run copies nothing', async (t) => {
  const { s, store: local, running } = await storedWorld(t, {}, { storage: 'local' });
  const bucket = testS3Store(t, tempDir(t));
  const up = await migrateStorage(s.db, local, bucket);
  assert.deepEqual([up.objects, up.copied, up.present, up.failed], [11, 10, 0, []], JSON.stringify(up));
  assert.deepEqual(up.missing, ['outputs/job_gone/missing.png']);
  assert.equal(up.to.driver, 's3');
  const source = await keysOf(local);
  const there = await keysOf(bucket);
  assert.deepEqual([...there.keys()].sort(), worldKeys(running).filter((k) => !k.includes('missing')));
  for (const [k, h] of there) assert.equal(h, source.get(k), k);
  assert.deepEqual([(await migrateStorage(s.db, local, bucket)).present, (await migrateStorage(s.db, local, bucket)).copied], [10, 0]);

  const back = new LocalStore(tempDir(t));
  const down = await migrateStorage(s.db, bucket, back);
  assert.deepEqual([down.copied, down.failed.length], [10, 0]);
  for (const [k, h] of await keysOf(back)) assert.equal(h, source.get(k), k);
  assert.deepEqual([...(await keysOf(local)).entries()], [...source.entries()], 'the local source is unchanged');
});

test('svc storage migrate --to s3 killed with kill -9 mid-run resumes on the next run; the bucket holds every object', async (t) => {
  const { s, store: local, running } = await storedWorld(t, {}, { storage: 'local' });
  for (let i = 0; i < 120; i++) await local.putBytes(`outputs/${running}/part-${String(i).padStart(3, '0')}.bin`, randomBytes(2048));
  const prefix = freshPrefix();
  cleanUpPrefix(t, prefix, tempDir(t));
  const env: Record<string, string> = { ...s3Env(prefix), SVC_STORAGE_DRIVER: 'local' };
  const args = ['storage', 'migrate', '--to', 's3', '--data-dir', s.config.dataDir, '--storage-dir', s.config.storageDir];
  const sb = new Sandbox(t);
  const child = await sb.spawn(args, { env });
  child.stdin!.end();
  const result = collect(child);
  let out = '';
  await new Promise<void>((resolve) => {
    child.stdout!.on('data', (c: string) => {
      out += c;
      if ((out.match(/ copied /g) ?? []).length >= 10) resolve();
    });
    child.once('exit', () => resolve());
  });
  child.kill('SIGKILL');
  const killed = await result;
  assert.equal(killed.signal, 'SIGKILL', `killed mid-run: ${describe(killed)}`);

  const again = await sb.run([...args, '--json'], { env });
  assert.equal(again.code, 0, describe(again));
  const summary = JSON.parse(again.stdout);
  assert.equal(summary.objects, 131);
  assert.ok(summary.present >= 10, `the first run's copies are kept: ${again.stdout}`);
  assert.equal(summary.copied + summary.present, 130);
  assert.deepEqual(summary.failed, []);
  const bucket = new S3Store(s3Settings(prefix), tempDir(t));
  t.after(() => bucket.close());
  const source = await keysOf(local);
  const copied = await keysOf(bucket);
  assert.equal([...copied.keys()].filter((k) => !k.startsWith('tmp/')).length, 130);
  for (const [k, h] of copied) if (!k.startsWith('tmp/')) assert.equal(h, source.get(k), k);
  assert.ok(!lines(again.stderr).some((l) => l.includes(env.SVC_S3_SECRET_ACCESS_KEY)));
});

test('on s3: readiness and health name the driver without a credential; a bucket that refuses is degraded, not a 5xx', async (t) => {
  const s = await startTestServer(t, {}, { storage: 's3' });
  const token = await login(s, await makeUser(s, { systemAdmin: true }));
  const g = testGateway();
  const ready = await s.call('GET', '/api/system/readiness', { token });
  assert.equal(ready.status, 200, ready.text);
  assert.deepEqual(ready.body.storage, { provider: 's3', path: storageOf(s.config).location, writable: true, workingDir: s.config.storageDir });
  assert.match(ready.body.storage.path, /^s3:\/\//);
  assert.equal(ready.body.targets.s3.active, true, 'SVC_STORAGE_DRIVER=s3 (not a PLATFORM_* variable) makes the s3 target active');
  const health = await s.call('GET', '/api/system/health', { token });
  assert.deepEqual([health.body.storage.driver, health.body.storage.status], ['s3', 'ok'], health.text);
  for (const text of [ready.text, health.text]) assert.ok(!text.includes(g.secretAccessKey) && !text.includes(g.accessKeyId), 'no credential');

  const wrong = await startTestServer(t, { ...s3Env(freshPrefix()), SVC_S3_SECRET_ACCESS_KEY: 'not-the-secret-key-0000' });
  const wt = await login(wrong, await makeUser(wrong, { systemAdmin: true }));
  const bad = await wrong.call('GET', '/api/system/health', { token: wt });
  assert.equal(bad.body.storage.status, 'fail', bad.text);
  assert.notEqual(bad.body.status, 'ok');
  assert.ok(!bad.text.includes('not-the-secret-key') && !bad.text.includes(g.accessKeyId), bad.text);
  assert.ok(!wrong.logs.some((l) => l.includes('not-the-secret-key')), 'no credential in the log');
});

test('on s3: a stale temporary object and an incomplete upload whose writer is gone are listed and removed', async (t) => {
  const s = await startTestServer(t, {}, { storage: 's3' });
  const store = storageOf(s.config);
  const dead = spawnSync(process.execPath, ['-e', '']).pid;
  const me = THIS_WRITER.host;
  const stray = `tmp/upload.${me}.${dead}.${randomBytes(12).toString('hex')}`;
  const live = `tmp/upload.${me}.${process.pid}.${randomBytes(12).toString('hex')}`;
  await store.putBytes(stray, Buffer.from('left by a killed writer'));
  await store.putBytes(live, Buffer.from('being written'));
  await store.putBytes('outputs/job_s3/young.bin', Buffer.from('young'));
  // A multipart upload begun by a writer that is gone, straight through the S3 API.
  const g = testGateway();
  const prefix = s.config.s3Prefix.replace(/\/*$/, '/');
  const uploadKey = `tmp/upload.${me}.${dead}.${randomBytes(12).toString('hex')}`;
  const client = new S3Client({ endpoint: g.endpoint, region: g.region, forcePathStyle: true, credentials: { accessKeyId: g.accessKeyId, secretAccessKey: g.secretAccessKey } });
  t.after(() => client.destroy());
  const begun = await client.send(new CreateMultipartUploadCommand({ Bucket: g.bucket, Key: prefix + uploadKey }));

  const preview = await previewCleanup(s.operator());
  assert.deepEqual(preview.candidates.map((c) => c.path), [stray]);
  assert.deepEqual(preview.incompleteUploads!.map((u) => [u.key, u.uploadId]), [[uploadKey, begun.UploadId]]);
  const r = await reclaimStorage(s.operator());
  assert.deepEqual(r.deleted.map((d) => d.path), [stray]);
  assert.deepEqual(r.abortedUploads!.map((u) => u.key), [uploadKey]);
  assert.equal(r.removedDirectories, 0);
  const left: string[] = [];
  for await (const u of store.incompleteUploads('')) left.push(u.key);
  assert.deepEqual(left, []);
  assert.equal(await store.stat(stray), null);
  assert.ok(await store.stat(live), 'a live writer\'s object stays');
});
