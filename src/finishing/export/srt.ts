// SubRip subtitles: numbered cues "HH:MM:SS,mmm --> HH:MM:SS,mmm" with their text, blank line between.
// A shot's dialogue lines share its segment of the cut in proportion to their length (in characters),
// so a long line stays up longer; the cues of one segment tile it exactly.
export interface Cue { startMs: number; endMs: number; text: string }

const pad = (n: number, w = 2) => String(n).padStart(w, '0');
export const srtTime = (ms: number) =>
  `${pad(Math.floor(ms / 3_600_000))}:${pad(Math.floor(ms / 60_000) % 60)}:${pad(Math.floor(ms / 1000) % 60)},${pad(ms % 1000, 3)}`;

/** The lines spread over [startMs, endMs). */
export function spreadLines(lines: string[], startMs: number, endMs: number): Cue[] {
  const texts = lines.map((l) => l.trim()).filter(Boolean);
  const weights = texts.map((t) => Math.max(1, [...t].length));
  const total = weights.reduce((a, b) => a + b, 0);
  let before = 0;
  return texts.map((text, i) => {
    const from = startMs + Math.round(((endMs - startMs) * before) / total);
    before += weights[i];
    return { startMs: from, endMs: startMs + Math.round(((endMs - startMs) * before) / total), text };
  }).filter((c) => c.endMs > c.startMs);
}

export function srtOf(cues: Cue[]): string {
  return cues.map((c, i) => `${i + 1}\r\n${srtTime(c.startMs)} --> ${srtTime(c.endMs)}\r\n${c.text.split(/\r?\n/).filter((l) => l.trim()).join('\r\n')}\r\n`).join('\r\n');
}
