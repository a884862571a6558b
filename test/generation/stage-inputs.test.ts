// The input files of a connector call are staged from the object store with localCopy() and
// released after the call: a store that stages real copies (as the s3 driver does under cache/)
// shows every copy released, also when staging fails half-way (404 for a missing object, 422 for
// an unsafe key).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { stageInputs } from '../../src/generation/jobs/contract.ts';
import { AppError } from '../../src/kernel/errors.ts';
import { LocalStore } from '../../src/kernel/storage/local.ts';
import type { LocalCopy } from '../../src/kernel/storage/store.ts';

/** A LocalStore that stages copies under cache/ and counts what is still held. */
class CopyingStore extends LocalStore {
  held = new Set<string>();
  override async localCopy(key: string): Promise<LocalCopy> {
    const copy = path.join(this.root, 'cache', `${this.held.size}-${path.basename(key)}`);
    fs.mkdirSync(path.dirname(copy), { recursive: true });
    fs.writeFileSync(copy, await this.readBytes(key));
    this.held.add(copy);
    return { path: copy, release: async () => { fs.rmSync(copy, { force: true }); this.held.delete(copy); } };
  }
}

function storeWith(t: TestContext, files: Record<string, string>): CopyingStore {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-stage-'));
  t.after(() => fs.rmSync(root, { recursive: true, force: true }));
  for (const [key, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, key)), { recursive: true });
    fs.writeFileSync(path.join(root, key), text);
  }
  return new CopyingStore(root);
}

test('inputs are staged in contract order with their names and types, and released once', async (t) => {
  const store = storeWith(t, { 'assets/org_a/ab/one': 'first', 'outputs/job_a/image-1.png': 'second' });
  const staged = await stageInputs(store, [
    { key: 'assets/org_a/ab/one', fileName: 'ref.png', mimeType: 'image/png' },
    { key: 'outputs/job_a/image-1.png', fileName: 'image-1.png', mimeType: 'image/png' },
  ]);
  assert.deepEqual(staged.files.map((f) => [fs.readFileSync(f.path, 'utf8'), f.fileName, f.mimeType]), [['first', 'ref.png', 'image/png'], ['second', 'image-1.png', 'image/png']]);
  assert.equal(store.held.size, 2);
  await staged.release();
  await staged.release();
  assert.equal(store.held.size, 0);
  assert.ok(staged.files.every((f) => !fs.existsSync(f.path)), 'the copies are gone');
});

test('a missing or unsafe input fails the staging and releases what was staged before it', async (t) => {
  const store = storeWith(t, { 'assets/org_a/ab/one': 'first' });
  const one = { key: 'assets/org_a/ab/one', fileName: 'one', mimeType: 'text/plain' };
  await assert.rejects(stageInputs(store, [one, { ...one, key: 'assets/org_a/ab/gone' }]), (e: AppError) => e instanceof AppError && e.status === 404);
  assert.equal(store.held.size, 0);
  await assert.rejects(stageInputs(store, [one, { ...one, key: '../outside' }]), (e: AppError) => e instanceof AppError && e.code === 'unsafe_path');
  assert.equal(store.held.size, 0);
  assert.deepEqual((await stageInputs(store, [])).files, []);
});
