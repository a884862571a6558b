// The format of a job bound to a shot: picture size from the project's delivery spec and the shot's
// aspect ratio, duration from the shot's target. Filled into the job's parameters when the job is
// created (so the stored input, the plan, the dry run and every protocol see the same values), unless
// the job's input or the template step sets them itself.
//
// - size (image and video jobs): the largest picture of the shot's aspect ratio that fits inside the
//   spec's frame, even sides (H.264 in yuv420p needs them). A shot of the spec's own aspect ratio gets
//   exactly the spec's size (9:16 in 1080x1920 -> 1080x1920); another one gets the size it fills in
//   the delivered frame (16:9 in 1080x1920 -> 1080x608, 1:1 -> 1080x1080), which the episode cut
//   shows at its own pixels. Explicit: parameters.size, .width or .height.
// - seconds (video jobs): the shot's durationTargetMs / 1000, when the shot has a target. Explicit:
//   parameters.seconds or .duration.
import type { Db } from '../../db/db.ts';
import type { ShotRow } from '../../production/catalog/store.ts';
import { specOf } from '../../production/projects/spec.ts';

/** Kinds whose output has a picture size; of those, the kinds that also have a duration. */
const SIZED_KINDS = new Set(['image', 'video']);
const TIMED_KINDS = new Set(['video']);

export interface Frame { width: number; height: number }

const even = (n: number) => Math.max(16, Math.round(n / 2) * 2);

/** The largest frame of `aspectRatio` ('W:H') inside `spec` (the spec's own size when the ratios match). */
export function frameFor(spec: Frame, aspectRatio: string): Frame {
  const m = /^(\d+):(\d+)$/.exec(aspectRatio);
  if (!m) return { width: spec.width, height: spec.height };
  const [aw, ah] = [Number(m[1]), Number(m[2])];
  // Same ratio (cross-multiplied): the spec's size as it is.
  if (spec.width * ah === spec.height * aw) return { width: spec.width, height: spec.height };
  return spec.width * ah < spec.height * aw
    ? { width: even(spec.width), height: even((spec.width * ah) / aw) }
    : { width: even((spec.height * aw) / ah), height: even(spec.height) };
}

/**
 * The job's parameters with the shot's format filled in where the job leaves it open (a new object;
 * `parameters` is not changed). Kinds without a picture, and jobs bound to no shot, keep theirs.
 */
export async function withShotFormat(db: Db, shot: ShotRow | undefined, kind: string, parameters: Record<string, unknown>): Promise<Record<string, unknown>> {
  if (!shot || !SIZED_KINDS.has(kind)) return parameters;
  const out = { ...parameters };
  const has = (...keys: string[]) => keys.some((k) => parameters[k] !== undefined && parameters[k] !== null);
  if (!has('size', 'width', 'height')) Object.assign(out, frameFor((await specOf(db, shot.project_id)).spec, shot.aspect_ratio));
  if (TIMED_KINDS.has(kind) && !has('seconds', 'duration') && shot.duration_target_ms !== null) out.seconds = shot.duration_target_ms / 1000;
  return out;
}
