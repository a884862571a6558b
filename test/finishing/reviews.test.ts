// Reviews through HTTP on real media made by the worker: a review of a shot's video with comments
// pinned to time codes and frames (checked against the artifact's duration and frame count),
// decisions on exact SHA-256s, the verdict delivery reads, notifications and audit; a new video of the
// shot re-opens the review; a cut review follows the episode's new cut; access, tenancy, validation
// without half-written rows, and the archived project (writes 409, reads 200); a re-open that fails
// is logged and skipped without failing (or retrying) the job that made the new video.
import test from 'node:test';
import assert from 'node:assert/strict';
import { member } from '../helpers/factories.ts';
import { connector } from '../helpers/jobs.ts';
import { artifactOf, episodeCut, firstShot, mediaWorld, shotVideo, shotVoice } from '../helpers/media.ts';
import type { TestServer } from '../helpers/server.ts';
import { reviewVerdictOf } from '../../src/finishing/review/verdict.ts';
import { frameAt, pinOf, timeCodeOf } from '../../src/finishing/review/pin.ts';
import { AppError } from '../../src/kernel/errors.ts';
import { serversRunTheWorker } from '../helpers/server.ts';
import { refuseWrites } from '../helpers/sql.ts';

serversRunTheWorker();

const VIDEO = { seconds: 1, size: '180x320' };

const auditOf = async (s: TestServer, reviewId: string) =>
  await s.db.all<{ action: string; actor_user_id: string | null; metadata: string }>(
    "SELECT action, actor_user_id, metadata FROM audit_log WHERE target_type = 'review' AND target_id = ? ORDER BY seq", reviewId);

async function inbox(s: TestServer, token: string, type: string) {
  const r = await s.call('GET', '/api/notifications?limit=200', { token });
  assert.equal(r.status, 200, r.text);
  return r.body.items.filter((n: { type: string }) => n.type === type);
}

const rowCount = async (s: TestServer, table: string) => (await s.db.get<{ n: number }>(`SELECT count(*) AS n FROM ${table}`))!.n;

test('a shot video review: time-coded comments, decisions on the exact hash, verdict, notifications, audit; a new video re-opens it', async (t) => {
  const w = await mediaWorld(t);
  const { s, token: owner } = w;
  const shotId = w.shotIds[0];
  const video = await shotVideo(w, shotId, 'a lighthouse at dusk', VIDEO);
  assert.equal(video.frameCount, 24);
  const reviewer = await member(s, 'reviewer', w.tree);
  const artDirector = await member(s, 'art_director', w.tree);

  const created = await s.call('POST', '/api/production/reviews', { token: owner, body: { artifactId: video.id, note: 'first look' } });
  assert.equal(created.status, 201, created.text);
  const rv = created.body;
  assert.deepEqual(
    [rv.targetKind, rv.shotId, rv.episodeId, rv.artifactKind, rv.artifactId, rv.artifactSha256, rv.status, rv.reopenCount, rv.requestedBy, rv.note],
    ['shot', shotId, w.episodeId, 'video', video.id, video.contentSha256, 'open', 0, w.user.id, 'first look'],
  );
  assert.match(rv.title, /^Video of shot "/);
  // qa:review holders are told (the default rule of the review category); a writer is not.
  const requested = await inbox(s, reviewer.token, 'review.requested');
  assert.equal(requested.length, 1);
  assert.deepEqual([requested[0].category, requested[0].link], ['review', `/reviews/${rv.id}?project=${w.tree.projectId}`]);
  assert.equal((await inbox(s, (await member(s, 'writer', w.tree)).token, 'review.requested')).length, 0);
  // One review in play per artifact.
  const again = await s.call('POST', '/api/production/reviews', { token: reviewer.token, body: { artifactId: video.id } });
  assert.equal(again.status, 409);
  assert.deepEqual([again.body.error.code, again.body.error.details.reviewId], ['review_exists', rv.id]);

  // Comments: a time code gives its frame, a frame its time code (24 fps); a rectangle on the frame.
  const path = `/api/production/reviews/${rv.id}`;
  const c1 = await s.call('POST', `${path}/comments`, { token: reviewer.token, body: { body: 'the horizon tilts', timeCodeMs: 500 } });
  assert.equal(c1.status, 201, c1.text);
  assert.deepEqual([c1.body.timeCodeMs, c1.body.frame, c1.body.rect, c1.body.artifactSha256, c1.body.onCurrentArtifact], [500, 12, null, video.contentSha256, true]);
  const rect = { x: 0.25, y: 0.5, width: 0.5, height: 0.25 };
  const c2 = await s.call('POST', `${path}/comments`, { token: artDirector.token, body: { body: 'a seam here', frame: 6, rect } });
  assert.equal(c2.status, 201, c2.text);
  assert.deepEqual([c2.body.timeCodeMs, c2.body.frame, c2.body.rect, c2.body.authorId], [250, 6, rect, artDirector.user.id]);
  const both = await s.call('POST', `${path}/comments`, { token: owner, body: { body: 'both agree', timeCodeMs: 980, frame: 23 } });
  assert.equal(both.status, 201, both.text);

  // Bad places are 422 naming the field, and write nothing.
  const comments = await rowCount(s, 'review_comments');
  for (const [body, field] of [
    [{ body: 'too late', timeCodeMs: video.durationMs }, 'timeCodeMs'],
    [{ body: 'too late', timeCodeMs: 5000 }, 'timeCodeMs'],
    [{ body: 'no such frame', frame: 24 }, 'frame'],
    [{ body: 'nowhere' }, 'timeCodeMs'],
    [{ body: 'disagree', timeCodeMs: 100, frame: 20 }, 'frame'],
    [{ body: 'off by one', timeCodeMs: 980, frame: 22 }, 'frame'],
    [{ body: 'before the frame starts', timeCodeMs: 83, frame: 2 }, 'frame'],
    [{ body: 'off the frame', timeCodeMs: 10, rect: { x: 0.8, y: 0, width: 0.5, height: 0.5 } }, 'rect'],
    [{ body: 'empty', timeCodeMs: 10, rect: { x: 0.1, y: 0.1, width: 0, height: 0.5 } }, 'rect'],
    [{ body: 'negative', timeCodeMs: 10, rect: { x: -0.1, y: 0.1, width: 0.2, height: 0.5 } }, 'rect.x'],
    [{ body: '', timeCodeMs: 10 }, 'body'],
    [{ body: 'x', timeCodeMs: -1 }, 'timeCodeMs'],
  ] as const) {
    const r = await s.call('POST', `${path}/comments`, { token: reviewer.token, body });
    assert.equal(r.status, 422, `${JSON.stringify(body)}: ${r.text}`);
    assert.equal(r.body.error.code, 'validation_failed');
    assert.ok(r.body.error.details.fields[field], `${JSON.stringify(body)} names ${field}: ${r.text}`);
  }
  assert.equal(await rowCount(s, 'review_comments'), comments);

  // Decisions: request changes, then approve, each on the artifact's SHA-256; the requester is told.
  const changes = await s.call('POST', `${path}/decisions`, { token: reviewer.token, body: { decision: 'request_changes', note: 'fix the horizon' } });
  assert.equal(changes.status, 201, changes.text);
  assert.deepEqual([changes.body.review.status, changes.body.decision.artifactSha256], ['changes_requested', video.contentSha256]);
  assert.equal((await reviewVerdictOf(s.db, w.tree.projectId, video.id, video.contentSha256))!.approved, false);
  const approve = await s.call('POST', `${path}/decisions`, { token: artDirector.token, body: { decision: 'approve' } });
  assert.equal(approve.status, 201, approve.text);
  assert.equal(approve.body.review.status, 'approved');
  const verdict = (await reviewVerdictOf(s.db, w.tree.projectId, video.id, video.contentSha256))!;
  assert.deepEqual([verdict.reviewId, verdict.status, verdict.approved, verdict.decidedBy, verdict.decidedAt],
    [rv.id, 'approved', true, artDirector.user.id, approve.body.decision.createdAt]);
  assert.equal((await reviewVerdictOf(s.db, w.tree.projectId, video.id, '0'.repeat(64)))!.approved, false, 'other bytes are not approved');
  const decided = await inbox(s, owner, 'review.decided');
  assert.deepEqual(decided.map((n: { subject: string }) => n.subject).sort(), [`Approved: ${rv.title}`, `Changes requested: ${rv.title}`]);
  await assert.rejects(async () => await s.db.run("UPDATE review_decisions SET decision = 'approve' WHERE review_id = ?", rv.id), /immutable/);

  const detail = await s.call('GET', path, { token: reviewer.token });
  assert.equal(detail.status, 200);
  assert.deepEqual(detail.body.comments.map((c: { body: string; timeCodeMs: number }) => [c.body, c.timeCodeMs]),
    [['the horizon tilts', 500], ['a seam here', 250], ['both agree', 980]]);
  assert.deepEqual(detail.body.decisions.map((d: { decision: string; decidedBy: string }) => [d.decision, d.decidedBy]),
    [['request_changes', reviewer.user.id], ['approve', artDirector.user.id]]);

  // A voice line of the same shot is another kind: the video review stays approved. Audio comments take a time code only.
  const voice = await shotVoice(w, shotId, 'The light is late tonight.');
  assert.equal((await s.call('GET', path, { token: owner })).body.status, 'approved');
  const audioReview = (await s.call('POST', '/api/production/reviews', { token: reviewer.token, body: { artifactId: voice.id, title: 'Line 1' } })).body;
  assert.deepEqual([audioReview.artifactKind, audioReview.title], ['audio', 'Line 1']);
  const apath = `/api/production/reviews/${audioReview.id}`;
  for (const [body, field] of [[{ body: 'x', frame: 1 }, 'frame'], [{ body: 'x', timeCodeMs: 10, rect }, 'rect'], [{ body: 'x' }, 'timeCodeMs']] as const) {
    const r = await s.call('POST', `${apath}/comments`, { token: reviewer.token, body });
    assert.equal(r.status, 422, r.text);
    assert.ok(r.body.error.details.fields[field], r.text);
  }
  const ac = await s.call('POST', `${apath}/comments`, { token: reviewer.token, body: { body: 'breathy', timeCodeMs: 200 } });
  assert.deepEqual([ac.status, ac.body.timeCodeMs, ac.body.frame], [201, 200, null]);
  // Withdrawn is final.
  const wd = await s.call('POST', `${apath}/withdraw`, { token: reviewer.token });
  assert.deepEqual([wd.status, wd.body.status], [200, 'withdrawn']);
  for (const [p, body] of [[`${apath}/withdraw`, undefined], [`${apath}/comments`, { body: 'x', timeCodeMs: 1 }], [`${apath}/decisions`, { decision: 'approve' }]] as const) {
    const r = await s.call('POST', p, { token: reviewer.token, body });
    assert.deepEqual([r.status, r.body.error.code], [409, 'review_withdrawn'], p);
  }
  assert.equal((await reviewVerdictOf(s.db, w.tree.projectId, voice.id, voice.contentSha256))!.approved, false);

  // A new video of the shot re-opens the review on the new bytes; the last deciders are told.
  const video2 = await shotVideo(w, shotId, 'a lighthouse at dusk, level horizon', VIDEO);
  const reopened = (await s.call('GET', path, { token: owner })).body;
  assert.deepEqual([reopened.status, reopened.reopenCount, reopened.artifactId, reopened.artifactSha256],
    ['reopened', 1, video2.id, video2.contentSha256]);
  assert.ok(reopened.comments.every((c: { onCurrentArtifact: boolean; artifactId: string }) => !c.onCurrentArtifact && c.artifactId === video.id));
  assert.equal(await reviewVerdictOf(s.db, w.tree.projectId, video.id, video.contentSha256), null, 'the old video is under no review now');
  const v2 = (await reviewVerdictOf(s.db, w.tree.projectId, video2.id, video2.contentSha256))!;
  assert.deepEqual([v2.reviewId, v2.status, v2.approved], [rv.id, 'reopened', false]);
  for (const u of [reviewer, artDirector]) assert.equal((await inbox(s, u.token, 'review.reopened')).length, 1, 'a decider on the old video is told');
  assert.equal((await inbox(s, owner, 'review.reopened')).length, 0, 'the requester had decisions from others: the deciders are told');
  assert.equal((await s.call('GET', apath, { token: owner })).body.artifactId, voice.id, 'the withdrawn audio review does not move');
  const superseded = await s.call('POST', '/api/production/reviews', { token: owner, body: { artifactId: video.id } });
  assert.deepEqual([superseded.status, superseded.body.error.code, superseded.body.error.details.currentArtifactId], [409, 'artifact_superseded', video2.id]);
  const approve2 = await s.call('POST', `${path}/decisions`, { token: reviewer.token, body: { decision: 'approve' } });
  assert.equal(approve2.body.decision.artifactSha256, video2.contentSha256);
  assert.equal((await reviewVerdictOf(s.db, w.tree.projectId, video2.id, video2.contentSha256))!.approved, true);

  // The trail: every write audited against the review, the re-open by the worker with both hashes.
  const trail = await auditOf(s, rv.id);
  assert.deepEqual(trail.map((a) => a.action), [
    'review.requested', 'review.commented', 'review.commented', 'review.commented', 'review.decided', 'review.decided', 'review.reopened', 'review.decided',
  ]);
  const reopenMeta = JSON.parse(trail[6].metadata);
  assert.deepEqual([reopenMeta.from, reopenMeta.fromArtifactId, reopenMeta.fromSha256, reopenMeta.toArtifactId, reopenMeta.toSha256, reopenMeta.reopenCount],
    ['approved', video.id, video.contentSha256, video2.id, video2.contentSha256, 1]);
  assert.deepEqual(JSON.parse(trail[1].metadata).timeCodeMs, 500);
  assert.deepEqual((await auditOf(s, audioReview.id)).map((a) => a.action), ['review.requested', 'review.commented', 'review.withdrawn']);
});

test('a cut review follows the new cut; access, tenancy, list filters, create validation and the archived project', async (t) => {
  const w = await mediaWorld(t);
  const { s, token: owner } = w;
  const shotId = w.shotIds[0];
  const video = await shotVideo(w, shotId, 'a red kite', VIDEO);
  const cut = await episodeCut(w);
  assert.equal(cut.source, 'composition');

  const created = await s.call('POST', '/api/production/reviews', { token: owner, body: { artifactId: cut.id } });
  assert.equal(created.status, 201, created.text);
  const rv = created.body;
  assert.deepEqual([rv.targetKind, rv.episodeId, rv.shotId, rv.artifactId, rv.artifactSha256], ['cut', w.episodeId, null, cut.id, cut.contentSha256]);
  assert.match(rv.title, /^Cut of episode 1 "/);
  const shotReview = (await s.call('POST', '/api/production/reviews', { token: owner, body: { artifactId: video.id } })).body;
  const path = `/api/production/reviews/${rv.id}`;
  assert.equal((await s.call('POST', `${path}/comments`, { token: owner, body: { body: 'cut too early', timeCodeMs: 900 } })).status, 201);

  // Create: unknown, another organization's and unreviewable artifacts are 422; nothing is written.
  const stranger = await member(s, 'org_owner');
  const strangerConnector = await connector(s, stranger.token, w.m.url);
  const theirShot = await firstShot(s, stranger.tree.projectId);
  const theirVideo = await artifactOf(w, { kind: 'video', connectorId: strangerConnector, shotId: theirShot.id, prompt: 'a green field', parameters: VIDEO }, stranger.token);
  const theirReview = (await s.call('POST', '/api/production/reviews', { token: stranger.token, body: { artifactId: theirVideo.id } })).body;
  const loose = await artifactOf(w, { kind: 'image', connectorId: w.id, prompt: 'a loose sketch' });
  const reviews = await rowCount(s, 'reviews');
  for (const [body, field] of [
    [{ artifactId: 'art_missing' }, 'artifactId'], [{ artifactId: theirVideo.id }, 'artifactId'], [{ artifactId: loose.id }, 'artifactId'],
    [{}, 'artifactId'], [{ artifactId: video.id, title: '' }, 'title'], [{ artifactId: video.id, extra: 1 }, 'extra'],
  ] as const) {
    const r = await s.call('POST', '/api/production/reviews', { token: owner, body });
    assert.equal(r.status, 422, `${JSON.stringify(body)}: ${r.text}`);
    assert.ok(r.body.error.details.fields[field], r.text);
  }
  assert.equal(await rowCount(s, 'reviews'), reviews);
  const badDecision = await s.call('POST', `${path}/decisions`, { token: owner, body: { decision: 'maybe' } });
  assert.deepEqual([badDecision.status, Object.keys(badDecision.body.error.details.fields)], [422, ['decision']]);

  // Lists are the project's own, newest first, filtered; the other organization sees only its own.
  const list = async (token: string, q = '') => {
    const r = await s.call('GET', `/api/production/reviews${q}`, { token });
    assert.equal(r.status, 200, r.text);
    return r.body;
  };
  const mine = await list(owner);
  assert.deepEqual(mine.items.map((x: { id: string }) => x.id), [shotReview.id, rv.id]);
  assert.deepEqual(mine.pagination, { page: 1, pageSize: 50, total: 2 });
  assert.deepEqual((await list(stranger.token)).items.map((x: { id: string }) => x.id), [theirReview.id]);
  assert.deepEqual((await list(owner, `?shotId=${shotId}`)).items.map((x: { id: string }) => x.id), [shotReview.id]);
  assert.deepEqual((await list(owner, `?artifactId=${cut.id}`)).items.map((x: { id: string }) => x.id), [rv.id]);
  assert.equal((await list(owner, `?episodeId=${w.episodeId}`)).pagination.total, 2);
  assert.equal((await list(owner, '?status=approved')).pagination.total, 0);
  const paged = await list(owner, '?pageSize=1&page=2');
  assert.deepEqual([paged.items[0].id, paged.pagination.total], [rv.id, 2]);
  assert.equal((await s.call('GET', '/api/production/reviews?status=done', { token: owner })).status, 422);

  // Access: no credential 401, a writer 403, another organization's review 404; reviewer roles succeed.
  const writer = await member(s, 'writer', w.tree);
  const producer = await member(s, 'producer', w.tree);
  const calls: Array<[string, string, unknown]> = [
    ['POST', '/api/production/reviews', { artifactId: video.id }], ['GET', '/api/production/reviews', undefined], ['GET', path, undefined],
    ['POST', `${path}/comments`, { body: 'x', timeCodeMs: 1 }], ['POST', `${path}/decisions`, { decision: 'approve' }], ['POST', `${path}/withdraw`, undefined],
  ];
  for (const [method, p, body] of calls) {
    assert.equal((await s.call(method, p, { body })).status, 401, `${method} ${p}`);
    const denied = await s.call(method, p, { token: writer.token, body });
    assert.deepEqual([denied.status, denied.body.error.code], [403, 'permission_denied'], `${method} ${p}`);
    if (p.startsWith(path)) assert.equal((await s.call(method, p, { token: stranger.token, body })).status, 404, `${method} ${p} from another organization`);
  }
  assert.equal((await s.call('GET', `/api/production/reviews/${theirReview.id}`, { token: owner })).status, 404);
  assert.equal((await s.call('GET', '/api/production/reviews/rev_missing', { token: owner })).status, 404);
  const ok = await s.call('POST', `${path}/decisions`, { token: producer.token, body: { decision: 'approve' } });
  assert.equal(ok.status, 201, ok.text);
  assert.equal((await reviewVerdictOf(s.db, w.tree.projectId, cut.id, cut.contentSha256))!.approved, true);
  assert.equal(await reviewVerdictOf(s.db, stranger.tree.projectId, cut.id, cut.contentSha256), null, 'the verdict is read in the project only');

  // A new cut of the episode moves the cut review (not the shot review) and re-opens it; the decider is told.
  const cut2 = await episodeCut(w);
  const moved = (await s.call('GET', path, { token: owner })).body;
  assert.deepEqual([moved.status, moved.artifactId, moved.artifactSha256, moved.reopenCount], ['reopened', cut2.id, cut2.contentSha256, 1]);
  assert.equal((await s.call('GET', `/api/production/reviews/${shotReview.id}`, { token: owner })).body.status, 'open');
  assert.equal((await inbox(s, producer.token, 'review.reopened')).length, 1);
  assert.equal(await reviewVerdictOf(s.db, w.tree.projectId, cut.id, cut.contentSha256), null);

  // Archived: every write is 409 project_archived and writes nothing; reads stay 200.
  const archive = await s.call('POST', `/api/projects/${w.tree.projectId}/lifecycle`, { token: owner, body: { action: 'archive' } });
  assert.equal(archive.status, 200, archive.text);
  const before = [await rowCount(s, 'reviews'), await rowCount(s, 'review_comments'), await rowCount(s, 'review_decisions')];
  for (const [method, p, body] of calls.filter(([m]) => m === 'POST')) {
    const r = await s.call(method, p, { token: owner, body });
    assert.deepEqual([r.status, r.body.error.code], [409, 'project_archived'], `${method} ${p}`);
  }
  assert.deepEqual([await rowCount(s, 'reviews'), await rowCount(s, 'review_comments'), await rowCount(s, 'review_decisions')], before);
  assert.equal((await s.call('GET', path, { token: owner })).status, 200);
  assert.equal((await list(owner)).pagination.total, 2);
});

test('comment places by kind: an image takes frame 0 and a rectangle, text nothing; NTSC rates derive frames and time codes', () => {
  const fields = (fn: () => unknown) => {
    try {
      fn();
    } catch (err) {
      assert.ok(err instanceof AppError && err.status === 422, String(err));
      return Object.keys((err.details as { fields: Record<string, string> }).fields).sort();
    }
    return assert.fail('expected 422');
  };
  const image = { kind: 'image' as const, duration_ms: null, frame_count: 1, frame_rate: null };
  const rect = { x: 0, y: 0, width: 1, height: 1 };
  assert.deepEqual(pinOf(image, { body: 'b', frame: 0, rect }), { timeCodeMs: null, frame: 0, rect });
  assert.deepEqual(pinOf(image, { body: 'general' }), { timeCodeMs: null, frame: null, rect: null });
  assert.deepEqual(fields(() => pinOf(image, { body: 'b', frame: 1, timeCodeMs: 0 })), ['frame', 'timeCodeMs']);
  const text = { kind: 'other' as const, duration_ms: null, frame_count: null, frame_rate: null };
  assert.deepEqual(fields(() => pinOf(text, { body: 'b', frame: 0, timeCodeMs: 0, rect })), ['frame', 'rect', 'timeCodeMs']);
  const ntsc = { kind: 'video' as const, duration_ms: 10_010, frame_count: 300, frame_rate: '30000/1001' };
  assert.deepEqual(pinOf(ntsc, { body: 'b', frame: 299 }), { timeCodeMs: 9977, frame: 299, rect: null });
  assert.deepEqual(pinOf(ntsc, { body: 'b', timeCodeMs: 10_000 }), { timeCodeMs: 10_000, frame: 299, rect: null });
  assert.deepEqual(pinOf(ntsc, { body: 'b', timeCodeMs: 1001 }).frame, 30);
});

test('frame and time code round-trip: the derived time code lies inside its frame at 24, 25 and 30000/1001 fps', () => {
  for (const frameRate of ['24', '25', '30000/1001']) {
    const [num, den = 1] = frameRate.split('/').map(Number);
    const video = { kind: 'video' as const, duration_ms: 10_000, frame_count: 200, frame_rate: frameRate };
    for (let f = 0; f <= 100; f++) {
      const ms = timeCodeOf({ num, den }, f);
      assert.equal(frameAt({ num, den }, ms), f, `${frameRate} frame ${f} at ${ms} ms`);
      assert.ok(ms * num >= f * 1000 * den && (ms - 1) * num < f * 1000 * den, `${ms} ms is the first whole millisecond of frame ${f} at ${frameRate}`);
      const pinned = pinOf(video, { body: 'b', frame: f });
      assert.deepEqual([pinned.timeCodeMs, pinned.frame], [ms, f]);
      assert.equal(pinOf(video, { body: 'b', timeCodeMs: ms }).frame, f);
      assert.deepEqual(pinOf(video, { body: 'b', timeCodeMs: ms, frame: f }).frame, f, 'both given and naming the same frame');
    }
  }
  // The cases rounding got wrong: 24 fps frame 2 starts at 83.33 ms, 30000/1001 frame 1 at 33.37 ms.
  assert.equal(timeCodeOf({ num: 24, den: 1 }, 2), 84);
  assert.equal(timeCodeOf({ num: 30000, den: 1001 }, 1), 34);
});

test('a re-open that fails is logged and skipped: the job completes on its first attempt, the review stays on the old video', async (t) => {
  const w = await mediaWorld(t);
  const { s, token: owner } = w;
  const shotId = w.shotIds[0];
  const video = await shotVideo(w, shotId, 'a harbour at dawn', VIDEO);
  const rv = (await s.call('POST', '/api/production/reviews', { token: owner, body: { artifactId: video.id } })).body;
  const path = `/api/production/reviews/${rv.id}`;
  // A database state that makes the re-open throw (no project module is replaced): reviews refuse updates.
  const thaw = await refuseWrites(s.db, { name: 'reviews_frozen', table: 'reviews', event: 'UPDATE', message: 'reviews are frozen' });
  const video2 = await shotVideo(w, shotId, 'a harbour at dawn, calmer water', VIDEO);
  const job = (await s.db.get<{ status: string; attempt: number; error: string | null }>('SELECT status, attempt, error FROM generation_jobs WHERE id = ?', video2.jobId))!;
  assert.deepEqual([job.status, job.attempt, job.error], ['completed', 1, null], 'the job is neither failed nor retried');
  const kept = (await s.call('GET', path, { token: owner })).body;
  assert.deepEqual([kept.status, kept.artifactId, kept.reopenCount], ['open', video.id, 0]);
  assert.deepEqual((await auditOf(s, rv.id)).map((a) => a.action), ['review.requested'], 'nothing of the failed re-open is left');
  let logged: string | undefined;
  for (let i = 0; i < 50 && !logged; i++) {
    logged = s.logs.find((l) => l.includes('re-opening reviews failed') && l.includes(video2.jobId));
    if (!logged) await new Promise((r) => setTimeout(r, 20));
  }
  assert.ok(logged, 'the skipped re-open is logged with the job id');
  assert.match(logged, /"level":"error"/);
  assert.match(logged, /reviews are frozen/);
  // The delivery side sees the gap: the new video is under no review, so it is not approved.
  assert.equal(await reviewVerdictOf(s.db, w.tree.projectId, video2.id, video2.contentSha256), null);

  // Once updates work again, the next new video re-opens the review as usual.
  await thaw();
  const video3 = await shotVideo(w, shotId, 'a harbour at dawn, gulls', VIDEO);
  const moved = (await s.call('GET', path, { token: owner })).body;
  assert.deepEqual([moved.status, moved.artifactId, moved.reopenCount], ['reopened', video3.id, 1]);
});
