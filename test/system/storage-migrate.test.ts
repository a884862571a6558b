// Moving a store (svc storage migrate): every referenced object — artifacts and their frames, asset
// versions, a completed job's files, a running job's folder, export packages and archives — copied to
// the target and verified by SHA-256 (recorded, else the source's), unreferenced objects left behind,
// the source never changed, a second run skipping what is there, an interrupted run resumed, a
// corrupt target copy replaced, a source that no longer matches its record refused; and the CLI.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.ts';
import { member, type Tree } from '../helpers/factories.ts';
import { Sandbox, describe, lines } from '../helpers/cli.ts';
import { LocalStore } from '../../src/kernel/storage/local.ts';
import type { ObjectStore } from '../../src/kernel/storage/store.ts';
import { migrateStorage, migrationItems } from '../../src/system/storage-migrate.ts';

const T0 = '2026-01-01T00:00:00.000Z';
const sha = (b: string | Buffer) => crypto.createHash('sha256').update(b).digest('hex');

function put(s: TestServer, rel: string, content = `bytes of ${rel}\n`): { sha256: string; size: number } {
  const abs = path.join(s.config.storageDir, rel);
  fs.mkdirSync(path.dirname(abs), { recursive: true });
  fs.writeFileSync(abs, content);
  return { sha256: sha(content), size: Buffer.byteLength(content) };
}

let seq = 0;
function job(s: TestServer, tree: Tree, status: string, files: Array<{ path: string; sha256: string; fileSize: number }> = []): string {
  const id = `job_mg${++seq}`;
  s.db.run(`INSERT INTO generation_jobs (id, organization_id, workspace_id, project_id, kind, status, output, created_at, updated_at)
    VALUES (?, ?, ?, ?, 'video', ?, ?, ?, ?)`, id, tree.organizationId, tree.workspaceId, tree.projectId, status,
  JSON.stringify({ files: files.map((f) => ({ ...f, role: 'image', mimeType: 'image/png' })) }), T0, T0);
  return id;
}

/** A store with one object of every referenced kind, an unreferenced one and a registered one missing. */
async function world(t: TestContext) {
  const s = await startTestServer(t);
  const { tree } = await member(s, 'org_owner');
  const video = put(s, 'outputs/job_a/video.mp4');
  const first = put(s, 'frames/job_a/first.png');
  const last = put(s, 'frames/job_a/last.png');
  s.db.run(`INSERT INTO media_artifacts (id, organization_id, workspace_id, project_id, job_id, kind, source, storage_path, file_name, mime_type,
      file_size, content_sha256, has_video, has_audio, first_frame_path, first_frame_sha256, first_frame_size, last_frame_path, last_frame_sha256, last_frame_size, created_at)
    VALUES ('art_mg1', ?, ?, ?, ?, 'video', 'generation', 'outputs/job_a/video.mp4', 'video.mp4', 'video/mp4', ?, ?, 1, 0,
      'frames/job_a/first.png', ?, ?, 'frames/job_a/last.png', ?, ?, ?)`,
  tree.organizationId, tree.workspaceId, tree.projectId, job(s, tree, 'completed'), video.size, video.sha256, first.sha256, first.size, last.sha256, last.size, T0);
  const asset = put(s, 'assets/ab/abcdef');
  s.db.run(`INSERT INTO assets (id, organization_id, workspace_id, project_id, kind, name, created_at, updated_at) VALUES ('ast_mg1', ?, ?, ?, 'image', 'a', ?, ?)`,
    tree.organizationId, tree.workspaceId, tree.projectId, T0, T0);
  s.db.run(`INSERT INTO asset_versions (id, asset_id, organization_id, workspace_id, project_id, number, file_name, mime_type, file_size, content_sha256, storage_path, created_at)
    VALUES ('asv_mg1', 'ast_mg1', ?, ?, ?, 1, 'a.bin', 'application/octet-stream', ?, ?, 'assets/ab/abcdef', ?)`,
  tree.organizationId, tree.workspaceId, tree.projectId, asset.size, asset.sha256, T0);
  const out = put(s, 'outputs/job_c/image-1.png');
  job(s, tree, 'completed', [{ path: 'outputs/job_c/image-1.png', sha256: out.sha256, fileSize: out.size }]);
  const running = job(s, tree, 'running');
  put(s, `outputs/${running}/partial.bin`);
  put(s, `frames/${running}/f.png`);
  // An export package with its manifest and archive.
  const media = put(s, 'exports/exp_1/media/01.mp4');
  const manifest = put(s, 'exports/exp_1/manifest.json', JSON.stringify({ files: [{ path: 'media/01.mp4', sha256: media.sha256, size: media.size }] }));
  const tar = put(s, 'exports/exp_1.tar');
  s.db.run(`INSERT INTO deliveries (id, organization_id, workspace_id, project_id, title, created_at, updated_at) VALUES ('dlv_mg1', ?, ?, ?, 'd', ?, ?)`,
    tree.organizationId, tree.workspaceId, tree.projectId, T0, T0);
  s.db.run(`INSERT INTO exports (id, organization_id, workspace_id, project_id, delivery_id, delivery_version, storage_path, archive_path, archive_sha256,
      manifest_sha256, file_count, total_bytes, created_at) VALUES ('exp_1', ?, ?, ?, 'dlv_mg1', 1, 'exports/exp_1', 'exports/exp_1.tar', ?, ?, 2, 10, ?)`,
  tree.organizationId, tree.workspaceId, tree.projectId, tar.sha256, manifest.sha256, T0);
  put(s, 'outputs/job_x/unreferenced.bin');
  put(s, 'tmp/upload-stray');
  job(s, tree, 'completed', [{ path: 'outputs/job_gone/missing.png', sha256: sha('x'), fileSize: 1 }]);
  return { s, tree, running };
}

async function keysOf(store: ObjectStore, prefix = ''): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  for (const folder of prefix ? [prefix] : ['assets/', 'exports/', 'frames/', 'outputs/', 'tmp/', 'cache/']) {
    for await (const o of store.list(folder)) found.set(o.key, sha(await store.readBytes(o.key)));
  }
  return found;
}

test('migrate copies every referenced object verified by SHA-256, leaves the source alone and resumes', async (t) => {
  const { s, running } = await world(t);
  const source = new LocalStore(s.config.storageDir);
  const target = new LocalStore(tempDir(t));
  const expected = [
    'assets/ab/abcdef', 'exports/exp_1.tar', 'exports/exp_1/manifest.json', 'exports/exp_1/media/01.mp4',
    'frames/job_a/first.png', 'frames/job_a/last.png', `frames/${running}/f.png`,
    'outputs/job_a/video.mp4', 'outputs/job_c/image-1.png', 'outputs/job_gone/missing.png', `outputs/${running}/partial.bin`,
  ].sort();
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
  fs.writeFileSync(path.join(s.config.storageDir, 'assets/ab/abcdef'), 'changed at the source');
  fs.rmSync(path.join(target.root, 'assets/ab/abcdef'));
  const fix = await migrateStorage(s.db, source, target);
  assert.equal(fix.copied, 1);
  assert.deepEqual(fix.failed, [{ key: 'assets/ab/abcdef', reason: 'the source no longer matches its recorded SHA-256 (nothing written)' }]);
  assert.equal(sha(fs.readFileSync(path.join(target.root, 'outputs/job_a/video.mp4'))), before.get('outputs/job_a/video.mp4'));
  assert.ok(!fs.existsSync(path.join(target.root, 'assets/ab/abcdef')));
  assert.deepEqual(fs.readdirSync(path.join(target.root, 'tmp')), [], 'no temporary object left at the target');
  await assert.rejects(migrateStorage(s.db, source, new LocalStore(s.config.storageDir)), /the target is the source/);
});

test('svc storage migrate --to local --to-storage-dir prints progress and a summary (--json too)', async (t) => {
  const { s } = await world(t);
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
  const audit = s.db.all<any>("SELECT actor_type, metadata FROM audit_log WHERE action = 'system.storage.migrated' ORDER BY seq");
  assert.deepEqual(audit.map((a) => [a.actor_type, JSON.parse(a.metadata).copied, JSON.parse(a.metadata).present]), [['operator', 10, 0], ['operator', 0, 10]]);
  assert.deepEqual(JSON.parse(audit[0].metadata).missing, ['outputs/job_gone/missing.png']);
  const same = await sb.run(['storage', 'migrate', '--to', 'local', '--json', ...dirs]);
  assert.notEqual(same.code, 0, describe(same));
  assert.match(same.stderr, /the target is the source/);
});
