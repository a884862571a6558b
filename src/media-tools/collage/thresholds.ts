// The thresholds of the composite detector (src/media-tools/collage.ts), named as
// docs/media-evidence.md#composite-detection describes them. Set on the labelled set of
// test/helpers/collage-set.ts (bench/collage.bench.ts).

/** Side of the square frame the image is decoded into. */
export const SIZE = 256;
/** Rows (columns) per window along a vertical (horizontal) line. */
export const WINDOW = 4;
/** Smallest feature difference (0..255 colour units plus activity) that makes a step or a gutter. */
export const T_STEP = 10;
/** A step must also exceed this many times the texture beside it. */
export const K_TEXTURE = 2;
/** Neighbouring column pairs on each side that measure the texture. */
export const TEXTURE_SPAN = 3;
/** Widest gutter band, in frame pixels, tested directly (wider ones are two seams, merged). */
export const MAX_BAND = 3;
/** Activity margin by which a gutter is flatter than its sides; also "flat" for wide gutters. */
export const T_FLAT = 4;
/** Coverage of a whole seam. */
export const C_FULL = 0.85;
/** A partial border of a grid: coverage overall, and between two seams of the other axis. */
export const C_PARTIAL = 0.5;
export const C_SEGMENT = 0.9;
/** Lines this close to an edge are borders or letterboxing. */
export const EDGE_MARGIN = 0.08;
/** How far a border may be from i/k (gutters and outer margins shift it a little). */
export const TOL = 0.03;
/** No mark with texture between may be this close to a panel border; the coverage of a mark. */
export const ISOLATION = 0.06;
export const C_MARK = 0.6;
/** Runs of evidence at most this many frame pixels apart are one line (a narrow gutter's two edges). */
export const MERGE = 4;
/** Two lines at most this far apart with a uniform band between them (within GUTTER_DEVIATION) are one wide gutter. */
export const GUTTER_MAX = 0.05;
export const GUTTER_DEVIATION = 12;
/** Most panels along one axis. */
export const MAX_PANELS = 4;
/** Finest regular pattern tested (seams at every 1/FINE_MAX). */
export const FINE_MAX = 24;
/** Mean difference of neighbouring lines up to which a band is a stripe. */
export const STRIPE = 2;
/** Near repeats: the reduction's side, the ratio, the least change by a smaller shift, the border coverage. */
export const BLOCKS = 64;
export const PERIOD_RATIO = 0.45;
export const PERIOD_MIN = 12;
export const C_WEAK = 0.3;
/** A repeat: the same panel again (ratio at most REPEAT_RATIO), in a picture that a smaller shift changes by REPEAT_MIN. */
export const REPEAT_RATIO = 0.25;
export const REPEAT_MIN = 2;
