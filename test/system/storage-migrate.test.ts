// Moving a store (svc storage migrate): every referenced object — artifacts and their frames, asset
// versions, a completed job's files, a running job's folder, export packages and archives — copied to
// the target and verified by SHA-256 (recorded, else the source's), unreferenced objects left behind,
// the source never changed, a second run skipping what is there, an interrupted run resumed, a
// corrupt target copy replaced, a source that no longer matches its record refused; and the CLI.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from '../helpers/server.ts';
import { Sandbox, describe, lines } from '../helpers/cli.ts';
import { keysOf, sha, storedWorld, worldKeys } from '../helpers/stored-world.ts';
import { LocalStore } from '../../src/kernel/storage/local.ts';
import { migrateStorage, migrationItems } from '../../src/system/storage-migrate.ts';

test('migrate copies every referenced object verified by SHA-256, leaves the source alone and resumes', async (t) => {
  const { s, store: source, running } = await storedWorld(t);
  const target = new LocalStore(tempDir(t));
  const expected = worldKeys(running);
  const items = await migrationItems(s.db, source);
  assert.deepEqual(items.map((i) => i.key), expected);
  assert.equal(items.find((i) => i.key === 'exports/exp_1/media/01.mp4')!.sha256, sha('bytes of exports/exp_1/media/01.mp4\n'), 'the manifest\'s hash');
  assert.equal(items.find((i) => i.key === `outputs/${running}/partial.bin`)!.sha256, null, 'a running job\'s file: the source\'s hash');

  const before = await keysOf(source);
  const steps: string[] = [];
  const first = await migrateStorage(s.db, source, target, (step, done, total) => steps.push(`${done}/${total} ${step.outcome}`));
  assert.deepEqual([first.objects, first.copied, first.present, first.failed], [11, 10, 0, []]);
  assert.deepEqual(first.missing, ['outputs/job_gone/missing.png']);
  assert.equal(steps.length, 11);
  assert.equal(steps.at(-1), '11/11 ' + steps.at(-1)!.split(' ')[1]);
  const copied = await keysOf(target);
  assert.deepEqual([...copied.keys()].sort(), expected.filter((k) => k !== 'outputs/job_gone/missing.png'));
  for (const [k, h] of copied) assert.equal(h, before.get(k), k);
  assert.deepEqual(await keysOf(source), before, 'the source is unchanged');

  const again = await migrateStorage(s.db, source, target);
  assert.deepEqual([again.copied, again.present, again.bytesCopied], [0, 10, 0]);

  // Interrupted: a target whose writes fail after two copies; the next run copies only the rest.
  const fresh = new LocalStore(tempDir(t));
  let writes = 0;
  const failing = Object.create(fresh) as LocalStore;
  failing.write = async (src, check) => {
    if (++writes > 2) throw new Error('connection reset');
    return fresh.write(src, check);
  };
  const cut = await migrateStorage(s.db, source, failing);
  assert.equal(cut.copied, 2);
  assert.equal(cut.failed.length, 8);
  const resumed = await migrateStorage(s.db, source, fresh);
  assert.deepEqual([resumed.copied, resumed.present, resumed.failed.length], [8, 2, 0]);

  // A corrupt copy at the target is replaced; a source that no longer matches its record is refused.
  fs.writeFileSync(path.join(target.root, 'outputs/job_a/video.mp4'), 'tampered');
  await source.putBytes('assets/ab/abcdef', Buffer.from('changed at the source'));
  fs.rmSync(path.join(target.root, 'assets/ab/abcdef'));
  const fix = await migrateStorage(s.db, source, target);
  assert.equal(fix.copied, 1);
  assert.deepEqual(fix.failed, [{ key: 'assets/ab/abcdef', reason: 'the source no longer matches its recorded SHA-256 (nothing written)' }]);
  assert.equal(sha(fs.readFileSync(path.join(target.root, 'outputs/job_a/video.mp4'))), before.get('outputs/job_a/video.mp4'));
  assert.ok(!fs.existsSync(path.join(target.root, 'assets/ab/abcdef')));
  assert.deepEqual(fs.readdirSync(path.join(target.root, 'tmp')), [], 'no temporary object left at the target');
  await assert.rejects(migrateStorage(s.db, source, source), /the target is the source/);
});

test('svc storage migrate --to local --to-storage-dir prints progress and a summary (--json too)', async (t) => {
  const { s } = await storedWorld(t, {}, { storage: 'local' }); // the CLI runs on the local driver
  const sb = new Sandbox(t);
  const to = tempDir(t);
  const dirs = ['--data-dir', s.config.dataDir, '--storage-dir', s.config.storageDir];
  const text = await sb.run(['storage', 'migrate', '--to', 'local', '--to-storage-dir', to, ...dirs]);
  assert.equal(text.code, 0, describe(text));
  const out = lines(text.stdout);
  assert.equal(out.filter((l) => /^\[\d+\/11\] copied \S+ \(\d+ bytes\)$/.test(l)).length, 10, text.stdout);
  assert.ok(out.includes('[11/11] missing outputs/job_gone/missing.png') || out.some((l) => / missing outputs\/job_gone\/missing.png$/.test(l)), text.stdout);
  assert.match(out.at(-2)!, /^11 object\(s\) from local .* to local .*: 10 copied \(\d+ bytes\), 0 already there, 1 missing at the source, 0 failed$/);
  const json = await sb.run(['storage', 'migrate', '--to', 'local', '--to-storage-dir', to, '--json', ...dirs]);
  assert.equal(json.code, 0, describe(json));
  const summary = JSON.parse(json.stdout);
  assert.deepEqual([summary.objects, summary.copied, summary.present, summary.missing, summary.failed], [11, 0, 10, ['outputs/job_gone/missing.png'], []]);
  assert.deepEqual(summary.to, { driver: 'local', location: to });
  const audit = await s.db.all<any>("SELECT actor_type, metadata FROM audit_log WHERE action = 'system.storage.migrated' ORDER BY seq");
  assert.deepEqual(audit.map((a) => [a.actor_type, JSON.parse(a.metadata).copied, JSON.parse(a.metadata).present]), [['operator', 10, 0], ['operator', 0, 10]]);
  assert.deepEqual(JSON.parse(audit[0].metadata).missing, ['outputs/job_gone/missing.png']);
  const same = await sb.run(['storage', 'migrate', '--to', 'local', '--json', ...dirs]);
  assert.notEqual(same.code, 0, describe(same));
  assert.match(same.stderr, /the target is the source/);
});
