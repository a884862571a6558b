// A store holding one object of every referenced kind (artifacts with frames, an asset version, a
// completed job's file, a running job's folder, an export package and its archive), an unreferenced
// object, a stray temporary and a registered object that is missing: for the store migration tests,
// on whichever driver the server runs (objects written through its store).
import crypto from 'node:crypto';
import type { TestContext } from 'node:test';
import { startTestServer, type TestServer, type TestServerOptions } from './server.ts';
import { member, type Tree } from './factories.ts';
import { storageOf } from '../../src/kernel/storage/index.ts';
import type { ObjectStore } from '../../src/kernel/storage/store.ts';

const T0 = '2026-01-01T00:00:00.000Z';
export const sha = (b: string | Buffer) => crypto.createHash('sha256').update(b).digest('hex');

/** The keys a migration moves from storedWorld() (the missing one included: it is expected, and reported missing). */
export const worldKeys = (running: string) => [
  'assets/ab/abcdef', 'exports/exp_1.tar', 'exports/exp_1/manifest.json', 'exports/exp_1/media/01.mp4',
  'frames/job_a/first.png', 'frames/job_a/last.png', `frames/${running}/f.png`,
  'outputs/job_a/video.mp4', 'outputs/job_c/image-1.png', 'outputs/job_gone/missing.png', `outputs/${running}/partial.bin`,
].sort();

async function put(store: ObjectStore, rel: string, content = `bytes of ${rel}\n`): Promise<{ sha256: string; size: number }> {
  const w = await store.putBytes(rel, Buffer.from(content));
  return { sha256: w.sha256, size: w.size };
}

let seq = 0;
async function job(s: TestServer, tree: Tree, status: string, files: Array<{ path: string; sha256: string; fileSize: number }> = []): Promise<string> {
  const id = `job_mg${++seq}`;
  await s.db.run(`INSERT INTO generation_jobs (id, organization_id, workspace_id, project_id, kind, status, output, created_at, updated_at)
    VALUES (?, ?, ?, ?, 'video', ?, ?, ?, ?)`, id, tree.organizationId, tree.workspaceId, tree.projectId, status,
  JSON.stringify({ files: files.map((f) => ({ ...f, role: 'image', mimeType: 'image/png' })) }), T0, T0);
  return id;
}

export async function storedWorld(t: TestContext, env: Record<string, string> = {}, opts: TestServerOptions = {}): Promise<{ s: TestServer; store: ObjectStore; running: string }> {
  const s = await startTestServer(t, env, opts);
  const store = storageOf(s.config);
  const { tree } = await member(s, 'org_owner');
  const video = await put(store, 'outputs/job_a/video.mp4');
  const first = await put(store, 'frames/job_a/first.png');
  const last = await put(store, 'frames/job_a/last.png');
  await s.db.run(`INSERT INTO media_artifacts (id, organization_id, workspace_id, project_id, job_id, kind, source, storage_path, file_name, mime_type,
      file_size, content_sha256, has_video, has_audio, first_frame_path, first_frame_sha256, first_frame_size, last_frame_path, last_frame_sha256, last_frame_size, created_at)
    VALUES ('art_mg1', ?, ?, ?, ?, 'video', 'generation', 'outputs/job_a/video.mp4', 'video.mp4', 'video/mp4', ?, ?, 1, 0,
      'frames/job_a/first.png', ?, ?, 'frames/job_a/last.png', ?, ?, ?)`,
  tree.organizationId, tree.workspaceId, tree.projectId, await job(s, tree, 'completed'), video.size, video.sha256, first.sha256, first.size, last.sha256, last.size, T0);
  const asset = await put(store, 'assets/ab/abcdef');
  await s.db.run(`INSERT INTO assets (id, organization_id, workspace_id, project_id, kind, name, created_at, updated_at) VALUES ('ast_mg1', ?, ?, ?, 'image', 'a', ?, ?)`,
    tree.organizationId, tree.workspaceId, tree.projectId, T0, T0);
  await s.db.run(`INSERT INTO asset_versions (id, asset_id, organization_id, workspace_id, project_id, number, file_name, mime_type, file_size, content_sha256, storage_path, created_at)
    VALUES ('asv_mg1', 'ast_mg1', ?, ?, ?, 1, 'a.bin', 'application/octet-stream', ?, ?, 'assets/ab/abcdef', ?)`,
  tree.organizationId, tree.workspaceId, tree.projectId, asset.size, asset.sha256, T0);
  const out = await put(store, 'outputs/job_c/image-1.png');
  await job(s, tree, 'completed', [{ path: 'outputs/job_c/image-1.png', sha256: out.sha256, fileSize: out.size }]);
  const running = await job(s, tree, 'running');
  await put(store, `outputs/${running}/partial.bin`);
  await put(store, `frames/${running}/f.png`);
  // An export package with its manifest and archive.
  const media = await put(store, 'exports/exp_1/media/01.mp4');
  const manifest = await put(store, 'exports/exp_1/manifest.json', JSON.stringify({ files: [{ path: 'media/01.mp4', sha256: media.sha256, size: media.size }] }));
  const tar = await put(store, 'exports/exp_1.tar');
  await s.db.run(`INSERT INTO deliveries (id, organization_id, workspace_id, project_id, title, created_at, updated_at) VALUES ('dlv_mg1', ?, ?, ?, 'd', ?, ?)`,
    tree.organizationId, tree.workspaceId, tree.projectId, T0, T0);
  await s.db.run(`INSERT INTO exports (id, organization_id, workspace_id, project_id, delivery_id, delivery_version, storage_path, archive_path, archive_sha256,
      manifest_sha256, file_count, total_bytes, created_at) VALUES ('exp_1', ?, ?, ?, 'dlv_mg1', 1, 'exports/exp_1', 'exports/exp_1.tar', ?, ?, 2, 10, ?)`,
  tree.organizationId, tree.workspaceId, tree.projectId, tar.sha256, manifest.sha256, T0);
  await put(store, 'outputs/job_x/unreferenced.bin');
  await put(store, 'tmp/upload-stray');
  await job(s, tree, 'completed', [{ path: 'outputs/job_gone/missing.png', sha256: sha('x'), fileSize: 1 }]);
  return { s, store, running };
}

/** Every object of a store under the usual folders, with the SHA-256 of its bytes. */
export async function keysOf(store: ObjectStore): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  for (const folder of ['assets/', 'exports/', 'frames/', 'outputs/', 'tmp/', 'cache/']) {
    for await (const o of store.list(folder)) found.set(o.key, sha(await store.readBytes(o.key)));
  }
  return found;
}
