// Is an image one picture, or several pasted together (a 2x2 collage, a split screen, a contact
// sheet)? Generation models asked for one shot sometimes answer with a grid; such an output must
// not pass as a shot.
//
// The image is decoded by ffmpeg into a small RGB frame (SIZE x SIZE, area-averaged, aspect
// ignored: positions are fractions). A seam is a straight line where the picture changes abruptly
// across (nearly) its whole height or width: for a vertical seam at column x, the colour step
// between x-2 and x must exceed a threshold in at least SPAN of the rows. The threshold grows with
// the image's typical step, so texture and noise do not count; a smooth gradient has small steps
// everywhere; text or an object crosses only some rows. The two-pixel step keeps a seam whose
// edge fell inside one pixel of the small frame (half of each colour) as strong as a sharp one.
import { runFfmpeg } from './ffmpeg.ts';

export type CompositeKind = 'collage' | 'split_screen' | 'contact_sheet';

export interface Seams {
  /** x positions of vertical seams, as fractions of the width (0..1). */
  vertical: number[];
  /** y positions of horizontal seams, as fractions of the height. */
  horizontal: number[];
}

export interface CompositeResult { composite: CompositeKind | null; seams: Seams }

const SIZE = 96;
/** Share of rows (columns) in which a step must be strong for a vertical (horizontal) seam. */
const SPAN = 0.9;
/** Smallest step (largest channel difference, 0..255) that can count as a seam. */
const MIN_STEP = 24;
/** A seam's step must also be this many times the image's mean step. */
const CONTRAST = 3;
/** Seams this close to an edge are borders or letterboxing, not composites. */
const EDGE_MARGIN = 0.08;
/** How far (as a share of an equal panel) a panel may be larger or smaller than its siblings. */
const EVENNESS = 0.2;
/** Parallel seams beyond this many (with none across) are a striped scene, not panels. */
const MAX_PANEL_SEAMS = 3;

/** Decodes the image and looks for seams; throws when ffmpeg cannot decode it. */
export async function detectComposite(imagePath: string, opts: { signal?: AbortSignal } = {}): Promise<CompositeResult> {
  const { stdout } = await runFfmpeg([
    '-v', 'error', '-i', imagePath, '-frames:v', '1',
    '-vf', `scale=${SIZE}:${SIZE}:flags=area`, '-f', 'rawvideo', '-pix_fmt', 'rgb24', 'pipe:1',
  ], { signal: opts.signal, timeoutMs: 30_000 });
  if (stdout.length < SIZE * SIZE * 3) throw new Error(`could not decode ${imagePath} into an RGB frame`);
  return analyzeFrame(stdout, SIZE, SIZE);
}

/** Seams and verdict of an rgb24 frame (exported for tests on synthetic frames). */
export function analyzeFrame(rgb: Uint8Array, width: number, height: number): CompositeResult {
  const seams: Seams = {
    vertical: findSeams(rgb, width, height, 'vertical'),
    horizontal: findSeams(rgb, width, height, 'horizontal'),
  };
  return { composite: classify(seams), seams };
}

/**
 * Largest channel difference between the pixel at (along, across) and the one two steps back
 * across the seam direction: for vertical seams `across` is x and `along` is y.
 */
function stepAt(rgb: Uint8Array, width: number, dir: 'vertical' | 'horizontal', across: number, along: number): number {
  const [x, y, back] = dir === 'vertical' ? [across, along, 2 * 3] : [along, across, 2 * 3 * width];
  const i = (y * width + x) * 3;
  return Math.max(Math.abs(rgb[i] - rgb[i - back]), Math.abs(rgb[i + 1] - rgb[i + 1 - back]), Math.abs(rgb[i + 2] - rgb[i + 2 - back]));
}

function findSeams(rgb: Uint8Array, width: number, height: number, dir: 'vertical' | 'horizontal'): number[] {
  const [acrossLen, alongLen] = dir === 'vertical' ? [width, height] : [height, width];
  const steps: number[][] = [];
  let sum = 0;
  for (let a = 2; a < acrossLen; a++) {
    const line: number[] = [];
    for (let b = 0; b < alongLen; b++) line.push(stepAt(rgb, width, dir, a, b));
    steps[a] = line;
    sum += line.reduce((s, v) => s + v, 0);
  }
  const threshold = Math.max(MIN_STEP, CONTRAST * (sum / ((acrossLen - 2) * alongLen)));
  // Strength of each line that crosses the image: its mean step, or 0 when it is not a seam.
  const strength = new Array<number>(acrossLen).fill(0);
  for (let a = 2; a < acrossLen; a++) {
    const strong = steps[a].filter((v) => v > threshold).length;
    if (strong >= SPAN * alongLen) strength[a] = steps[a].reduce((s, v) => s + v, 0) / alongLen;
  }
  return seamPositions(strength, acrossLen);
}

/**
 * Runs of adjacent seam lines are one seam (a sharp edge lights two lines of the two-step
 * difference, a thin gutter three or four); its position is the strength-weighted centre, as a
 * fraction of the length. Seams near the edges are dropped.
 */
function seamPositions(strength: number[], length: number): number[] {
  const positions: number[] = [];
  for (let a = 0; a < length; a++) {
    if (!strength[a]) continue;
    let weight = 0;
    let moment = 0;
    for (; a < length && strength[a]; a++) {
      weight += strength[a];
      moment += strength[a] * a;
    }
    // Line a compares pixel a with a-2: its centre is the edge a-0.5 (in pixel-edge coordinates).
    const position = (moment / weight - 0.5) / length;
    if (position > EDGE_MARGIN && position < 1 - EDGE_MARGIN) positions.push(Math.round(position * 1000) / 1000);
  }
  return positions;
}

/**
 * Panels of a composite have about the same size: seams that cut the picture into parts within
 * EVENNESS of an equal share. (A lone seam must thus be near the middle.)
 */
function evenlySpaced(positions: number[]): boolean {
  const share = 1 / (positions.length + 1);
  const cuts = [0, ...positions, 1];
  return cuts.slice(1).every((cut, i) => Math.abs(cut - cuts[i] - share) <= EVENNESS * share);
}

function classify({ vertical, horizontal }: Seams): CompositeKind | null {
  // Uneven seams are edges in the scene (a door frame, a horizon), not panel borders.
  const across = evenlySpaced(vertical) ? vertical.length : 0;
  const down = evenlySpaced(horizontal) ? horizontal.length : 0;
  if (across >= 2 && down >= 2) return 'contact_sheet';
  if (across >= 1 && down >= 1) return 'collage';
  // Panels side by side (or stacked); more parallel seams than that are a striped scene.
  const parallel = across + down;
  return parallel >= 1 && parallel <= MAX_PANEL_SEAMS ? 'split_screen' : null;
}
