// Delivery at scale, on the s3 driver against the test gateway (a real Ceph RADOS Gateway, started by
// `npm run s3:start`): a client link's file, an export's archive and a package file through the link
// are verified, counted and audited once, then answered 302 (cache-control: no-store) to a
// short-lived signed URL that really serves the recorded bytes with the file's Content-Disposition
// and type. A Range is redirected and counts only from byte 0; HEAD, a matching If-None-Match (304)
// and an unsatisfiable Range (416) are answered by the service, never redirected or counted. The
// landing page's policy lets its player follow the redirects.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { startTestServer } from '../helpers/server.ts';
import { member } from '../helpers/factories.ts';
import { sha256 } from '../helpers/package.ts';
import { withScope } from '../../src/directory/context.ts';
import { registerConnector } from '../../src/generation/connectors/service.ts';
import { createJob } from '../../src/generation/jobs/service.ts';
import { writeExport } from '../../src/finishing/export/service.ts';
import { contentDisposition } from '../../src/http/content.ts';

test('on s3, downloads are counted and audited once, then redirected to a signed URL serving the recorded bytes', async (t) => {
  const s = await startTestServer(t, {}, { storage: 's3' });
  const owner = await member(s, 'org_owner');
  const tree = owner.tree;
  const ctx = withScope(s.operator(), tree);
  assert.equal(ctx.storage.driver, 's3');

  // FIXTURE - an approved delivery of one stored file (rows inserted as-is), with a link that includes the export.
  const bytes = crypto.randomBytes(3 * 1024 * 1024 + 17);
  const sha = sha256(bytes);
  const key = 'outputs/job_fixture/take-1.bin';
  await ctx.storage.putBytes(key, bytes);
  const connectorId = (await registerConnector(ctx, { label: 'fixture model', endpoint: 'http://127.0.0.1:9', kind: 'http-json', capability: ['image'], costMode: 'local' })).id;
  const job = await createJob(ctx, { kind: 'image', connectorId, prompt: 'fixture' });
  await s.db.run("UPDATE generation_jobs SET status = 'completed', output = '{}' WHERE id = ?", job.id);
  const at = new Date().toISOString();
  const ids = [tree.organizationId, tree.workspaceId, tree.projectId];
  await s.db.run(`INSERT INTO media_artifacts (id, organization_id, workspace_id, project_id, job_id, kind, source, storage_path, file_name, mime_type,
      file_size, content_sha256, has_video, has_audio, created_at) VALUES ('art_fx', ?, ?, ?, ?, 'other', 'generation', ?, 'take-1.bin', 'application/octet-stream', ?, ?, 0, 0, ?)`,
  ...ids, job.id, key, bytes.length, sha, at);
  await s.db.run(`INSERT INTO deliveries (id, organization_id, workspace_id, project_id, title, status, created_at, updated_at, approved_at)
    VALUES ('dlv_fx', ?, ?, ?, 'fixture delivery', 'approved', ?, ?, ?)`, ...ids, at, at, at);
  await s.db.run("INSERT INTO delivery_items (delivery_id, position, artifact_id, artifact_sha256) VALUES ('dlv_fx', 1, 'art_fx', ?)", sha);
  const token = crypto.randomBytes(24).toString('base64url');
  await s.db.run(`INSERT INTO delivery_links (id, delivery_id, organization_id, token_hash, expires_at, created_at, allow_export)
    VALUES ('dll_fx', 'dlv_fx', ?, ?, '2999-01-01T00:00:00.000Z', ?, 1)`, tree.organizationId, sha256(Buffer.from(token)), at);
  const written = await writeExport(ctx, { deliveryId: 'dlv_fx', archive: true });
  const exp = written.row;
  const packaged = (written.manifest as { files: Array<{ path: string; role: string; sha256: string }> }).files.find((f) => f.role === 'media')!;
  assert.equal(packaged.sha256, sha);

  const get = (p: string, headers: Record<string, string> = {}, method = 'GET') => fetch(s.url + p, { method, headers, redirect: 'manual' });
  const count = async () => (await s.db.get<{ n: number }>("SELECT download_count AS n FROM delivery_links WHERE id = 'dll_fx'"))!.n;
  const audits = async (action: string) => (await s.db.all<{ metadata: string }>('SELECT metadata FROM audit_log WHERE action = ? ORDER BY seq', action)).map((a) => JSON.parse(a.metadata));
  const follow = async (res: Response, headers: Record<string, string> = {}) => {
    assert.equal(res.status, 302);
    assert.equal(res.headers.get('cache-control'), 'no-store');
    const location = res.headers.get('location')!;
    assert.ok(location.startsWith(`${new URL(s.config.s3Endpoint).origin}/`), location);
    assert.ok(!location.includes(token), 'the link token never travels to the bucket');
    const got = await fetch(location, { headers });
    return { got, body: Buffer.from(await got.arrayBuffer()) };
  };

  // The landing page lets its player and pictures follow the redirects to the bucket (and nowhere else).
  const page = await get(`/api/client/delivery?token=${token}`, { accept: 'text/html' });
  assert.equal(page.status, 200);
  const origin = new URL(s.config.s3Endpoint).origin;
  assert.match(page.headers.get('content-security-policy')!, new RegExp(`img-src 'self' data: blob: ${origin};.*; media-src 'self' ${origin}$`));

  // The client link's file: counted and audited once, then the signed URL serves the approved bytes.
  const file = `/api/client/delivery/files/1?token=${token}`;
  const whole = await follow(await get(file));
  assert.equal(whole.got.status, 200);
  assert.equal(sha256(whole.body), sha);
  assert.equal(whole.got.headers.get('content-disposition'), contentDisposition('01-other.bin', 'inline'));
  assert.equal(whole.got.headers.get('content-type'), 'application/octet-stream');
  assert.equal(await count(), 1);
  assert.deepEqual((await audits('delivery.downloaded')).map((m) => [m.linkId, m.artifactId, m.sha256, m.range]), [['dll_fx', 'art_fx', sha, null]]);

  // A later range is redirected (the URL answers 206) and not counted; a range from byte 0 counts.
  const part = await follow(await get(file, { range: 'bytes=100-199' }), { range: 'bytes=100-199' });
  assert.equal(part.got.status, 206);
  assert.ok(part.body.equals(bytes.subarray(100, 200)));
  assert.equal(await count(), 1);
  const start = await get(file, { range: 'bytes=0-99' });
  assert.equal(start.status, 302);
  assert.equal(await count(), 2);
  assert.deepEqual((await audits('delivery.downloaded')).at(-1)!.range, `bytes 0-99/${bytes.length}`);

  // HEAD, 304 and 416 are the service's own answers: never redirected, never counted.
  const head = await get(file, {}, 'HEAD');
  assert.deepEqual([head.status, head.headers.get('content-length'), head.headers.get('etag'), head.headers.get('location')], [200, String(bytes.length), `"${sha}"`, null]);
  assert.equal((await get(file, { 'if-none-match': `"${sha}"` })).status, 304);
  const beyond = await get(file, { range: `bytes=${bytes.length}-` });
  assert.deepEqual([beyond.status, beyond.headers.get('content-range')], [416, `bytes */${bytes.length}`]);
  assert.equal(await count(), 2);
  assert.equal((await audits('delivery.downloaded')).length, 2);

  // The export's archive (with an account): the URL serves the archive with its recorded SHA-256, as an attachment.
  const archive = await follow(await get(`/api/exports/${exp.id}/archive`, { authorization: `Bearer ${owner.token}` }));
  assert.equal(archive.got.status, 200);
  assert.equal(sha256(archive.body), exp.archive_sha256);
  assert.equal(archive.got.headers.get('content-disposition'), contentDisposition(`${exp.id}.tar`, 'attachment'));
  assert.deepEqual((await audits('export.downloaded')).map((m) => [m.file, m.sha256, m.linkId]), [['archive', exp.archive_sha256, null]]);

  // A package file through the link: counted on the link and audited once; the URL serves the packaged copy.
  const media = await follow(await get(`/api/client/delivery/export/file?token=${token}&path=${encodeURIComponent(packaged.path)}`));
  assert.equal(sha256(media.body), sha);
  assert.equal(await count(), 3);
  assert.deepEqual((await audits('export.downloaded')).map((m) => [m.file, m.linkId]), [['archive', null], [packaged.path, 'dll_fx']]);
});
