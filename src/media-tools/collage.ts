// Is an image one picture, or several pasted together (a 2x2 collage, a split screen, a contact
// sheet or storyboard grid)? ffmpeg decodes a small frame; straight seams that cut it into aligned
// panels, or a picture that repeats itself, make it a composite. The method, its thresholds
// (collage/thresholds.ts) and its blind spots: docs/media-evidence.md#composite-detection
import { inputArgs, runFfmpeg, withoutUrls } from './ffmpeg.ts';
import { SIZE } from './collage/thresholds.ts';
import { axis, type Line } from './collage/axis.ts';
import { classify, type CompositeKind } from './collage/panels.ts';
import { reduce } from './collage/period.ts';

export type { CompositeKind };

export interface Seams {
  /** x positions of vertical seams, as fractions of the width (0..1). */
  vertical: number[];
  /** y positions of horizontal seams, as fractions of the height. */
  horizontal: number[];
}

export interface CompositeResult { composite: CompositeKind | null; seams: Seams }

/** Decodes the image (a path or an http(s) URL) and looks for panels; throws when ffmpeg cannot decode it. */
export async function detectComposite(imagePath: string, opts: { signal?: AbortSignal } = {}): Promise<CompositeResult> {
  const { stdout } = await runFfmpeg([
    '-v', 'error', ...inputArgs(imagePath), '-frames:v', '1',
    '-vf', `scale=${SIZE}:${SIZE}:flags=area`, '-f', 'rawvideo', '-pix_fmt', 'rgb24', 'pipe:1',
  ], { signal: opts.signal, timeoutMs: 30_000 });
  if (stdout.length < SIZE * SIZE * 3) throw new Error(`could not decode ${withoutUrls(imagePath)} into an RGB frame`);
  return analyzeFrame(stdout, SIZE, SIZE);
}

/** Seams and verdict of an rgb24 frame (exported for tests on synthetic frames). */
export function analyzeFrame(rgb: Uint8Array, width: number, height: number): CompositeResult {
  const small = reduce(rgb, width, height);
  const v = axis(rgb, width, height, true, small);
  const h = axis(rgb, width, height, false, small);
  const round = (s: Line) => Math.round(s.at * 1000) / 1000;
  return { composite: classify(v, h), seams: { vertical: v.seams.map(round), horizontal: h.seams.map(round) } };
}
