// Where a comment is pinned on the artifact under review, checked against its evidence:
//   video  a time code or a frame number is required (either, or both when they name the same frame:
//          frameAt(t) = frame exactly); the other is derived at the artifact's frame rate
//          (frame = floor(t x rate); time = ceil(frame / rate) in ms, the first whole millisecond
//          inside the frame, so that frameAt(timeCodeOf(n)) = n);
//          time code 0 <= t < duration, frame 0 <= n < frame count; a rectangle is allowed;
//   audio  a time code is required (0 <= t < duration); no frame, no rectangle;
//   image  no time code; frame 0 only (its one frame); a rectangle is allowed;
//   other  (text) none of them.
// A rectangle is in fractions 0..1 of the frame's width and height, non-empty, and lies inside the frame.
import { validationFailed } from '../../kernel/errors.ts';
import { parseFrameRate } from '../../media-tools/compose.ts';
import type { ArtifactRow } from '../../generation/media/store.ts';
import type { CommentInput } from './schema.ts';

export interface Pin {
  timeCodeMs: number | null; frame: number | null;
  rect: { x: number; y: number; width: number; height: number } | null;
}

const EPSILON = 1e-9;

export interface FrameRate { num: number; den: number }

/** The frame shown at a time code (ms): floor(t x rate). */
export const frameAt = (rate: FrameRate, ms: number): number => Math.floor((ms * rate.num) / (1000 * rate.den) + EPSILON);

/**
 * The time code (ms) of a frame: the first whole millisecond inside it (ceil, not round: a rounded
 * time code can fall before the frame starts, e.g. frame 2 at 24 fps starts at 83.33 ms).
 */
export const timeCodeOf = (rate: FrameRate, frame: number): number => Math.ceil((frame * 1000 * rate.den) / rate.num);

type PinArtifact = Pick<ArtifactRow, 'kind' | 'duration_ms' | 'frame_count' | 'frame_rate'>;

export function pinOf(a: PinArtifact, input: CommentInput): Pin {
  const problems: Record<string, string> = {};
  const timed = a.kind === 'video' || a.kind === 'audio';
  const framed = a.kind === 'video' || a.kind === 'image';
  let timeCodeMs = input.timeCodeMs ?? null;
  let frame = input.frame ?? null;

  if (timeCodeMs !== null) {
    if (!timed) problems.timeCodeMs = `an ${a.kind} artifact has no time line`;
    else if (a.duration_ms === null) problems.timeCodeMs = 'the artifact has no known duration';
    else if (timeCodeMs >= a.duration_ms) problems.timeCodeMs = `must be below the artifact's duration of ${a.duration_ms} ms`;
  }
  if (frame !== null) {
    if (!framed) problems.frame = `an ${a.kind} artifact has no frames`;
    else if (a.frame_count === null) problems.frame = 'the artifact has no known frame count';
    else if (frame >= a.frame_count) problems.frame = `must be below the artifact's frame count of ${a.frame_count}`;
  }
  if (input.rect !== undefined) {
    const r = input.rect;
    if (!framed) problems.rect = `an ${a.kind} artifact has no picture`;
    else if (r.width <= 0 || r.height <= 0) problems.rect = 'must have a width and a height above 0';
    else if (r.x + r.width > 1 + EPSILON || r.y + r.height > 1 + EPSILON) problems.rect = 'must lie inside the frame (x + width and y + height at most 1)';
  }
  if (timed && timeCodeMs === null && frame === null && !problems.frame) {
    problems.timeCodeMs = a.kind === 'video'
      ? 'a comment on a video names its place: give timeCodeMs or frame'
      : 'a comment on audio names its place: give timeCodeMs';
  }
  if (Object.keys(problems).length) throw validationFailed(problems);

  if (a.kind === 'video') {
    const rate = parseFrameRate(a.frame_rate ?? '');
    if (!rate) throw validationFailed({ timeCodeMs: 'the artifact has no known frame rate to place the comment with' });
    const lastFrame = a.frame_count === null ? Number.MAX_SAFE_INTEGER : a.frame_count - 1;
    const shownAt = (ms: number) => Math.min(frameAt(rate, ms), lastFrame);
    if (timeCodeMs !== null && frame !== null && shownAt(timeCodeMs) !== frame) {
      throw validationFailed({ frame: `names another place than timeCodeMs (frame ${shownAt(timeCodeMs)} is shown at ${timeCodeMs} ms)` });
    }
    if (frame === null) frame = shownAt(timeCodeMs!);
    if (timeCodeMs === null) timeCodeMs = timeCodeOf(rate, frame);
  }
  return { timeCodeMs, frame, rect: input.rect ?? null };
}
