// Stale temporaries: a tmp/ object named by tempKey() (tmp/<kind>.<host>.<pid>.<random>) becomes a
// cleanup candidate, whatever the retention, once no live writer can own it — its writer is a
// process of this host that is gone, or it is older than the longest allowed write — while a live
// writer's young file, another host's young file and old-style names keep the retention rule. And
// the health's storage round trip; and a real kill -9 during a write.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { serversRunTheWorker, startTestServer, type TestServer } from '../helpers/server.ts';
import { login, makeUser } from '../helpers/factories.ts';
import { THIS_WRITER, tempKey, writerOf } from '../../src/kernel/storage/store.ts';
import { longestWriteMs, processAlive, WRITE_MARGIN_MS } from '../../src/system/storage-rules.ts';
import { previewCleanup, reclaimStorage } from '../../src/system/storage.ts';

serversRunTheWorker();

const MINUTE = 60_000;

function put(s: TestServer, rel: string, ageMs: number): void {
  const abs = path.join(s.config.storageDir, rel);
  fs.mkdirSync(path.dirname(abs), { recursive: true });
  fs.writeFileSync(abs, `content of ${rel}\n`);
  const mtime = new Date(Date.now() - ageMs);
  fs.utimesSync(abs, mtime, mtime);
}

const hex = () => randomBytes(12).toString('hex');

test('a temporary file whose writer is gone or that is older than the longest write is a candidate whatever the retention', async (t) => {
  const s = await startTestServer(t, {}, { storage: 'local' });
  const longest = longestWriteMs(s.config);
  assert.equal(longest, Math.max(s.config.jobTimeoutMs, 300_000) + WRITE_MARGIN_MS, 'the job time-out (30 min by default) or the request time-out, plus the margin');
  const dead = spawnSync(process.execPath, ['-e', '']).pid;
  assert.equal(processAlive(dead), false);
  assert.equal(processAlive(process.pid), true);
  const me = THIS_WRITER.host;
  const files = {
    deadWriter: `tmp/upload.${me}.${dead}.${hex()}`,
    deadCompose: `tmp/compose.${me}.${dead}.${hex()}.mp4`,
    liveYoung: tempKey('upload'),
    liveOld: `tmp/upload.${me}.${process.pid}.${hex()}`,
    otherHostYoung: `tmp/upload.another-host.${dead}.${hex()}`,
    otherHostOld: `tmp/stage.another-host.${dead}.${hex()}`,
    oldStyle: 'tmp/upload-left-by-an-earlier-version',
    outputs: `outputs/job_t/${`upload.${me}.${dead}.${hex()}`}`,
  };
  assert.deepEqual(writerOf(files.liveYoung), { host: me, pid: process.pid });
  put(s, files.deadWriter, MINUTE);
  put(s, files.deadCompose, MINUTE);
  put(s, files.liveYoung, MINUTE);
  put(s, files.liveOld, longest + MINUTE);
  put(s, files.otherHostYoung, longest - 10 * MINUTE);
  put(s, files.otherHostOld, longest + MINUTE);
  put(s, files.oldStyle, longest + MINUTE); // old-style names: the 30-day retention alone
  put(s, files.outputs, longest + MINUTE); // outside tmp/: the retention alone
  const expected = [files.deadCompose, files.deadWriter, files.liveOld, files.otherHostOld].sort();

  const ctx = s.operator();
  const preview = await previewCleanup(ctx);
  assert.deepEqual(preview.candidates.map((c) => c.path), expected);
  assert.ok(preview.candidates.every((c) => c.folder === 'tmp'));
  assert.equal(preview.incompleteUploads, undefined, 'the local driver has no multipart uploads');

  const named = await reclaimStorage(ctx, { paths: [files.liveYoung, files.otherHostYoung, files.deadWriter] });
  assert.deepEqual(named.deleted.map((d) => d.path), [files.deadWriter]);
  assert.deepEqual(named.skipped, [{ path: files.liveYoung, reason: 'too_recent' }, { path: files.otherHostYoung, reason: 'too_recent' }]);
  assert.equal(named.abortedUploads, undefined);

  const all = await reclaimStorage(ctx);
  assert.deepEqual(all.deleted.map((d) => d.path), expected.filter((p) => p !== files.deadWriter));
  for (const rel of [files.liveYoung, files.otherHostYoung, files.oldStyle, files.outputs]) assert.ok(fs.existsSync(path.join(s.config.storageDir, rel)), rel);
  assert.deepEqual((await previewCleanup(ctx)).candidates, []);
});

test('SVC_JOB_TIMEOUT_MS lengthens the longest write: a live writer\'s file stays until it is over', async (t) => {
  const s = await startTestServer(t, { SVC_JOB_TIMEOUT_MS: String(4 * 3_600_000) }, { storage: 'local' });
  assert.equal(longestWriteMs(s.config), 5 * 3_600_000);
  const threeHours = `tmp/upload.${THIS_WRITER.host}.${process.pid}.${hex()}`;
  const sixHours = `tmp/upload.${THIS_WRITER.host}.${process.pid}.${hex()}`;
  put(s, threeHours, 3 * 3_600_000);
  put(s, sixHours, 6 * 3_600_000);
  assert.deepEqual((await previewCleanup(s.operator())).candidates.map((c) => c.path), [sixHours]);
});

test('health names the storage driver and probes the store with a round trip; a failing store is degraded, not a 5xx', async (t) => {
  const s = await startTestServer(t, {}, { storage: 'local' });
  const token = await login(s, await makeUser(s, { systemAdmin: true }));
  const ok = await s.call('GET', '/api/system/health', { token });
  assert.ok(ok.status === 200 || ok.status === 503, ok.text);
  const st = ok.body.storage;
  assert.deepEqual([st.driver, st.location, st.status], ['local', s.config.storageDir, 'ok'], ok.text);
  assert.ok(typeof st.latencyMs === 'number' && st.latencyMs >= 0);
  assert.deepEqual(fs.readdirSync(path.join(s.config.storageDir, 'tmp')), [], 'the probe object is gone');

  // tmp/ replaced by a file: the probe cannot write.
  fs.rmSync(path.join(s.config.storageDir, 'tmp'), { recursive: true });
  fs.writeFileSync(path.join(s.config.storageDir, 'tmp'), 'not a folder');
  const bad = await s.call('GET', '/api/system/health', { token });
  assert.equal(bad.body.storage.status, 'fail', bad.text);
  assert.match(bad.body.storage.message, /^the write of a small object failed/);
  assert.ok(!bad.text.includes(s.config.storageDir + '/tmp/'), 'no error text with paths');
  assert.notEqual(bad.body.status, 'ok');
  const worker = bad.body.probes.find((p: { name: string }) => p.name === 'worker');
  if (worker.status !== 'fail') assert.equal(bad.status, 200, 'a failing store alone is degraded');
});

test('a write killed with kill -9 leaves a temporary file that the preview finds at once and a reclaim removes', async (t) => {
  const s = await startTestServer(t);
  const store = new URL('../../src/kernel/storage/local.ts', import.meta.url).href;
  const script = `
    import { Readable } from 'node:stream';
    import { LocalStore } from ${JSON.stringify(store)};
    const slow = new Readable({ read() { setTimeout(() => this.push(Buffer.alloc(65536, 1)), 20); } });
    await new LocalStore(process.argv[1]).write(slow);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script, s.config.storageDir], { stdio: 'ignore' });
  const tmp = path.join(s.config.storageDir, 'tmp');
  let left: string[] = [];
  for (let i = 0; i < 500 && !left.length; i++) {
    await new Promise((r) => setTimeout(r, 20));
    left = fs.readdirSync(tmp).filter((f) => f.startsWith(`upload.${THIS_WRITER.host}.${child.pid}.`) && fs.statSync(path.join(tmp, f)).size > 0);
  }
  assert.equal(left.length, 1, 'the child is writing');
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
  const key = `tmp/${left[0]}`;
  assert.deepEqual(writerOf(key), { host: THIS_WRITER.host, pid: child.pid });
  const preview = await previewCleanup(s.operator());
  assert.deepEqual(preview.candidates.map((c) => c.path), [key]);
  assert.ok(preview.candidates[0].bytes > 0);
  assert.deepEqual((await reclaimStorage(s.operator())).deleted.map((d) => d.path), [key]);
  assert.deepEqual(fs.readdirSync(tmp), []);
});
