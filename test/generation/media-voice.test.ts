// Voice lines in the episode cut, through HTTP with the worker and the project's own model server:
// shot videos, then `tts` jobs bound to the shots, then `compose`. The cut carries each shot's newest
// voice line (or the one named in parameters.audioArtifactIds, or none with voiceLines: false) over
// its segment without changing the cut's length; the composition row names the lines with their
// hashes; bad choices are refused at creation; a voice file changed or removed on disk fails the job.
// The mix itself (levels, padding, cutting, sample counts) is measured with sine tones in compose.test.ts.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { runFfmpeg } from '../../src/media-tools/ffmpeg.ts';
import { createJob, jobWorld, waitJob } from '../helpers/jobs.ts';
import type { TestServer } from '../helpers/server.ts';
import { serversRunTheWorker } from '../helpers/server.ts';

serversRunTheWorker();

interface Artifact { id: string; path: string; contentSha256: string; durationMs: number; frameCount: number; kind: string }
interface CutInput { shotId: string; artifactId: string; audioArtifactId: string | null; audioPath: string | null; audioContentSha256: string | null }

/** The artifact a completed job registered. */
async function artifactOf(s: TestServer, token: string, body: Record<string, unknown>): Promise<Artifact> {
  const job = await createJob(s, token, body);
  const done = await waitJob(s, token, job.id, ['completed', 'failed'], 30_000);
  assert.equal(done.status, 'completed', done.error);
  return (await s.call('GET', `/api/production/media-artifacts?jobId=${job.id}`, { token })).body.items[0];
}

/** Runs a compose job of the episode to its end; the job and, when it completed, the cut with its inputs. */
async function compose(s: TestServer, token: string, episodeId: string, parameters: Record<string, unknown> = {}) {
  const r = await s.call('POST', '/api/jobs', { token, body: { kind: 'compose', episodeId, parameters } });
  assert.equal(r.status, 201, r.text);
  const job = await waitJob(s, token, r.body.id, ['completed', 'failed'], 60_000);
  if (job.status !== 'completed') return { job, cut: null, inputs: [] as CutInput[], pcm: new Int16Array(0) };
  const cut = (await s.call('GET', `/api/production/media-artifacts?jobId=${job.id}`, { token })).body.items[0];
  const { stdout } = await runFfmpeg(['-v', 'error', '-i', path.join(s.config.storageDir, cut.path), '-map', '0:a:0', '-f', 's16le', '-ac', '2', '-ar', '48000', 'pipe:1']);
  return { job, cut, inputs: cut.composition.inputs as CutInput[], pcm: new Int16Array(stdout.buffer, stdout.byteOffset, stdout.length >> 1) };
}

/** RMS (0..1) of the difference of two decoded cuts between two times. */
function differenceRms(a: Int16Array, b: Int16Array, fromS: number, toS: number): number {
  let sum = 0;
  const [from, to] = [Math.round(fromS * 48_000) * 2, Math.round(toS * 48_000) * 2];
  for (let i = from; i < to; i++) sum += ((a[i] - b[i]) / 32768) ** 2;
  return Math.sqrt(sum / (to - from));
}

test('the episode cut carries each shot\u2019s voice line over its segment, named with its hash in the composition', async (t) => {
  const { s, token, tree, id } = await jobWorld(t);
  const first = (await s.db.get<{ id: string; episode_id: string }>('SELECT id, episode_id FROM shots WHERE project_id = ? ORDER BY position', tree.projectId))!;
  const episodeId = first.episode_id;
  const added = await s.call('POST', '/api/production/shots', { token, body: { episodeId, title: 'Second' } });
  assert.equal(added.status, 201, added.text);
  const shots = [first.id, added.body.id as string];
  const videos: Artifact[] = [];
  for (const [i, shotId] of shots.entries()) {
    videos.push(await artifactOf(s, token, { kind: 'video', connectorId: id, shotId, prompt: `shot ${i + 1} at dusk`, parameters: { seconds: 1, size: '320x180' } }));
  }
  // Before any voice line: the cut as it always was.
  const plain = await compose(s, token, episodeId);
  assert.equal(plain.job.status, 'completed', plain.job.error);
  assert.deepEqual(plain.inputs.map((i) => [i.audioArtifactId, i.audioPath, i.audioContentSha256]), [[null, null, null], [null, null, null]]);

  // Shot 1: an older line, then a short one (0.6 s, inside its 1 s segment); shot 2: a line over 3 s, longer than its segment.
  const older = await artifactOf(s, token, { kind: 'tts', connectorId: id, shotId: shots[0], prompt: 'An older take of the first line.' });
  const short = await artifactOf(s, token, { kind: 'tts', connectorId: id, shotId: shots[0], prompt: 'Hi, there.' });
  const long = await artifactOf(s, token, { kind: 'tts', connectorId: id, shotId: shots[1], prompt: 'This line goes on for much longer than its shot does.' });
  assert.deepEqual([short.kind, short.durationMs], ['audio', 600]);
  assert.ok(long.durationMs > 3000, `${long.durationMs}`);

  const voiced = await compose(s, token, episodeId);
  assert.equal(voiced.job.status, 'completed', voiced.job.error);
  assert.deepEqual(voiced.inputs.map((i) => [i.shotId, i.artifactId, i.audioArtifactId, i.audioPath, i.audioContentSha256]),
    [[shots[0], videos[0].id, short.id, short.path, short.contentSha256], [shots[1], videos[1].id, long.id, long.path, long.contentSha256]]);
  const row = (await s.db.get<{ inputs: string }>('SELECT inputs FROM media_compositions WHERE artifact_id = ?', voiced.cut.id))!;
  assert.deepEqual(JSON.parse(row.inputs), voiced.inputs);
  // Same pictures and length: a voice line never lengthens its segment (the long one is cut at the end).
  assert.deepEqual([voiced.cut.frameCount, voiced.cut.durationMs], [plain.cut.frameCount, plain.cut.durationMs]);
  assert.equal(voiced.pcm.length, plain.pcm.length);
  // The lines are heard where they belong: the short one early in segment 1, the long one until the very end.
  const heard = [differenceRms(voiced.pcm, plain.pcm, 0.05, 0.55), differenceRms(voiced.pcm, plain.pcm, 1.05, 1.95)];
  // (The model server's voice is at about -24 LUFS: an RMS near 0.05.)
  assert.ok(heard.every((v) => v > 0.03), `voice over the segments: ${heard.join(' ')}`);
  const tail = differenceRms(voiced.pcm, plain.pcm, 0.7, 0.95);
  assert.ok(tail < heard[0] / 10, `after the short line ends, segment 1 is its video's audio again: ${tail} vs ${heard[0]}`);

  // voiceLines: false is the cut without voice lines; a named line replaces the newest for its shot only.
  const silent = await compose(s, token, episodeId, { voiceLines: false });
  assert.deepEqual(silent.inputs.map((i) => i.audioArtifactId), [null, null]);
  assert.deepEqual(silent.pcm, plain.pcm);
  const named = await compose(s, token, episodeId, { audioArtifactIds: [older.id] });
  assert.deepEqual(named.inputs.map((i) => [i.audioArtifactId, i.audioContentSha256]), [[older.id, older.contentSha256], [long.id, long.contentSha256]]);
  const provenance = (await s.call('GET', `/api/production/media-artifacts/${named.cut.id}`, { token })).body;
  assert.deepEqual(provenance.provenance.parameters, { audioArtifactIds: [older.id] });

  // Refused at creation: a video, another episode's line, two lines for one shot, a non-boolean, a contradiction.
  const seasonId = (await s.db.get<{ season_id: string }>('SELECT season_id FROM episodes WHERE id = ?', episodeId))!.season_id;
  const otherEpisode = await s.call('POST', `/api/production/seasons/${seasonId}/episodes`, { token, body: { title: 'Elsewhere' } });
  const otherShot = await s.call('POST', '/api/production/shots', { token, body: { episodeId: otherEpisode.body.id, title: 'Away' } });
  const foreign = await artifactOf(s, token, { kind: 'tts', connectorId: id, shotId: otherShot.body.id, prompt: 'Not in this episode.' });
  for (const [parameters, field] of [
    [{ audioArtifactIds: [videos[0].id] }, 'parameters.audioArtifactIds[0]'],
    [{ audioArtifactIds: [long.id, foreign.id] }, 'parameters.audioArtifactIds[1]'],
    [{ audioArtifactIds: [short.id, older.id] }, 'parameters.audioArtifactIds[1]'],
    [{ audioArtifactIds: 'nope' }, 'parameters.audioArtifactIds'],
    [{ voiceLines: 'no' }, 'parameters.voiceLines'],
    [{ voiceLines: false, audioArtifactIds: [short.id] }, 'parameters.voiceLines'],
    [{ artifactIds: [short.id] }, 'parameters.artifactIds[0]'],
  ] as const) {
    const r = await s.call('POST', '/api/jobs', { token, body: { kind: 'compose', episodeId, parameters } });
    assert.equal(r.status, 422, JSON.stringify(parameters));
    assert.deepEqual(Object.keys(r.body.error.details.fields), [field], r.text);
  }

  // A voice file that changed on disk, then one that is gone: the job fails at once, naming the line.
  const shortFile = path.join(s.config.storageDir, short.path);
  fs.appendFileSync(shortFile, Buffer.from([0]));
  const corrupt = await compose(s, token, episodeId);
  assert.deepEqual([corrupt.job.status, corrupt.job.attempt], ['failed', 1]);
  assert.match(corrupt.job.error, new RegExp(`^compose_input_corrupt: the voice line of shot ${shots[0]} \\(${short.id}\\) no longer matches its SHA-256`));
  fs.rmSync(shortFile);
  const missing = await compose(s, token, episodeId);
  assert.match(missing.job.error, new RegExp(`^compose_input_missing: the voice line of shot ${shots[0]} \\(${short.id}\\) is not on disk`));
  // Without voice lines the cut does not need them.
  assert.equal((await compose(s, token, episodeId, { voiceLines: false })).job.status, 'completed');
});
