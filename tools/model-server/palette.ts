// Colours of the rendered media. A prompt that names a colour gets it ("a red door" is red), any
// other prompt a colour derived from its hash, so the same prompt always looks the same. Composite
// tiles and the end of a video need colours that differ clearly from it whatever it is (the
// arithmetic complement of mid-grey is mid-grey), so they are picked from a fixed set of primaries.
import { createHash } from 'node:crypto';

export type Rgb = readonly [number, number, number];

const NAMED: ReadonlyArray<readonly [string, Rgb]> = [
  ['red', [220, 20, 20]], ['green', [20, 170, 40]], ['blue', [25, 60, 220]], ['yellow', [250, 220, 20]],
  ['orange', [250, 140, 0]], ['purple', [128, 30, 160]], ['violet', [140, 80, 220]], ['pink', [250, 130, 180]],
  ['white', [255, 255, 255]], ['black', [0, 0, 0]], ['gray', [128, 128, 128]], ['grey', [128, 128, 128]],
  ['cyan', [0, 220, 230]], ['magenta', [230, 0, 200]], ['brown', [130, 75, 30]], ['gold', [212, 175, 55]],
  ['silver', [192, 192, 192]], ['teal', [0, 128, 128]], ['navy', [0, 0, 128]], ['lime', [150, 250, 50]],
  ['maroon', [128, 0, 0]], ['olive', [128, 128, 0]], ['beige', [235, 220, 180]], ['turquoise', [64, 224, 208]],
  ['indigo', [75, 0, 130]], ['crimson', [220, 20, 60]],
];
const BY_NAME = new Map(NAMED);
const COLOUR_WORD = new RegExp(`\\b(${NAMED.map(([name]) => name).join('|')})\\b`, 'i');

/** Clearly distinct colours for tiles and fades. */
const PRIMARIES: readonly Rgb[] = [
  [255, 0, 0], [0, 200, 0], [0, 0, 255], [255, 255, 0], [255, 255, 255], [0, 0, 0], [0, 255, 255], [255, 0, 255],
];

/** The first colour word of the prompt, or a colour from the prompt's SHA-256. */
export function promptColour(prompt: string): Rgb {
  const word = COLOUR_WORD.exec(prompt);
  if (word) return BY_NAME.get(word[1].toLowerCase())!;
  const digest = createHash('sha256').update(prompt).digest();
  return [digest[0], digest[1], digest[2]];
}

function distance(a: Rgb, b: Rgb): number {
  return Math.hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]);
}

/**
 * `count` colours starting with `base`, each further one the primary farthest from all chosen so
 * far (greedy max-min distance), so every pair differs clearly.
 */
export function distinctColours(base: Rgb, count: number): Rgb[] {
  const chosen: Rgb[] = [base];
  while (chosen.length < count) {
    let best = PRIMARIES[0];
    let bestGap = -1;
    for (const candidate of PRIMARIES) {
      const gap = Math.min(...chosen.map((c) => distance(c, candidate)));
      if (gap > bestGap) [best, bestGap] = [candidate, gap];
    }
    chosen.push(best);
  }
  return chosen;
}

/** Black or white, whichever reads better on `background`. */
export function inkFor(background: Rgb): Rgb {
  const luma = 0.299 * background[0] + 0.587 * background[1] + 0.114 * background[2];
  return luma > 140 ? [0, 0, 0] : [255, 255, 255];
}

/** ffmpeg's colour syntax: 0xRRGGBB. */
export function ffmpegColour(c: Rgb): string {
  return '0x' + c.map((v) => v.toString(16).padStart(2, '0')).join('');
}
