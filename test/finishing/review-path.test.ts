// The whole path from generation to the client, in one test, over HTTP with real media, run once on
// each storage driver (local, and s3 against the test gateway: `npm run s3:start`): the worker
// generates two shots' videos through the project's model server and composes the episode cut; QA
// measures them; a reviewer comments at a time code on the cut and approves it; the delivery is refused
// while a gap remains, then approved on the exact hashes; the export package's manifest matches every
// stored file, its OTIO validates against the OpenTimelineIO schema and its EDL's events match the
// shots' durations; a package file and a client link download the approved bytes (counted and audited
// once each) and the link answers 401 after revocation and after expiry. What differs by driver: on
// local a download streams through the service (200); on s3 it answers 302 (no-store) to a short-lived
// signed URL at the bucket's endpoint, which the test follows. The package is read through the
// server's own store (storageOf(config)), never the folder, so the same assertions hold on both.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { login, makeUser, member } from '../helpers/factories.ts';
import { episodeCut, mediaWorld, shotVideo } from '../helpers/media.ts';
import { otioErrors, parseEdl, sha256, validOtio } from '../helpers/package.ts';
import { storageOf } from '../../src/kernel/storage/index.ts';
import { serversRunTheWorker } from '../helpers/server.ts';

serversRunTheWorker();

/**
 * The bytes of a download answer: 200 with the body on local; on s3 a 302 (no-store) to a signed URL
 * at the bucket's endpoint that carries no link token, followed without credentials.
 */
async function downloadedBytes(driver: 'local' | 's3', res: Response, endpoint: string, token = ''): Promise<Buffer> {
  if (driver === 'local') {
    assert.equal(res.status, 200);
    return Buffer.from(await res.arrayBuffer());
  }
  assert.equal(res.status, 302);
  assert.equal(res.headers.get('cache-control'), 'no-store');
  const location = res.headers.get('location')!;
  assert.ok(location.startsWith(`${new URL(endpoint).origin}/`), location);
  if (token) assert.ok(!location.includes(token), 'the link token never travels to the bucket');
  await res.arrayBuffer();
  const got = await fetch(location);
  assert.equal(got.status, 200);
  return Buffer.from(await got.arrayBuffer());
}

async function reviewPath(t: TestContext, driver: 'local' | 's3') {
  const w = await mediaWorld(t, { shots: 2, storage: driver });
  const { s, token } = w;
  const store = storageOf(s.config);
  assert.equal(store.driver, driver);
  const call = (method: string, p: string, body?: unknown) => s.call(method, p, { token, body });

  // Generate: one video per shot (1 s and 2 s, portrait), then the episode cut.
  const [v1, v2] = await Promise.all([
    shotVideo(w, w.shotIds[0], 'a lantern in the rain', { seconds: 1, size: '180x320' }),
    shotVideo(w, w.shotIds[1], 'a pier at night', { seconds: 2, size: '180x320' }),
  ]);
  const cut = await episodeCut(w);
  assert.deepEqual(cut.composition.inputs.map((i: { artifactId: string }) => i.artifactId), [v1.id, v2.id]);

  // QA against the project's delivery spec (the cut's own picture size, 180x320; a wide loudness tolerance).
  const spec = await call('PUT', '/api/production/delivery-spec', { width: 180, height: 320, loudnessToleranceLu: 20 });
  assert.equal(spec.status, 200, spec.text);
  const qa = await call('POST', '/api/production/qa/run', { episodeId: w.episodeId });
  assert.equal(qa.status, 201, qa.text);
  const cutChecks = qa.body.artifacts.find((a: { artifactId: string }) => a.artifactId === cut.id).checks;
  const failed = cutChecks.filter((c: { result: string }) => c.result === 'fail');
  assert.deepEqual(failed, [], 'no check of the cut fails');
  assert.ok(cutChecks.some((c: { key: string }) => c.key === 'evidence'));

  // The delivery of the episode's cut, refused before the review, naming the gap.
  const delivery = await call('POST', '/api/production/deliveries', { title: 'Episode 1 for the client' });
  assert.equal(delivery.status, 201, delivery.text);
  assert.deepEqual(delivery.body.items.map((i: { artifactId: string; sha256: string }) => [i.artifactId, i.sha256]), [[cut.id, cut.contentSha256]]);
  const early = await call('POST', `/api/production/deliveries/${delivery.body.id}/approve`);
  assert.deepEqual([early.status, early.body.error.code], [409, 'delivery_not_ready']);
  assert.deepEqual(early.body.error.details.gaps.map((g: { artifactId: string; gap: string }) => [g.artifactId, g.gap]), [[cut.id, 'review_missing']]);

  // Review: a reviewer's time-coded comment on a rectangle of the frame, then the approval on the cut's hash.
  const rt = (await member(s, 'reviewer', w.tree)).token;
  const review = await call('POST', '/api/production/reviews', { artifactId: cut.id, title: 'Episode 1 cut' });
  assert.equal(review.status, 201, review.text);
  const comment = await s.call('POST', `/api/production/reviews/${review.body.id}/comments`, {
    token: rt, body: { body: 'The pier shot starts too dark', timeCodeMs: 1500, rect: { x: 0.1, y: 0.2, width: 0.5, height: 0.3 } },
  });
  assert.equal(comment.status, 201, comment.text);
  assert.deepEqual([comment.body.timeCodeMs, comment.body.artifactSha256], [1500, cut.contentSha256]);
  const decided = await s.call('POST', `/api/production/reviews/${review.body.id}/decisions`, { token: rt, body: { decision: 'approve' } });
  assert.equal(decided.status, 201, decided.text);
  assert.deepEqual([decided.body.decision.artifactSha256, decided.body.review.status], [cut.contentSha256, 'approved']);

  // Approval records the exact hashes.
  const approved = await call('POST', `/api/production/deliveries/${delivery.body.id}/approve`);
  assert.equal(approved.status, 200, approved.text);
  assert.equal(approved.body.status, 'approved');
  assert.deepEqual(approved.body.items.map((i: { sha256: string }) => i.sha256), [cut.contentSha256]);

  // Export: the manifest's hashes and sizes match the stored objects, the timelines parse.
  const exp = await call('POST', '/api/exports/write', { deliveryId: delivery.body.id });
  assert.equal(exp.status, 201, exp.text);
  const dir = `${exp.body.path}/`;
  const read = (p: string) => store.readBytes(dir + p);
  const stored: string[] = [];
  for await (const o of store.list(dir)) stored.push(o.key.slice(dir.length));
  const manifest = JSON.parse((await read('manifest.json')).toString('utf8'));
  assert.deepEqual(manifest.files.map((f: { path: string }) => f.path).sort(), stored.filter((f) => f !== 'manifest.json').sort());
  for (const f of manifest.files) {
    const bytes = await read(f.path);
    assert.deepEqual([bytes.length, sha256(bytes)], [f.size, f.sha256], f.path);
  }
  assert.equal(sha256(await read('media/01-E01-cut.mp4')), cut.contentSha256);
  const otio = JSON.parse((await read('timeline/E01.otio')).toString('utf8'));
  assert.ok(validOtio(otio), otioErrors());
  const [num, den] = cut.composition.frameRate.split('/').map(Number);
  const edl = parseEdl((await read('timeline/E01.edl')).toString('utf8'), Math.round(num / den));
  const shotFrames = [v1, v2].map((v) => Math.round((v.durationMs * num) / (1000 * den)));
  assert.deepEqual(edl.events.map((e) => e.recOut - e.recIn), shotFrames, 'one event per shot, as long as the shot');
  assert.deepEqual(edl.events.map((e) => e.recOut - e.recIn), cut.composition.inputs.map((i: { frames: number }) => i.frames));

  // A package file downloaded with an account: the cut's approved bytes, audited once as export.downloaded.
  const audits = async (action: string) => (await s.db.all<{ metadata: string }>('SELECT metadata FROM audit_log WHERE action = ? ORDER BY seq', action)).map((a) => JSON.parse(a.metadata));
  const packaged = await fetch(`${s.url}/api/exports/${exp.body.id}/file?path=${encodeURIComponent('media/01-E01-cut.mp4')}`, { headers: { authorization: `Bearer ${token}` }, redirect: 'manual' });
  assert.equal(sha256(await downloadedBytes(driver, packaged, s.config.s3Endpoint)), cut.contentSha256);
  assert.deepEqual((await audits('export.downloaded')).map((m) => [m.file, m.sha256, m.linkId]), [['media/01-E01-cut.mp4', cut.contentSha256, null]]);

  // The client link: off by the organization's flag, then made; the token downloads the approved bytes.
  const admin = await login(s, await makeUser(s, { systemAdmin: true }));
  const flag = (enabled: boolean | null) => s.call('PUT', '/api/system/feature-flags/client_delivery_links', { token: admin, body: { enabled, organizationId: w.tree.organizationId } });
  assert.equal((await flag(false)).status, 200);
  const off = await call('POST', `/api/production/deliveries/${delivery.body.id}/links`, {});
  assert.deepEqual([off.status, off.body.error.code], [409, 'feature_disabled']);
  assert.equal((await flag(null)).status, 200);
  const link = await call('POST', `/api/production/deliveries/${delivery.body.id}/links`, { label: 'client review copy' });
  assert.equal(link.status, 201, link.text);
  const files = await s.call('GET', `/api/client/delivery?token=${link.body.token}`);
  assert.equal(files.status, 200, files.text);
  const download = await fetch(`${s.url}/api/client/delivery/files/1?token=${link.body.token}`, { redirect: 'manual' });
  assert.equal(sha256(await downloadedBytes(driver, download, s.config.s3Endpoint, link.body.token)), cut.contentSha256);
  const counted = (await s.db.get<{ n: number }>('SELECT download_count AS n FROM delivery_links WHERE id = ?', link.body.id))!.n;
  assert.equal(counted, 1, 'the download is counted once');
  assert.deepEqual((await audits('delivery.downloaded')).map((m) => [m.linkId, m.artifactId, m.sha256]), [[link.body.id, cut.id, cut.contentSha256]], 'and audited once');
  assert.equal((await s.call('GET', '/api/client/delivery/files/1')).status, 401, 'no token');

  const revoked = await call('POST', `/api/production/deliveries/${delivery.body.id}/links/${link.body.id}/revoke`);
  assert.equal(revoked.status, 200, revoked.text);
  assert.equal((await s.call('GET', `/api/client/delivery/files/1?token=${link.body.token}`)).status, 401, 'revoked');

  const second = await call('POST', `/api/production/deliveries/${delivery.body.id}/links`, { expiresInHours: 1 });
  const served = driver === 'local' ? 200 : 302; // streamed by the service, or redirected to the bucket
  assert.equal((await s.call('GET', `/api/client/delivery/files/1?token=${second.body.token}`)).status, served);
  await s.db.run('UPDATE delivery_links SET expires_at = ? WHERE id = ?', new Date(Date.now() - 1000).toISOString(), second.body.id);
  assert.equal((await s.call('GET', `/api/client/delivery/files/1?token=${second.body.token}`)).status, 401, 'expired');
}

test('generate, QA, review with a time-coded comment, approve, deliver, export, and the client link', (t) => reviewPath(t, 'local'));

test('on s3: generate, QA, review, approve, deliver, export, and the client link redirected to the bucket', (t) => reviewPath(t, 's3'));
