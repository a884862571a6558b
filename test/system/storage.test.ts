// Readiness and storage cleanup: access on the three system routes, the preview's candidates (old,
// unreferenced, regular files in outputs/, frames/, tmp/, cache/; never through a symbolic link),
// reclaim of all candidates or of named paths with skip reasons, unsafe paths refused before
// anything is deleted, references re-read before deleting, empty directories removed, the audit
// record, readiness with PLATFORM_* targets and media tools, and the CLI commands.
import { mapSeq } from '../../src/kernel/seq.ts';
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.ts';
import { login, makeUser, member, type Tree } from '../helpers/factories.ts';
import { Sandbox, describe, lines } from '../helpers/cli.ts';
import { createContext } from '../../src/directory/context.ts';
import { reclaimStorage } from '../../src/system/storage.ts';

const DAY = 86_400_000;

async function world(t: TestContext, env: Record<string, string> = {}) {
  const s = await startTestServer(t, env);
  const admin = await makeUser(s, { systemAdmin: true });
  const adminToken = await login(s, admin);
  const owner = await member(s, 'org_owner');
  return { s, admin, adminToken, ownerToken: owner.token, tree: owner.tree };
}

/** Writes storage/<rel> with `content`, its mtime `ageDays` days ago. */
function put(s: TestServer, rel: string, ageDays: number, content = `content of ${rel}\n`): { abs: string; mtime: Date } {
  const abs = path.join(s.config.storageDir, rel);
  fs.mkdirSync(path.dirname(abs), { recursive: true });
  fs.writeFileSync(abs, content);
  const mtime = new Date(Math.floor((Date.now() - ageDays * DAY) / 1000) * 1000);
  fs.utimesSync(abs, mtime, mtime);
  return { abs, mtime };
}

const exists = (s: TestServer, rel: string) => fs.existsSync(path.join(s.config.storageDir, rel));

let seq = 0;
async function addJob(s: TestServer, tree: Tree, status = 'completed', files: string[] = []): Promise<string> {
  const id = `job_st${++seq}`;
  const output = JSON.stringify({ files: files.map((p) => ({ path: p, role: 'image' })) });
  await s.db.run(`INSERT INTO generation_jobs (id, organization_id, workspace_id, project_id, kind, status, output, created_at, updated_at)
    VALUES (?, ?, ?, ?, 'video', ?, ?, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')`, id, tree.organizationId, tree.workspaceId, tree.projectId, status, output);
  return id;
}

async function addArtifact(s: TestServer, tree: Tree, storagePath: string, frames: { first?: string; last?: string } = {}): Promise<string> {
  const id = `art_st${++seq}`;
  await s.db.run(`INSERT INTO media_artifacts (id, organization_id, workspace_id, project_id, job_id, kind, source, storage_path, file_name, mime_type,
      file_size, content_sha256, has_video, has_audio, first_frame_path, last_frame_path, created_at)
    VALUES (?, ?, ?, ?, ?, 'video', 'generation', ?, 'video.mp4', 'video/mp4', 10, 'x', 1, 0, ?, ?, '2026-01-01T00:00:00.000Z')`,
  id, tree.organizationId, tree.workspaceId, tree.projectId, await addJob(s, tree), storagePath, frames.first ?? null, frames.last ?? null);
  return id;
}

async function addComposition(s: TestServer, tree: Tree, storagePath: string, artifactPath: string): Promise<void> {
  const artifactId = await addArtifact(s, tree, artifactPath);
  const episodeId = (await s.db.get<{ id: string }>('SELECT id FROM episodes WHERE project_id = ?', tree.projectId))!.id;
  await s.db.run(`INSERT INTO media_compositions (id, organization_id, workspace_id, project_id, episode_id, job_id, artifact_id, storage_path,
      width, height, frame_rate, duration_ms, inputs, created_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, 640, 360, '24', 1000, '[]', '2026-01-01T00:00:00.000Z')`,
  `cmp_st${++seq}`, tree.organizationId, tree.workspaceId, tree.projectId, episodeId, await addJob(s, tree), artifactId, storagePath);
}

async function addAssetVersion(s: TestServer, tree: Tree, storagePath: string): Promise<void> {
  const assetId = `ast_st${++seq}`;
  await s.db.run(`INSERT INTO assets (id, organization_id, workspace_id, project_id, kind, name, created_at, updated_at)
    VALUES (?, ?, ?, ?, 'image', 'kept', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')`, assetId, tree.organizationId, tree.workspaceId, tree.projectId);
  await s.db.run(`INSERT INTO asset_versions (id, asset_id, organization_id, workspace_id, project_id, number, file_name, mime_type, file_size, content_sha256, storage_path, created_at)
    VALUES (?, ?, ?, ?, ?, 1, 'kept.bin', 'application/octet-stream', 10, 'x', ?, '2026-01-01T00:00:00.000Z')`,
  `asv_st${seq}`, assetId, tree.organizationId, tree.workspaceId, tree.projectId, storagePath);
}

/** Old (40 days) and unreferenced: the candidates at the default retention of 30 days. */
const OLD_UNREFERENCED = [
  'cache/thumbs/c.bin',
  'frames/job_x/f.png',
  'outputs/job_d/image-1.png', // named by the output of a job that did not complete
  'outputs/job_x/nested/deeper/old2.bin',
  'outputs/job_x/old.png',
  'tmp/upload-old',
];
const REFERENCED = [
  'outputs/job_a/video.mp4', 'frames/job_a/first.png', 'frames/job_a/last.png', // artifact and its frames
  'outputs/job_b/cut.mp4', 'outputs/job_b/cut-artifact.mp4', // composition and its artifact
  'cache/asset-copy/v1.bin', // asset version
  'outputs/job_c/image-1.png', // a file of a completed job's output (completed before artifacts were registered)
];
const YOUNG = ['outputs/job_x/new.png', 'tmp/upload-new'];
const OUTSIDE = ['assets/aa/old', 'stray.txt', 'other/dir/old'];

/** A storage tree with every kind of file, rows referring to some, and symbolic links. */
async function layout(t: TestContext, s: TestServer, tree: Tree) {
  for (const rel of [...OLD_UNREFERENCED, ...REFERENCED, ...OUTSIDE]) put(s, rel, 40);
  for (const rel of YOUNG) put(s, rel, 1);
  put(s, 'outputs/job_x/mid.png', 20); // a candidate only below 20 days
  put(s, 'tmp/upload-20d', 20); // tmp/: never younger than the 30-day retention
  fs.mkdirSync(path.join(s.config.storageDir, 'outputs/empty-before'), { recursive: true });
  await addArtifact(s, tree, 'outputs/job_a/video.mp4', { first: 'frames/job_a/first.png', last: 'frames/job_a/last.png' });
  await addComposition(s, tree, 'outputs/job_b/cut.mp4', 'outputs/job_b/cut-artifact.mp4');
  await addAssetVersion(s, tree, 'cache/asset-copy/v1.bin');
  await addJob(s, tree, 'completed', ['outputs/job_c/image-1.png']);
  await addJob(s, tree, 'failed', ['outputs/job_d/image-1.png']);
  // Symbolic links: to a directory outside storage holding an old file, to an old file outside,
  // and to a referenced file inside.
  const outside = tempDir(t);
  const secret = path.join(outside, 'secret.bin');
  fs.writeFileSync(secret, 'outside storage');
  const old = new Date(Date.now() - 40 * DAY);
  fs.utimesSync(secret, old, old);
  fs.symlinkSync(outside, path.join(s.config.storageDir, 'outputs/link-to-outside'));
  fs.symlinkSync(secret, path.join(s.config.storageDir, 'outputs/link-file'));
  fs.symlinkSync(path.join(s.config.storageDir, 'outputs/job_a/video.mp4'), path.join(s.config.storageDir, 'cache/alias.mp4'));
  return { secret };
}

test('readiness, cleanup preview and reclaim: 401 without a credential, 403 for a non-administrator, 200 for the system administrator', async (t) => {
  const { s, adminToken, ownerToken } = await world(t);
  put(s, 'outputs/job_q/old.bin', 40);
  const routes: Array<[string, string, unknown?]> = [
    ['GET', '/api/system/readiness'],
    ['GET', '/api/system/storage/cleanup-preview'],
    ['POST', '/api/system/storage/reclaim', {}],
  ];
  for (const [method, p, body] of routes) {
    const none = await s.call(method, p, { body });
    assert.equal(none.status, 401, `${method} ${p}: ${none.text}`);
    assert.equal(none.body.error.code, 'unauthenticated');
    const owner = await s.call(method, p, { token: ownerToken, body });
    assert.equal(owner.status, 403, `${method} ${p}: ${owner.text}`);
    assert.equal(owner.body.error.code, 'permission_denied');
  }
  assert.ok(exists(s, 'outputs/job_q/old.bin'), 'refused calls delete nothing');
  for (const [method, p, body] of routes) {
    const ok = await s.call(method, p, { token: adminToken, body });
    assert.equal(ok.status, 200, `${method} ${p}: ${ok.text}`);
  }
  assert.ok(!exists(s, 'outputs/job_q/old.bin'), 'the administrator\'s reclaim deleted the candidate');
});

test('the preview lists old unreferenced regular files of the four folders only: never referenced, young, outside or linked ones', async (t) => {
  const { s, adminToken, tree } = await world(t);
  const { secret } = await layout(t, s, tree);
  const r = await s.call('GET', '/api/system/storage/cleanup-preview', { token: adminToken });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(Object.keys(r.body).sort(), ['candidates', 'count', 'estimatedBytes', 'olderThanDays', 'retentionDays']);
  assert.deepEqual(r.body.candidates.map((c: any) => c.path).sort(), OLD_UNREFERENCED);
  assert.equal(r.body.count, OLD_UNREFERENCED.length);
  assert.equal(r.body.olderThanDays, 30);
  assert.equal(r.body.retentionDays, 30);
  const bytes = OLD_UNREFERENCED.reduce((n, rel) => n + Buffer.byteLength(`content of ${rel}\n`), 0);
  assert.equal(r.body.estimatedBytes, bytes);
  const one = r.body.candidates.find((c: any) => c.path === 'frames/job_x/f.png');
  assert.deepEqual(one, {
    path: 'frames/job_x/f.png', bytes: Buffer.byteLength('content of frames/job_x/f.png\n'),
    modifiedAt: fs.statSync(path.join(s.config.storageDir, 'frames/job_x/f.png')).mtime.toISOString(), folder: 'frames',
  });
  for (const c of r.body.candidates) assert.equal(c.folder, c.path.split('/')[0]);
  assert.ok(!r.text.includes('secret.bin') && !r.text.includes('link-') && !r.text.includes('alias'), 'nothing through or of a symbolic link');
  assert.ok(fs.existsSync(secret));

  // olderThanDays overrides the retention, except that tmp/ files younger than the retention stay.
  const ten = await s.call('GET', '/api/system/storage/cleanup-preview?olderThanDays=10', { token: adminToken });
  assert.equal(ten.status, 200, ten.text);
  assert.deepEqual(ten.body.candidates.map((c: any) => c.path).sort(), [...OLD_UNREFERENCED, 'outputs/job_x/mid.png'].sort());
  assert.equal(ten.body.olderThanDays, 10);
  const zero = await s.call('GET', '/api/system/storage/cleanup-preview?olderThanDays=0', { token: adminToken });
  assert.deepEqual(zero.body.candidates.map((c: any) => c.path).sort(), [...OLD_UNREFERENCED, 'outputs/job_x/mid.png', 'outputs/job_x/new.png'].sort());

  for (const bad of ['-1', 'abc', '1.5']) {
    const v = await s.call('GET', `/api/system/storage/cleanup-preview?olderThanDays=${bad}`, { token: adminToken });
    assert.equal(v.status, 422, bad);
    assert.equal(v.body.error.code, 'validation_failed');
    assert.ok(v.body.error.details.fields.olderThanDays, v.text);
  }
});

test('reclaim without paths deletes exactly the candidates, keeps everything else, removes emptied directories and is audited', async (t) => {
  const { s, admin, adminToken, tree } = await world(t);
  const { secret } = await layout(t, s, tree);
  const r = await s.call('POST', '/api/system/storage/reclaim', { token: adminToken });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.body.deleted.map((d: any) => d.path).sort(), OLD_UNREFERENCED);
  assert.deepEqual(r.body.skipped, []);
  const bytes = OLD_UNREFERENCED.reduce((n, rel) => n + Buffer.byteLength(`content of ${rel}\n`), 0);
  assert.equal(r.body.freedBytes, bytes);
  for (const d of r.body.deleted) assert.equal(d.bytes, Buffer.byteLength(`content of ${d.path}\n`));
  for (const rel of OLD_UNREFERENCED) assert.ok(!exists(s, rel), `${rel} deleted`);
  for (const rel of [...REFERENCED, ...YOUNG, ...OUTSIDE, 'outputs/job_x/mid.png', 'tmp/upload-20d']) assert.ok(exists(s, rel), `${rel} kept`);
  assert.ok(fs.existsSync(secret), 'nothing outside storage touched');
  for (const link of ['outputs/link-to-outside', 'outputs/link-file', 'cache/alias.mp4']) {
    assert.ok(fs.lstatSync(path.join(s.config.storageDir, link)).isSymbolicLink(), `${link} kept`);
  }
  // Emptied directories under outputs/ and frames/ are removed; the four roots and others stay.
  assert.ok(!exists(s, 'outputs/job_x/nested'), 'outputs/job_x/nested (emptied) removed');
  assert.ok(!exists(s, 'frames/job_x'), 'frames/job_x (emptied) removed');
  assert.ok(exists(s, 'outputs/job_x'), 'outputs/job_x still holds files');
  assert.ok(exists(s, 'cache/thumbs'), 'cache/ directories are not pruned');
  assert.ok(exists(s, 'outputs/empty-before'), 'only directories the reclaim emptied are removed');
  for (const root of ['outputs', 'frames', 'tmp', 'cache']) assert.ok(exists(s, root), `${root}/ kept`);
  assert.equal(r.body.removedDirectories, 4, 'deeper, nested, outputs/job_d and frames/job_x');

  const audit = await s.db.all<any>("SELECT * FROM audit_log WHERE action = 'system.storage.reclaimed'");
  assert.equal(audit.length, 1);
  assert.equal(audit[0].actor_user_id, admin.id);
  assert.equal(audit[0].organization_id, null);
  const meta = JSON.parse(audit[0].metadata);
  assert.equal(meta.mode, 'candidates');
  assert.equal(meta.deletedCount, OLD_UNREFERENCED.length);
  assert.equal(meta.skippedCount, 0);
  assert.equal(meta.freedBytes, bytes);
  assert.deepEqual([...meta.deletedPaths].sort(), OLD_UNREFERENCED);
  assert.equal(meta.deletedPathsTruncated, false);

  const after = await s.call('GET', '/api/system/storage/cleanup-preview', { token: adminToken });
  assert.equal(after.body.count, 0, after.text);
});

test('reclaim with paths deletes only current candidates and reports the others as skipped with their reason', async (t) => {
  const { s, adminToken, tree } = await world(t);
  const { secret } = await layout(t, s, tree);
  const paths = [
    'outputs/job_x/old.png', 'outputs/job_x/old.png', // named twice: handled once
    'outputs/job_a/video.mp4', 'frames/job_a/first.png', 'outputs/job_b/cut.mp4', 'cache/asset-copy/v1.bin',
    'outputs/nope.bin', 'outputs/job_x/new.png', 'tmp/upload-20d',
    'outputs/link-file', 'outputs/link-to-outside/secret.bin', 'outputs/job_x',
  ];
  const r = await s.call('POST', '/api/system/storage/reclaim', { token: adminToken, body: { paths, olderThanDays: 10 } });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.body.deleted, [{ path: 'outputs/job_x/old.png', bytes: Buffer.byteLength('content of outputs/job_x/old.png\n') }]);
  assert.deepEqual(r.body.skipped, [
    { path: 'outputs/job_a/video.mp4', reason: 'protected' },
    { path: 'frames/job_a/first.png', reason: 'protected' },
    { path: 'outputs/job_b/cut.mp4', reason: 'protected' },
    { path: 'cache/asset-copy/v1.bin', reason: 'protected' },
    { path: 'outputs/nope.bin', reason: 'not_found' },
    { path: 'outputs/job_x/new.png', reason: 'too_recent' },
    { path: 'tmp/upload-20d', reason: 'too_recent' },
    { path: 'outputs/link-file', reason: 'not_a_file' },
    { path: 'outputs/link-to-outside/secret.bin', reason: 'not_a_file' },
    { path: 'outputs/job_x', reason: 'not_a_file' },
  ]);
  assert.equal(r.body.freedBytes, r.body.deleted[0].bytes);
  assert.ok(fs.existsSync(secret));
  for (const rel of ['outputs/job_a/video.mp4', 'frames/job_a/first.png', 'outputs/job_x/new.png', 'tmp/upload-20d', 'outputs/job_x/mid.png']) assert.ok(exists(s, rel), rel);
  for (const rel of OLD_UNREFERENCED.filter((p) => p !== 'outputs/job_x/old.png')) assert.ok(exists(s, rel), `${rel} was not named`);
  const meta = JSON.parse((await s.db.get<any>("SELECT metadata FROM audit_log WHERE action = 'system.storage.reclaimed'"))!.metadata);
  assert.equal(meta.mode, 'paths');
  assert.equal(meta.requested, paths.length - 1);
  assert.deepEqual(meta.skippedByReason, { protected: 4, not_found: 1, too_recent: 2, not_a_file: 3 });

  // paths: [] deletes nothing (only a missing paths member means "every candidate").
  const none = await s.call('POST', '/api/system/storage/reclaim', { token: adminToken, body: { paths: [] } });
  assert.deepEqual(none.body, { deleted: [], skipped: [], freedBytes: 0, removedDirectories: 0, olderThanDays: 30 });
  for (const rel of OLD_UNREFERENCED.filter((p) => p !== 'outputs/job_x/old.png')) assert.ok(exists(s, rel), rel);
});

test('an unsafe path refuses the whole reclaim with 422 unsafe_path before anything is deleted', async (t) => {
  const { s, adminToken } = await world(t);
  put(s, 'outputs/job_u/old.bin', 40);
  put(s, 'assets/aa/old', 40);
  const unsafe = ['/etc/passwd', '../outside', 'outputs/../assets/aa/old', 'outputs/job_u\\old.bin', 'outputs/job_u/old.bin\u0000',
    'assets/aa/old', 'stray.txt', 'outputs', 'outputs/', 'outputs//job_u/old.bin', './outputs/job_u/old.bin', '', 'C:\\x'];
  for (const bad of unsafe) {
    const r = await s.call('POST', '/api/system/storage/reclaim', { token: adminToken, body: { paths: ['outputs/job_u/old.bin', bad] } });
    assert.equal(r.status, 422, `${JSON.stringify(bad)}: ${r.text}`);
    assert.equal(r.body.error.code, 'unsafe_path');
    assert.equal(typeof r.body.error.message, 'string');
    assert.equal(r.body.error.details.paths[0].path, bad);
    assert.ok(exists(s, 'outputs/job_u/old.bin'), `nothing deleted for ${JSON.stringify(bad)}`);
  }
  assert.ok(exists(s, 'assets/aa/old'));
  assert.equal((await s.db.get<any>("SELECT count(*) AS n FROM audit_log WHERE action = 'system.storage.reclaimed'"))!.n, 0);
  const wrongType = await s.call('POST', '/api/system/storage/reclaim', { token: adminToken, body: { paths: 'outputs/job_u/old.bin' } });
  assert.equal(wrongType.status, 422);
  assert.equal(wrongType.body.error.code, 'validation_failed');
  const unknown = await s.call('POST', '/api/system/storage/reclaim', { token: adminToken, body: { everything: true } });
  assert.equal(unknown.status, 422);
  assert.ok(exists(s, 'outputs/job_u/old.bin'));
});

test('a file registered after the preview is protected at reclaim time', async (t) => {
  const { s, adminToken, tree } = await world(t);
  put(s, 'outputs/job_late/late.mp4', 40);
  put(s, 'frames/job_late/first.png', 40);
  const preview = await s.call('GET', '/api/system/storage/cleanup-preview', { token: adminToken });
  assert.deepEqual(preview.body.candidates.map((c: any) => c.path), ['frames/job_late/first.png', 'outputs/job_late/late.mp4']);
  await addArtifact(s, tree, 'outputs/job_late/late.mp4', { first: 'frames/job_late/first.png' });
  const byPath = await s.call('POST', '/api/system/storage/reclaim', { token: adminToken, body: { paths: preview.body.candidates.map((c: any) => c.path) } });
  assert.deepEqual(byPath.body.deleted, []);
  assert.deepEqual(byPath.body.skipped.map((x: any) => x.reason), ['protected', 'protected']);
  const all = await s.call('POST', '/api/system/storage/reclaim', { token: adminToken });
  assert.deepEqual(all.body.deleted, []);
  assert.ok(exists(s, 'outputs/job_late/late.mp4') && exists(s, 'frames/job_late/first.png'));
});

test('references are read again right before deleting: a file registered during the reclaim is kept', async (t) => {
  const { s, tree } = await world(t);
  put(s, 'outputs/job_race/out.mp4', 40);
  put(s, 'outputs/job_race/other.bin', 40);
  // The deletion phase starts with a transaction: register the file just before it, after the scan.
  let registered = false;
  const tx = async <T>(fn: (db: typeof s.db) => T | Promise<T>): Promise<T> => {
    if (!registered) {
      registered = true;
      await addArtifact(s, tree, 'outputs/job_race/out.mp4');
    }
    return await s.db.tx(fn);
  };
  // s.db with tx() wrapped (every other member bound to s.db itself).
  const db = new Proxy(s.db, {
    get: (target, prop) => {
      if (prop === 'tx') return tx;
      const v: unknown = Reflect.get(target, prop, target);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  const r = await reclaimStorage(createContext({ db, config: s.config, log: s.log }));
  assert.ok(registered);
  assert.deepEqual(r.deleted.map((d) => d.path), ['outputs/job_race/other.bin']);
  assert.deepEqual(r.skipped, [{ path: 'outputs/job_race/out.mp4', reason: 'protected' }]);
  assert.ok(exists(s, 'outputs/job_race/out.mp4'));
});

test('the audit record caps the list of deleted paths but keeps complete counts and bytes', async (t) => {
  const { s, adminToken } = await world(t);
  for (let i = 0; i < 150; i++) put(s, `cache/many/f${String(i).padStart(3, '0')}`, 40, 'x');
  const r = await s.call('POST', '/api/system/storage/reclaim', { token: adminToken });
  assert.equal(r.body.deleted.length, 150);
  assert.equal(r.body.freedBytes, 150);
  const meta = JSON.parse((await s.db.get<any>("SELECT metadata FROM audit_log WHERE action = 'system.storage.reclaimed'"))!.metadata);
  assert.equal(meta.deletedCount, 150);
  assert.equal(meta.freedBytes, 150);
  assert.equal(meta.deletedPaths.length, 100);
  assert.equal(meta.deletedPathsTruncated, true);
});

test('SVC_STORAGE_RETENTION_DAYS sets the default period', async (t) => {
  const { s, adminToken } = await world(t, { SVC_STORAGE_RETENTION_DAYS: '5' });
  put(s, 'outputs/job_r/seven.bin', 7);
  put(s, 'tmp/upload-seven', 7);
  put(s, 'outputs/job_r/three.bin', 3);
  const r = await s.call('GET', '/api/system/storage/cleanup-preview', { token: adminToken });
  assert.equal(r.body.olderThanDays, 5);
  assert.deepEqual(r.body.candidates.map((c: any) => c.path), ['outputs/job_r/seven.bin', 'tmp/upload-seven']);
});

/** An executable shell script standing in for a media tool. */
function fakeTool(dir: string, name: string, script: string): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, `#!/bin/sh\n${script}\n`, { mode: 0o755 });
  return file;
}

/** Sets process variables for one test (the in-process server reads them at call time). */
function setEnv(t: TestContext, vars: Record<string, string | undefined>): void {
  const before = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  const apply = (v: Record<string, string | undefined>) => {
    for (const [k, x] of Object.entries(v)) {
      if (x === undefined) delete process.env[k];
      else process.env[k] = x;
    }
  };
  apply(vars);
  t.after(() => apply(before));
}

test('readiness: active providers, media tools with source and version, PLATFORM_* targets configured but never active, secrets never shown', async (t) => {
  const { s, adminToken } = await world(t);
  const bin = tempDir(t);
  setEnv(t, {
    SVC_FFMPEG_PATH: fakeTool(bin, 'ffmpeg', 'echo "ffmpeg version 9.9.1-test Copyright (c) 2000-2025 the FFmpeg developers"; echo "built with cc"'),
    SVC_FFPROBE_PATH: fakeTool(bin, 'ffprobe', 'echo "ffprobe version n7.0-2-gabc Copyright (c) 2007-2025"'),
    PLATFORM_POSTGRES_URL: 'postgres://svc:hunter2-secret@db.internal/svc',
    PLATFORM_REDIS_URL: '',
    PLATFORM_S3_ENDPOINT: undefined,
  });
  const r = await s.call('GET', '/api/system/readiness', { token: adminToken });
  assert.equal(r.status, 200, r.text);
  const b = r.body;
  assert.equal(b.status, 'ready', r.text);
  assert.deepEqual(b.problems, []);
  assert.equal(b.runtime.name, 'node');
  assert.equal(b.runtime.version, process.versions.node);
  // The database the server really uses: the SQLite file, or (SVC_DATABASE=postgres) the server and database, no credential.
  const postgres = s.config.database === 'postgres';
  if (postgres) {
    const url = new URL(s.config.postgresUrl);
    assert.deepEqual(Object.keys(b.database), ['provider', 'serverVersion', 'path']);
    assert.equal(b.database.provider, 'postgresql');
    assert.match(b.database.serverVersion, /^\d+\.\d+/);
    assert.equal(b.database.serverVersion, (await s.db.get<{ server_version: string }>('SHOW server_version'))!.server_version);
    assert.equal(b.database.path, `postgres://${url.host}${url.pathname}`);
    if (url.password) assert.ok(!r.text.includes(url.password), 'no database password in the answer');
  } else {
    assert.equal(b.database.provider, 'node:sqlite');
    assert.match(b.database.sqliteVersion, /^3\.\d+\.\d+$/);
    assert.equal(b.database.path, s.config.dbPath);
  }
  assert.deepEqual(b.storage, { provider: 'local', path: s.config.storageDir, writable: true });
  assert.deepEqual(b.media.ffmpeg, { path: process.env.SVC_FFMPEG_PATH, source: 'SVC_FFMPEG_PATH', version: '9.9.1-test' });
  assert.deepEqual(b.media.ffprobe, { path: process.env.SVC_FFPROBE_PATH, source: 'SVC_FFPROBE_PATH', version: 'n7.0-2-gabc' });
  assert.deepEqual(b.targets, {
    // Active only by the service's own setting, SVC_DATABASE=postgres: never by PLATFORM_POSTGRES_URL.
    postgresql: { configured: true, active: postgres, env: 'PLATFORM_POSTGRES_URL' },
    redis: { configured: false, active: false, env: 'PLATFORM_REDIS_URL' },
    s3: { configured: false, active: false, env: 'PLATFORM_S3_ENDPOINT' },
  });
  assert.ok(!r.text.includes('hunter2') && !r.text.includes('db.internal'), 'no PLATFORM_* value in the answer');

  setEnv(t, { PLATFORM_REDIS_URL: 'redis://cache.internal:6379', PLATFORM_S3_ENDPOINT: 'https://s3.internal' });
  const all = await s.call('GET', '/api/system/readiness', { token: adminToken });
  for (const name of ['postgresql', 'redis', 's3']) {
    assert.equal(all.body.targets[name].configured, true, name);
    assert.equal(all.body.targets[name].active, name === 'postgresql' && postgres, name);
  }
});

test('readiness is degraded when ffmpeg is missing or ffprobe reports no version', async (t) => {
  const { s, adminToken } = await world(t);
  const bin = tempDir(t);
  const missing = path.join(bin, 'no-ffmpeg-here');
  setEnv(t, { SVC_FFMPEG_PATH: missing, SVC_FFPROBE_PATH: fakeTool(bin, 'broken-ffprobe', 'echo "segfault" >&2; exit 3') });
  const r = await s.call('GET', '/api/system/readiness', { token: adminToken });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.status, 'degraded');
  assert.deepEqual(r.body.media.ffmpeg, { path: missing, source: 'SVC_FFMPEG_PATH', version: null });
  assert.equal(r.body.media.ffprobe.version, null);
  assert.equal(r.body.problems.length, 2, r.text);
  assert.match(r.body.problems[0], /^ffmpeg at .* did not report a version/);
  assert.match(r.body.problems[1], /^ffprobe at .* did not report a version/);
});

test('svc storage preview and reclaim --json act on the same files as the API, audited as the local operator', async (t) => {
  const { s, tree } = await world(t);
  put(s, 'outputs/job_c/old.bin', 40);
  put(s, 'outputs/job_c/kept.mp4', 40);
  put(s, 'tmp/upload-c', 40);
  put(s, 'outputs/job_c/young.bin', 2);
  await addArtifact(s, tree, 'outputs/job_c/kept.mp4');
  const sb = new Sandbox(t);
  const dirs = ['--data-dir', s.config.dataDir, '--storage-dir', s.config.storageDir];

  const preview = await sb.run(['storage', 'preview', '--json', ...dirs]);
  assert.equal(preview.code, 0, describe(preview));
  const p = JSON.parse(preview.stdout);
  assert.deepEqual(p.candidates.map((c: any) => c.path), ['outputs/job_c/old.bin', 'tmp/upload-c']);
  assert.equal(p.count, 2);
  const withDays = JSON.parse((await sb.run(['storage', 'preview', '--older-than-days', '1', '--json', ...dirs])).stdout);
  assert.deepEqual(withDays.candidates.map((c: any) => c.path), ['outputs/job_c/old.bin', 'outputs/job_c/young.bin', 'tmp/upload-c']);
  const text = await sb.run(['storage', 'preview', ...dirs]);
  assert.match(lines(text.stdout).at(-1)!, /^2 candidate file\(s\), \d+ bytes, older than 30 day\(s\)$/);

  const unsafe = await sb.run(['storage', 'reclaim', '--path', '../etc/passwd', '--json', ...dirs]);
  assert.notEqual(unsafe.code, 0, describe(unsafe));
  assert.equal(unsafe.stdout, '');
  assert.equal(lines(unsafe.stderr).length, 1, describe(unsafe));
  assert.match(unsafe.stderr, /unsafe/);

  const one = await sb.run(['storage', 'reclaim', '--path', 'outputs/job_c/old.bin', '--path', 'outputs/job_c/kept.mp4', '--json', ...dirs]);
  assert.equal(one.code, 0, describe(one));
  const r1 = JSON.parse(one.stdout);
  assert.deepEqual(r1.deleted.map((d: any) => d.path), ['outputs/job_c/old.bin']);
  assert.deepEqual(r1.skipped, [{ path: 'outputs/job_c/kept.mp4', reason: 'protected' }]);
  assert.ok(exists(s, 'tmp/upload-c'), 'not named, not deleted');

  const rest = await sb.run(['storage', 'reclaim', '--json', ...dirs]);
  assert.equal(rest.code, 0, describe(rest));
  assert.deepEqual(JSON.parse(rest.stdout).deleted.map((d: any) => d.path), ['tmp/upload-c']);
  assert.ok(exists(s, 'outputs/job_c/kept.mp4') && exists(s, 'outputs/job_c/young.bin'));

  const audit = await s.db.all<any>("SELECT actor_type, actor_name, actor_user_id, metadata FROM audit_log WHERE action = 'system.storage.reclaimed' ORDER BY seq");
  assert.equal(audit.length, 2);
  for (const a of audit) {
    assert.equal(a.actor_type, 'operator');
    assert.equal(a.actor_user_id, null);
    assert.match(a.actor_name, /^local operator/);
  }
  assert.equal(JSON.parse(audit[0].metadata).mode, 'paths');
  assert.equal(JSON.parse(audit[1].metadata).mode, 'candidates');
});

test('files under outputs/<jobId>/ and frames/<jobId>/ of a queued, running or blocked job are kept; a failed job\'s are candidates', async (t) => {
  const { s, adminToken, tree } = await world(t);
  const jobs = Object.fromEntries(await mapSeq(['queued', 'running', 'blocked', 'failed'], async (status) => [status, await addJob(s, tree, status)]));
  for (const id of Object.values(jobs)) {
    put(s, `outputs/${id}/video-1.mp4`, 40);
    put(s, `frames/${id}/video-1-first.png`, 40);
  }
  const r = await s.call('GET', '/api/system/storage/cleanup-preview?olderThanDays=0', { token: adminToken });
  assert.deepEqual(r.body.candidates.map((c: any) => c.path), [`frames/${jobs.failed}/video-1-first.png`, `outputs/${jobs.failed}/video-1.mp4`]);
  const named = await s.call('POST', '/api/system/storage/reclaim', { token: adminToken, body: { paths: [`outputs/${jobs.running}/video-1.mp4`], olderThanDays: 0 } });
  assert.deepEqual(named.body.skipped, [{ path: `outputs/${jobs.running}/video-1.mp4`, reason: 'protected' }]);
  assert.ok(exists(s, `outputs/${jobs.running}/video-1.mp4`));
});
