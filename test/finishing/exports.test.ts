// Export packages of approved deliveries, written for real: the worker generates two shots' videos,
// a voice line and the episode cut; the package is checked file by file against its manifest, the
// OTIO timeline against a JSON Schema of OpenTimelineIO's documented serialization
// (test/fixtures/otio-schema.json), the EDL with its own small parser against the composition's
// segments, the SRT against the script's dialogue, the archive with the system tar. Writing is
// idempotent per delivery version and atomic (a missing or changed source, a delivery withdrawn while
// its package is written, or a failed transaction leaves nothing behind); two archive requests at once
// record and audit one archive.
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { member } from '../helpers/factories.ts';
import { filesUnder, otioErrors, parseEdl, parseSrt, sha256, validOtio } from '../helpers/package.ts';
import { mediaWorld, shotVideo, shotVoice, episodeCut, type MediaWorld } from '../helpers/media.ts';
import type { Tree } from '../helpers/factories.ts';
import { withScope } from '../../src/directory/context.ts';
import { withdrawDelivery } from '../../src/finishing/delivery/service.ts';
import { edlOf } from '../../src/finishing/export/edl.ts';
import { spreadLines, srtOf } from '../../src/finishing/export/srt.ts';
import { writeTar } from '../../src/finishing/export/tar.ts';
import { timecode, type Timeline } from '../../src/finishing/export/timeline.ts';
import { serversRunTheWorker } from '../helpers/server.ts';
import { refuseWrites } from '../helpers/sql.ts';

serversRunTheWorker();

/**
 * FIXTURE — a delivery row of another organization inserted with s.db (the deliveries table of
 * schema 8), only to prove that its id is 404 here; every delivery of this project is made and
 * approved through HTTP (approvedDelivery).
 */
async function foreignDelivery(s: MediaWorld['s'], tree: Tree): Promise<string> {
  const id = `dlv_fixture_${crypto.randomBytes(6).toString('hex')}`;
  const at = new Date().toISOString();
  await s.db.run(
    `INSERT INTO deliveries (id, organization_id, workspace_id, project_id, title, status, version, created_at, updated_at, approved_at)
     VALUES (?, ?, ?, ?, 'Theirs', 'approved', 1, ?, ?, ?)`, id, tree.organizationId, tree.workspaceId, tree.projectId, at, at, at);
  return id;
}

/**
 * A delivery made and approved the real way: a QA run over the artifacts, an approved review of
 * each (once per artifact in this world), then the delivery (artifactIds, or the default set of
 * episode cuts) created and, unless `draft`, approved.
 */
function deliveries(w: MediaWorld) {
  const { s, token } = w;
  const reviewed = new Set<string>();
  return async (artifactIds: string[], o: { title?: string; draft?: boolean; cuts?: boolean } = {}): Promise<string> => {
    const qa = await s.call('POST', '/api/production/qa/run', { token, body: { artifactIds } });
    assert.equal(qa.status, 201, qa.text);
    for (const artifactId of artifactIds.filter((id) => !reviewed.has(id))) {
      const review = await s.call('POST', '/api/production/reviews', { token, body: { artifactId } });
      assert.equal(review.status, 201, review.text);
      const decided = await s.call('POST', `/api/production/reviews/${review.body.id}/decisions`, { token, body: { decision: 'approve' } });
      assert.equal(decided.status, 201, decided.text);
      reviewed.add(artifactId);
    }
    const made = await s.call('POST', '/api/production/deliveries', { token, body: { title: o.title ?? 'Client delivery', ...(o.cuts ? {} : { artifactIds }) } });
    assert.equal(made.status, 201, made.text);
    if (!o.draft) {
      const approved = await s.call('POST', `/api/production/deliveries/${made.body.id}/approve`, { token });
      assert.equal(approved.status, 200, approved.text);
    }
    return made.body.id;
  };
}

const DIALOGUE = {
  a: ['We have until the lanterns go out.', 'Then we run.'],
  b: ['Run where?'],
};

test('export packages of approved deliveries', async (t) => {
  const w = await mediaWorld(t, { shots: 2 });
  const { s, token } = w;
  const [shot1, shot2] = w.shotIds;
  const script = await s.call('PUT', `/api/production/script/episodes/${w.episodeId}`, {
    token, body: {
      baseRevision: 0, scenes: [
        { id: 'scene-a', heading: 'EXT. HARBOUR - NIGHT', lines: [{ kind: 'action', text: 'Rain.' }, ...DIALOGUE.a.map((text) => ({ kind: 'dialogue', character: 'MIRA', text }))] },
        { id: 'scene-b', heading: 'EXT. PIER - NIGHT', lines: DIALOGUE.b.map((text) => ({ kind: 'dialogue', character: 'JON', text })) },
      ],
    },
  });
  assert.equal(script.status, 200, script.text);
  for (const [shot, sceneId] of [[shot1, 'scene-a'], [shot2, 'scene-b']]) {
    const r = await s.call('PATCH', `/api/production/shots/${shot}`, { token, body: { sceneId } });
    assert.equal(r.status, 200, r.text);
  }
  const [video1, video2, voice] = await Promise.all([
    shotVideo(w, shot1, 'a lantern in the rain', { seconds: 1, size: '320x180' }),
    shotVideo(w, shot2, 'a pier at night', { seconds: 2, size: '320x180' }),
    shotVoice(w, shot1, DIALOGUE.a.join(' ')),
  ]);
  const cut = await episodeCut(w);
  assert.equal(cut.composition.inputs.length, 2);
  const exportsDir = path.join(s.config.storageDir, 'exports');
  const tmpDir = path.join(s.config.storageDir, 'tmp');
  const spec = await s.call('PUT', '/api/production/delivery-spec', {
    token, body: { width: cut.width, height: cut.height, durationToleranceMs: 60_000, loudnessToleranceLu: 20, truePeakMaxDbtp: 6 },
  });
  assert.equal(spec.status, 200, spec.text);
  const approvedDelivery = deliveries(w);
  const cutDelivery = await approvedDelivery([cut.id], { title: 'Episode 1 for the client', cuts: true });
  let cutExport: any;

  await t.test('an approved delivery of an episode cut is written as a package whose manifest matches every file', async () => {
    const r = await s.call('POST', '/api/exports/write', { token, body: { deliveryId: cutDelivery } });
    assert.equal(r.status, 201, r.text);
    cutExport = r.body;
    assert.match(r.body.id, /^exp_/);
    assert.deepEqual([r.body.deliveryId, r.body.deliveryVersion, r.body.path, r.body.archive, r.body.manifestIntact], [cutDelivery, 1, `exports/${r.body.id}`, null, true]);
    const dir = path.join(s.config.storageDir, r.body.path);
    const m = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8'));
    assert.deepEqual(m, r.body.manifest);
    assert.equal(r.body.manifestSha256, sha256(fs.readFileSync(path.join(dir, 'manifest.json'))));
    assert.deepEqual([m.delivery.id, m.delivery.version, m.delivery.title, m.delivery.approvedBy, m.project.id, m.exportId],
      [cutDelivery, 1, 'Episode 1 for the client', w.user.id, w.tree.projectId, r.body.id]);
    // Every other file is listed once, with its real size and SHA-256.
    assert.deepEqual(m.files.map((f: any) => f.path).sort(), filesUnder(dir).filter((f) => f !== 'manifest.json'));
    for (const f of m.files) {
      const bytes = fs.readFileSync(path.join(dir, f.path));
      assert.deepEqual([f.size, f.sha256], [bytes.length, sha256(bytes)], f.path);
    }
    assert.equal(r.body.fileCount, m.files.length + 1);
    assert.equal(r.body.totalBytes, filesUnder(dir).reduce((n, f) => n + fs.statSync(path.join(dir, f)).size, 0));
    // The delivered cut, byte for byte, and its real first and last frames.
    const media = m.files.find((f: any) => f.role === 'media');
    assert.deepEqual([media.path, media.artifactId, media.sha256, media.artifactSha256], ['media/01-E01-cut.mp4', cut.id, cut.contentSha256, cut.contentSha256]);
    const frames = m.files.filter((f: any) => f.role === 'frame');
    assert.deepEqual(frames.map((f: any) => [f.path, f.sha256]), [
      ['frames/01-E01-cut-first.png', cut.firstFrame.sha256], ['frames/01-E01-cut-last.png', cut.lastFrame.sha256],
    ]);
    assert.deepEqual(m.timelines.map((x: any) => [x.key, x.frameRate, x.clips, x.otio, x.edl, x.subtitles]), [
      ['E01', cut.composition.frameRate, 2, 'timeline/E01.otio', 'timeline/E01.edl', 'subtitles/E01.srt'],
    ]);
    const audit = await s.db.all<{ action: string; metadata: string }>("SELECT action, metadata FROM audit_log WHERE target_id = ?", r.body.id);
    assert.deepEqual(audit.map((a) => a.action), ['export.written']);
    assert.equal(JSON.parse(audit[0].metadata).manifestSha256, r.body.manifestSha256);
    assert.deepEqual(fs.readdirSync(tmpDir).filter((f) => f.startsWith('export-')), []);
  });

  await t.test('the OTIO timeline is valid OpenTimelineIO and places each shot at its segment of the cut', () => {
    const dir = path.join(s.config.storageDir, cutExport.path);
    const otio = JSON.parse(fs.readFileSync(path.join(dir, 'timeline/E01.otio'), 'utf8'));
    assert.ok(validOtio(otio), otioErrors());
    const [num, den] = cut.composition.frameRate.split('/').map(Number);
    const [v1, a1] = otio.tracks.children;
    assert.deepEqual([v1.kind, a1.kind], ['Video', 'Audio']);
    let at = 0;
    v1.children.forEach((clip: any, i: number) => {
      const input = cut.composition.inputs[i];
      assert.equal(clip.OTIO_SCHEMA, 'Clip.2');
      assert.equal(clip.source_range.duration.rate, num / den);
      assert.deepEqual([clip.source_range.start_time.value, clip.source_range.duration.value], [at, input.frames]);
      assert.deepEqual([clip.metadata.svc.shotId, clip.metadata.svc.sourceArtifactId, clip.metadata.svc.sourceSha256], [input.shotId, input.artifactId, input.contentSha256]);
      const ref = clip.media_references[clip.active_media_reference_key];
      assert.equal(fs.readFileSync(path.resolve(dir, 'timeline', ref.target_url)).length, cut.fileSize);
      at += input.frames;
    });
    assert.deepEqual(v1.children.map((c: any) => c.metadata.svc.shotId), [shot1, shot2]);
    assert.equal(at, cut.frameCount);
    assert.deepEqual(a1.children.map((c: any) => c.source_range.duration.value), cut.composition.inputs.map((i: any) => i.frames));
    // The schema refuses what OpenTimelineIO would not read.
    assert.equal(validOtio({ ...otio, tracks: { ...otio.tracks, OTIO_SCHEMA: 'Stack.2' } }), false);
    assert.equal(validOtio({ ...otio, tracks: { ...otio.tracks, children: [{ ...v1, children: [{ ...v1.children[0], active_media_reference: 'X' }] }] } }), false);
  });

  await t.test("the EDL's events match the shots' durations in the composition, at the cut's rate", async () => {
    const dir = path.join(s.config.storageDir, cutExport.path);
    const [num, den] = cut.composition.frameRate.split('/').map(Number);
    const edl = parseEdl(fs.readFileSync(path.join(dir, 'timeline/E01.edl'), 'utf8'), Math.round(num / den));
    assert.equal(edl.fcm, 'NON-DROP FRAME');
    const episode = (await s.db.get<{ title: string }>('SELECT title FROM episodes WHERE id = ?', w.episodeId))!;
    assert.equal(edl.title, `E01 ${episode.title} (cut)`);
    assert.equal(edl.events.length, cut.composition.inputs.length);
    let at = 0;
    edl.events.forEach((e, i) => {
      const frames = cut.composition.inputs[i].frames;
      assert.deepEqual([e.n, e.channel, e.clip], [i + 1, 'B', '01-E01-cut.mp4']);
      assert.equal(e.recOut - e.recIn, frames);
      assert.equal(e.srcOut - e.srcIn, frames);
      assert.deepEqual([e.recIn, e.srcIn], [at, at]);
      at += frames;
    });
  });

  await t.test("the subtitles carry each shot's scene dialogue inside the shot's segment; the shot list names every shot", () => {
    const dir = path.join(s.config.storageDir, cutExport.path);
    const cues = parseSrt(fs.readFileSync(path.join(dir, 'subtitles/E01.srt'), 'utf8'));
    assert.deepEqual(cues.map((c) => c.text), [...DIALOGUE.a, ...DIALOGUE.b]);
    const [seg1, seg2] = cut.composition.inputs;
    const ms = (frames: number) => Math.round((frames * 1000 * Number(cut.composition.frameRate.split('/')[1])) / Number(cut.composition.frameRate.split('/')[0]));
    assert.deepEqual([cues[0].startMs, cues[1].endMs], [0, ms(seg1.frames)]);
    assert.equal(cues[0].endMs, cues[1].startMs);
    assert.ok(cues[0].endMs - cues[0].startMs > cues[1].endMs - cues[1].startMs, 'the longer line stays up longer');
    assert.deepEqual([cues[2].startMs, cues[2].endMs], [ms(seg1.frames), ms(seg1.frames + seg2.frames)]);

    const rows = fs.readFileSync(path.join(dir, 'shotlist.csv'), 'utf8').trimEnd().split('\r\n').map((l) => l.split(','));
    const head = rows[0];
    const col = (row: string[], name: string) => row[head.indexOf(name)];
    assert.equal(rows.length, 3);
    assert.deepEqual(rows.slice(1).map((r) => [col(r, 'episode'), col(r, 'shot'), col(r, 'record_in'), col(r, 'duration_frames'), col(r, 'source_artifact_id'), col(r, 'artifact_sha256')]), [
      ['E01', 'S01', '00:00:00:00', String(seg1.frames), video1.id, cut.contentSha256],
      ['E01', 'S02', timecode(seg1.frames, { num: 24, den: 1 }), String(seg2.frames), video2.id, cut.contentSha256],
    ]);
    assert.equal(col(rows[1], 'voice_artifact_id'), voice.id);
  });

  await t.test('a second write of the same delivery version answers the same export without rewriting; archive: true adds the archive', async () => {
    const dir = path.join(s.config.storageDir, cutExport.path);
    const before = fs.statSync(path.join(dir, 'manifest.json'));
    const again = await s.call('POST', '/api/exports/write', { token, body: { deliveryId: cutDelivery } });
    assert.equal(again.status, 200, again.text);
    assert.deepEqual([again.body.id, again.body.manifestSha256], [cutExport.id, cutExport.manifestSha256]);
    const after = fs.statSync(path.join(dir, 'manifest.json'));
    assert.deepEqual([after.ino, after.mtimeMs], [before.ino, before.mtimeMs]);
    assert.deepEqual(fs.readdirSync(exportsDir), [cutExport.id]);

    const archived = await s.call('POST', '/api/exports/write', { token, body: { deliveryId: cutDelivery, archive: true } });
    assert.equal(archived.status, 200, archived.text);
    assert.equal(archived.body.id, cutExport.id);
    const tar = path.join(s.config.storageDir, archived.body.archive.path);
    assert.equal(archived.body.archive.path, `exports/${cutExport.id}.tar`);
    assert.equal(archived.body.archive.sha256, sha256(fs.readFileSync(tar)));
    const listed = execFileSync('tar', ['-tf', tar], { encoding: 'utf8' }).trim().split('\n');
    for (const f of filesUnder(dir)) assert.ok(listed.includes(`${cutExport.id}/${f}`), f);
    const member = execFileSync('tar', ['-xOf', tar, `${cutExport.id}/media/01-E01-cut.mp4`], { maxBuffer: 64 << 20 });
    assert.equal(sha256(member), cut.contentSha256);
    assert.equal((await s.db.get<{ n: number }>("SELECT count(*) AS n FROM exports WHERE delivery_id = ?", cutDelivery))!.n, 1);
    assert.deepEqual((await s.db.all<{ action: string }>('SELECT action FROM audit_log WHERE target_id = ? ORDER BY created_at', cutExport.id)).map((a) => a.action),
      ['export.written', 'export.archived']);
  });

  await t.test('a chosen set without a composition becomes a timeline of the items in order, with the archive at once', async () => {
    const id = await approvedDelivery([video1.id, video2.id, voice.id]);
    const r = await s.call('POST', '/api/exports/write', { token, body: { deliveryId: id, archive: true } });
    assert.equal(r.status, 201, r.text);
    const dir = path.join(s.config.storageDir, r.body.path);
    assert.deepEqual(r.body.manifest.files.filter((f: any) => f.role === 'media').map((f: any) => f.path),
      ['media/01-E01-S01-video.mp4', 'media/02-E01-S02-video.mp4', `media/03-E01-S01-audio${path.extname(voice.fileName)}`]);
    const otio = JSON.parse(fs.readFileSync(path.join(dir, 'timeline/E01.otio'), 'utf8'));
    assert.ok(validOtio(otio), otioErrors());
    const [v1, a1] = otio.tracks.children;
    assert.deepEqual(v1.children.map((c: any) => [c.OTIO_SCHEMA, c.source_range.duration.value]), [['Clip.2', video1.frameCount], ['Clip.2', video2.frameCount]]);
    assert.deepEqual(a1.children.map((c: any) => c.metadata.svc.artifactId), [video1.id, video2.id, voice.id]);
    const edl = parseEdl(fs.readFileSync(path.join(dir, 'timeline/E01.edl'), 'utf8'), 24);
    assert.deepEqual(edl.events.map((e) => [e.channel, e.recIn, e.recOut - e.recIn, e.srcIn]), [
      ['B', 0, video1.frameCount, 0], ['B', video1.frameCount, video2.frameCount, 0], ['A', video1.frameCount + video2.frameCount, Math.round(voice.durationMs * 24 / 1000), 0],
    ]);
    assert.equal(r.body.archive.sha256, sha256(fs.readFileSync(path.join(s.config.storageDir, r.body.archive.path))));
  });

  await t.test('a missing or changed source leaves no package and no temporary files behind (409)', async () => {
    const before = fs.readdirSync(exportsDir).sort();
    const voiceFile = path.join(s.config.storageDir, voice.path);
    const missing = await approvedDelivery([video1.id, voice.id]);
    fs.renameSync(voiceFile, `${voiceFile}.away`);
    try {
      const r = await s.call('POST', '/api/exports/write', { token, body: { deliveryId: missing } });
      assert.equal(r.status, 409, r.text);
      assert.deepEqual([r.body.error.code, r.body.error.details.artifactId, r.body.error.details.position], ['export_source_missing', voice.id, 2]);
    } finally {
      fs.renameSync(`${voiceFile}.away`, voiceFile);
    }
    const frameFile = path.join(s.config.storageDir, video2.lastFrame.path);
    const original = fs.readFileSync(frameFile);
    const changed = await approvedDelivery([video1.id, video2.id]);
    fs.writeFileSync(frameFile, Buffer.concat([original, Buffer.from([0])]));
    try {
      const r = await s.call('POST', '/api/exports/write', { token, body: { deliveryId: changed } });
      assert.equal(r.status, 409, r.text);
      assert.deepEqual([r.body.error.code, r.body.error.details.artifactId, r.body.error.details.file], ['export_source_changed', video2.id, 'last frame']);
    } finally {
      fs.writeFileSync(frameFile, original);
    }
    assert.deepEqual(fs.readdirSync(exportsDir).sort(), before);
    assert.deepEqual(fs.readdirSync(tmpDir).filter((f) => f.startsWith('export-')), []);
    assert.equal((await s.db.get<{ n: number }>('SELECT count(*) AS n FROM exports WHERE delivery_id IN (?, ?)', missing, changed))!.n, 0);
    // Once the bytes are back, the same delivery exports.
    assert.equal((await s.call('POST', '/api/exports/write', { token, body: { deliveryId: changed } })).status, 201);
  });

  await t.test('only an approved delivery is exported; bad input is 422', async () => {
    const draft = await approvedDelivery([video1.id], { draft: true });
    const r = await s.call('POST', '/api/exports/write', { token, body: { deliveryId: draft } });
    assert.equal(r.status, 409, r.text);
    assert.deepEqual([r.body.error.code, r.body.error.details.status], ['delivery_not_approved', 'draft']);
    for (const [body, field] of [[{}, 'deliveryId'], [{ deliveryId: cutDelivery, archive: 'yes' }, 'archive'], [{ deliveryId: cutDelivery, extra: 1 }, 'extra']] as const) {
      const bad = await s.call('POST', '/api/exports/write', { token, body });
      assert.equal(bad.status, 422, bad.text);
      assert.ok(field in bad.body.error.details.fields, bad.text);
    }
    assert.equal((await s.db.get<{ n: number }>('SELECT count(*) AS n FROM exports WHERE delivery_id = ?', draft))!.n, 0);
  });

  await t.test('access: 401 without a session, 403 without the permission, 404 for another tenant; lists are tenant-scoped', async () => {
    assert.equal((await s.call('POST', '/api/exports/write', { body: { deliveryId: cutDelivery } })).status, 401);
    assert.equal((await s.call('GET', '/api/exports')).status, 401);
    assert.equal((await s.call('GET', `/api/exports/${cutExport.id}`)).status, 401);
    const reviewer = await member(s, 'reviewer', w.tree);
    const denied = await s.call('POST', '/api/exports/write', { token: reviewer.token, body: { deliveryId: cutDelivery } });
    assert.deepEqual([denied.status, denied.body.error.code], [403, 'permission_denied']);
    assert.equal((await s.call('GET', `/api/exports/${cutExport.id}`, { token: reviewer.token })).status, 200);
    const writer = await member(s, 'writer', w.tree);
    assert.equal((await s.call('GET', '/api/exports', { token: writer.token })).status, 403);
    assert.equal((await s.call('GET', `/api/exports/${cutExport.id}`, { token: writer.token })).status, 403);

    // Another organization, with an export of its own (a row, for the listing).
    const other = await member(s, 'org_owner');
    const theirs = await foreignDelivery(s, other.tree);
    await s.db.run(
      `INSERT INTO exports (id, organization_id, workspace_id, project_id, delivery_id, delivery_version, storage_path, manifest_sha256, file_count, total_bytes, created_at)
       VALUES ('exp_fixture_other', ?, ?, ?, ?, 1, 'exports/exp_fixture_other', ?, 1, 1, ?)`,
      other.tree.organizationId, other.tree.workspaceId, other.tree.projectId, theirs, '0'.repeat(64), new Date().toISOString());
    assert.equal((await s.call('GET', '/api/exports/exp_fixture_other', { token })).status, 404);
    assert.equal((await s.call('POST', '/api/exports/write', { token, body: { deliveryId: theirs } })).status, 404);
    assert.equal((await s.call('GET', `/api/exports/${cutExport.id}`, { token: other.token })).status, 404);
    assert.equal((await s.call('POST', '/api/exports/write', { token: other.token, body: { deliveryId: cutDelivery } })).status, 404);
    const mine = await s.call('GET', '/api/exports', { token });
    assert.equal(mine.status, 200, mine.text);
    const ownIds = (await s.db.all<{ id: string }>('SELECT id FROM exports WHERE project_id = ? ORDER BY created_at DESC, id DESC', w.tree.projectId)).map((x) => x.id);
    assert.deepEqual(mine.body.items.map((e: any) => e.id), ownIds);
    assert.equal(mine.body.pagination.total, ownIds.length);
    const theirList = await s.call('GET', '/api/exports', { token: other.token });
    assert.deepEqual(theirList.body.items.map((e: any) => e.id), ['exp_fixture_other']);
    const filtered = await s.call('GET', `/api/exports?deliveryId=${cutDelivery}`, { token });
    assert.deepEqual(filtered.body.items.map((e: any) => e.id), [cutExport.id]);
    const one = await s.call('GET', `/api/exports/${cutExport.id}`, { token });
    assert.deepEqual([one.status, one.body.manifestIntact, one.body.manifest.exportId], [200, true, cutExport.id]);
  });

  await t.test('a delivery withdrawn while its package is written: 409 delivery_not_approved, nothing left behind', async () => {
    const before = fs.readdirSync(exportsDir).sort();
    const id = await approvedDelivery([video1.id, video2.id]);
    // The package folder appears in tmp/ only after the delivery was found approved: withdraw it then.
    let withdrawn = false;
    let withdrawing: Promise<unknown> = Promise.resolve();
    const watcher = fs.watch(tmpDir, (_event, name) => {
      if (withdrawn || !name?.startsWith('export-exp_') || name.endsWith('.tar')) return;
      withdrawn = true;
      withdrawing = withdrawDelivery(withScope(s.operator(), w.tree), id, 'pulled while exporting');
    });
    try {
      const r = await s.call('POST', '/api/exports/write', { token, body: { deliveryId: id } });
      assert.ok(withdrawn, 'the delivery was withdrawn while its package was written');
      assert.deepEqual([r.status, r.body.error.code, r.body.error.details.status], [409, 'delivery_not_approved', 'withdrawn'], r.text);
    } finally {
      watcher.close();
      await withdrawing;
    }
    assert.deepEqual(fs.readdirSync(exportsDir).sort(), before);
    assert.deepEqual(fs.readdirSync(tmpDir).filter((f) => f.startsWith('export-')), []);
    assert.equal((await s.db.get<{ n: number }>('SELECT count(*) AS n FROM exports WHERE delivery_id = ?', id))!.n, 0);
  });

  await t.test('adding the archive: a failed transaction leaves no archive; two requests at once record and audit it once', async () => {
    const id = await approvedDelivery([video2.id]);
    const first = await s.call('POST', '/api/exports/write', { token, body: { deliveryId: id } });
    assert.equal(first.status, 201, first.text);
    const exportId = first.body.id;
    const tar = path.join(exportsDir, `${exportId}.tar`);
    const archivedAudits = async () => (await s.db.get<{ n: number }>("SELECT count(*) AS n FROM audit_log WHERE action = 'export.archived' AND target_id = ?", exportId))!.n;

    // FIXTURE - a trigger refusing the audit record makes the recording transaction fail after the
    // archive was moved into exports/ (a real database error; the trigger is dropped right after).
    const allow = await refuseWrites(s.db, {
      name: 'test_refuse_archive_audit', table: 'audit_log', event: 'INSERT', when: "NEW.action = 'export.archived'", message: 'refused by the test',
    });
    try {
      const failed = await s.call('POST', '/api/exports/write', { token, body: { deliveryId: id, archive: true } });
      assert.equal(failed.status, 500, failed.text);
    } finally {
      await allow();
    }
    assert.equal(fs.existsSync(tar), false, 'no unrecorded archive in exports/');
    assert.deepEqual(fs.readdirSync(tmpDir).filter((f) => f.startsWith('export-')), []);
    assert.deepEqual({ ...await s.db.get<Record<string, unknown>>('SELECT archive_path, archive_sha256 FROM exports WHERE id = ?', exportId) }, { archive_path: null, archive_sha256: null });
    assert.equal(await archivedAudits(), 0);

    const both = await Promise.all([0, 1].map(() => s.call('POST', '/api/exports/write', { token, body: { deliveryId: id, archive: true } })));
    assert.deepEqual(both.map((r) => [r.status, r.body.id, r.body.archive?.path]), [[200, exportId, `exports/${exportId}.tar`], [200, exportId, `exports/${exportId}.tar`]]);
    assert.equal(both[0].body.archive.sha256, both[1].body.archive.sha256);
    assert.equal(sha256(fs.readFileSync(tar)), both[0].body.archive.sha256);
    assert.equal(await archivedAudits(), 1, 'audited once');
    assert.deepEqual(fs.readdirSync(tmpDir).filter((f) => f.startsWith('export-')), []);
  });

  await t.test('downloads: the archive and each file with Content-Length, ETag, Range and 304; one audit record per download; access', async () => {
    const dir = path.join(s.config.storageDir, cutExport.path);
    const tarPath = path.join(s.config.storageDir, 'exports', `${cutExport.id}.tar`);
    const tarBytes = fs.readFileSync(tarPath);
    const base = `/api/exports/${cutExport.id}`;
    const get = async (p: string, headers: Record<string, string> = {}, bearer: string | null = token) => {
      const res = await fetch(s.url + p, { headers: { ...headers, ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) } });
      return { res, bytes: Buffer.from(await res.arrayBuffer()) };
    };
    const downloads = async () => await s.db.all<{ metadata: string; actor_user_id: string | null }>(
      "SELECT metadata, actor_user_id FROM audit_log WHERE action = 'export.downloaded' AND target_id = ? ORDER BY seq", cutExport.id);

    const whole = await get(`${base}/archive`);
    assert.equal(whole.res.status, 200);
    assert.ok(whole.bytes.equals(tarBytes));
    assert.equal(whole.res.headers.get('content-length'), String(tarBytes.length));
    assert.equal(whole.res.headers.get('etag'), `"${sha256(tarBytes)}"`);
    assert.equal(whole.res.headers.get('accept-ranges'), 'bytes');
    assert.equal(whole.res.headers.get('content-type'), 'application/x-tar');
    assert.match(whole.res.headers.get('content-disposition') ?? '', new RegExp(`^attachment; filename="${cutExport.id}\\.tar"`));
    const part = await get(`${base}/archive`, { range: 'bytes=512-1023' });
    assert.equal(part.res.status, 206);
    assert.equal(part.res.headers.get('content-range'), `bytes 512-1023/${tarBytes.length}`);
    assert.ok(part.bytes.equals(tarBytes.subarray(512, 1024)));
    const beyond = await get(`${base}/archive`, { range: `bytes=${tarBytes.length}-` });
    assert.deepEqual([beyond.res.status, beyond.res.headers.get('content-range')], [416, `bytes */${tarBytes.length}`]);
    assert.equal((await get(`${base}/archive`, { 'if-none-match': `"${sha256(tarBytes)}"` })).res.status, 304);

    const cutBytes = fs.readFileSync(path.join(dir, 'media/01-E01-cut.mp4'));
    const media = await get(`${base}/file?path=${encodeURIComponent('media/01-E01-cut.mp4')}`);
    assert.equal(media.res.status, 200);
    assert.ok(media.bytes.equals(cutBytes));
    assert.deepEqual([media.res.headers.get('etag'), media.res.headers.get('content-type'), media.res.headers.get('content-length')],
      [`"${cut.contentSha256}"`, 'video/mp4', String(cutBytes.length)]);
    const seek = await get(`${base}/file?path=media/01-E01-cut.mp4`, { range: 'bytes=-100' });
    assert.equal(seek.res.status, 206);
    assert.ok(seek.bytes.equals(cutBytes.subarray(cutBytes.length - 100)));
    const manifest = await get(`${base}/file?path=manifest.json`);
    assert.deepEqual([manifest.res.status, manifest.res.headers.get('etag')], [200, `"${cutExport.manifestSha256}"`]);
    assert.deepEqual(JSON.parse(manifest.bytes.toString('utf8')), cutExport.manifest);
    for (const f of cutExport.manifest.files) {
      const r = await get(`${base}/file?path=${encodeURIComponent(f.path)}`);
      assert.deepEqual([r.res.status, sha256(r.bytes)], [200, f.sha256], f.path);
    }

    // One audit record per download: the whole file or a range from byte 0, never a later range, 304 or HEAD.
    const counted = await downloads();
    assert.equal(counted.length, 3 + cutExport.manifest.files.length, 'archive, media, manifest and every listed file');
    assert.deepEqual(JSON.parse(counted[0].metadata), { deliveryId: cutDelivery, file: 'archive', sha256: sha256(tarBytes), range: null, linkId: null });
    assert.equal(counted[0].actor_user_id, w.user.id);
    assert.deepEqual(JSON.parse(counted[1].metadata).file, 'media/01-E01-cut.mp4');
    assert.equal((await fetch(s.url + `${base}/archive`, { method: 'HEAD', headers: { authorization: `Bearer ${token}` } })).status, 200);
    assert.equal((await get(`${base}/archive`, { range: 'bytes=0-99' })).res.status, 206);
    assert.equal((await downloads()).length, counted.length + 1, 'HEAD is not a download; a range from byte 0 is');

    // Only what the manifest lists; a changed file is never served.
    for (const p of ['media/nope.mp4', '../../../etc/passwd', 'media', `../${cutExport.id}.tar`, 'archive']) {
      const r = await s.call('GET', `${base}/file?path=${encodeURIComponent(p)}`, { token });
      assert.deepEqual([r.status, r.body.error.code], [404, 'not_found'], p);
    }
    const noPath = await s.call('GET', `${base}/file`, { token });
    assert.deepEqual([noPath.status, Object.keys(noPath.body.error.details.fields)], [422, ['path']]);
    const srt = path.join(dir, 'subtitles/E01.srt');
    const srtBytes = fs.readFileSync(srt);
    fs.writeFileSync(srt, Buffer.concat([srtBytes, Buffer.from('x')]));
    try {
      const gone = await s.call('GET', `${base}/file?path=subtitles/E01.srt`, { token });
      assert.deepEqual([gone.status, gone.body.error.code], [410, 'export_file_changed'], gone.text);
    } finally {
      fs.writeFileSync(srt, srtBytes);
    }
    assert.equal((await get(`${base}/file?path=subtitles/E01.srt`)).res.status, 200);
    const bare = await s.call('POST', '/api/exports/write', { token, body: { deliveryId: await approvedDelivery([video1.id]) } });
    assert.equal(bare.status, 201, bare.text);
    const noArchive = await s.call('GET', `/api/exports/${bare.body.id}/archive`, { token });
    assert.deepEqual([noArchive.status, noArchive.body.error.code], [404, 'not_found']);

    // Access: 401 without a credential, 403 without delivery:view, 404 from another organization; a reviewer may download.
    const reviewer = await member(s, 'reviewer', w.tree);
    const writer = await member(s, 'writer', w.tree);
    const other = await member(s, 'org_owner');
    for (const p of [`${base}/archive`, `${base}/file?path=manifest.json`]) {
      assert.equal((await s.call('GET', p)).status, 401, p);
      const denied = await s.call('GET', p, { token: writer.token });
      assert.deepEqual([denied.status, denied.body.error.code], [403, 'permission_denied'], p);
      assert.equal((await s.call('GET', p, { token: other.token })).status, 404, p);
      assert.equal((await get(p, {}, reviewer.token)).res.status, 200, p);
    }
    const secrets = (await s.db.all<{ metadata: string }>("SELECT metadata FROM audit_log WHERE action = 'export.downloaded'")).map((a) => a.metadata).join('\n');
    assert.ok(!secrets.includes(token) && !secrets.includes(s.config.storageDir), 'no token or absolute path in the audit records');
  });

  await t.test('on an archived project writing is 409 project_archived and reading still 200', async () => {
    const fresh = await approvedDelivery([video2.id]);
    const archived = await s.call('POST', `/api/projects/${w.tree.projectId}/lifecycle`, { token, body: { action: 'archive' } });
    assert.equal(archived.status, 200, archived.text);
    const r = await s.call('POST', '/api/exports/write', { token, body: { deliveryId: fresh } });
    assert.deepEqual([r.status, r.body.error.code], [409, 'project_archived']);
    assert.equal((await s.call('GET', '/api/exports', { token })).status, 200);
    assert.equal((await s.call('GET', `/api/exports/${cutExport.id}`, { token })).status, 200);
    assert.equal((await s.db.get<{ n: number }>('SELECT count(*) AS n FROM exports WHERE delivery_id = ?', fresh))!.n, 0);
  });
});

test('the writers: EDL time codes at 24000/1001, SRT spreading, and a ustar archive with a long path that tar reads back', async (t) => {
  const rate = { num: 24000, den: 1001 };
  const media = { path: 'media/01-E01-cut.mp4', fileName: '01-E01-cut.mp4', artifactId: 'art_1', sha256: 'a'.repeat(64), frames: 100_000 };
  const clip = (recordIn: number, frames: number, name: string) => ({
    name, media, sourceIn: recordIn, recordIn, frames, video: true, audio: false, shotId: null,
    sourceArtifactId: null, sourceSha256: null, voiceArtifactId: null, voiceSha256: null,
  });
  const timeline: Timeline = { key: 'E01', title: 'Épisode 1', episodeId: null, rate, clips: [clip(0, 90_000, 'long'), clip(90_000, 30, 'short')] };
  const edl = parseEdl(edlOf(timeline), 24);
  assert.equal(edl.title, '_pisode 1');
  assert.deepEqual(edl.events.map((e) => [e.channel, e.recIn, e.recOut]), [['V', 0, 90_000], ['V', 90_000, 90_030]]);
  assert.equal(timecode(90_000, rate), '01:02:30:00');

  const cues = spreadLines(['abcd', 'ab', '  '], 1000, 1600);
  assert.deepEqual(cues, [{ startMs: 1000, endMs: 1400, text: 'abcd' }, { startMs: 1400, endMs: 1600, text: 'ab' }]);
  assert.equal(srtOf(cues), '1\r\n00:00:01,000 --> 00:00:01,400\r\nabcd\r\n\r\n2\r\n00:00:01,400 --> 00:00:01,600\r\nab\r\n');

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-tar-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const long = `${'deep-folder-name/'.repeat(7)}${'f'.repeat(60)}.bin`;
  const payload = crypto.randomBytes(1500);
  fs.writeFileSync(path.join(dir, 'payload'), payload);
  fs.writeFileSync(path.join(dir, 'empty'), '');
  const out = path.join(dir, 'a.tar');
  const made = await writeTar(out, [{ name: 'pkg' }, { name: `pkg/${long}`, file: path.join(dir, 'payload') }, { name: 'pkg/empty.txt', file: path.join(dir, 'empty') }], 1_700_000_000);
  const bytes = fs.readFileSync(out);
  assert.deepEqual([made.size, made.sha256], [bytes.length, sha256(bytes)]);
  assert.equal(bytes.length % 512, 0);
  assert.deepEqual(execFileSync('tar', ['-tf', out], { encoding: 'utf8' }).trim().split('\n'), ['pkg/', `pkg/${long}`, 'pkg/empty.txt']);
  assert.ok(execFileSync('tar', ['-xOf', out, `pkg/${long}`]).equals(payload));
  assert.match(execFileSync('tar', ['-tvf', out], { encoding: 'utf8' }), /2023-11-1\d/);
});

