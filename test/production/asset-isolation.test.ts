// Uploads reveal nothing about another organization's files: identical bytes are deduplicated per
// organization only (each organization keeps its own copy under assets/<organization>/...), so the
// answer, the quota cost and the stored file depend on the organization's own uploads; verifying,
// losing or reclaiming one organization's file never touches another's. Files stored before this
// rule at the shared path stay usable by the organization that refers to them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { login, makeTree, makeUser, member, type Tree } from '../helpers/factories.ts';

const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), crypto.randomBytes(4000)]);
const SHA = crypto.createHash('sha256').update(PNG).digest('hex');

async function organization(s: TestServer) {
  const tree = await makeTree(s);
  const producer = await member(s, 'producer', tree);
  return { tree, token: producer.token };
}

async function newAsset(s: TestServer, token: string, name: string): Promise<string> {
  const r = await s.call('POST', '/api/assets', { token, body: { kind: 'image', name } });
  assert.equal(r.status, 201, r.text);
  return r.body.id;
}

async function upload(s: TestServer, token: string, assetId: string, bytes: Buffer = PNG) {
  const r = await s.call('POST', `/api/assets/${assetId}/versions/upload?fileName=still.png`, {
    token, raw: bytes, headers: { 'content-type': 'application/octet-stream' },
  });
  assert.equal(r.status, 201, r.text);
  return r.body;
}

const usedBytes = async (s: TestServer, token: string) => (await s.call('GET', '/api/usage/storage', { token })).body.usedBytes;

test('a second organization uploading the same bytes is not told they exist: deduplicated false, its own file, its own count', async (t) => {
  const s = await startTestServer(t);
  const a = await organization(s);
  const b = await organization(s);
  const fromB = await upload(s, b.token, await newAsset(s, b.token, 'b still'));
  assert.equal(fromB.deduplicated, false);
  const firstA = await upload(s, a.token, await newAsset(s, a.token, 'a still'));
  assert.equal(firstA.deduplicated, false, 'another organization\'s file is invisible');
  assert.equal(firstA.contentSha256, SHA);
  assert.notEqual(firstA.storagePath, fromB.storagePath, 'stored as the organization\'s own file');
  assert.equal(firstA.storagePath, `assets/${a.tree.organizationId}/${SHA.slice(0, 2)}/${SHA}`);
  assert.equal(fromB.storagePath, `assets/${b.tree.organizationId}/${SHA.slice(0, 2)}/${SHA}`);
  const audited = (await s.db.get<{ metadata: string }>("SELECT metadata FROM audit_log WHERE action = 'asset.version_uploaded' AND organization_id = ?", a.tree.organizationId))!;
  assert.equal(JSON.parse(audited.metadata).deduplicated, false);
  // The organization's own second copy is deduplicated against its first, and costs nothing more.
  const secondA = await upload(s, a.token, await newAsset(s, a.token, 'a copy'));
  assert.deepEqual([secondA.deduplicated, secondA.storagePath], [true, firstA.storagePath]);
  assert.equal(await usedBytes(s, a.token), PNG.length);
  assert.equal(await usedBytes(s, b.token), PNG.length);
  for (const p of [firstA.storagePath, fromB.storagePath]) assert.ok(fs.readFileSync(path.join(s.config.storageDir, p)).equals(PNG));
});

test('one organization\'s damaged, lost or reclaimed file never breaks another organization\'s copy', async (t) => {
  const s = await startTestServer(t);
  const a = await organization(s);
  const b = await organization(s);
  const assetA = await newAsset(s, a.token, 'a still');
  const assetB = await newAsset(s, b.token, 'b still');
  const vA = await upload(s, a.token, assetA);
  const vB = await upload(s, b.token, assetB);
  // B's file is damaged: B's verify finds it, A's copy is untouched.
  fs.writeFileSync(path.join(s.config.storageDir, vB.storagePath), Buffer.from('tampered'));
  const verifyB = await s.call('POST', `/api/assets/${assetB}/verify`, { token: b.token });
  assert.deepEqual([verifyB.body.ok, verifyB.body.reason], [false, 'size_mismatch']);
  const verifyA = await s.call('POST', `/api/assets/${assetA}/verify`, { token: a.token });
  assert.deepEqual([verifyA.status, verifyA.body.ok, verifyA.body.reason], [200, true, 'match']);
  // B re-uploads the right bytes (repairing its own file); A's answer and file are unchanged.
  const again = await upload(s, b.token, assetB);
  assert.equal(again.storagePath, vB.storagePath);
  assert.ok(fs.readFileSync(path.join(s.config.storageDir, vB.storagePath)).equals(PNG));
  // B's file is gone from disk: A still reads, restores and verifies its own.
  fs.rmSync(path.join(s.config.storageDir, vB.storagePath));
  assert.equal((await s.call('GET', `/api/assets/${assetB}/content`, { token: b.token })).status, 404);
  const content = await s.call('GET', `/api/assets/${assetA}/content`, { token: a.token });
  assert.equal(content.status, 200);
  assert.equal(content.headers.get('etag'), `"${SHA}"`);
  const restored = await s.call('POST', `/api/assets/${assetA}/versions/${vA.id}/restore`, { token: a.token });
  assert.equal(restored.status, 201, restored.text);
  assert.equal((await s.call('POST', `/api/assets/${assetA}/verify`, { token: a.token })).body.ok, true);
  // A storage reclaim by the system administrator keeps every organization's asset files.
  const admin = await login(s, await makeUser(s, { systemAdmin: true }));
  const preview = await s.call('GET', '/api/system/storage/cleanup-preview?olderThanDays=0', { token: admin });
  assert.equal(preview.status, 200, preview.text);
  assert.deepEqual(preview.body.candidates.filter((c: { path: string }) => c.path.startsWith('assets/')), []);
  const reclaim = await s.call('POST', '/api/system/storage/reclaim', { token: admin, body: { olderThanDays: 0 } });
  assert.equal(reclaim.status, 200, reclaim.text);
  assert.equal((await s.call('GET', `/api/assets/${assetA}/content`, { token: a.token })).status, 200);
});

/** A version as uploads stored it before files were kept per organization: at the shared assets/<xx>/<sha256>. */
async function legacyVersion(s: TestServer, tree: Tree, id: string): Promise<string> {
  const rel = `assets/${SHA.slice(0, 2)}/${SHA}`;
  fs.mkdirSync(path.join(s.config.storageDir, path.dirname(rel)), { recursive: true });
  fs.writeFileSync(path.join(s.config.storageDir, rel), PNG);
  await s.db.run(`INSERT INTO assets (id, organization_id, workspace_id, project_id, kind, name, current_version_id, created_at, updated_at)
    VALUES (?, ?, ?, ?, 'image', 'legacy', ?, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')`, `ast_${id}`, tree.organizationId, tree.workspaceId, tree.projectId, `asv_${id}`);
  await s.db.run(`INSERT INTO asset_versions (id, asset_id, organization_id, workspace_id, project_id, number, file_name, mime_type, file_size, content_sha256, storage_path, created_at)
    VALUES (?, ?, ?, ?, ?, 1, 'legacy.png', 'image/png', ?, ?, ?, '2026-01-01T00:00:00.000Z')`,
  `asv_${id}`, `ast_${id}`, tree.organizationId, tree.workspaceId, tree.projectId, PNG.length, SHA, rel);
  return rel;
}

test('a file stored at the shared path before keeps serving the organization that refers to it; others never see it', async (t) => {
  const s = await startTestServer(t);
  const a = await organization(s);
  const c = await organization(s);
  const legacy = await legacyVersion(s, a.tree, 'legacy_a');
  // A already stores the bytes (at the old path): the same content is deduplicated there, counted once.
  const copyA = await upload(s, a.token, await newAsset(s, a.token, 'a copy'));
  assert.deepEqual([copyA.deduplicated, copyA.storagePath], [true, legacy]);
  assert.equal(await usedBytes(s, a.token), PNG.length);
  // C, which never referred to it, gets its own file although the shared one is on disk.
  const fromC = await upload(s, c.token, await newAsset(s, c.token, 'c still'));
  assert.deepEqual([fromC.deduplicated, fromC.storagePath], [false, `assets/${c.tree.organizationId}/${SHA.slice(0, 2)}/${SHA}`]);
});
