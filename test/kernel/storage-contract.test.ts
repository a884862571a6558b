// One contract for every ObjectStore driver, run against both: LocalStore over a temporary folder
// and S3Store on the test gateway (a real Ceph RADOS Gateway, `npm run s3:start`; without one the s3
// half fails with a message naming the command).
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { sha256Hex } from '../../src/kernel/ids.ts';
import { LocalStore } from '../../src/kernel/storage/local.ts';
import type { ObjectStore } from '../../src/kernel/storage/store.ts';
import { writerOf } from '../../src/kernel/storage/store.ts';
import { runFfmpeg, runFfprobe } from '../../src/media-tools/ffmpeg.ts';
import { tempDir } from '../helpers/server.ts';
import { freshPrefix, s3Settings, testS3Store } from '../helpers/s3.ts';
import { S3Store } from '../../src/kernel/storage/s3.ts';

const MiB = 1024 * 1024;

interface Driver { name: 'local' | 's3'; make(t: TestContext, workDir: string): ObjectStore }

const DRIVERS: Driver[] = [
  { name: 'local', make: (_t, workDir) => new LocalStore(workDir) },
  // Small parts and a low multipart-copy limit, so small objects take the multipart paths.
  { name: 's3', make: (t, workDir) => testS3Store(t, workDir, { partSize: 5 * MiB, multipartCopyAbove: 6 * MiB }) },
];

function setup(t: TestContext, d: Driver): { store: ObjectStore; dir: string } {
  const dir = tempDir(t);
  return { store: d.make(t, path.join(dir, 'storage')), dir };
}

const chunked = (bytes: Buffer, size = MiB): Readable => Readable.from((function* () {
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
})());

async function text(stream: AsyncIterable<unknown>): Promise<string> {
  const parts: Buffer[] = [];
  for await (const c of stream) parts.push(c as Buffer);
  return Buffer.concat(parts).toString('latin1');
}

async function keys(iter: AsyncIterable<{ key: string }>): Promise<string[]> {
  const out: string[] = [];
  for await (const o of iter) out.push(o.key);
  return out;
}

async function all<T>(iter: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const o of iter) out.push(o);
  return out;
}

async function rejectsWith(p: Promise<unknown>, status: number, code: string): Promise<void> {
  await assert.rejects(p, (err: { status?: number; code?: string }) => err.status === status && err.code === code);
}

for (const d of DRIVERS) {
  describe(`ObjectStore contract on the ${d.name} driver`, { concurrency: false }, () => {
    test('write hashes while streaming to a temporary key; place moves it', async (t) => {
      const { store } = setup(t, d);
      const bytes = randomBytes(7 * MiB + 123);
      const w = await store.write(chunked(bytes));
      assert.equal(w.size, bytes.length);
      assert.equal(w.sha256, sha256Hex(bytes));
      assert.deepEqual(w.head, bytes.subarray(0, 512));
      assert.match(w.tmpKey, /^tmp\/upload\./);
      assert.equal(writerOf(w.tmpKey)?.pid, process.pid);
      assert.equal((await store.stat(w.tmpKey))?.size, bytes.length);
      assert.equal(await w.place('assets/o/ab/obj'), true);
      assert.equal(await store.stat(w.tmpKey), null);
      assert.ok((await store.readBytes('assets/o/ab/obj')).equals(bytes));
      await w.discard(); // after place: nothing
      assert.ok(await store.stat('assets/o/ab/obj'));
      const small = await store.putBytes('p/bytes', Buffer.from('hello'));
      assert.equal(small.sha256, sha256Hex(Buffer.from('hello')));
      const file = path.join(tempDir(t), 'f.bin');
      fs.writeFileSync(file, bytes.subarray(0, 3 * MiB));
      const put = await store.putFile('p/file', file);
      assert.equal(put.sha256, sha256Hex(bytes.subarray(0, 3 * MiB)));
      assert.equal((await store.readBytes('p/file')).length, 3 * MiB);
      assert.deepEqual(await keys(store.list('tmp/')), []);
    });

    test('place without replace keeps an object already there; with replace it replaces', async (t) => {
      const { store } = setup(t, d);
      await (await store.write(chunked(Buffer.from('first')))).place('k/obj');
      const second = await store.write(chunked(Buffer.from('second')));
      assert.equal(await second.place('k/obj'), false);
      assert.equal((await store.readBytes('k/obj')).toString(), 'first');
      const third = await store.write(chunked(Buffer.from('third')));
      assert.equal(await third.place('k/obj', { replace: true }), true);
      assert.equal((await store.readBytes('k/obj')).toString(), 'third');
      const dropped = await store.write(chunked(Buffer.from('dropped')));
      await dropped.discard();
      await dropped.discard();
      assert.deepEqual(await keys(store.list('tmp/')), []);
    });

    test('a check that throws aborts the write: no object, no temporary, no upload left', async (t) => {
      const { store } = setup(t, d);
      const tooBig = new Error('too big');
      await assert.rejects(store.write(chunked(randomBytes(12 * MiB)), (total) => {
        if (total > 11 * MiB) throw tooBig;
      }), (err) => err === tooBig);
      const failing = Readable.from((async function* () {
        yield randomBytes(6 * MiB);
        throw new Error('source broke');
      })());
      await assert.rejects(store.write(failing), /source broke/);
      assert.deepEqual(await keys(store.list('')), []);
      assert.deepEqual(await keys(store.incompleteUploads('')), []);
    });

    test('read answers the whole object or an inclusive byte range', async (t) => {
      const { store } = setup(t, d);
      const bytes = Buffer.from(Array.from({ length: 1000 }, (_, i) => String.fromCharCode(65 + (i % 26))).join(''), 'latin1');
      await store.putBytes('r/x', bytes);
      assert.equal(await text(await store.read('r/x')), bytes.toString('latin1'));
      assert.equal(await text(await store.read('r/x', { start: 0, end: 0 })), 'A');
      assert.equal(await text(await store.read('r/x', { start: 10, end: 19 })), bytes.subarray(10, 20).toString('latin1'));
      assert.equal(await text(await store.read('r/x', { start: 990, end: 999 })), bytes.subarray(990).toString('latin1'));
      assert.equal(await text(await store.read('r/x', { start: 1000, end: 1010 })), '', 'a range past the end reads nothing');
    });

    test('stat: size, time and a version that changes when the bytes are rewritten', async (t) => {
      const { store } = setup(t, d);
      await store.putBytes('s/x', Buffer.from('aaaa'));
      const one = await store.stat('s/x');
      assert.equal(one?.key, 's/x');
      assert.equal(one?.size, 4);
      assert.ok(one && Math.abs(one.modifiedAt.getTime() - Date.now()) < 120_000);
      assert.equal((await store.stat('s/x'))?.version, one?.version, 'stable while unchanged');
      await store.putBytes('s/x', Buffer.from('bbbb'));
      assert.notEqual((await store.stat('s/x'))?.version, one?.version);
      assert.equal(await store.stat('s/none'), null);
    });

    test('delete is idempotent', async (t) => {
      const { store } = setup(t, d);
      await store.putBytes('d/x', Buffer.from('x'));
      await store.delete('d/x');
      assert.equal(await store.stat('d/x'), null);
      await store.delete('d/x');
      await store.delete('d/never/there');
    });

    test('deletePrefix removes a folder (and, locally, the folder itself) or every key under a name prefix', async (t) => {
      const { store } = setup(t, d);
      for (const k of ['p/a', 'p/b/c', 'p2/x', 'q']) await store.putBytes(k, Buffer.from(k));
      await store.deletePrefix('p/');
      assert.deepEqual(await keys(store.list('')), ['p2/x', 'q']);
      if (store instanceof LocalStore) assert.equal(fs.existsSync(path.join(store.root, 'p')), false, 'no empty folder left');
      await store.deletePrefix('p');
      assert.deepEqual(await keys(store.list('')), ['q']);
      await store.deletePrefix('nothing/');
      await assert.rejects(store.deletePrefix(''), /refusing/);
    });

    test('list under a prefix, in key order', async (t) => {
      const { store } = setup(t, d);
      for (const k of ['l/b', 'l/a', 'l/c/d', 'l2/x', 'm', 'l/c/a']) await store.putBytes(k, Buffer.from(k));
      assert.deepEqual(await keys(store.list('l/')), ['l/a', 'l/b', 'l/c/a', 'l/c/d']);
      assert.deepEqual(await keys(store.list('l/c/')), ['l/c/a', 'l/c/d']);
      assert.deepEqual(await keys(store.list('l')), ['l/a', 'l/b', 'l/c/a', 'l/c/d', 'l2/x']);
      assert.deepEqual(await keys(store.list('')), ['l/a', 'l/b', 'l/c/a', 'l/c/d', 'l2/x', 'm']);
      assert.deepEqual(await keys(store.list('nothing/')), []);
      const [first] = await all(store.list('m'));
      assert.equal(first.size, 1);
      assert.equal(first.version, (await store.stat('m'))?.version);
    });

    test('copy, small and above the multipart-copy limit', async (t) => {
      const { store } = setup(t, d);
      await store.putBytes('c/small', Buffer.from('small'));
      await store.copy('c/small', 'c/small-copy');
      assert.equal((await store.readBytes('c/small-copy')).toString(), 'small');
      const big = randomBytes(13 * MiB + 7);
      await (await store.write(chunked(big))).place('c/big');
      await store.copy('c/big', 'c/big-copy');
      assert.equal(sha256Hex(await store.readBytes('c/big-copy')), sha256Hex(big));
      await store.putBytes('c/small-copy', Buffer.from('old'));
      await store.copy('c/small', 'c/small-copy');
      assert.equal((await store.readBytes('c/small-copy')).toString(), 'small', 'replaces');
      await rejectsWith(store.copy('c/none', 'c/x'), 404, 'not_found');
    });

    test('move: the bytes at the new key, nothing at the old one; replaces; a missing source is 404', async (t) => {
      const { store } = setup(t, d);
      await store.putBytes('mv/a', Buffer.from('moved'));
      await store.putBytes('mv/b/deeper/c', Buffer.from('old'));
      await store.move('mv/a', 'mv/b/deeper/c');
      assert.equal((await store.readBytes('mv/b/deeper/c')).toString(), 'moved');
      assert.equal(await store.stat('mv/a'), null);
      await rejectsWith(store.move('mv/a', 'mv/x'), 404, 'not_found');
      await rejectsWith(store.move('mv/b/deeper/c', '../x'), 422, 'unsafe_path');
      assert.equal((await store.readBytes('mv/b/deeper/c')).toString(), 'moved', 'an unsafe target moves nothing');
    });

    test('signed URLs: s3 answers the bytes with the disposition asked, refuses a tampered one; local has none', async (t) => {
      const { store } = setup(t, d);
      await store.putBytes('u/clip.txt', Buffer.from('signed bytes'));
      const url = await store.signedUrl('u/clip.txt', { contentDisposition: 'attachment; filename="clip.txt"', contentType: 'text/plain' });
      if (d.name === 'local') {
        assert.equal(url, null);
        return;
      }
      assert.ok(url);
      const res = await fetch(url);
      assert.equal(res.status, 200);
      assert.equal(await res.text(), 'signed bytes');
      assert.equal(res.headers.get('content-disposition'), 'attachment; filename="clip.txt"');
      assert.equal(res.headers.get('content-type'), 'text/plain');
      const ranged = await fetch(url, { headers: { range: 'bytes=0-5' } });
      assert.equal(ranged.status, 206);
      assert.equal(await ranged.text(), 'signed');
      const u = new URL(url);
      const sig = u.searchParams.get('X-Amz-Signature')!;
      u.searchParams.set('X-Amz-Signature', (sig[0] === '0' ? '1' : '0') + sig.slice(1));
      const tampered = await fetch(u);
      assert.equal(tampered.status, 403);
      await tampered.arrayBuffer();
      const expired = await fetch((await store.signedUrl('u/clip.txt', { expiresIn: 1 }))!.replace(/X-Amz-Date=\d{8}T\d{6}Z/, 'X-Amz-Date=20200101T000000Z'));
      assert.equal(expired.status, 403);
      await expired.arrayBuffer();
    });

    test('mediaInput is readable by ffprobe; localCopy gives a file until released', async (t) => {
      const { store, dir } = setup(t, d);
      const clip = path.join(dir, 'clip.mp4');
      await runFfmpeg(['-f', 'lavfi', '-i', 'testsrc=duration=1:size=64x64:rate=10', '-pix_fmt', 'yuv420p', '-y', clip]);
      await store.putFile('m/clip.mp4', clip);
      const input = await store.mediaInput('m/clip.mp4');
      if (d.name === 's3') assert.match(input, /^http:\/\//);
      const probe = await runFfprobe<{ streams: { width: number }[] }>(['-v', 'error', '-show_streams', '-of', 'json', input]);
      assert.equal(probe.json?.streams[0].width, 64);
      const copy = await store.localCopy('m/clip.mp4');
      assert.ok(fs.readFileSync(copy.path).equals(fs.readFileSync(clip)));
      await copy.release();
      if (d.name === 's3') assert.equal(fs.existsSync(copy.path), false, 'a staged copy is removed on release');
      assert.ok(await store.stat('m/clip.mp4'), 'the object stays');
    });

    test('unsafe keys are 422 unsafe_path; missing objects 404 not_found', async (t) => {
      const { store } = setup(t, d);
      // Refused everywhere: leaving the store, absolute, backslash, empty.
      for (const bad of ['../x', '/abs/x', 'a/../../x', 'a\\b', '']) {
        await rejectsWith(store.read(bad), 422, 'unsafe_path');
        await rejectsWith(store.stat(bad), 422, 'unsafe_path');
      }
      // Refused as keys to write: empty and "." segments too.
      for (const bad of ['../x', '/abs/x', 'a/../../x', 'a//b', 'a/./b', 'a\\b', '']) {
        await rejectsWith(store.putBytes(bad, Buffer.from('x')), 422, 'unsafe_path');
        await rejectsWith(store.delete(bad), 422, 'unsafe_path');
        const w = await store.write(chunked(Buffer.from('x')));
        await rejectsWith(w.place(bad), 422, 'unsafe_path');
        await w.discard();
      }
      for (const p of [() => store.read('no/such'), () => store.readBytes('no/such'), () => store.mediaInput('no/such'), () => store.localCopy('no/such')]) {
        await rejectsWith(p(), 404, 'not_found');
      }
      assert.deepEqual(await keys(store.list('')), []);
    });

    test('a writer killed -9 mid-upload leaves an incomplete upload that abortUpload removes', async (t) => {
      const { store, dir } = setup(t, d);
      if (d.name === 'local') {
        assert.deepEqual(await keys(store.incompleteUploads('')), [], 'a folder has no multipart uploads');
        return;
      }
      const s3 = store as S3Store;
      const settings = { ...s3Settings(s3.prefix) };
      const child = spawn(process.execPath, [path.join(import.meta.dirname, '../fixtures/storage/endless-writer.ts'), JSON.stringify(settings), dir], { stdio: 'ignore' });
      const exited = new Promise((resolve) => child.once('exit', resolve));
      t.after(() => child.kill('SIGKILL'));
      let seen: { key: string; uploadId: string; initiatedAt: Date } | undefined;
      for (let i = 0; i < 300 && !seen; i++) {
        [seen] = await all(store.incompleteUploads('tmp/'));
        if (!seen) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.ok(seen, 'the writer began a multipart upload');
      child.kill('SIGKILL');
      await exited;
      assert.equal(writerOf(seen.key)?.pid, child.pid, 'the temporary key names its writer');
      assert.ok(Math.abs(seen.initiatedAt.getTime() - Date.now()) < 120_000);
      const after = await all(store.incompleteUploads(''));
      assert.deepEqual(after.map((u) => u.uploadId), [seen.uploadId], 'still there after the kill');
      assert.deepEqual(await keys(store.list('')), [], 'no object');
      await store.abortUpload(seen);
      await store.abortUpload(seen); // idempotent
      assert.deepEqual(await keys(store.incompleteUploads('')), []);
    });
  });
}

test('s3: placing a write whose temporary object vanished fails 404 and leaves no upload behind', async (t) => {
  const store = testS3Store(t, path.join(tempDir(t), 'storage'), { partSize: 5 * MiB, multipartCopyAbove: 6 * MiB });
  const w = await store.write(chunked(randomBytes(7 * MiB)));
  await store.delete(w.tmpKey);
  await rejectsWith(w.place('gone/obj'), 404, 'not_found');
  assert.deepEqual(await keys(store.incompleteUploads('')), [], 'the multipart copy was aborted');
  assert.equal(await store.stat('gone/obj'), null);
});

test('a fresh prefix is a safe store prefix', () => {
  assert.match(freshPrefix(), /^t-\d+-[0-9a-f]{12}\/$/);
});
