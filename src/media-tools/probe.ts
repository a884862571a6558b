// One ffprobe of a stored file (`-show_streams -show_format -of json`) boiled down to what media
// evidence needs: duration, frame rate, rotation, the first video and audio streams. Field choices:
// docs/media-evidence.md#probe-fields
import { inputArgs, MediaToolError, runFfprobe } from './ffmpeg.ts';

/** The file is not media ffmpeg can read (`media_unreadable`) or decode (`media_undecodable`). */
export class MediaError extends Error {
  readonly code: 'media_unreadable' | 'media_undecodable';
  constructor(code: MediaError['code'], message: string) {
    super(message);
    this.name = 'MediaError';
    this.code = code;
  }
}

interface RawStream {
  index: number;
  codec_type?: string;
  codec_name?: string;
  width?: number;
  height?: number;
  avg_frame_rate?: string;
  r_frame_rate?: string;
  duration?: string;
  disposition?: { attached_pic?: number };
  tags?: Record<string, string>;
  side_data_list?: Array<{ side_data_type?: string; rotation?: number }>;
}
interface RawProbe {
  streams?: RawStream[];
  format?: { format_name?: string; duration?: string };
}

export interface ProbedVideo { index: number; codec: string | null; width: number | null; height: number | null; frameRate: string | null; rotation: number }
export interface ProbedAudio { index: number; codec: string | null }
export interface Probe {
  /** ffprobe's format_name, e.g. "mov,mp4,m4a,3gp,3g2,mj2", "png_pipe", "wav". */
  formatName: string;
  durationMs: number | null;
  video: ProbedVideo | null;
  audio: ProbedAudio | null;
  streamCount: number;
}

/** ffprobe format names of text-art demuxers (ANSI, BIN, XBIN, ADF, IDF), matched by extension alone. */
const TEXT_ART = new Set(['tty', 'bin', 'xbin', 'adf', 'idf']);

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

/** "48000/2002" -> "24000/1001"; null for 0/0, negatives and anything that is not a fraction. */
export function reduceFraction(text: string | undefined): string | null {
  const m = /^(\d+)\/(\d+)$/.exec(text ?? '');
  if (!m) return null;
  const num = Number(m[1]);
  const den = Number(m[2]);
  if (!num || !den || !Number.isSafeInteger(num) || !Number.isSafeInteger(den)) return null;
  const g = gcd(num, den);
  return `${num / g}/${den / g}`;
}

/** avg_frame_rate, or r_frame_rate when avg is 0/0. */
export const frameRateOf = (s: RawStream): string | null => reduceFraction(s.avg_frame_rate) ?? reduceFraction(s.r_frame_rate);

/** Clockwise display rotation in degrees, 0..359 (0 when none). */
export function rotationOf(s: RawStream): number {
  const tag = Number(s.tags?.rotate);
  let clockwise = 0;
  if (s.tags?.rotate !== undefined && Number.isFinite(tag)) clockwise = tag;
  else {
    const matrix = s.side_data_list?.find((d) => d.side_data_type === 'Display Matrix' && typeof d.rotation === 'number');
    if (matrix) clockwise = -(matrix.rotation as number);
  }
  return ((Math.round(clockwise) % 360) + 360) % 360;
}

const seconds = (text: string | undefined): number | null => {
  const v = Number(text);
  return text !== undefined && text !== '' && Number.isFinite(v) && v >= 0 ? Math.round(v * 1000) : null;
};

const notMedia = (format: string): string =>
  TEXT_ART.has(format) ? `ffprobe reads the file only as text art (${format}): it is not media` : `ffprobe reads the file only as ${format}, not a media format the service stores: it is not media`;

/**
 * Probes `file` (an absolute path, or an http(s) URL such as a store's signed URL). ffprobe failing on the file is a MediaError
 * (media_unreadable); a missing tool, a time-out or an abort stays a MediaToolError.
 */
export async function probeMedia(file: string, opts: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<Probe> {
  let json: RawProbe | null;
  try {
    ({ json } = await runFfprobe<RawProbe>(['-v', 'error', '-show_streams', '-show_format', '-of', 'json', ...inputArgs(file, { ffprobe: true })], opts));
  } catch (err) {
    if (err instanceof MediaToolError && err.reason === 'failed') {
      // The demuxer allow-list (MEDIA_DEMUXERS) refused what ffprobe recognised: a playlist, text art...
      const refused = /\[(\w+) @ [^\]]*\] Format not on whitelist/.exec(err.message)?.[1];
      if (refused) throw new MediaError('media_unreadable', notMedia(refused));
      throw new MediaError('media_unreadable', `ffprobe cannot read the file: ${err.message.replace(/file:\S*/g, '<file>')}`);
    }
    throw err;
  }
  const streams = json?.streams ?? [];
  if (!json?.format || streams.length === 0) throw new MediaError('media_unreadable', 'ffprobe found no streams in the file');
  if (TEXT_ART.has(json.format.format_name ?? '')) throw new MediaError('media_unreadable', notMedia(json.format.format_name!));
  const v = streams.find((s) => s.codec_type === 'video' && !s.disposition?.attached_pic);
  const a = streams.find((s) => s.codec_type === 'audio');
  const durations = streams.map((s) => seconds(s.duration)).filter((d): d is number => d !== null);
  return {
    formatName: json.format.format_name ?? '',
    durationMs: seconds(json.format.duration) ?? (durations.length ? Math.max(...durations) : null),
    video: v ? {
      index: v.index, codec: v.codec_name ?? null, width: v.width ?? null, height: v.height ?? null,
      frameRate: frameRateOf(v), rotation: rotationOf(v),
    } : null,
    audio: a ? { index: a.index, codec: a.codec_name ?? null } : null,
    streamCount: streams.length,
  };
}
