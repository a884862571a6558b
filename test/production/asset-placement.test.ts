// Uploads are placed in the store before the transaction that registers them: a failed registration
// removes only an object it placed and nothing references; concurrent uploads of the same bytes end
// with one object and every version readable; an upload that reused an object puts its own bytes
// back when a failing upload removed that object meanwhile (placement.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { Readable } from 'node:stream';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.ts';
import { makeTree, member } from '../helpers/factories.ts';
import { refuseWrites } from '../helpers/sql.ts';
import { LocalStore } from '../../src/kernel/storage/local.ts';
import { keyLock, placeAt } from '../../src/production/assets/placement.ts';
import { createLogger } from '../../src/kernel/log.ts';

const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), crypto.randomBytes(5000)]);

async function setup(t: any) {
  const s = await startTestServer(t);
  const tree = await makeTree(s);
  const producer = await member(s, 'producer', tree);
  const asset = async (name: string) => {
    const r = await s.call('POST', '/api/assets', { token: producer.token, body: { kind: 'image', name } });
    assert.equal(r.status, 201, r.text);
    return r.body.id as string;
  };
  const upload = (assetId: string, body: Buffer) => s.call('POST', `/api/assets/${assetId}/versions/upload?fileName=f.png`, {
    token: producer.token, raw: body, headers: { 'content-type': 'application/octet-stream' },
  });
  const content = async (assetId: string, versionId: string) => {
    const res = await fetch(`${s.url}/api/assets/${assetId}/versions/${versionId}/content`, { headers: { authorization: `Bearer ${producer.token}` } });
    return { status: res.status, bytes: Buffer.from(await res.arrayBuffer()) };
  };
  return { s, tree, producer, asset, upload, content };
}

/** The keys of the server's store under a prefix (any driver). */
async function keysUnder(s: TestServer, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of s.operator().storage.list(prefix)) keys.push(o.key);
  return keys;
}

const failRegistrations = async (s: TestServer) =>
  await refuseWrites(s.db, { name: 'fail_version', table: 'asset_versions', event: 'INSERT', message: 'registration refused by the test' });

test('a failed registration leaves no placed object, no temporary and no version; a reused object stays', async (t) => {
  const { s, asset, upload, content } = await setup(t);
  const a = await asset('one');
  const allow = await failRegistrations(s);
  const failed = await upload(a, PNG);
  assert.equal(failed.status, 500, failed.text);
  assert.deepEqual(await keysUnder(s, 'assets/'), [], 'the object placed for it is removed');
  assert.deepEqual(await keysUnder(s, 'tmp/'), [], 'no temporary left');
  assert.equal((await s.db.get<{ n: number }>('SELECT count(*) AS n FROM asset_versions'))!.n, 0);
  await allow();

  const first = await upload(a, PNG);
  assert.equal(first.status, 201, first.text);
  const b = await asset('two');
  const disallow = await failRegistrations(s);
  assert.equal((await upload(b, PNG)).status, 500);
  await disallow();
  assert.deepEqual(await keysUnder(s, 'assets/'), [first.body.storagePath], 'the object other versions use is kept');
  assert.deepEqual(await keysUnder(s, 'tmp/'), []);
  const served = await content(a, first.body.id);
  assert.equal(served.status, 200);
  assert.ok(served.bytes.equals(PNG));
});

test('a failed upload of the right bytes over a corrupt version still repairs the shared object', async (t) => {
  const { s, asset, upload } = await setup(t);
  const a = await asset('one');
  const v = (await upload(a, PNG)).body;
  const store = s.operator().storage;
  const bytes = await store.readBytes(v.storagePath);
  bytes[10] ^= 0xff;
  await store.putBytes(v.storagePath, bytes);
  const allow = await failRegistrations(s);
  await s.db.run("UPDATE asset_versions SET status = 'corrupt' WHERE id = ?", v.id);
  assert.equal((await upload(a, PNG)).status, 500);
  await allow();
  assert.ok((await store.readBytes(v.storagePath)).equals(PNG), 'the object now holds the right bytes; the corrupt version still names it');
  assert.deepEqual(await keysUnder(s, 'tmp/'), []);
});

test('concurrent uploads of the same bytes end with one object, one count and every version readable', async (t) => {
  const { s, asset, upload, content, producer } = await setup(t);
  const ids = await Promise.all([asset('a'), asset('b'), asset('c'), asset('d')]);
  const answers = await Promise.all(ids.map((id) => upload(id, PNG)));
  for (const r of answers) assert.equal(r.status, 201, r.text);
  assert.equal(new Set(answers.map((r) => r.body.storagePath)).size, 1);
  assert.deepEqual(answers.map((r) => r.body.deduplicated).sort(), [false, true, true, true], 'exactly one upload stored the bytes');
  assert.equal((await keysUnder(s, 'assets/')).length, 1);
  assert.deepEqual(await keysUnder(s, 'tmp/'), []);
  for (const [i, r] of answers.entries()) {
    const served = await content(ids[i], r.body.id);
    assert.equal(served.status, 200);
    assert.ok(served.bytes.equals(PNG));
  }
  const usage = await s.call('GET', '/api/usage/storage', { token: producer.token });
  assert.equal(usage.body.usedBytes, PNG.length, 'counted once');
});

test('an upload that reused an object puts its own bytes back when a failing upload removed it meanwhile', async (t) => {
  const store = new LocalStore(tempDir(t));
  const key = 'assets/org_x/ab/abc';
  const log = createLogger('silent');
  const failing = await store.write(Readable.from([PNG]));
  const reusing = await store.write(Readable.from([PNG]));
  const placedFirst = await placeAt(store, failing, key, false);
  const reused = await placeAt(store, reusing, key, false);
  assert.deepEqual([placedFirst.placed, reused.placed], [true, false]);
  // The first registration fails before the second one commits: its object is removed...
  await placedFirst.undo(async () => false);
  assert.equal(await store.stat(key), null);
  // ...and the second one, committed, settles by placing its own bytes.
  await reused.settle(log);
  assert.ok((await store.readBytes(key)).equals(PNG));
  await reusing.discard();
  await failing.discard();
  const tmp: string[] = [];
  for await (const o of store.list('tmp/')) tmp.push(o.key);
  assert.deepEqual(tmp, []);
  // A placed object that a version references is never removed by undo.
  const again = await store.write(Readable.from([PNG]));
  const replaced = await placeAt(store, again, key, true);
  assert.equal(replaced.placed, true, 'a corrupt version\'s object is replaced');
  await replaced.undo(async () => true);
  assert.ok((await store.readBytes(key)).equals(PNG));
});

test('keyLock runs the holders of one key one at a time, in order, and other keys at once', async (t) => {
  const store = new LocalStore(tempDir(t));
  const seen: string[] = [];
  const step = (name: string, ms: number) => async () => {
    seen.push(`${name}+`);
    await new Promise((r) => setTimeout(r, ms));
    seen.push(`${name}-`);
    if (name === 'b') throw new Error('b fails');
    return name;
  };
  const results = await Promise.allSettled([keyLock(store, 'k', step('a', 30)), keyLock(store, 'k', step('b', 5)), keyLock(store, 'k', step('c', 1)), keyLock(store, 'other', step('x', 1))]);
  assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
  assert.deepEqual(seen.filter((e) => !e.startsWith('x')), ['a+', 'a-', 'b+', 'b-', 'c+', 'c-']);
  assert.ok(seen.indexOf('x-') < seen.indexOf('a-'), 'another key does not wait');
});
