// Deliveries through HTTP over real media (the worker, the project's own model server, ffmpeg), real
// QA runs and real reviews: the default gathers the newest episode cut; approval is 409
// delivery_not_ready naming every gap (qa_missing, qa_failed, review_missing, review_not_approved,
// artifact_changed) and records the exact hashes; client links download the approved bytes with the
// token only, are never listed or searchable, and answer 401 after revocation, expiry or withdrawal,
// and while the client_delivery_links flag is off (a kill switch); a file that changed on disk is
// 410 even when only its bytes changed (same size), whatever was verified before; access
// (401/403/404), tenant-scoped lists, validation, and the archived-project rule. Also verifyObject
// and its cache of verified files.
import test from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import { changeLifecycle } from '../../src/production/projects/service.ts';
import { LocalStore } from '../../src/kernel/storage/local.ts';
import { VerifiedFiles, verifyObject } from '../../src/kernel/storage/verify.ts';
import { login, makeUser, member } from '../helpers/factories.ts';
import { connector, createJob, waitJob } from '../helpers/jobs.ts';
import { episodeCut, mediaWorld, shotVideo, type MediaWorld } from '../helpers/media.ts';
import { serversRunTheWorker } from '../helpers/server.ts';

serversRunTheWorker();

const sha256 = (b: Buffer) => crypto.createHash('sha256').update(b).digest('hex');
const BASE = '/api/production/deliveries';
const SMALL = { seconds: 1, size: '180x320' };

type W = MediaWorld;
const api = (w: W, method: string, p: string, body?: unknown, token = w.token) => w.s.call(method, p, { token, body });

async function qaRun(w: W, artifactIds: string[]) {
  const r = await api(w, 'POST', '/api/production/qa/run', { artifactIds });
  assert.equal(r.status, 201, r.text);
  return r.body;
}

async function approvedReview(w: W, artifactId: string, decision: 'approve' | 'request_changes' = 'approve') {
  const review = await api(w, 'POST', '/api/production/reviews', { artifactId, title: 'Final look' });
  assert.equal(review.status, 201, review.text);
  const d = await api(w, 'POST', `/api/production/reviews/${review.body.id}/decisions`, { decision });
  assert.equal(d.status, 201, d.text);
  return review.body.id as string;
}

const gapsOf = (r: { body: any }) => r.body.error.details.gaps.map((g: any) => [g.artifactId, g.gap]);

async function download(w: W, p: string, headers: Record<string, string> = {}) {
  const res = await fetch(w.s.url + p, { headers });
  return { res, body: Buffer.from(await res.arrayBuffer()) };
}

const auditOf = async (w: W, action: string, targetId: string) =>
  await w.s.db.all<{ metadata: string; actor_type: string; actor_user_id: string | null }>(
    'SELECT metadata, actor_type, actor_user_id FROM audit_log WHERE action = ? AND target_id = ? ORDER BY seq', action, targetId);

test('deliveries over real media: gaps, approval on exact hashes, client links, access and the archived project', async (t) => {
  const w = await mediaWorld(t);
  const shotId = w.shotIds[0];

  const none = await api(w, 'POST', BASE, { title: 'Nothing yet' });
  assert.equal(none.status, 409, none.text);
  assert.equal(none.body.error.code, 'nothing_to_deliver');

  const video = await shotVideo(w, shotId, 'a lighthouse at dusk', SMALL);
  const cut = await episodeCut(w);
  assert.equal(cut.source, 'composition');
  const cutFile = path.join(w.s.config.storageDir, cut.path);
  const cutBytes = fs.readFileSync(cutFile);

  const producer = await member(w.s, 'producer', w.tree);
  const reviewer = await member(w.s, 'reviewer', w.tree);
  let deliveryId = '';
  await t.test('the default delivery gathers the newest cut; approval names every gap until QA and review pass on the exact bytes', async () => {
    const created = await api(w, 'POST', BASE, { title: 'Episode 1 for the client', note: 'first pass' });
    assert.equal(created.status, 201, created.text);
    const d = created.body;
    deliveryId = d.id;
    assert.deepEqual([d.status, d.version, d.itemCount, d.ready, d.createdBy], ['draft', 1, 1, false, w.user.id]);
    assert.deepEqual(d.items.map((i: any) => [i.position, i.artifactId, i.sha256, i.episodeId, i.kind, i.source, i.qa, i.review]),
      [[1, cut.id, cut.contentSha256, w.episodeId, 'video', 'composition', null, null]]);
    assert.deepEqual(d.items[0].gaps, ['qa_missing', 'review_missing']);

    const bare = await api(w, 'POST', `${BASE}/${d.id}/approve`);
    assert.equal(bare.status, 409, bare.text);
    assert.equal(bare.body.error.code, 'delivery_not_ready');
    assert.deepEqual(gapsOf(bare), [[cut.id, 'qa_missing'], [cut.id, 'review_missing']]);
    assert.match(bare.body.error.message, /qa_missing, review_missing/);

    // The shot's video fails QA against the default 1080x1920 spec: a chosen-set delivery of it is qa_failed.
    const failed = await qaRun(w, [video.id]);
    assert.equal(failed.result, 'fail');
    const chosen = await api(w, 'POST', BASE, { title: 'Shot only', artifactIds: [video.id] });
    assert.equal(chosen.status, 201, chosen.text);
    assert.deepEqual([chosen.body.items[0].shotId, chosen.body.items[0].qa.runId, chosen.body.items[0].qa.result], [shotId, failed.id, 'fail']);
    const qaFailed = await api(w, 'POST', `${BASE}/${chosen.body.id}/approve`);
    assert.equal(qaFailed.status, 409);
    const gap = qaFailed.body.error.details.gaps.find((g: any) => g.gap === 'qa_failed');
    assert.ok(gap?.checks.includes('resolution'), qaFailed.text);
    assert.match(qaFailed.body.error.message, /qa_failed \[[^\]]*resolution/);

    // To the project's spec the cut passes QA; then only the review is missing.
    const spec = await api(w, 'PUT', '/api/production/delivery-spec', { width: 180, height: 320 });
    assert.equal(spec.status, 200, spec.text);
    const passed = await qaRun(w, [cut.id]);
    const afterQa = await api(w, 'GET', `${BASE}/${d.id}`);
    assert.equal(afterQa.body.items[0].qa.runId, passed.id);
    assert.deepEqual(afterQa.body.items[0].qa.failing, [], JSON.stringify(passed));
    const noReview = await api(w, 'POST', `${BASE}/${d.id}/approve`);
    assert.deepEqual(gapsOf(noReview), [[cut.id, 'review_missing']]);

    // Changes requested is review_not_approved; an approval on the same bytes clears it.
    const reviewId = await approvedReview(w, cut.id, 'request_changes');
    const notApproved = await api(w, 'POST', `${BASE}/${d.id}/approve`);
    assert.deepEqual(gapsOf(notApproved), [[cut.id, 'review_not_approved']]);
    assert.deepEqual([notApproved.body.error.details.gaps[0].reviewId, notApproved.body.error.details.gaps[0].reviewStatus], [reviewId, 'changes_requested']);
    assert.equal((await api(w, 'POST', `/api/production/reviews/${reviewId}/decisions`, { decision: 'approve' })).status, 201);

    // A file whose bytes changed on disk is artifact_changed, whatever the verdicts say.
    fs.writeFileSync(cutFile, Buffer.concat([cutBytes, Buffer.from([0])]));
    const changed = await api(w, 'POST', `${BASE}/${d.id}/approve`);
    assert.deepEqual(gapsOf(changed), [[cut.id, 'artifact_changed']]);
    fs.writeFileSync(cutFile, cutBytes);
    assert.equal((await auditOf(w, 'delivery.approved', d.id)).length, 0, 'refusals write nothing');

    const ok = await api(w, 'POST', `${BASE}/${d.id}/approve`);
    assert.equal(ok.status, 200, ok.text);
    assert.deepEqual([ok.body.status, ok.body.approvedBy, ok.body.ready, ok.body.gaps], ['approved', w.user.id, false, []]);
    assert.ok(Date.parse(ok.body.approvedAt));
    assert.deepEqual(ok.body.items[0].approvedOn, { qaRunId: passed.id, reviewId });
    assert.equal(ok.body.items[0].review.approved, true);
    const audited = await auditOf(w, 'delivery.approved', d.id);
    assert.equal(audited.length, 1);
    assert.deepEqual(JSON.parse(audited[0].metadata).items, [{ artifactId: cut.id, sha256: sha256(cutBytes), qaRunId: passed.id, reviewId }]);
    // Producers (delivery:approve) are told; a reviewer (delivery:view only) is not.
    const inbox = async (token: string) => (await w.s.call('GET', '/api/notifications', { token })).body.items
      .filter((n: any) => n.category === 'delivery').map((n: any) => [n.type, n.link, n.projectId]);
    assert.deepEqual(await inbox(producer.token), [['delivery.approved', `/deliveries/${d.id}?project=${w.tree.projectId}`, w.tree.projectId]]);
    assert.deepEqual(await inbox(reviewer.token), []);
    const found = await w.s.call('GET', `/api/search?q=${encodeURIComponent('Episode 1 for the client')}&scope=project`, { token: w.token });
    assert.deepEqual(found.body.map((r: any) => [r.type, r.targetId, r.status]), [['delivery', d.id, 'approved']]);

    // Approved is frozen; a draft's new set is a new version, a title alone is not.
    assert.equal((await api(w, 'PATCH', `${BASE}/${d.id}`, { title: 'x' })).body.error.code, 'delivery_not_draft');
    assert.equal((await api(w, 'POST', `${BASE}/${d.id}/approve`)).body.error.code, 'delivery_not_draft');
    const retitled = await api(w, 'PATCH', `${BASE}/${chosen.body.id}`, { title: 'Shot, renamed' });
    assert.deepEqual([retitled.status, retitled.body.title, retitled.body.version], [200, 'Shot, renamed', 1]);
    const reset = await api(w, 'PATCH', `${BASE}/${chosen.body.id}`, { episodeIds: [w.episodeId] });
    assert.deepEqual([reset.body.version, reset.body.items.map((i: any) => i.artifactId)], [2, [cut.id]]);
    assert.deepEqual(reset.body.items[0].gaps, [], 'the same cut: QA passed and review approved');
    const same = await api(w, 'PATCH', `${BASE}/${chosen.body.id}`, { artifactIds: [cut.id] });
    assert.equal(same.body.version, 2, 'the same set is not a new version');
  });

  await t.test('client links: the token once, downloads of the approved bytes, never listed or searchable, 401 after revoke, expiry or withdrawal', async () => {
    const link = await api(w, 'POST', `${BASE}/${deliveryId}/links`, { label: 'Client A', expiresInHours: 48 });
    assert.equal(link.status, 201, link.text);
    const token: string = link.body.token;
    assert.match(token, /^dlk_[A-Za-z0-9_-]{40,}$/);
    assert.equal(link.body.url, `${w.s.url}/api/client/delivery?token=${encodeURIComponent(token)}`);
    assert.deepEqual([link.body.status, link.body.label, link.body.downloadCount], ['active', 'Client A', 0]);
    assert.ok(Math.abs(Date.parse(link.body.expiresAt) - Date.now() - 48 * 3_600_000) < 60_000);

    const manifest = await w.s.call('GET', `/api/client/delivery?token=${encodeURIComponent(token)}`);
    assert.equal(manifest.status, 200, manifest.text);
    assert.equal(manifest.body.title, 'Episode 1 for the client');
    assert.deepEqual(manifest.body.files.map((f: any) => [f.position, f.name, f.size, f.sha256, f.downloadPath]),
      [[1, '01-episode-1-cut.mp4', cutBytes.length, sha256(cutBytes), '/api/client/delivery/files/1']]);
    const byHeader = await w.s.call('GET', '/api/client/delivery', { headers: { 'x-delivery-token': token } });
    assert.equal(byHeader.status, 200);

    const file = await download(w, `/api/client/delivery/files/1?token=${encodeURIComponent(token)}`);
    assert.equal(file.res.status, 200);
    assert.ok(file.body.equals(cutBytes));
    assert.equal(file.res.headers.get('etag'), `"${sha256(cutBytes)}"`);
    assert.equal(file.res.headers.get('referrer-policy'), 'no-referrer');
    const part = await download(w, '/api/client/delivery/files/1', { 'x-delivery-token': token, range: 'bytes=100-199' });
    assert.equal(part.res.status, 206);
    assert.ok(part.body.equals(cutBytes.subarray(100, 200)));
    assert.equal((await download(w, `/api/client/delivery/files/2?token=${token}`)).res.status, 404);

    // Counted (the range from byte 100 is not a new download) and audited without the token.
    const listed = await api(w, 'GET', `${BASE}/${deliveryId}/links`);
    assert.equal(listed.status, 200);
    assert.deepEqual(listed.body.items.map((l: any) => [l.id, l.downloadCount, l.status]), [[link.body.id, 1, 'active']]);
    assert.ok(listed.body.items[0].lastUsedAt);
    const secretHash = sha256(Buffer.from(token));
    for (const text of [listed.text, (await api(w, 'GET', `${BASE}/${deliveryId}`)).text]) {
      assert.ok(!text.includes(token) && !text.includes(secretHash) && !text.includes('token'), 'no token or hash is listed');
    }
    const downloads = await auditOf(w, 'delivery.downloaded', deliveryId);
    assert.equal(downloads.length, 1);
    assert.deepEqual(JSON.parse(downloads[0].metadata), { linkId: link.body.id, artifactId: cut.id, position: 1, sha256: sha256(cutBytes), range: null });
    assert.deepEqual([downloads[0].actor_type, downloads[0].actor_user_id], ['anonymous', null]);
    const leaked = (await w.s.db.get<{ n: number }>('SELECT count(*) AS n FROM audit_log WHERE metadata LIKE ?', `%${token.slice(4, 24)}%`))!.n;
    assert.equal(leaked, 0);
    assert.ok(!w.s.logs.some((l) => l.includes(token.slice(4))), 'request logs drop the token');
    for (const q of [token, token.slice(4, 20)]) {
      const search = await w.s.call('GET', `/api/search?q=${encodeURIComponent(q)}`, { token: w.token });
      assert.deepEqual([search.status, search.body], [200, []]);
    }

    // Bytes changed after approval are never served; restored bytes are.
    fs.writeFileSync(cutFile, Buffer.concat([cutBytes, Buffer.from('x')]));
    const gone = await w.s.call('GET', `/api/client/delivery/files/1?token=${token}`);
    assert.deepEqual([gone.status, gone.body.error.code], [410, 'delivery_file_changed']);
    fs.writeFileSync(cutFile, cutBytes);
    // A verified file is not hashed again for each range a player asks for, yet a change of its bytes
    // that keeps its size is still caught at the next request (the file's stat changed).
    for (let i = 0; i < 2; i++) {
      const seek = await download(w, '/api/client/delivery/files/1', { 'x-delivery-token': token, range: 'bytes=1000-1999' });
      assert.equal(seek.res.status, 206);
      assert.ok(seek.body.equals(cutBytes.subarray(1000, 2000)));
    }
    const flipped = Buffer.from(cutBytes);
    flipped[flipped.length - 1] ^= 0xff;
    fs.writeFileSync(cutFile, flipped);
    for (const range of ['bytes=1000-1999', 'bytes=0-99']) {
      const stale = await w.s.call('GET', '/api/client/delivery/files/1', { headers: { 'x-delivery-token': token, range } });
      assert.deepEqual([stale.status, stale.body.error.code], [410, 'delivery_file_changed'], range);
    }
    fs.writeFileSync(cutFile, cutBytes);
    assert.equal((await download(w, '/api/client/delivery/files/1', { 'x-delivery-token': token, range: 'bytes=1000-1999' })).res.status, 206);

    // Unknown, revoked, expired and withdrawn all answer the same 401.
    const unknown = await w.s.call('GET', '/api/client/delivery?token=dlk_nope');
    assert.equal(unknown.status, 401);
    assert.equal(unknown.body.error.code, 'delivery_link_invalid');
    assert.equal((await w.s.call('GET', '/api/client/delivery')).status, 401);
    // The flag is a kill switch: off for the organization, every existing link answers that same 401; on again, it works again.
    const admin = await login(w.s, await makeUser(w.s, { systemAdmin: true }));
    const flag = (enabled: boolean | null) => w.s.call('PUT', '/api/system/feature-flags/client_delivery_links', { token: admin, body: { enabled, organizationId: w.tree.organizationId } });
    assert.equal((await flag(false)).status, 200);
    for (const p of ['/api/client/delivery', '/api/client/delivery/files/1']) {
      const r = await w.s.call('GET', `${p}?token=${token}`);
      assert.deepEqual([r.status, r.body], [401, unknown.body], `${p} with the flag off`);
    }
    const countBefore = (await api(w, 'GET', `${BASE}/${deliveryId}/links`)).body.items[0].downloadCount;
    assert.equal((await flag(null)).status, 200);
    assert.equal((await w.s.call('GET', `/api/client/delivery?token=${token}`)).status, 200);
    assert.equal((await download(w, `/api/client/delivery/files/1?token=${token}`)).res.status, 200);
    assert.equal((await api(w, 'GET', `${BASE}/${deliveryId}/links`)).body.items[0].downloadCount, countBefore + 1, 'refused requests were not counted');
    const revoked = await api(w, 'POST', `${BASE}/${deliveryId}/links/${link.body.id}/revoke`);
    assert.deepEqual([revoked.status, revoked.body.status, revoked.body.revokedBy], [200, 'revoked', w.user.id]);
    assert.equal((await api(w, 'POST', `${BASE}/${deliveryId}/links/${link.body.id}/revoke`)).body.revokedAt, revoked.body.revokedAt);
    for (const p of ['/api/client/delivery', '/api/client/delivery/files/1']) {
      const r = await w.s.call('GET', `${p}?token=${token}`);
      assert.deepEqual([r.status, r.body], [401, unknown.body], p);
    }
    const soon = await api(w, 'POST', `${BASE}/${deliveryId}/links`, {});
    assert.equal(soon.body.label, null);
    assert.ok(Math.abs(Date.parse(soon.body.expiresAt) - Date.now() - 168 * 3_600_000) < 60_000, 'default 168 hours');
    assert.equal((await w.s.call('GET', `/api/client/delivery/files/1?token=${soon.body.token}`)).status, 200);
    await w.s.db.run('UPDATE delivery_links SET expires_at = ? WHERE id = ?', new Date(Date.now() - 1000).toISOString(), soon.body.id);
    assert.deepEqual(await w.s.call('GET', `/api/client/delivery?token=${soon.body.token}`).then((r) => [r.status, r.body]), [401, unknown.body]);
    assert.equal((await api(w, 'GET', `${BASE}/${deliveryId}/links`)).body.items[0].status, 'expired');

    for (const hours of [0, 2161, 1.5]) {
      const bad = await api(w, 'POST', `${BASE}/${deliveryId}/links`, { expiresInHours: hours });
      assert.deepEqual([bad.status, Object.keys(bad.body.error.details.fields)], [422, ['expiresInHours']], String(hours));
    }
    const draft = await api(w, 'POST', BASE, { title: 'Draft', artifactIds: [video.id] });
    assert.equal((await api(w, 'POST', `${BASE}/${draft.body.id}/links`, {})).body.error.code, 'delivery_not_approved');
    const linkCount = (await w.s.db.get<{ n: number }>('SELECT count(*) AS n FROM delivery_links'))!.n;
    assert.equal(linkCount, 2, 'refused links are not written');
  });

  await t.test('validation, access, tenancy and the archived project', async () => {
    const count = async () => (await w.s.db.get<{ n: number }>('SELECT count(*) AS n FROM deliveries'))!.n;
    const before = await count();
    const invalid: Array<[unknown, string[]]> = [
      [{}, ['title']],
      [{ title: '' }, ['title']],
      [{ title: 'x', episodeIds: [w.episodeId], artifactIds: [cut.id] }, ['artifactIds']],
      [{ title: 'x', artifactIds: ['art_nope', cut.id, cut.id] }, ['artifactIds[0]', 'artifactIds[2]']],
      [{ title: 'x', episodeIds: ['epi_nope'] }, ['episodeIds[0]']],
      [{ title: 'x', artifactIds: [] }, ['artifactIds']],
      [{ title: 'x', extra: 1 }, ['extra']],
    ];
    for (const [body, fields] of invalid) {
      const r = await api(w, 'POST', BASE, body);
      assert.equal(r.status, 422, `${JSON.stringify(body)}: ${r.text}`);
      assert.deepEqual(Object.keys(r.body.error.details.fields).sort(), fields.sort(), JSON.stringify(body));
    }
    assert.equal((await api(w, 'PATCH', `${BASE}/${deliveryId}`, {})).status, 422);
    assert.equal(await count(), before, 'nothing half-written');

    // Another organization: its own world of media; neither sees the other's deliveries.
    const other = await member(w.s, 'org_owner');
    const otherConnector = await connector(w.s, other.token, w.m.url);
    const job = await createJob(w.s, other.token, { kind: 'image', connectorId: otherConnector, prompt: 'a blue kite' });
    assert.equal((await waitJob(w.s, other.token, job.id, ['completed', 'failed'], 30_000)).status, 'completed');
    const image = (await w.s.call('GET', `/api/production/media-artifacts?jobId=${job.id}`, { token: other.token })).body.items[0];
    const theirs = await w.s.call('POST', BASE, { token: other.token, body: { title: 'Their delivery', artifactIds: [image.id] } });
    assert.equal(theirs.status, 201, theirs.text);
    assert.equal((await w.s.call('POST', BASE, { token: other.token, body: { title: 'x', artifactIds: [cut.id] } })).status, 422, 'another tenant\u2019s artifact');
    const mine = await api(w, 'GET', `${BASE}?pageSize=2`);
    assert.equal(mine.body.pagination.total, before);
    assert.equal(mine.body.items.length, 2);
    assert.ok(mine.body.items.every((d: any) => d.projectId === w.tree.projectId));
    const page2 = await api(w, 'GET', `${BASE}?pageSize=2&page=2`);
    assert.ok(!page2.body.items.some((d: any) => mine.body.items.some((m: any) => m.id === d.id)));
    const approvedOnly = await api(w, 'GET', `${BASE}?status=approved`);
    assert.deepEqual(approvedOnly.body.items.map((d: any) => [d.id, d.itemCount]), [[deliveryId, 1]]);
    assert.equal((await api(w, 'GET', `${BASE}?status=bogus`)).status, 422);
    assert.deepEqual((await w.s.call('GET', BASE, { token: other.token })).body.items.map((d: any) => d.id), [theirs.body.id]);

    const linkId = (await api(w, 'GET', `${BASE}/${deliveryId}/links`)).body.items[0].id;
    const routes: Array<[string, string, unknown, 'view' | 'approve']> = [
      ['GET', BASE, undefined, 'view'],
      ['POST', BASE, { title: 'x' }, 'approve'],
      ['GET', `${BASE}/${deliveryId}`, undefined, 'view'],
      ['PATCH', `${BASE}/${deliveryId}`, { title: 'x' }, 'approve'],
      ['POST', `${BASE}/${deliveryId}/approve`, undefined, 'approve'],
      ['POST', `${BASE}/${deliveryId}/withdraw`, {}, 'approve'],
      ['POST', `${BASE}/${deliveryId}/links`, {}, 'approve'],
      ['GET', `${BASE}/${deliveryId}/links`, undefined, 'view'],
      ['POST', `${BASE}/${deliveryId}/links/${linkId}/revoke`, undefined, 'approve'],
    ];
    const writer = await member(w.s, 'writer', w.tree); // no delivery permission
    const viewer = await member(w.s, 'project_viewer', w.tree); // delivery:view only
    for (const [method, p, body, need] of routes) {
      assert.equal((await w.s.call(method, p, { body })).status, 401, `${method} ${p} without a credential`);
      assert.equal((await w.s.call(method, p, { token: writer.token, body })).status, 403, `${method} ${p} as a writer`);
      const asViewer = await w.s.call(method, p, { token: viewer.token, body });
      assert.equal(asViewer.status, need === 'view' ? 200 : 403, `${method} ${p} as a viewer: ${asViewer.text}`);
      if (p !== BASE) {
        const cross = await w.s.call(method, p, { token: other.token, body });
        assert.equal(cross.status, 404, `${method} ${p} from another organization: ${cross.text}`);
      }
    }
    assert.equal((await api(w, 'POST', `${BASE}/${deliveryId}/links/dll_nope/revoke`)).status, 404);

    assert.equal((await w.s.call('GET', `${BASE}/${deliveryId}`, { token: producer.token })).status, 200);
    const audits = (await w.s.db.all<{ action: string }>('SELECT action FROM audit_log WHERE target_id = ? ORDER BY seq', deliveryId)).map((a) => a.action);
    assert.deepEqual(audits.filter((a) => a !== 'delivery.downloaded'),
      ['delivery.created', 'delivery.approved', 'delivery.link_created', 'delivery.link_revoked', 'delivery.link_created']);

    // The archived project: every write is 409 project_archived, reads and client downloads stay.
    // Revoking a link is the exception: cutting off outside access is never blocked.
    const live = await api(w, 'POST', `${BASE}/${deliveryId}/links`, { label: 'before archiving' });
    const leaked = await api(w, 'POST', `${BASE}/${deliveryId}/links`, { label: 'to cut off' });
    assert.deepEqual([live.status, leaked.status], [201, 201]);
    await changeLifecycle(w.s.operator(), w.tree.projectId, 'archive');
    for (const [method, p, body, need] of routes) {
      const r = await api(w, method, p, body);
      if (need === 'view' || p.endsWith('/revoke')) assert.equal(r.status, 200, `${method} ${p} stays allowed: ${r.text}`);
      else assert.deepEqual([r.status, r.body.error.code], [409, 'project_archived'], `${method} ${p}`);
    }
    const cutOff = await api(w, 'POST', `${BASE}/${deliveryId}/links/${leaked.body.id}/revoke`);
    assert.deepEqual([cutOff.status, cutOff.body.status], [200, 'revoked'], cutOff.text);
    assert.equal((await w.s.call('GET', `/api/client/delivery?token=${leaked.body.token}`)).status, 401);
    assert.equal((await w.s.call('GET', `/api/client/delivery/files/1?token=${live.body.token}`)).status, 200);
    await changeLifecycle(w.s.operator(), w.tree.projectId, 'restore');

    // Withdrawal is final and closes the links.
    const withdrawn = await api(w, 'POST', `${BASE}/${deliveryId}/withdraw`, { note: 'superseded' });
    assert.deepEqual([withdrawn.status, withdrawn.body.status], [200, 'withdrawn']);
    assert.equal((await w.s.call('GET', `/api/client/delivery?token=${live.body.token}`)).status, 401);
    assert.equal((await api(w, 'POST', `${BASE}/${deliveryId}/withdraw`, {})).body.error.code, 'delivery_withdrawn');
  });
});

test('verifyObject: ok, changed (same size), missing, unsafe; the cache answers an unchanged file and forgets the oldest past its limit', async (t) => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-verify-'));
  t.after(() => fs.rmSync(root, { recursive: true, force: true }));
  const files = ['a', 'b', 'c'].map((n) => {
    const bytes = crypto.randomBytes(4096);
    fs.writeFileSync(path.join(root, n), bytes);
    return { rel: n, sha256: sha256(bytes), bytes };
  });
  const [a, b, c] = files;
  const cache = new VerifiedFiles(2);
  const store = new LocalStore(root);
  const uncached = (rel: string, expected: { sha256: string; size?: number }) => verifyObject(store, rel, expected);
  const check = (f: typeof a, size?: number) => verifyObject(store, f.rel, { sha256: f.sha256, size }, cache);

  assert.deepEqual(await check(a, 4096), { state: 'ok', sha256: a.sha256, size: 4096, fromCache: false });
  assert.deepEqual([(await check(a, 4096)).state, (await check(a, 4096)).fromCache], ['ok', true]);
  assert.equal((await check(a, 4095)).state, 'changed', 'another size is another file');
  assert.equal((await check(a)).fromCache, false, 'remembered per expected size');

  // Same size, other bytes: the stat changed, so it is hashed again and found changed (and not remembered).
  const flipped = Buffer.from(a.bytes);
  flipped[0] ^= 0xff;
  fs.writeFileSync(path.join(root, 'a'), flipped);
  const changed = await check(a, 4096);
  assert.deepEqual([changed.state, changed.fromCache, changed.sha256, changed.size], ['changed', false, sha256(flipped), 4096]);
  fs.writeFileSync(path.join(root, 'a'), a.bytes);
  assert.deepEqual([(await check(a)).state, (await check(a)).fromCache], ['ok', true]);

  // At most 2 entries: b and c push a out.
  await check(b);
  await check(c);
  assert.deepEqual([(await check(c)).fromCache, (await check(a)).fromCache], [true, false]);

  assert.equal((await uncached('nope', { sha256: a.sha256 })).state, 'missing');
  assert.equal((await uncached('../etc/passwd', { sha256: a.sha256 })).state, 'unsafe');
  fs.symlinkSync(path.dirname(root), path.join(root, 'out'));
  assert.equal((await uncached('out', { sha256: a.sha256 })).state, 'unsafe', 'a link leading outside the root');
});
