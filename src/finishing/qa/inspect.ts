// The checks of one artifact: reads its file and frames, measures it (measure.ts, one ffmpeg pass)
// and judges every measure against the delivery spec. Nothing here writes; run.ts stores the drafts.
//
// Which checks an artifact gets: every artifact `evidence`; an image `collage`; a video
// `resolution`, `aspect_ratio`, `duration`, `frame_rate`, `audio`, `loudness` and `true_peak` (with
// an audio track), `black`, `frozen`, `collage` (first and last frames) and `continuity` (a shot's
// video against the previous shot's video; a cut over its consecutive inputs); a voice line
// `audio`, `loudness`, `true_peak`. When the file is missing or its bytes changed, `evidence` fails
// and nothing else is measured (the measures would describe other bytes).
import { mapSeq } from '../../kernel/seq.ts';
import type { Ctx } from '../../directory/context.ts';
import { verifyObject, type VerifiedObject } from '../../kernel/storage/verify.ts';
import type { ObjectStore } from '../../kernel/storage/store.ts';
import { detectComposite } from '../../media-tools/collage.ts';
import { parseFrameRate } from '../../media-tools/compose.ts';
import { measureContinuity, neighbourShots } from '../../generation/media/register.ts';
import { artifactInProject, chosenVideoOfShot, compositionOfArtifact, continuityBetween, type ArtifactRow } from '../../generation/media/store.ts';
import { shotById } from '../../production/catalog/store.ts';
import { measureMedia, type Measured, type Stretch } from './measure.ts';
import type { DeliverySpec } from '../../production/projects/spec.ts';

export const CHECK_KEYS = [
  'evidence', 'resolution', 'aspect_ratio', 'duration', 'frame_rate', 'audio', 'loudness', 'true_peak', 'black', 'frozen', 'collage', 'continuity',
] as const;
export type CheckKey = (typeof CHECK_KEYS)[number];

/**
 * Blocking checks stop an approval and fail a workflow gate; a miss on the others is a warning a
 * person weighs (a clip a little long, a mix a little quiet, a slow scene, a hard cut).
 */
export const BLOCKING: Record<CheckKey, boolean> = {
  evidence: true, resolution: true, aspect_ratio: true, duration: false, frame_rate: true, audio: true, loudness: false,
  true_peak: true, black: true, frozen: false, collage: true, continuity: false,
};

export type CheckResult = 'pass' | 'warn' | 'fail';

export interface CheckDraft {
  key: CheckKey; blocking: boolean; result: CheckResult; measured: unknown; expected: unknown; message: string; timeCodeMs: number | null;
}

/** A check that passes when `ok`, else fails (blocking) or warns. */
function judged(key: CheckKey, ok: boolean, measured: unknown, expected: unknown, message: string, timeCodeMs: number | null = null): CheckDraft {
  return { key, blocking: BLOCKING[key], result: ok ? 'pass' : BLOCKING[key] ? 'fail' : 'warn', measured, expected, message, timeCodeMs };
}

/** A stored object against its registered hash (and size); a missing key or hash is never intact. */
async function fileState(store: ObjectStore, key: string | null, sha256: string | null, size?: number): Promise<VerifiedObject> {
  if (!key || !sha256) return { state: 'missing', sha256: null, size: null, fromCache: false };
  return verifyObject(store, key, { sha256, size });
}

const present = (f: VerifiedObject) => f.state === 'ok' || f.state === 'changed';

/** Evidence: the file is there with its registered bytes; a video's stored first and last frames too. */
async function evidence(ctx: Ctx, a: ArtifactRow) {
  const file = await fileState(ctx.storage, a.storage_path, a.content_sha256, a.file_size);
  const isVideo = a.kind === 'video';
  const first = isVideo ? await fileState(ctx.storage, a.first_frame_path, a.first_frame_sha256) : null;
  const last = isVideo ? await fileState(ctx.storage, a.last_frame_path, a.last_frame_sha256) : null;
  const intact = file.state === 'ok';
  const firstOk = first?.state === 'ok';
  const lastOk = last?.state === 'ok';
  const framesOk = !isVideo || (firstOk && lastOk);
  const problems = [
    !present(file) && 'the file is missing', present(file) && !intact && 'the file\'s bytes changed since registration',
    isVideo && !firstOk && 'the first frame is missing or changed',
    isVideo && !lastOk && 'the last frame is missing or changed',
  ].filter(Boolean);
  const measured = {
    fileExists: present(file), sha256: file.sha256, size: file.size,
    ...(isVideo ? { firstFrameIntact: firstOk, lastFrameIntact: lastOk } : {}),
  };
  const check = judged('evidence', intact && framesOk, measured, { sha256: a.content_sha256, size: a.file_size },
    problems.length ? problems.join('; ') : 'file and frames match their registered SHA-256');
  return { check, intact, first: firstOk ? a.first_frame_path : null, last: lastOk ? a.last_frame_path : null };
}

/** Width and height compared by cross-multiplication, 1% slack (odd sizes rounded by encoders). */
const sameAspect = (w: number, h: number, spec: DeliverySpec) => Math.abs(w * spec.height - h * spec.width) <= 0.01 * h * spec.width;
const ratio = (w: number, h: number) => Math.round((w / h) * 10_000) / 10_000;

function pictureChecks(a: ArtifactRow, spec: DeliverySpec): CheckDraft[] {
  const w = a.width ?? 0;
  const h = a.height ?? 0;
  const size = { width: a.width, height: a.height };
  const wanted = { width: spec.width, height: spec.height };
  const out = [
    judged('resolution', w === spec.width && h === spec.height, size, wanted, `${w}x${h}, the spec asks for ${spec.width}x${spec.height}`),
    judged('aspect_ratio', h > 0 && sameAspect(w, h, spec), { ratio: h ? ratio(w, h) : null }, { ratio: ratio(spec.width, spec.height) },
      `aspect ${w}:${h}, the spec's is ${spec.width}:${spec.height}`),
  ];
  const rate = a.frame_rate ? parseFrameRate(a.frame_rate) : null;
  const want = spec.frameRate ? parseFrameRate(spec.frameRate) : null;
  out.push(want
    ? judged('frame_rate', !!rate && rate.num * want.den === want.num * rate.den, { frameRate: a.frame_rate }, { frameRate: spec.frameRate },
      `${a.frame_rate ?? 'unknown'} fps, the spec asks for ${spec.frameRate}`)
    : judged('frame_rate', true, { frameRate: a.frame_rate }, { frameRate: null }, `${a.frame_rate ?? 'unknown'} fps; the spec accepts any rate`));
  return out;
}

/** A shot's video against the shot's target; a cut against the length its composition planned. */
async function durationCheck(ctx: Ctx, a: ArtifactRow, spec: DeliverySpec): Promise<CheckDraft> {
  const cut = a.source === 'composition' ? await compositionOfArtifact(ctx.db, a.project_id, a.id) : undefined;
  const target = cut ? cut.duration_ms : a.shot_id ? (await shotById(ctx.db, a.project_id, a.shot_id))?.duration_target_ms ?? null : null;
  const measured = { durationMs: a.duration_ms };
  if (target === null || a.duration_ms === null) {
    return judged('duration', true, measured, { durationMs: null }, 'no duration target to compare with');
  }
  const off = a.duration_ms - target;
  return judged('duration', Math.abs(off) <= spec.durationToleranceMs, { ...measured, offByMs: off },
    { durationMs: target, toleranceMs: spec.durationToleranceMs }, `${a.duration_ms} ms against ${cut ? 'the planned cut of' : 'the shot\'s target of'} ${target} ms`);
}

function soundChecks(a: ArtifactRow, m: Measured, spec: DeliverySpec): CheckDraft[] {
  if (!a.has_audio || !m.loudness) {
    return [judged('audio', false, { track: false }, { track: true, silent: false }, 'no audio track')];
  }
  const { integratedLufs, truePeakDbtp } = m.loudness;
  const silent = truePeakDbtp === null || truePeakDbtp < spec.silenceMaxDbtp;
  const peak = truePeakDbtp === null ? '-inf' : truePeakDbtp.toFixed(1);
  const out = [judged('audio', !silent, { track: true, silent, truePeakDbtp }, { track: true, silent: false, aboveDbtp: spec.silenceMaxDbtp },
    silent ? `the audio track is silent (true peak ${peak} dBTP)` : `audio present (true peak ${peak} dBTP)`)];
  const low = spec.loudnessTargetLufs - spec.loudnessToleranceLu;
  const high = spec.loudnessTargetLufs + spec.loudnessToleranceLu;
  out.push(judged('loudness', integratedLufs >= low && integratedLufs <= high, { integratedLufs },
    { targetLufs: spec.loudnessTargetLufs, toleranceLu: spec.loudnessToleranceLu }, `integrated loudness ${integratedLufs.toFixed(1)} LUFS, target ${spec.loudnessTargetLufs} ± ${spec.loudnessToleranceLu} LU`));
  out.push(judged('true_peak', truePeakDbtp === null || truePeakDbtp <= spec.truePeakMaxDbtp, { truePeakDbtp }, { maxDbtp: spec.truePeakMaxDbtp },
    `true peak ${peak} dBTP, at most ${spec.truePeakMaxDbtp} dBTP allowed`));
  return out;
}

const timeCode = (msValue: number) => {
  const t = Math.max(0, Math.round(msValue));
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${pad(Math.floor(t / 3_600_000))}:${pad(Math.floor(t / 60_000) % 60)}:${pad(Math.floor(t / 1000) % 60)}.${pad(t % 1000, 3)}`;
};

function stretchCheck(key: 'black' | 'frozen', stretches: Stretch[], minSeconds: number): CheckDraft {
  const what = key === 'black' ? 'black' : 'still';
  const list = stretches.map((s) => `${timeCode(s.startMs)}-${timeCode(s.endMs)}`).join(', ');
  return judged(key, stretches.length === 0, { stretches }, { stretches: [], minSeconds },
    stretches.length ? `${stretches.length} ${what} stretch(es) of ${minSeconds} s or more: ${list}` : `no ${what} stretch of ${minSeconds} s or more`,
    stretches[0]?.startMs ?? null);
}

/** The collage check of stored pictures (keys), each read by ffmpeg from the store's media input (a path or a signed URL). */
async function collageCheck(store: ObjectStore, frames: Array<[string, string | null]>, signal?: AbortSignal): Promise<CheckDraft> {
  const found: Record<string, string | null> = {};
  for (const [name, key] of frames) {
    if (!key) return judged('collage', false, { [name]: null }, { composite: null }, `the ${name} picture is missing: nothing to inspect`);
    found[name] = (await detectComposite(await store.mediaInput(key), { signal })).composite;
  }
  const bad = Object.entries(found).filter(([, c]) => c !== null);
  return judged('collage', bad.length === 0, found, { composite: null },
    bad.length ? bad.map(([n, c]) => `the ${n} is a ${c!.replace('_', ' ')}`).join('; ') : 'one picture, no panels');
}

/** Continuity scores: a shot's video from the previous shot's video; a cut over its consecutive inputs. */
async function continuityCheck(ctx: Ctx, a: ArtifactRow, spec: DeliverySpec): Promise<CheckDraft | null> {
  const pairs: Array<[ArtifactRow, ArtifactRow]> = [];
  const cut = a.source === 'composition' ? await compositionOfArtifact(ctx.db, a.project_id, a.id) : undefined;
  if (cut) {
    const inputs = await mapSeq((JSON.parse(cut.inputs) as Array<{ artifactId: string }>), (i) => artifactInProject(ctx.db, a.project_id, i.artifactId));
    for (let i = 1; i < inputs.length; i++) if (inputs[i - 1] && inputs[i]) pairs.push([inputs[i - 1]!, inputs[i]!]);
  } else if (a.shot_id) {
    const { previous } = await neighbourShots(ctx, a.project_id, a.shot_id);
    const before = previous ? await chosenVideoOfShot(ctx.db, a.project_id, previous) : undefined;
    if (before) pairs.push([before, a]);
  }
  const scores = (await mapSeq(pairs, async ([from, to]) => ({
    fromArtifactId: from.id, toArtifactId: to.id,
    score: (await continuityBetween(ctx.db, a.project_id, from.id, to.id))?.score ?? measureContinuity(from, to)?.score ?? null,
  }))).filter((p) => p.score !== null);
  if (scores.length === 0) return null;
  const low = scores.filter((p) => p.score! < spec.continuityMinScore);
  return judged('continuity', low.length === 0, { pairs: scores }, { minScore: spec.continuityMinScore },
    low.length ? `${low.length} cut(s) between shots score below ${spec.continuityMinScore}` : `every cut between shots scores ${spec.continuityMinScore} or more`);
}

/** Every check of one artifact. */
export async function inspectArtifact(ctx: Ctx, a: ArtifactRow, spec: DeliverySpec, signal?: AbortSignal): Promise<CheckDraft[]> {
  const ev = await evidence(ctx, a);
  if (!ev.intact) return [ev.check];
  const checks = [ev.check];
  if (a.kind === 'image') {
    checks.push(await collageCheck(ctx.storage, [['picture', a.storage_path]], signal));
    return checks;
  }
  if (a.kind !== 'video' && a.kind !== 'audio') return checks;
  const video = a.kind === 'video' && a.has_video === 1;
  const m = await measureMedia(await ctx.storage.mediaInput(a.storage_path), { video, audio: a.has_audio === 1, durationMs: a.duration_ms }, spec, signal);
  if (video) checks.push(...pictureChecks(a, spec), await durationCheck(ctx, a, spec));
  checks.push(...soundChecks(a, m, spec));
  if (video) {
    checks.push(stretchCheck('black', m.black, spec.blackMinSeconds), stretchCheck('frozen', m.frozen, spec.freezeMinSeconds));
    checks.push(await collageCheck(ctx.storage, [['first frame', ev.first], ['last frame', ev.last]], signal));
    const continuity = await continuityCheck(ctx, a, spec);
    if (continuity) checks.push(continuity);
  }
  return checks;
}
