// What QA measures in a media file, in ONE ffmpeg pass: the picture through blackdetect and
// freezedetect, the sound through ebur128 (peak=true: integrated loudness and true peak), all to
// the null muxer; the answers are read from ffmpeg's log. ffprobe's facts (size, rate, duration,
// streams) are already on the artifact row, so they are not measured again.
import { inputArgs, runFfmpeg } from '../../media-tools/ffmpeg.ts';
import type { DeliverySpec } from '../../production/projects/spec.ts';

export interface Stretch { startMs: number; endMs: number; durationMs: number }

export interface Measured {
  /** Integrated loudness (LUFS; -70 is ebur128's floor: nothing above the gate) and true peak (dBTP; null = -inf, digital silence). */
  loudness: { integratedLufs: number; truePeakDbtp: number | null } | null;
  black: Stretch[];
  frozen: Stretch[];
}

const MEASURE_TIMEOUT_MS = 5 * 60_000;

/** The ffmpeg arguments of the pass (exported for the test of the log parser's input); `file` is a path or a signed URL. */
export function measureArgs(file: string, streams: { video: boolean; audio: boolean }, spec: DeliverySpec): string[] {
  const graph: string[] = [];
  const maps: string[] = [];
  if (streams.video) {
    graph.push(`[0:v:0]blackdetect=d=${spec.blackMinSeconds}:pix_th=${spec.blackPixelThreshold},freezedetect=n=${spec.freezeNoiseDb}dB:d=${spec.freezeMinSeconds}[vq]`);
    maps.push('-map', '[vq]');
  }
  if (streams.audio) {
    // framelog=verbose keeps the per-100 ms lines out of the log read here.
    graph.push('[0:a:0]ebur128=peak=true:framelog=verbose[aq]');
    maps.push('-map', '[aq]');
  }
  return ['-v', 'info', '-nostats', ...inputArgs(file), '-filter_complex', graph.join(';'), ...maps, '-f', 'null', '-'];
}

/** Measures a video and/or audio file; nothing to measure (an image) answers empty results without a process. */
export async function measureMedia(
  file: string, streams: { video: boolean; audio: boolean; durationMs: number | null }, spec: DeliverySpec, signal?: AbortSignal,
): Promise<Measured> {
  if (!streams.video && !streams.audio) return { loudness: null, black: [], frozen: [] };
  const { stderr } = await runFfmpeg(measureArgs(file, streams, spec), { signal, timeoutMs: MEASURE_TIMEOUT_MS });
  return parseMeasureLog(stderr, streams.audio, streams.durationMs);
}

const ms = (seconds: string) => Math.round(Number(seconds) * 1000);
const stretch = (startMs: number, endMs: number): Stretch => ({ startMs, endMs, durationMs: endMs - startMs });

/**
 * The measures in ffmpeg's log. ebur128 may print a summary for a graph instance that saw no audio
 * (ffmpeg configures the graph again once it knows the input): the last summary is the real one.
 */
export function parseMeasureLog(log: string, audio: boolean, durationMs: number | null): Measured {
  const black = [...log.matchAll(/black_start:\s*([\d.]+)\s+black_end:\s*([\d.]+)/g)].map((m) => stretch(ms(m[1]), ms(m[2])));
  const frozen: Stretch[] = [];
  let open: number | null = null;
  for (const m of log.matchAll(/lavfi\.freezedetect\.freeze_(start|end):\s*([\d.]+)/g)) {
    if (m[1] === 'start') open = ms(m[2]);
    else if (open !== null) {
      frozen.push(stretch(open, ms(m[2])));
      open = null;
    }
  }
  // A still stretch that lasts to the end has no freeze_end: it ends with the file.
  if (open !== null) frozen.push(stretch(open, Math.max(open, durationMs ?? open)));
  let loudness: Measured['loudness'] = null;
  if (audio) {
    const integrated = [...log.matchAll(/^\s*I:\s*(-?[\d.]+|-inf)\s*LUFS/gm)].at(-1)?.[1];
    const peak = [...log.matchAll(/^\s*Peak:\s*(-?[\d.]+|-inf|inf)\s*dBFS/gm)].at(-1)?.[1];
    if (integrated === undefined || peak === undefined) throw new Error('ffmpeg printed no loudness summary (ebur128)');
    loudness = {
      integratedLufs: integrated === '-inf' ? -70 : Number(integrated),
      truePeakDbtp: peak === '-inf' ? null : Number(peak),
    };
  }
  return { loudness, black, frozen };
}
