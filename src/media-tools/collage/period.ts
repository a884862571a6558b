// Near and exact repeats of the picture for the composite detector (src/media-tools/collage.ts;
// the method: docs/media-evidence.md#composite-detection).
import { MAX_PANELS, BLOCKS } from './thresholds.ts';

export interface Reduced { side: number; rgb: Float32Array }

/** For k panels: ratio[k], the difference to itself shifted by 1/k over that by a smaller shift; change[k], the latter. */
export interface Period { ratio: number[]; change: number[] }

/** The frame averaged into side x side cells. */
export function reduce(rgb: Uint8Array, width: number, height: number): Reduced {
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
export function periodicity({ side: n, rgb }: Reduced, vertical: boolean): Period {
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
