// Panels and the verdict of the composite detector (src/media-tools/collage.ts; the method:
// docs/media-evidence.md#composite-detection).
import { T_FLAT, C_PARTIAL, C_SEGMENT, TOL, ISOLATION, MERGE, MAX_PANELS, FINE_MAX, STRIPE, PERIOD_RATIO, PERIOD_MIN, C_WEAK, REPEAT_RATIO, REPEAT_MIN } from './thresholds.ts';
import { LINE, SEAM, type Axis } from './axis.ts';

export type CompositeKind = 'collage' | 'split_screen' | 'contact_sheet';

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

export function classify(v: Axis, h: Axis): CompositeKind | null {
  let across = panels(v, gridSeams(h));
  let down = panels(h, gridSeams(v));
  if (down === 1 && across >= 3 && stripes(v, across)) across = 1;
  if (across === 1 && down >= 3 && stripes(h, down)) down = 1;
  if (across >= 3 && down >= 3) return 'contact_sheet';
  if (across >= 2 && down >= 2) return 'collage';
  if (across >= 2 || down >= 2) return 'split_screen';
  return null;
}
