// Is an image one picture, or several pasted together (a 2x2 collage, a split screen, a contact
// sheet or storyboard grid)? ffmpeg decodes a small frame; straight seams that cut it into aligned
// panels, or a picture that repeats itself, make it a composite. The method, its thresholds (the
// constants below) and its blind spots: docs/media-evidence.md#composite-detection
import { runFfmpeg } from './ffmpeg.ts';

export type CompositeKind = 'collage' | 'split_screen' | 'contact_sheet';

export interface Seams {
  /** x positions of vertical seams, as fractions of the width (0..1). */
  vertical: number[];
  /** y positions of horizontal seams, as fractions of the height. */
  horizontal: number[];
}

export interface CompositeResult { composite: CompositeKind | null; seams: Seams }

/** Side of the square frame the image is decoded into. */
const SIZE = 256;
/** Rows (columns) per window along a vertical (horizontal) line. */
const WINDOW = 4;
/** Smallest feature difference (0..255 colour units plus activity) that makes a step or a gutter. */
const T_STEP = 10;
/** A step must also exceed this many times the texture beside it. */
const K_TEXTURE = 2;
/** Neighbouring column pairs on each side that measure the texture. */
const TEXTURE_SPAN = 3;
/** Widest gutter band, in frame pixels, tested directly (wider ones are two seams, merged). */
const MAX_BAND = 3;
/** Activity margin by which a gutter is flatter than its sides; also "flat" for wide gutters. */
const T_FLAT = 4;
/** Coverage of a whole seam. */
const C_FULL = 0.85;
/** A partial border of a grid: coverage overall, and between two seams of the other axis. */
const C_PARTIAL = 0.5;
const C_SEGMENT = 0.9;
/** Lines this close to an edge are borders or letterboxing. */
const EDGE_MARGIN = 0.08;
/** How far a border may be from i/k (gutters and outer margins shift it a little). */
const TOL = 0.03;
/** No mark with texture between may be this close to a panel border; the coverage of a mark. */
const ISOLATION = 0.06;
const C_MARK = 0.6;
/** Runs of evidence at most this many frame pixels apart are one line (a narrow gutter's two edges). */
const MERGE = 4;
/** Two lines at most this far apart with a uniform band between them (within GUTTER_DEVIATION) are one wide gutter. */
const GUTTER_MAX = 0.05;
const GUTTER_DEVIATION = 12;
/** Most panels along one axis. */
const MAX_PANELS = 4;
/** Finest regular pattern tested (seams at every 1/FINE_MAX). */
const FINE_MAX = 24;
/** Mean difference of neighbouring lines up to which a band is a stripe. */
const STRIPE = 2;
/** Near repeats: the reduction's side, the ratio, the least change by a smaller shift, the border coverage. */
const BLOCKS = 64;
const PERIOD_RATIO = 0.45;
const PERIOD_MIN = 12;
const C_WEAK = 0.3;
/** A repeat: the same panel again (ratio at most REPEAT_RATIO), in a picture that a smaller shift changes by REPEAT_MIN. */
const REPEAT_RATIO = 0.25;
const REPEAT_MIN = 2;

/** A line: its position (fraction of the length across) and its best coverage by seam evidence. */
interface Line { at: number; strong: number }

/** Evidence bits of a window: a seam (step or gutter), and a line (any thin band, or a step that is one). */
const SEAM = 1;
const LINE = 2;

interface Axis {
  /** Length across the seams (frame pixels) and number of windows along them. */
  n: number;
  windows: number;
  /** flags[w * (2n + 1) + c]: evidence bits (SEAM, LINE) of window w at c / 2 frame pixels. */
  flags: Uint8Array;
  /** Lines (coverage C_FULL) that are seams (coverage C_PARTIAL by seam evidence). */
  seams: Line[];
  /** Runs of coverage C_MARK: seams, drawn lines, edges of text. */
  marks: Line[];
  /** Mean activity of the lines from..to (exclusive), over all windows. */
  activity(from: number, to: number): number;
  /** Mean difference of neighbouring lines between from and to, over all windows. */
  variation(from: number, to: number): number;
  period: Period;
}

/** Decodes the image and looks for panels; throws when ffmpeg cannot decode it. */
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
  const small = reduce(rgb, width, height);
  const v = axis(rgb, width, height, true, small);
  const h = axis(rgb, width, height, false, small);
  const round = (s: Line) => Math.round(s.at * 1000) / 1000;
  return { composite: classify(v, h), seams: { vertical: v.seams.map(round), horizontal: h.seams.map(round) } };
}

/** Window features, evidence and seams of one axis: vertical=true looks for vertical lines (x across, y along). */
function axis(rgb: Uint8Array, width: number, height: number, vertical: boolean, small: Reduced): Axis {
  const n = vertical ? width : height;
  const along = vertical ? height : width;
  const pixel = (a: number, b: number) => (vertical ? b * width + a : a * width + b) * 3;
  const windows = Math.max(1, Math.floor(along / WINDOW));
  const mean = new Float32Array(windows * n * 3);
  const act = new Float32Array(windows * n);
  for (let w = 0; w < windows; w++) {
    for (let a = 0; a < n; a++) {
      let r = 0, g = 0, b = 0, rise = 0;
      for (let k = w * WINDOW; k < Math.min(along, (w + 1) * WINDOW); k++) {
        const i = pixel(a, k);
        r += rgb[i]; g += rgb[i + 1]; b += rgb[i + 2];
        if (k > 0) rise += maxDiff(rgb, i, pixel(a, k - 1));
      }
      const o = (w * n + a) * 3;
      mean[o] = r / WINDOW; mean[o + 1] = g / WINDOW; mean[o + 2] = b / WINDOW;
      act[w * n + a] = rise / WINDOW;
    }
  }
  const dist = (w: number, i: number, j: number) => {
    const oi = (w * n + i) * 3, oj = (w * n + j) * 3;
    return Math.max(Math.abs(mean[oi] - mean[oj]), Math.abs(mean[oi + 1] - mean[oj + 1]), Math.abs(mean[oi + 2] - mean[oj + 2]))
      + Math.abs(act[w * n + i] - act[w * n + j]);
  };
  // steps[w * (n + 1) + a]: sum of the differences of neighbouring lines before line a, per window.
  const steps = new Float32Array(windows * (n + 1));
  for (let w = 0; w < windows; w++) for (let a = 1; a < n; a++) steps[w * (n + 1) + a] = steps[w * (n + 1) + a - 1] + dist(w, a - 1, a);
  /** Mean difference of neighbouring lines over TEXTURE_SPAN pairs from line `from` on. */
  const texture = (w: number, from: number) => (steps[w * (n + 1) + from + TEXTURE_SPAN] - steps[w * (n + 1) + from]) / TEXTURE_SPAN;

  /** The picture is back to one side's colour within MAX_BAND lines of a step from L to R. */
  const thinLine = (w: number, L: number, R: number) => {
    for (let k = 1; k <= MAX_BAND; k++) {
      if (R + k < n && dist(w, L, R + k) <= T_STEP) return true;
      if (L - k >= 0 && dist(w, L - k, R) <= T_STEP) return true;
    }
    return false;
  };
  const stride = 2 * n + 1;
  const flags = new Uint8Array(windows * stride);
  for (let w = 0; w < windows; w++) {
    const row = w * stride;
    for (let b = TEXTURE_SPAN + 2; b < n - TEXTURE_SPAN - MAX_BAND - 1; b++) {
      const L = b - 1;
      const left = texture(w, L - TEXTURE_SPAN);
      for (let g = 0; g <= MAX_BAND; g++) {
        const R = b + g;
        const need = T_STEP + K_TEXTURE * Math.max(left, texture(w, R));
        // A step, unless the picture is back to one side's colour within MAX_BAND: then it is a thin line.
        const step = g <= 1 && dist(w, L, R) > need;
        let line = step && thinLine(w, L, R);
        let hit = step && !line;
        if (!hit && g >= 1) {
          let band = Infinity;
          let bandAct = 0;
          for (let k = b; k < R; k++) {
            band = Math.min(band, dist(w, L, k), dist(w, k, R));
            bandAct = Math.max(bandAct, act[w * n + k]);
          }
          line ||= band > need;
          hit = band > need && (dist(w, L, R) > T_STEP || bandAct + T_FLAT < Math.min(act[w * n + L], act[w * n + R]));
        }
        // Centre of the line or band, in half pixels; one half pixel either way counts too.
        const bits = (hit ? SEAM : 0) | (line ? LINE : 0);
        if (bits) for (let c = 2 * b + g - 1; c <= 2 * b + g + 1; c++) flags[row + c] |= bits;
      }
    }
  }
  const strong = new Float32Array(stride);
  const any = new Float32Array(stride);
  for (let w = 0; w < windows; w++) {
    for (let c = 0; c < stride; c++) {
      const f = flags[w * stride + c];
      if (f & SEAM) strong[c]++;
      if (f) any[c]++;
    }
  }
  for (let c = 0; c < stride; c++) { strong[c] /= windows; any[c] /= windows; }

  const uniformBand = (from: number, to: number) => {
    if (to - from < 1) return false;
    const avg = [0, 1, 2].map((ch) => {
      let sum = 0;
      for (let w = 0; w < windows; w++) for (let a = from; a < to; a++) sum += mean[(w * n + a) * 3 + ch];
      return sum / (windows * (to - from));
    });
    for (let w = 0; w < windows; w++) {
      for (let a = from; a < to; a++) {
        const o = (w * n + a) * 3;
        if (act[w * n + a] >= T_FLAT || [0, 1, 2].some((ch) => Math.abs(mean[o + ch] - avg[ch]) > GUTTER_DEVIATION)) return false;
      }
    }
    return true;
  };
  const lines = findLines(any, strong, n, uniformBand, C_FULL);
  const seams = lines.filter((l) => l.strong >= C_PARTIAL);
  const marks = findLines(any, strong, n, uniformBand, C_MARK);
  const variation = (from: number, to: number) => {
    let sum = 0;
    for (let w = 0; w < windows; w++) for (let a = from; a < to; a++) sum += dist(w, a, a + 1);
    return to > from ? sum / (windows * (to - from)) : 0;
  };
  const activity = (from: number, to: number) => {
    let sum = 0;
    for (let w = 0; w < windows; w++) for (let a = from; a < to; a++) sum += act[w * n + a];
    return to > from ? sum / (windows * (to - from)) : 0;
  };
  return { n, windows, flags, seams, marks, activity, variation, period: periodicity(small, vertical) };
}

function maxDiff(rgb: Uint8Array, i: number, j: number): number {
  return Math.max(Math.abs(rgb[i] - rgb[j]), Math.abs(rgb[i + 1] - rgb[j + 1]), Math.abs(rgb[i + 2] - rgb[j + 2]));
}

/**
 * Runs of half-pixel positions whose coverage by either evidence reaches `threshold`, as fractions,
 * with their best coverage by seam evidence; a narrow gutter's two edges and a wide gutter merged;
 * lines near the edges dropped.
 */
function findLines(any: Float32Array, strong: Float32Array, n: number, uniformBand: (from: number, to: number) => boolean, threshold: number): Line[] {
  const runs: Array<{ from: number; to: number; strong: number }> = [];
  for (let c = 0; c < any.length; c++) {
    if (any[c] < threshold) continue;
    const run = { from: c, to: c, strong: 0 };
    for (; c < any.length && any[c] >= threshold; c++) {
      run.to = c;
      run.strong = Math.max(run.strong, strong[c]);
    }
    runs.push(run);
  }
  const lines: Line[] = [];
  for (let i = 0; i < runs.length; i++) {
    let run = runs[i];
    const next = runs[i + 1];
    // The two edges of a gutter: close together, or with uniform pixels between them.
    const gap = next ? (next.from - run.to) / 2 : Infinity;
    if (gap <= MERGE || (gap <= GUTTER_MAX * n && uniformBand(Math.ceil(run.to / 2) + 1, Math.floor(next.from / 2) - 1))) {
      run = { from: run.from, to: next.to, strong: Math.max(run.strong, next.strong) };
      i++;
    }
    const at = (run.from + run.to) / 4 / n;
    if (at > EDGE_MARGIN && at < 1 - EDGE_MARGIN) lines.push({ at, strong: run.strong });
  }
  return lines;
}

// ---- panels ------------------------------------------------------------------------------------

const seamNear = (d: Axis, at: number, tol = TOL) => d.seams.find((s) => Math.abs(s.at - at) <= tol);

/** Coverage of the best half-pixel position within TOL of `at`, over the windows [from, to). */
function coverageNear(d: Axis, at: number, mask = SEAM, from = 0, to = d.windows): number {
  const stride = 2 * d.n + 1;
  let best = 0;
  for (let c = Math.max(0, Math.round((at - TOL) * 2 * d.n)); c <= Math.min(stride - 1, Math.round((at + TOL) * 2 * d.n)); c++) {
    let hits = 0;
    for (let w = from; w < to; w++) if (d.flags[w * stride + c] & mask) hits++;
    best = Math.max(best, hits / Math.max(1, to - from));
  }
  return best;
}

/** Seams at every i/(m*k), m >= 2 (at most one missing from six on): a striped pattern, not k panels. */
function finerPattern(d: Axis, k: number): boolean {
  for (let fine = 2 * k; fine <= FINE_MAX; fine += k) {
    let missing = 0;
    for (let i = 1; i < fine; i++) if (!seamNear(d, i / fine, 0.25 / fine)) missing++;
    if (missing <= (fine >= 6 ? 1 : 0)) return true;
  }
  return false;
}

/** A partial border: enough coverage overall and nearly whole between two seams of the other axis. */
function partialBorder(d: Axis, at: number, cross: number[]): boolean {
  if (cross.length === 0 || coverageNear(d, at) < C_PARTIAL) return false;
  const cuts = [0, ...cross.map((c) => Math.round(c * d.windows)), d.windows];
  return cuts.slice(1).some((to, i) => to - cuts[i] >= 2 && coverageNear(d, at, SEAM, cuts[i], to) >= C_SEGMENT);
}

/** Panels along one axis (1: none), given the seams of the other axis that lie on a panel grid. */
function panels(d: Axis, cross: number[]): number {
  for (let k = MAX_PANELS; k >= 2; k--) {
    const borders = Array.from({ length: k - 1 }, (_, i) => (i + 1) / k);
    const { ratio, change } = d.period;
    if (ratio[k] <= REPEAT_RATIO && change[k] >= REPEAT_MIN) return k;
    if (ratio[k] <= PERIOD_RATIO && change[k] >= PERIOD_MIN && borders.every((at) => coverageNear(d, at, SEAM | LINE) >= C_WEAK)) return k;
  }
  for (let k = MAX_PANELS; k >= 2; k--) {
    const borders = Array.from({ length: k - 1 }, (_, i) => (i + 1) / k);
    const whole = borders.map((at) => seamNear(d, at));
    if (!whole.some(Boolean)) continue;
    if (!borders.every((at, i) => whole[i] || partialBorder(d, at, cross))) continue;
    // A line close beside a border, with texture between them: the border is the edge of a line of text.
    const lone = (at: number) => {
      const own = seamNear(d, at)?.at ?? at;
      return !d.marks.some((m) => Math.abs(m.at - own) > MERGE / d.n && Math.abs(m.at - own) < ISOLATION
        && d.activity(Math.round(Math.min(m.at, own) * d.n) + 2, Math.round(Math.max(m.at, own) * d.n) - 2) > T_FLAT);
    };
    if (!borders.every(lone)) continue;
    return finerPattern(d, k) ? 1 : k;
  }
  return 1;
}

/** Seams that lie on i/k for some k <= MAX_PANELS. */
function gridSeams(d: Axis): number[] {
  const out: number[] = [];
  for (const s of d.seams) {
    for (let k = 2; k <= MAX_PANELS; k++) if (Math.abs(s.at * k - Math.round(s.at * k)) <= TOL * k) { out.push(s.at); break; }
  }
  return out;
}

/** Every one of the k bands is a stripe: no variation across it, only along. */
function stripes(d: Axis, k: number): boolean {
  const cuts = [0, ...Array.from({ length: k - 1 }, (_, i) => Math.round((seamNear(d, (i + 1) / k)?.at ?? (i + 1) / k) * d.n)), d.n];
  return cuts.slice(1).every((to, i) => d.variation(cuts[i] + 3, to - 4) <= STRIPE);
}

function classify(v: Axis, h: Axis): CompositeKind | null {
  let across = panels(v, gridSeams(h));
  let down = panels(h, gridSeams(v));
  if (down === 1 && across >= 3 && stripes(v, across)) across = 1;
  if (across === 1 && down >= 3 && stripes(h, down)) down = 1;
  if (across >= 3 && down >= 3) return 'contact_sheet';
  if (across >= 2 && down >= 2) return 'collage';
  if (across >= 2 || down >= 2) return 'split_screen';
  return null;
}

// ---- periodicity -------------------------------------------------------------------------------

interface Reduced { side: number; rgb: Float32Array }

/** For k panels: ratio[k], the difference to itself shifted by 1/k over that by a smaller shift; change[k], the latter. */
interface Period { ratio: number[]; change: number[] }

/** The frame averaged into side x side cells. */
function reduce(rgb: Uint8Array, width: number, height: number): Reduced {
  const side = Math.min(BLOCKS, width, height);
  const sums = new Float32Array(side * side * 3);
  const counts = new Uint32Array(side * side);
  for (let y = 0; y < height; y++) {
    const by = Math.floor((y * side) / height);
    for (let x = 0; x < width; x++) {
      const cell = by * side + Math.floor((x * side) / width);
      const i = (y * width + x) * 3;
      sums[cell * 3] += rgb[i]; sums[cell * 3 + 1] += rgb[i + 1]; sums[cell * 3 + 2] += rgb[i + 2];
      counts[cell]++;
    }
  }
  for (let cell = 0; cell < counts.length; cell++) for (let ch = 0; ch < 3; ch++) sums[cell * 3 + ch] /= counts[cell];
  return { side, rgb: sums };
}

/** ratio[k], k = 2..MAX_PANELS: the mean difference to itself shifted by 1/k over that by a smaller shift (1: no period). */
function periodicity({ side: n, rgb }: Reduced, vertical: boolean): Period {
  const diff = (s: number) => {
    let sum = 0;
    for (let a = 0; a < n; a++) {
      const shifted = (a + s) % n;
      for (let b = 0; b < n; b++) {
        const i = (vertical ? b * n + a : a * n + b) * 3;
        const j = (vertical ? b * n + shifted : shifted * n + b) * 3;
        sum += Math.max(Math.abs(rgb[i] - rgb[j]), Math.abs(rgb[i + 1] - rgb[j + 1]), Math.abs(rgb[i + 2] - rgb[j + 2]));
      }
    }
    return sum / (n * n);
  };
  const cache = new Map<number, number>();
  const E = (s: number) => cache.get(s) ?? (cache.set(s, diff(s)), cache.get(s)!);
  const ratio = [1, 1];
  const change = [0, 0];
  for (let k = 2; k <= MAX_PANELS; k++) {
    const period = n / k;
    let at = Infinity;
    for (let s = Math.max(1, Math.floor(period - 1)); s <= Math.ceil(period + 1) && s < n; s++) at = Math.min(at, E(s));
    let other = Infinity;
    for (let s = Math.max(1, Math.round(period / 4)); s <= Math.round((3 * period) / 4); s++) other = Math.min(other, E(s));
    ratio.push(other > 0 ? at / other : 1);
    change.push(other);
  }
  return { ratio, change };
}
