// A client delivery link in a real browser (test/helpers/browser.ts), without an account: the link
// opens the landing page (content negotiation on Accept: the same address answers JSON to API
// clients), which lists the approved items, plays the video (its metadata loads: it has a duration)
// and downloads the exact approved bytes; a link made with includeExport also downloads the export
// package's archive. No request of the page sends a Referer; the token never reaches the logs.
// Revoked and expired links answer 401 for the page and every file; a changed file is 410.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { episodeCut, mediaWorld, shotVideo } from '../helpers/media.ts';
import { heading, launchBrowser, openPage, problemsOf, shots, type Browser } from '../helpers/browser.ts';
import { serversRunTheWorker } from '../helpers/server.ts';

serversRunTheWorker();

// What the functions evaluated inside the page use (this project type-checks for Node, without the DOM library).
declare const document: any;

const sha256 = (b: Buffer) => crypto.createHash('sha256').update(b).digest('hex');
const BASE = '/api/production/deliveries';

test('a client delivery link: the landing page without an account, a playing video, downloads of the approved bytes; revoked and expired links are 401', async (t) => {
  const browser: Browser = await launchBrowser(t);
  const w = await mediaWorld(t);
  const { s, token } = w;
  await shotVideo(w, w.shotIds[0], 'a lighthouse at dusk', { seconds: 1, size: '180x320' });
  const cut = await episodeCut(w);
  const cutBytes = fs.readFileSync(path.join(s.config.storageDir, cut.path));
  const call = (method: string, p: string, body?: unknown) => s.call(method, p, { token, body });
  assert.equal((await call('PUT', '/api/production/delivery-spec', { width: cut.width, height: cut.height, durationToleranceMs: 60_000, loudnessToleranceLu: 20, truePeakMaxDbtp: 6 })).status, 200);
  assert.equal((await call('POST', '/api/production/qa/run', { artifactIds: [cut.id] })).status, 201);
  const review = await call('POST', '/api/production/reviews', { artifactId: cut.id });
  assert.equal((await call('POST', `/api/production/reviews/${review.body.id}/decisions`, { decision: 'approve' })).status, 201);
  const delivery = await call('POST', BASE, { title: 'Harbour lights, episode 1' });
  const approved = await call('POST', `${BASE}/${delivery.body.id}/approve`);
  assert.equal(approved.status, 200, approved.text);
  const exported = await call('POST', '/api/exports/write', { deliveryId: delivery.body.id, archive: true });
  assert.equal(exported.status, 201, exported.text);
  const tarBytes = fs.readFileSync(path.join(s.config.storageDir, exported.body.archive.path));
  const link = await call('POST', `${BASE}/${delivery.body.id}/links`, { label: 'Client A', includeExport: true });
  assert.equal(link.status, 201, link.text);
  assert.equal(link.body.includeExport, true);
  const linkToken: string = link.body.token;

  // API clients still get JSON at the same address; every file has an href that carries the token.
  const manifest = await s.call('GET', `/api/client/delivery?token=${encodeURIComponent(linkToken)}`);
  assert.equal(manifest.status, 200, manifest.text);
  assert.equal(manifest.headers.get('vary'), 'accept');
  const href = `/api/client/delivery/files/1?token=${encodeURIComponent(linkToken)}`;
  assert.deepEqual(manifest.body.files.map((f: any) => [f.name, f.href]), [['01-episode-1-cut.mp4', href]]);
  assert.deepEqual([manifest.body.export.id, manifest.body.export.archive.sha256, manifest.body.export.archive.size],
    [exported.body.id, exported.body.archive.sha256, tarBytes.length]);
  const listedMedia = manifest.body.export.files.find((f: any) => f.path === 'media/01-E01-cut.mp4');
  const mediaByHref = await fetch(s.url + listedMedia.href);
  assert.equal(mediaByHref.status, 200);
  assert.ok(Buffer.from(await mediaByHref.arrayBuffer()).equals(cutBytes), 'an export file by its href, without any header');

  const page = await openPage(browser, t);
  const referers: string[] = [];
  page.on('request', (r) => { if (r.headers().referer) referers.push(`${r.url()} <- ${r.headers().referer}`); });
  const opened = await page.goto(link.body.url);
  assert.equal(opened?.status(), 200);
  const headers = opened.headers();
  assert.match(headers['content-type'], /^text\/html/);
  assert.match(headers['content-security-policy'], /^default-src 'none'; script-src 'self';.*; media-src 'self'$/);
  assert.deepEqual([headers['referrer-policy'], headers['cache-control'], headers['x-frame-options']], ['no-referrer', 'no-store', 'DENY']);
  await heading(page, 'Harbour lights, episode 1').waitFor();
  await heading(page, '01-episode-1-cut.mp4').waitFor();
  await heading(page, 'Export package').waitFor();

  // The video loads its metadata: it has the cut's duration.
  const video = page.getByLabel('Preview of 01-episode-1-cut.mp4');
  await video.waitFor();
  await page.waitForFunction(() => document.querySelector('video')?.readyState >= 1, undefined, { timeout: 15_000 });
  const duration = await page.evaluate(() => document.querySelector('video').duration);
  assert.ok(Math.abs(duration * 1000 - cut.durationMs) < 200, `duration ${duration} s, cut ${cut.durationMs} ms`);

  // The download buttons give the approved bytes (and the archive), byte for byte.
  const downloaded = async (name: string | RegExp) => {
    const [dl] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name }).click()]);
    const file = await dl.path();
    return { name: dl.suggestedFilename(), bytes: fs.readFileSync(file) };
  };
  const got = await downloaded('Download 01-episode-1-cut.mp4');
  assert.equal(got.name, '01-episode-1-cut.mp4');
  assert.equal(sha256(got.bytes), sha256(cutBytes));
  const archive = await downloaded(/^Download the archive/);
  assert.equal(archive.name, `${exported.body.id}.tar`);
  assert.ok(archive.bytes.equals(tarBytes));
  await shots(page, 'client-delivery');
  assert.deepEqual(problemsOf(page, s.url), []);
  assert.deepEqual(referers, [], 'no request of the page sends a Referer');

  // One count and one audit record per download; never the token in an audit record or a log line.
  const links = await call('GET', `${BASE}/${delivery.body.id}/links`);
  assert.ok(links.body.items[0].downloadCount >= 3, JSON.stringify(links.body.items[0]));
  const exportDownloads = await s.db.all<{ metadata: string; actor_type: string; actor_name: string }>(
    "SELECT metadata, actor_type, actor_name FROM audit_log WHERE action = 'export.downloaded' AND target_id = ? ORDER BY seq", exported.body.id);
  assert.deepEqual(exportDownloads.map((a) => [JSON.parse(a.metadata).file, JSON.parse(a.metadata).linkId, a.actor_type, a.actor_name]), [
    ['media/01-E01-cut.mp4', link.body.id, 'anonymous', 'delivery link Client A'],
    ['archive', link.body.id, 'anonymous', 'delivery link Client A'],
  ]);
  const secret = linkToken.slice(4);
  assert.equal((await s.db.get<{ n: number }>('SELECT count(*) AS n FROM audit_log WHERE metadata LIKE ?', `%${secret.slice(0, 20)}%`))!.n, 0);
  assert.ok(!s.logs.some((l) => l.includes(secret)), 'request logs drop the token');

  const bad = await call('POST', `${BASE}/${delivery.body.id}/links`, { includeExport: 'yes' });
  assert.deepEqual([bad.status, Object.keys(bad.body.error.details.fields)], [422, ['includeExport']]);

  // A link made without includeExport shows no package and cannot download it.
  const plain = await call('POST', `${BASE}/${delivery.body.id}/links`, { label: 'Client B' });
  assert.equal(plain.body.includeExport, false);
  const plainManifest = await s.call('GET', '/api/client/delivery', { headers: { 'x-delivery-token': plain.body.token } });
  assert.equal(plainManifest.body.export, null);
  for (const p of ['/api/client/delivery/export/archive', '/api/client/delivery/export/file?path=manifest.json']) {
    const r = await s.call('GET', p, { headers: { 'x-delivery-token': plain.body.token } });
    assert.deepEqual([r.status, r.body.error.code], [404, 'not_found'], p);
  }

  // A changed file is 410 (by its href too); restored, it is served again.
  const cutFile = path.join(s.config.storageDir, cut.path);
  fs.writeFileSync(cutFile, Buffer.concat([cutBytes, Buffer.from('x')]));
  try {
    const gone = await s.call('GET', href);
    assert.deepEqual([gone.status, gone.body.error.code], [410, 'delivery_file_changed']);
  } finally {
    fs.writeFileSync(cutFile, cutBytes);
  }

  // Revoked: the page is a 401 page saying so, and every file and package address is 401.
  const revoked = await call('POST', `${BASE}/${delivery.body.id}/links/${link.body.id}/revoke`);
  assert.equal(revoked.status, 200, revoked.text);
  const closed = await page.goto(link.body.url);
  assert.equal(closed?.status(), 401);
  await heading(page, 'This delivery link is not valid').waitFor();
  assert.match(closed.headers()['content-security-policy'], /media-src 'self'$/);
  const filePaths = [href, listedMedia.href, manifest.body.export.archive.href, `/api/client/delivery?token=${encodeURIComponent(linkToken)}`];
  for (const p of filePaths) {
    const r = await s.call('GET', p);
    assert.deepEqual([r.status, r.body.error.code], [401, 'delivery_link_invalid'], p);
  }

  // Expired: the same 401 for the page and the files.
  await s.db.run('UPDATE delivery_links SET expires_at = ? WHERE id = ?', new Date(Date.now() - 1000).toISOString(), plain.body.id);
  const expired = await page.goto(`${s.url}/api/client/delivery?token=${encodeURIComponent(plain.body.token)}`);
  assert.equal(expired?.status(), 401);
  await heading(page, 'This delivery link is not valid').waitFor();
  const expiredFile = await s.call('GET', `/api/client/delivery/files/1?token=${encodeURIComponent(plain.body.token)}`);
  assert.equal(expiredFile.status, 401);
  assert.deepEqual(problemsOf(page, s.url, [/status of 401/]), []);
});
