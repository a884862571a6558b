// A frame's signature: the picture shrunk to 32 x 32 rgb24 by exact area averaging, small enough to
// store beside the frame; compareSignatures gives meanAbsDiff, histogramSimilarity and a score in
// 0..1 (1 = identical). Definitions:
// docs/media-evidence.md#frame-signatures-and-the-continuity-score

export const SIGNATURE_SIZE = 32;
const CELLS = SIGNATURE_SIZE * SIGNATURE_SIZE;
const SIGNATURE_BYTES = CELLS * 3;
const BINS = 16;

/**
 * For one axis of `length` pixels: each pixel's share of each cell, in units where a pixel is
 * SIGNATURE_SIZE wide and a cell `length` wide (integers, so the split is exact).
 * Entry k: pixel[k], cell[k], weight[k]; entries are ordered by pixel.
 */
function axisWeights(length: number): { pixel: Int32Array; cell: Int32Array; weight: Float64Array; count: number } {
  const max = length + SIGNATURE_SIZE;
  const pixel = new Int32Array(max);
  const cell = new Int32Array(max);
  const weight = new Float64Array(max);
  let count = 0;
  for (let p = 0; p < length; p++) {
    const start = p * SIGNATURE_SIZE;
    const end = start + SIGNATURE_SIZE;
    for (let c = Math.floor(start / length); c < SIGNATURE_SIZE && c * length < end; c++) {
      const overlap = Math.min(end, (c + 1) * length) - Math.max(start, c * length);
      if (overlap <= 0) continue;
      pixel[count] = p;
      cell[count] = c;
      weight[count] = overlap;
      count++;
    }
  }
  return { pixel, cell, weight, count };
}

/** The 32x32 rgb24 signature of an rgb24 frame. */
export function signatureOf(rgb: Buffer, width: number, height: number): Buffer {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1 || rgb.length !== width * height * 3) {
    throw new RangeError(`rgb24 frame of ${width}x${height} needs ${width * height * 3} bytes, got ${rgb.length}`);
  }
  const xs = axisWeights(width);
  const ys = axisWeights(height);
  const row = new Float64Array(SIGNATURE_SIZE * 3);
  const cells = new Float64Array(SIGNATURE_BYTES);
  let k = 0;
  for (let y = 0; y < height; y++) {
    // The row reduced to 32 cells...
    row.fill(0);
    const base = y * width * 3;
    for (let e = 0; e < xs.count; e++) {
      const i = base + xs.pixel[e] * 3;
      const o = xs.cell[e] * 3;
      const w = xs.weight[e];
      row[o] += w * rgb[i];
      row[o + 1] += w * rgb[i + 1];
      row[o + 2] += w * rgb[i + 2];
    }
    // ...then added to the one or two cell rows it overlaps.
    for (; k < ys.count && ys.pixel[k] === y; k++) {
      const o = ys.cell[k] * SIGNATURE_SIZE * 3;
      const w = ys.weight[k];
      for (let j = 0; j < row.length; j++) cells[o + j] += w * row[j];
    }
  }
  // Every cell has the area width*height in these units (SIGNATURE_SIZE^2 per pixel, 1/SIGNATURE_SIZE^2 of the frame).
  const area = width * height;
  const out = Buffer.allocUnsafe(SIGNATURE_BYTES);
  for (let i = 0; i < SIGNATURE_BYTES; i++) out[i] = Math.min(255, Math.round(cells[i] / area));
  return out;
}

function histograms(sig: Buffer): Uint16Array {
  const h = new Uint16Array(3 * BINS);
  for (let i = 0; i < SIGNATURE_BYTES; i++) h[(i % 3) * BINS + (sig[i] >> 4)]++;
  return h;
}

/** How alike two signatures are (formula at the top of this file). */
export function compareSignatures(a: Buffer, b: Buffer): { score: number; meanAbsDiff: number; histogramSimilarity: number } {
  if (a.length !== SIGNATURE_BYTES || b.length !== SIGNATURE_BYTES) {
    throw new RangeError(`signatures are ${SIGNATURE_BYTES} bytes (got ${a.length} and ${b.length})`);
  }
  let diff = 0;
  for (let i = 0; i < SIGNATURE_BYTES; i++) diff += Math.abs(a[i] - b[i]);
  const meanAbsDiff = diff / SIGNATURE_BYTES;
  const ha = histograms(a);
  const hb = histograms(b);
  let common = 0;
  for (let i = 0; i < ha.length; i++) common += Math.min(ha[i], hb[i]);
  const histogramSimilarity = common / (3 * CELLS);
  const score = (1 - meanAbsDiff / 255) * histogramSimilarity;
  const round = (v: number) => Math.round(v * 1e6) / 1e6;
  return { score: round(score), meanAbsDiff: round(meanAbsDiff), histogramSimilarity: round(histogramSimilarity) };
}
