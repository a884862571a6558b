// Media evidence through HTTP with the worker and the project's own model server: every output file
// of a completed job is a registered artifact with its real first and last frames; the list is
// scoped; the content route serves exact bytes (ETag = SHA-256, Range, 304) and the frames; stored
// paths that leave storage/ are refused; an episode cut joins the shots' videos in order; continuity
// between consecutive shots is measured and shown in the production graph.
import test from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { runFfmpeg, runFfprobe } from '../../src/media-tools/ffmpeg.ts';
import { grant, login, makeUser, member } from '../helpers/factories.ts';
import { createJob, jobWorld, waitJob } from '../helpers/jobs.ts';
import type { TestServer } from '../helpers/server.ts';
import { serversRunTheWorker } from '../helpers/server.ts';

serversRunTheWorker();

const sha256 = (b: Buffer) => crypto.createHash('sha256').update(b).digest('hex');

/** rgb24 pixels of an image file's bytes (decoded by ffmpeg) and its size. */
async function pixels(png: Buffer): Promise<{ width: number; height: number; at: (x: number, y: number) => number[] }> {
  const probe = await runFfprobe<{ streams: Array<{ width: number; height: number }> }>(
    ['-v', 'error', '-show_streams', '-of', 'json', '-i', 'pipe:0'], { input: png });
  const { width, height } = probe.json!.streams[0];
  const { stdout } = await runFfmpeg(['-v', 'error', '-i', 'pipe:0', '-f', 'rawvideo', '-pix_fmt', 'rgb24', 'pipe:1'], { input: png });
  assert.equal(stdout.length, width * height * 3);
  return { width, height, at: (x, y) => [...stdout.subarray((y * width + x) * 3, (y * width + x) * 3 + 3)] };
}

const near = (a: number[], b: number[], tolerance = 24) => a.every((v, i) => Math.abs(v - b[i]) <= tolerance);

async function bytes(s: TestServer, token: string, p: string, headers: Record<string, string> = {}) {
  const res = await fetch(s.url + p, { headers: { authorization: `Bearer ${token}`, ...headers } });
  return { res, body: Buffer.from(await res.arrayBuffer()) };
}

const starterShot = async (s: TestServer, projectId: string) =>
  (await s.db.get<{ id: string; episode_id: string }>('SELECT id, episode_id FROM shots WHERE project_id = ? ORDER BY position', projectId))!;

test('a video job registers its artifact with evidence, provenance and real frames; content and frames are served exactly', async (t) => {
  const { s, token, tree, id } = await jobWorld(t);
  const shot = await starterShot(s, tree.projectId);
  const job = await createJob(s, token, { kind: 'video', connectorId: id, shotId: shot.id, prompt: 'a red door opens', parameters: { seconds: 1, seed: 7, size: '320x180' } });
  const done = await waitJob(s, token, job.id, ['completed', 'failed'], 30_000);
  assert.equal(done.status, 'completed', done.error);
  assert.equal(done.episodeId, shot.episode_id);
  assert.equal(done.output.artifactIds.length, 1);

  const list = await s.call('GET', `/api/production/media-artifacts?jobId=${job.id}`, { token });
  assert.equal(list.status, 200, list.text);
  assert.equal(list.body.items.length, 1);
  const a = list.body.items[0];
  assert.equal(a.id, done.output.artifactIds[0]);
  const stored = fs.readFileSync(path.join(s.config.storageDir, a.path));
  assert.match(a.path, new RegExp(`^outputs/${job.id}/video-1\\.mp4$`));
  assert.deepEqual(
    [a.kind, a.source, a.mimeType, a.fileSize, a.contentSha256, a.width, a.height, a.resolution, a.frameRate, a.frameCount, a.videoCodec, a.audioCodec, a.hasVideo, a.hasAudio, a.shotId, a.episodeId],
    ['video', 'generation', 'video/mp4', stored.length, sha256(stored), 320, 180, '320x180', '24/1', 24, 'h264', 'aac', true, true, shot.id, shot.episode_id],
  );
  assert.ok(Math.abs(a.durationMs - 1000) <= 50, `duration ${a.durationMs}`);
  assert.deepEqual([a.provenance.connectorId, a.provenance.model, a.provenance.seed, a.provenance.prompt], [id, 'svc-video', 7, 'a red door opens']);
  assert.deepEqual(a.provenance.inputs, []);

  // The file: byte-identical, ETag = SHA-256, 304, Range.
  const whole = await bytes(s, token, a.contentUrl);
  assert.equal(whole.res.status, 200);
  assert.ok(whole.body.equals(stored));
  assert.equal(whole.res.headers.get('etag'), `"${a.contentSha256}"`);
  assert.equal(whole.res.headers.get('content-type'), 'video/mp4');
  assert.equal(whole.res.headers.get('content-length'), String(stored.length));
  assert.match(whole.res.headers.get('content-disposition')!, /^inline; filename="video-1\.mp4"/);
  assert.equal((await bytes(s, token, a.contentUrl, { 'if-none-match': `"${a.contentSha256}"` })).res.status, 304);
  const part = await bytes(s, token, a.contentUrl, { range: 'bytes=100-199' });
  assert.equal(part.res.status, 206);
  assert.equal(part.res.headers.get('content-range'), `bytes 100-199/${stored.length}`);
  assert.ok(part.body.equals(stored.subarray(100, 200)));
  assert.equal((await bytes(s, token, a.contentUrl, { range: `bytes=${stored.length}-` })).res.status, 416);

  // The frames: full resolution PNGs, the prompt's red first, the fade's other colour last.
  for (const which of ['first', 'last'] as const) {
    const f = await bytes(s, token, `${a.contentUrl}?frame=${which}`);
    assert.equal(f.res.status, 200);
    assert.equal(f.res.headers.get('content-type'), 'image/png');
    assert.equal(f.res.headers.get('etag'), `"${a[`${which}Frame`].sha256}"`);
    assert.equal(sha256(f.body), a[`${which}Frame`].sha256);
    assert.equal(f.body.length, a[`${which}Frame`].size);
    assert.match(a[`${which}Frame`].path, new RegExp(`^frames/${job.id}/`));
    const img = await pixels(f.body);
    assert.deepEqual([img.width, img.height], [320, 180]);
    const corner = img.at(300, 10);
    if (which === 'first') assert.ok(near(corner, [220, 20, 20]), `first frame corner ${String(corner)}`);
    else assert.ok(!near(corner, [220, 20, 20], 60), `last frame corner ${String(corner)} is no longer red`);
  }
});

test('image and speech artifacts: an image is its own frame, audio has none; access, tenancy and stored-path rules', async (t) => {
  const { s, token, tree, id } = await jobWorld(t);
  const image = await createJob(s, token, { kind: 'image', connectorId: id, prompt: 'a blue kite' });
  const speech = await createJob(s, token, { kind: 'tts', connectorId: id, prompt: 'Hello there.' });
  for (const j of [image, speech]) assert.equal((await waitJob(s, token, j.id, ['completed', 'failed'])).status, 'completed');
  const all = await s.call('GET', '/api/production/media-artifacts', { token });
  assert.equal(all.body.items.length, 2);
  const img = all.body.items.find((x: { jobId: string }) => x.jobId === image.id);
  const audio = all.body.items.find((x: { jobId: string }) => x.jobId === speech.id);
  assert.deepEqual([img.kind, img.mimeType, img.frameCount, img.durationMs, img.hasVideo], ['image', 'image/png', 1, null, false]);
  assert.deepEqual([img.firstFrame.path, img.firstFrame.sha256, img.lastFrame.path], [img.path, img.contentSha256, img.path]);
  const frame = await bytes(s, token, `${img.contentUrl}?frame=last`);
  assert.ok(frame.body.equals(fs.readFileSync(path.join(s.config.storageDir, img.path))));
  assert.deepEqual([audio.kind, audio.hasAudio, audio.hasVideo, audio.firstFrame, audio.lastFrame], ['audio', true, false, null, null]);
  assert.ok(audio.durationMs > 0);
  const none = await s.call('GET', `${audio.contentUrl}?frame=first`, { token });
  assert.equal(none.status, 404);
  assert.equal(none.body.error.code, 'not_found');
  assert.equal((await s.call('GET', `/api/production/media-artifacts?shotId=nope&limit=5`, { token })).body.items.length, 0);
  // Generated media counts in the organization's storage: the files, and the frames that are files of their own.
  const usage = await s.call('GET', '/api/usage/storage', { token });
  assert.equal(usage.body.usedBytes, img.fileSize + audio.fileSize);
  assert.deepEqual(usage.body.projects.map((p: { projectId: string; files: number }) => [p.projectId, p.files]), [[tree.projectId, 2]]);
  assert.equal((await s.call('GET', '/api/production/media-artifacts?limit=0', { token })).status, 422);

  // Access: no credential 401; a writer (script:read only) 403; a reviewer (qa:review) reads.
  assert.equal((await s.call('GET', '/api/production/media-artifacts')).status, 401);
  assert.equal((await s.call('GET', img.contentUrl)).status, 401);
  const writer = await member(s, 'writer', tree);
  for (const p of ['/api/production/media-artifacts', img.contentUrl, `/api/production/media-artifacts/${img.id}`]) {
    const r = await s.call('GET', p, { token: writer.token });
    assert.equal(r.status, 403, p);
    assert.equal(r.body.error.code, 'permission_denied');
  }
  const reviewer = await member(s, 'reviewer', tree);
  assert.equal((await s.call('GET', '/api/production/media-artifacts', { token: reviewer.token })).body.items.length, 2);
  assert.equal((await bytes(s, reviewer.token, img.contentUrl)).res.status, 200);
  // Another organization sees none of it: an empty list, 404 on the ids.
  const stranger = await member(s, 'org_owner');
  assert.deepEqual((await s.call('GET', '/api/production/media-artifacts', { token: stranger.token })).body.items, []);
  for (const p of [img.contentUrl, `${img.contentUrl}?frame=first`, `/api/production/media-artifacts/${img.id}`]) {
    assert.equal((await s.call('GET', p, { token: stranger.token })).status, 404, p);
  }
  assert.equal((await s.call('GET', '/api/production/media-artifacts/art_missing/content', { token })).status, 404);

  // Stored paths: absolute, parent segments and a symbolic link leading out are 422; missing on disk is 404.
  const outside = fs.mkdtempSync(path.join(path.dirname(s.config.storageDir), 'outside-'));
  fs.writeFileSync(path.join(outside, 'secret.txt'), 'not yours');
  fs.symlinkSync(outside, path.join(s.config.storageDir, 'outputs', 'escape'));
  for (const [stored, status] of [
    ['/etc/hostname', 422], ['../data/svc.db', 422], ['outputs/../../data/svc.db', 422], ['outputs/escape/secret.txt', 422],
    [`outputs/${image.id}/not-yet-written.png`, 404],
  ] as const) {
    await s.db.run('UPDATE media_artifacts SET storage_path = ? WHERE id = ?', stored, img.id);
    const r = await s.call('GET', img.contentUrl, { token });
    assert.equal(r.status, status, `${stored}: ${r.text}`);
    if (status === 422) assert.equal(r.body.error.code, 'unsafe_path');
  }
  await s.db.run('UPDATE media_artifacts SET first_frame_path = ? WHERE id = ?', '../../etc/passwd', img.id);
  assert.equal((await s.call('GET', `${img.contentUrl}?frame=first`, { token })).status, 422);
});

test('an episode cut joins the shots\u2019 videos in shot order with the summed duration; continuity between shots is in the graph', async (t) => {
  const { s, token, tree, id } = await jobWorld(t);
  const first = await starterShot(s, tree.projectId);
  const shots = [first.id];
  for (const title of ['Second', 'Third']) {
    const r = await s.call('POST', '/api/production/shots', { token, body: { episodeId: first.episode_id, title } });
    assert.equal(r.status, 201, r.text);
    shots.push(r.body.id);
  }
  const specs = [['red', 1, '320x180'], ['green', 1.5, '640x360'], ['blue', 0.5, '180x320']] as const;
  const videos = [];
  for (const [i, [colour, seconds, size]] of specs.entries()) {
    videos.push(await createJob(s, token, { kind: 'video', connectorId: id, shotId: shots[i], prompt: `a ${colour} sky`, parameters: { seconds, size } }));
  }
  for (const v of videos) assert.equal((await waitJob(s, token, v.id, ['completed', 'failed'], 30_000)).status, 'completed');
  const artifacts = [];
  for (const v of videos) artifacts.push((await s.call('GET', `/api/production/media-artifacts?jobId=${v.id}`, { token })).body.items[0]);

  // Bad compose requests are refused before anything is written.
  for (const body of [
    { kind: 'compose' }, { kind: 'compose', episodeId: first.episode_id, connectorId: id }, { kind: 'compose', episodeId: first.episode_id, shotId: first.id },
    { kind: 'compose', episodeId: first.episode_id, parameters: { width: 333, height: 200 } },
    { kind: 'compose', episodeId: first.episode_id, parameters: { artifactIds: ['art_nope'] } },
    { kind: 'compose', episodeId: 'ep_nope' },
  ]) {
    const r = await s.call('POST', '/api/jobs', { token, body });
    assert.equal(r.status, 422, JSON.stringify(body));
    assert.equal(r.body.error.code, 'validation_failed');
  }
  const compose = await s.call('POST', '/api/jobs', { token, body: { kind: 'compose', episodeId: first.episode_id } });
  assert.equal(compose.status, 201, compose.text);
  assert.equal(compose.body.connectorId, null);
  const done = await waitJob(s, token, compose.body.id, ['completed', 'failed'], 60_000);
  assert.equal(done.status, 'completed', done.error);
  const cut = (await s.call('GET', `/api/production/media-artifacts?jobId=${done.id}`, { token })).body.items[0];
  assert.deepEqual([cut.kind, cut.source, cut.episodeId, cut.shotId, cut.width, cut.height, cut.frameRate, cut.hasAudio], ['video', 'composition', first.episode_id, null, 320, 180, '24/1', true]);
  const sum = artifacts.reduce((n, a) => n + a.durationMs, 0);
  assert.ok(Math.abs(cut.durationMs - sum) <= 1000 / 24, `cut ${cut.durationMs} ms, inputs ${sum} ms`);
  assert.deepEqual(cut.composition.inputs.map((i: { shotId: string; artifactId: string; contentSha256: string }) => [i.shotId, i.artifactId, i.contentSha256]),
    artifacts.map((a, i) => [shots[i], a.id, a.contentSha256]));
  const row = (await s.db.get<{ storage_path: string; inputs: string }>('SELECT * FROM media_compositions WHERE artifact_id = ?', cut.id))!;
  assert.equal(row.storage_path, cut.path);

  // The joins: the cut's frames on each side of a join are the inputs' last and first frames.
  const cutFile = path.join(s.config.storageDir, cut.path);
  const frameAt = async (n: number) => {
    const { stdout } = await runFfmpeg(['-v', 'error', '-i', cutFile, '-vf', `select=eq(n\\,${n})`, '-vsync', '0', '-frames:v', '1', '-f', 'image2pipe', '-c:v', 'png', 'pipe:1']);
    return pixels(stdout);
  };
  const corner = async (url: string) => (await pixels((await bytes(s, token, url)).body)).at(4, 4);
  const inputs = cut.composition.inputs as Array<{ frames: number }>;
  let start = 0;
  for (const [i, a] of artifacts.entries()) {
    const end = start + inputs[i].frames - 1;
    // Sampled inside the picture area of each input (the portrait one is pillarboxed: its centre column).
    const x = i === 2 ? 160 : 4;
    const firstIn = (await frameAt(start)).at(x, i === 2 ? 10 : 4);
    const lastIn = (await frameAt(end)).at(x, i === 2 ? 10 : 4);
    const expectFirst = await corner(a.firstFrame.url);
    const expectLast = await corner(a.lastFrame.url);
    assert.ok(near(firstIn, expectFirst, 40), `segment ${i + 1} starts with ${String(firstIn)}, its input with ${String(expectFirst)}`);
    assert.ok(near(lastIn, expectLast, 40), `segment ${i + 1} ends with ${String(lastIn)}, its input with ${String(expectLast)}`);
    start = end + 1;
  }
  assert.equal(start, cut.frameCount);

  // Continuity: measured when each video was registered, listed with the artifacts and in the graph.
  const middle = (await s.call('GET', `/api/production/media-artifacts/${artifacts[1].id}`, { token })).body;
  assert.equal(middle.continuity.previous[0].fromArtifactId, artifacts[0].id);
  assert.equal(middle.continuity.next[0].toArtifactId, artifacts[2].id);
  const graph = await s.call('GET', '/api/production/graph', { token });
  const edges = graph.body.edges.filter((e: { kind: string }) => e.kind === 'continuity');
  assert.deepEqual(edges.map((e: { from: string; to: string }) => [e.from, e.to]), [[shots[0], shots[1]], [shots[1], shots[2]]]);
  for (const e of edges) {
    assert.ok(e.continuity.score >= 0 && e.continuity.score <= 1);
    assert.equal(e.continuity.stored, true);
  }
  const detail = await s.call('GET', `/api/production/shots/${shots[1]}`, { token });
  assert.deepEqual(detail.body.latestMedia.map((m: { id: string }) => m.id), [artifacts[1].id]);
  // A writer (script:read, no qa:review or delivery:view) reads the shot and the graph without media evidence.
  const writer = await member(s, 'writer', tree);
  assert.deepEqual((await s.call('GET', `/api/production/shots/${shots[1]}`, { token: writer.token })).body.latestMedia, []);
  const writerGraph = await s.call('GET', '/api/production/graph', { token: writer.token });
  assert.equal(writerGraph.status, 200);
  assert.deepEqual(writerGraph.body.edges.filter((e: { kind: string }) => e.kind === 'continuity'), []);
});

test('a compose job of an episode whose shot has no video fails at once, naming the shot', async (t) => {
  const { s, m, token, tree, id } = await jobWorld(t);
  const first = await starterShot(s, tree.projectId);
  const compose = await s.call('POST', '/api/jobs', { token, body: { kind: 'compose', episodeId: first.episode_id, maxAttempts: 3 } });
  const done = await waitJob(s, token, compose.body.id, ['completed', 'failed']);
  assert.equal(done.status, 'failed');
  assert.equal(done.attempt, 1);
  assert.match(done.error, /^compose_missing_video: no video for shot\(s\) S1/);
  assert.equal((await s.db.get<{ n: number }>('SELECT count(*) AS n FROM media_artifacts'))!.n, 0);
  // The episode a compose job names cannot be removed from under it.
  const removal = await s.call('DELETE', `/api/production/episodes/${first.episode_id}`, { token });
  assert.equal(removal.status, 409, removal.text);
  // A compose job waiting in the queue (behind a slow chat job) raises no connector alert.
  await m.control({ latencyMs: 3000 });
  const slow = await createJob(s, token, { kind: 'chat', connectorId: id });
  await waitJob(s, token, slow.id, ['running']); // the worker has it: only the compose job waits
  const queued = await s.call('POST', '/api/jobs', { token, body: { kind: 'compose', episodeId: first.episode_id, dependsOn: slow.id } });
  assert.equal(queued.body.status, 'queued');
  const overview = await s.call('GET', '/api/admin/queue', { token });
  assert.equal(overview.status, 200, overview.text);
  assert.equal(overview.body.depth.queued, 1, overview.text);
  assert.deepEqual(overview.body.alerts.filter((a: { code: string }) => a.code === 'external_jobs_waiting' || a.code === 'connector_not_ready'), []);
  await s.call('POST', `/api/jobs/${slow.id}/cancel`, { token });
  // A producer's /run of a compose job needs no connector.
  const producer = await makeUser(s);
  await grant(s, producer.id, 'workspace', tree.workspaceId, 'producer');
  const ptoken = await login(s, producer);
  const run = await s.call('POST', `/api/jobs/${done.id}/run`, { token: ptoken, body: {} });
  assert.equal(run.status, 200, run.text);
  assert.match(run.body.error, /^compose_missing_video/);
});

test('without ffprobe a media step fails the job with media_tools_missing (no retry), and the service keeps running', async (t) => {
  const { s, token, id } = await jobWorld(t);
  const saved = process.env.SVC_FFPROBE_PATH;
  process.env.SVC_FFPROBE_PATH = path.join(s.dir, 'no-such-ffprobe');
  t.after(() => {
    if (saved === undefined) delete process.env.SVC_FFPROBE_PATH;
    else process.env.SVC_FFPROBE_PATH = saved;
  });
  const job = await createJob(s, token, { kind: 'tts', connectorId: id, prompt: 'No tools today.' });
  const done = await waitJob(s, token, job.id, ['completed', 'failed']);
  assert.equal(done.status, 'failed');
  assert.equal(done.attempt, 1, 'not retried');
  assert.match(done.error, /^media_tools_missing: ffprobe at .*no-such-ffprobe \(from SVC_FFPROBE_PATH\) could not be started/);
  assert.equal((await s.db.get<{ n: number }>('SELECT count(*) AS n FROM media_artifacts'))!.n, 0);
  assert.equal((await s.call('GET', '/api/health')).status, 200);
});
