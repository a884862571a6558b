// Evidence, lines and seams of one axis of the composite detector (src/media-tools/collage.ts;
// the method: docs/media-evidence.md#composite-detection).
import { WINDOW, T_STEP, K_TEXTURE, TEXTURE_SPAN, MAX_BAND, T_FLAT, C_FULL, C_PARTIAL, EDGE_MARGIN, C_MARK, MERGE, GUTTER_MAX, GUTTER_DEVIATION } from './thresholds.ts';
import { periodicity, type Period, type Reduced } from './period.ts';

/** A line: its position (fraction of the length across) and its best coverage by seam evidence. */
export interface Line { at: number; strong: number }

/** Evidence bits of a window: a seam (step or gutter), and a line (any thin band, or a step that is one). */
export const SEAM = 1;
export const LINE = 2;

export interface Axis {
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

/** Window features, evidence and seams of one axis: vertical=true looks for vertical lines (x across, y along). */
export function axis(rgb: Uint8Array, width: number, height: number, vertical: boolean, small: Reduced): Axis {
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
