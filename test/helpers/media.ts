// Media for review, QA, delivery and export tests, made for real: the worker calls the project's own
// model server (videos, voice lines) and composes episode cuts with ffmpeg; everything goes through HTTP.
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import type { TestServer } from './server.ts';
import { createJob, jobWorld, waitJob, type ConnectorOpts } from './jobs.ts';

export interface MediaWorld extends Awaited<ReturnType<typeof jobWorld>> {
  /** The project's first episode and its shots (the project starts with one shot; `shots` adds more). */
  episodeId: string;
  shotIds: string[];
}

/** jobWorld plus an episode with `shots` shots (default 1) in the owner's project (`storage`: the media store's driver). */
export async function mediaWorld(t: TestContext, o: { shots?: number; env?: Record<string, string>; connector?: ConnectorOpts; storage?: 'local' | 's3' } = {}): Promise<MediaWorld> {
  const w = await jobWorld(t, o);
  const first = await firstShot(w.s, w.tree.projectId);
  const shotIds = [first.id];
  for (let i = 1; i < (o.shots ?? 1); i++) {
    const r = await w.s.call('POST', '/api/production/shots', { token: w.token, body: { episodeId: first.episode_id, title: `Shot ${i + 1}` } });
    assert.equal(r.status, 201, r.text);
    shotIds.push(r.body.id);
  }
  return { ...w, episodeId: first.episode_id, shotIds };
}

export const firstShot = async (s: TestServer, projectId: string) =>
  (await s.db.get<{ id: string; episode_id: string }>('SELECT id, episode_id FROM shots WHERE project_id = ? ORDER BY position', projectId))!;

/** Runs one job to completion and answers its first artifact (as GET /api/production/media-artifacts shows it). */
export async function artifactOf(w: MediaWorld, body: Record<string, unknown>, token = w.token) {
  const job = await createJob(w.s, token, body);
  const done = await waitJob(w.s, token, job.id, ['completed', 'failed'], 60_000);
  assert.equal(done.status, 'completed', done.error);
  const r = await w.s.call('GET', `/api/production/media-artifacts?jobId=${job.id}`, { token });
  assert.equal(r.status, 200, r.text);
  return r.body.items[0];
}

/**
 * A generated video of a shot (parameters e.g. { seconds: 1, size: '180x320' }); by default a small
 * 1 s clip (without a size, a job bound to a shot takes the delivery spec's, 1080x1920 by default).
 */
export const shotVideo = (w: MediaWorld, shotId: string, prompt: string, parameters: Record<string, unknown> = { seconds: 1, size: '320x180' }) =>
  artifactOf(w, { kind: 'video', connectorId: w.id, shotId, prompt, parameters });

/** A generated voice line of a shot. */
export const shotVoice = (w: MediaWorld, shotId: string, text: string) =>
  artifactOf(w, { kind: 'tts', connectorId: w.id, shotId, prompt: text });

/** The episode cut of the shots' newest videos (a compose job). */
export const episodeCut = (w: MediaWorld, episodeId = w.episodeId, parameters: Record<string, unknown> = {}) =>
  artifactOf(w, { kind: 'compose', episodeId, parameters });
