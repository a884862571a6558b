// The local `compose` job kind: joins the chosen video of each shot of an episode, in shot order,
// into one episode cut (src/media-tools/compose.ts does the ffmpeg side). No connector: the worker runs
// it itself. The chosen video of a shot is the one named in `parameters.artifactIds`, else its
// newest generated video. Each shot also carries its voice line, mixed over its segment: the audio
// artifact named in `parameters.audioArtifactIds`, else its newest generated audio (a `tts` job bound
// to the shot), none when `parameters.voiceLines` is false; a shot without one keeps its video's
// audio. Every input is re-hashed before it is used, so the composition row's hashes are those of
// the bytes actually joined. ffmpeg reads the inputs through the object store (mediaInput: a path on
// local, a signed URL on s3) and writes the cut to a local scratch file, then put into the store.
import { flatMapSeq, forEachSeq } from '../../kernel/seq.ts';
import fs from 'node:fs';
import path from 'node:path';
import type { Ctx } from '../../directory/context.ts';
import type { Db } from '../../db/db.ts';
import { validationFailed } from '../../kernel/errors.ts';
import { tempKey, type ObjectStore } from '../../kernel/storage/store.ts';
import { verifyObject } from '../../kernel/storage/verify.ts';
import { episodeById, shotsOfProject } from '../../production/catalog/store.ts';
import { ConnectorError, type CallResult } from '../connectors/protocols/types.ts';
import { outputKeyOf } from '../connectors/protocols/outputs.ts';
import type { JobRow } from './store.ts';
import { composeTarget, composeVideos, parseFrameRate, type ComposeInput } from '../../media-tools/compose.ts';
import { artifactInProject, chosenVideoOfShot, chosenVoiceOfShot, type ArtifactRow } from '../media/store.ts';
import { mediaFailure, withoutPaths, type CompositionDraft } from '../media/register.ts';

export const COMPOSE_KIND = 'compose';
const CUT_NAME = 'episode-cut.mp4';
const MAX_SIDE = 4096;

export interface ComposeParameters {
  artifactIds?: string[]; audioArtifactIds?: string[]; voiceLines?: boolean; width?: number; height?: number; frameRate?: string;
}
const PARAMETERS = ['artifactIds', 'audioArtifactIds', 'voiceLines', 'width', 'height', 'frameRate'];
/** What each list of chosen artifacts names, and what its entries are called in errors. */
const CHOSEN = { artifactIds: { kind: 'video', noun: 'video' }, audioArtifactIds: { kind: 'audio', noun: 'voice line' } } as const;

const evenSide = (v: unknown) => Number.isInteger(v) && (v as number) >= 16 && (v as number) <= MAX_SIDE && (v as number) % 2 === 0;

/** The checks that need no project: known keys, size, frame rate, voiceLines (problems keyed parameters.<name>). */
function shapeProblems(raw: Record<string, unknown>, out: ComposeParameters): Record<string, string> {
  const problems: Record<string, string> = {};
  for (const key of Object.keys(raw)) {
    if (!PARAMETERS.includes(key)) problems[`parameters.${key}`] = `not a compose parameter (${PARAMETERS.join(', ')})`;
  }
  if (raw.width !== undefined || raw.height !== undefined) {
    if (!evenSide(raw.width) || !evenSide(raw.height)) problems['parameters.width'] = `width and height go together: even integers 16..${MAX_SIDE}`;
    else { out.width = raw.width as number; out.height = raw.height as number; }
  }
  if (raw.frameRate !== undefined) {
    const fr = typeof raw.frameRate === 'string' ? parseFrameRate(raw.frameRate) : null;
    if (!fr || fr.num / fr.den < 1 || fr.num / fr.den > 120) problems['parameters.frameRate'] = 'a frame rate such as "24", "25/1" or "24000/1001" (1..120 fps)';
    else out.frameRate = raw.frameRate as string;
  }
  if (raw.voiceLines !== undefined && typeof raw.voiceLines !== 'boolean') problems['parameters.voiceLines'] = 'true or false (false: no voice lines in the cut)';
  return problems;
}

/** A workflow template's compose parameters: the project-independent checks; chosen artifacts belong to a job, not a template. */
export function templateComposeProblems(raw: Record<string, unknown>): Record<string, string> {
  const problems = shapeProblems(raw, {});
  for (const field of ['artifactIds', 'audioArtifactIds'] as const) {
    if (raw[field] !== undefined) problems[`parameters.${field}`] = 'names artifacts of one project: choose them on the compose job, not in a template';
  }
  return problems;
}

/** Checks a compose job's parameters against the episode at creation (422 naming the field). */
export async function checkComposeParameters(db: Db, projectId: string, episodeId: string, raw: Record<string, unknown>): Promise<ComposeParameters> {
  const out: ComposeParameters = {};
  const problems = shapeProblems(raw, out);
  const shotsOfEpisode = new Set((await shotsOfProject(db, projectId, episodeId)).map((s) => s.id));
  for (const field of ['artifactIds', 'audioArtifactIds'] as const) {
    if (raw[field] !== undefined) out[field] = await checkChosen(db, projectId, shotsOfEpisode, field, raw[field], problems);
  }
  if (typeof raw.voiceLines === 'boolean') {
    if (!raw.voiceLines && out.audioArtifactIds?.length) problems['parameters.voiceLines'] = 'false leaves the voice lines out: name no audioArtifactIds with it';
    else out.voiceLines = raw.voiceLines;
  }
  if (Object.keys(problems).length) throw validationFailed(problems);
  return out;
}

/** A list of artifact ids naming at most one artifact of the list's kind per shot of the episode (422 naming the entry). */
async function checkChosen(
  db: Db, projectId: string, shotsOfEpisode: Set<string>, field: keyof typeof CHOSEN, ids: unknown, problems: Record<string, string>,
): Promise<string[] | undefined> {
  const { kind, noun } = CHOSEN[field];
  if (!Array.isArray(ids) || ids.length > 500 || ids.some((i) => typeof i !== 'string')) {
    problems[`parameters.${field}`] = 'a list of artifact ids (at most 500)';
    return undefined;
  }
  const seen = new Set<string>();
  await forEachSeq(ids, async (id: string, n) => {
    const a = await artifactInProject(db, projectId, id);
    if (!a || a.kind !== kind || !a.shot_id || !shotsOfEpisode.has(a.shot_id)) problems[`parameters.${field}[${n}]`] = `names no ${kind} of a shot of this episode`;
    else if (seen.has(a.shot_id)) problems[`parameters.${field}[${n}]`] = `a second ${noun} for the same shot`;
    else seen.add(a.shot_id);
  });
  return ids as string[];
}

interface Chosen { shotId: string; position: number; artifact: ArtifactRow; voice: ArtifactRow | null }

/** The artifacts named in a list, by shot (those since deleted or moved off a shot are left to the default). */
async function namedByShot(ctx: Ctx, projectId: string, ids: string[] = []): Promise<Map<string, ArtifactRow>> {
  const byShot = new Map<string, ArtifactRow>();
  for (const id of ids) {
    const a = await artifactInProject(ctx.db, projectId, id);
    if (a?.shot_id) byShot.set(a.shot_id, a);
  }
  return byShot;
}

/** The video and voice line of each shot of the episode, in order; a shot without a video fails the job (not retried). */
async function chooseInputs(ctx: Ctx, job: JobRow, params: ComposeParameters): Promise<Chosen[]> {
  const videos = await namedByShot(ctx, job.project_id, params.artifactIds);
  const voices = await namedByShot(ctx, job.project_id, params.audioArtifactIds);
  const shots = await shotsOfProject(ctx.db, job.project_id, job.episode_id);
  if (shots.length === 0) throw new ConnectorError('compose_no_shots', 'the episode has no shots', false);
  const missing: string[] = [];
  const chosen = await flatMapSeq(shots, async (s, i): Promise<Chosen[]> => {
    const artifact = videos.get(s.id) ?? await chosenVideoOfShot(ctx.db, job.project_id, s.id);
    const voice = params.voiceLines === false ? null : voices.get(s.id) ?? await chosenVoiceOfShot(ctx.db, job.project_id, s.id) ?? null;
    if (!artifact) missing.push(`S${s.position} (${s.id})`);
    return artifact ? [{ shotId: s.id, position: i + 1, artifact, voice }] : [];
  });
  if (missing.length) throw new ConnectorError('compose_missing_video', `no video for shot(s) ${missing.join(', ')}`, false);
  return chosen;
}

/**
 * Runs a compose job: the cut is written to a local scratch file under the storage dir's tmp/, put
 * into the store at outputs/<jobId>/episode-cut.mp4, and the scratch file removed on every path.
 */
export async function runCompose(ctx: Ctx, job: JobRow, params: ComposeParameters, signal: AbortSignal): Promise<{ result: CallResult; composition: CompositionDraft }> {
  const store = ctx.storage;
  if (!job.episode_id || !await episodeById(ctx.db, job.project_id, job.episode_id)) throw new ConnectorError('compose_no_episode', 'the episode no longer exists', false);
  const chosen = await chooseInputs(ctx, job, params);
  const inputs: ComposeInput[] = [];
  for (const c of chosen) {
    const a = c.artifact;
    await verify(store, c.shotId, a, 'video');
    const durationMs = videoDurationMs(a);
    if (!durationMs || !a.width || !a.height || !a.frame_rate) {
      throw new ConnectorError('compose_input_unusable', `the video of shot ${c.shotId} (${a.id}) has no duration, size or frame rate`, false);
    }
    if (c.voice && c.voice.has_audio !== 1) {
      throw new ConnectorError('compose_input_unusable', `the voice line of shot ${c.shotId} (${c.voice.id}) has no audio stream`, false);
    }
    if (c.voice) await verify(store, c.shotId, c.voice, 'voice line');
    inputs.push({ path: a.storage_path, durationMs, width: a.width, height: a.height, frameRate: a.frame_rate, hasAudio: a.has_audio === 1, voicePath: c.voice?.storage_path ?? null });
  }
  // What ffmpeg opens, asked for once every input is verified: a signed URL (s3) is then as fresh as can be.
  for (const i of inputs) {
    i.path = await store.mediaInput(i.path);
    if (i.voicePath) i.voicePath = await store.mediaInput(i.voicePath);
  }
  const target = composeTarget(inputs, params);
  const key = outputKeyOf(job.id, CUT_NAME);
  const scratch = path.join(ctx.config.storageDir, tempKey('compose', '.mp4'));
  fs.mkdirSync(path.dirname(scratch), { recursive: true });
  try {
    const made = await composeVideos(inputs, target, scratch, { signal, timeoutMs: ctx.config.jobTimeoutMs });
    const { size, sha256 } = await store.putFile(key, scratch);
    return {
      result: {
        output: { episodeId: job.episode_id, shots: chosen.length, durationMs: made.durationMs, frames: made.frames },
        files: [{ path: key, role: 'video', mimeType: 'video/mp4', fileSize: size, sha256 }],
      },
      composition: {
        episodeId: job.episode_id, width: made.width, height: made.height, frameRate: made.frameRate, durationMs: made.durationMs,
        inputs: chosen.map((c, i) => ({
          position: c.position, shotId: c.shotId, artifactId: c.artifact.id, path: c.artifact.storage_path, contentSha256: c.artifact.content_sha256,
          audioArtifactId: c.voice?.id ?? null, audioPath: c.voice?.storage_path ?? null, audioContentSha256: c.voice?.content_sha256 ?? null,
          startMs: made.segments[i].startMs, durationMs: made.segments[i].durationMs, frames: made.segments[i].frames,
        })),
      },
    };
  } catch (err) {
    if (err instanceof ConnectorError) throw err;
    // composeVideos refuses arguments it cannot join (sizes, rates, inputs shorter than a frame): no retry helps.
    throw mediaFailure(err) ?? new ConnectorError('compose_invalid', withoutPaths(err instanceof Error ? err.message : String(err)), false);
  } finally {
    fs.rmSync(scratch, { force: true });
  }
}

/** Checks that an input's bytes still match the SHA-256 it was registered with. */
async function verify(store: ObjectStore, shotId: string, a: ArtifactRow, what: 'video' | 'voice line'): Promise<void> {
  const { state } = await verifyObject(store, a.storage_path, { sha256: a.content_sha256 });
  if (state === 'missing' || state === 'unsafe') {
    const why = state === 'unsafe' ? 'has an unsafe stored path' : 'is not on disk';
    throw new ConnectorError('compose_input_missing', `the ${what} of shot ${shotId} (${a.id}) ${why}`, false);
  }
  if (state === 'changed') {
    throw new ConnectorError('compose_input_corrupt', `the ${what} of shot ${shotId} (${a.id}) no longer matches its SHA-256`, false);
  }
  // Unreadable now (the store failing): a later attempt may read it.
  if (state !== 'ok') throw new ConnectorError('media_file_missing', `the ${what} of shot ${shotId} (${a.id}) cannot be read`, true);
}

/**
 * How long a clip's pictures last: decoded frames over the average frame rate (the container's
 * duration may include a longer audio tail, which would hold the last picture in the cut).
 */
function videoDurationMs(a: ArtifactRow): number | null {
  const rate = a.frame_rate ? parseFrameRate(a.frame_rate) : null;
  if (a.frame_count && rate) return Math.round((a.frame_count * rate.den * 1000) / rate.num);
  return a.duration_ms;
}
