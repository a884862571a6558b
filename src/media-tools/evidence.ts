// Media evidence of one stored file: what it is (sniffed MIME refined by the probe), its size and
// SHA-256, its geometry and timing, and for pictures the real first and last frames as PNGs under
// frames/ with their signatures. The file is read from an object store (ffmpeg and ffprobe open what
// its mediaInput() gives: a path on local, a signed URL on s3); the frames are put back into it. What each kind of file gets:
// docs/media-evidence.md#examining-a-stored-file
import { SNIFFED_TYPES, bareTypes, sniffMime, storedPathProblem, unsafePath, type SniffedType } from '../kernel/files.ts';
import { readHeadOf } from '../kernel/storage/head.ts';
import type { ObjectStore } from '../kernel/storage/store.ts';
import { hashObject } from '../kernel/storage/verify.ts';
import { decodeFirstAndLast, type Frame } from './frames.ts';
import { encodePngAsync } from './png.ts';
import { MediaError, probeMedia, type Probe } from './probe.ts';
import { signatureOf } from './signature.ts';
import { MediaToolError } from './ffmpeg.ts';

export { MediaError } from './probe.ts';

export interface FrameRecord { path: string; sha256: string; size: number }
export interface MediaEvidence {
  kind: 'image' | 'video' | 'audio' | 'other';
  mimeType: string;
  fileSize: number;
  sha256: string;
  durationMs: number | null;
  width: number | null;
  height: number | null;
  frameRate: string | null;
  frameCount: number | null;
  videoCodec: string | null;
  audioCodec: string | null;
  hasVideo: boolean;
  hasAudio: boolean;
  /** Clockwise degrees the container asks players to turn the picture (already applied to the frames). */
  rotation: number;
  firstFrame: FrameRecord | null;
  lastFrame: FrameRecord | null;
  firstSignature: Buffer | null;
  lastSignature: Buffer | null;
}

export interface AnalyzeOptions {
  /** Where the file is, and where its frames go. */
  store: ObjectStore;
  /** The file's key (e.g. outputs/job_x/video-1.mp4). */
  relPath: string;
  /** Relative frame path prefix (e.g. frames/job_x/video-1): <prefix>-first.png, <prefix>-last.png. */
  framesPrefix: string;
  signal?: AbortSignal;
  /** For the whole analysis; each spawn gets what is left (default ten minutes). */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 600_000;
/** Sniffed types that are documents, not media: reported as 'other' without probing. */
const DOCUMENT = /^(text\/|application\/json$|application\/pdf$)/;
/** ffprobe format names of still-image demuxers. */
const IMAGE_FORMAT = /(^|,)(image2|[a-z0-9]+_pipe|gif|apng)(,|$)/;
/** What the probe knows better than the first bytes: by ffprobe format name. */
const FORMAT_MIME = {
  mpegts: 'video/mp2t', avi: 'video/x-msvideo', flv: 'video/x-flv', mpeg: 'video/mpeg', bmp_pipe: 'image/bmp',
  tiff_pipe: 'image/tiff', aac: 'audio/aac', mp3: 'audio/mpeg', wav: 'audio/wav', flac: 'audio/flac', ogg: 'audio/ogg',
} as const satisfies Record<string, string>;
type FormatMime = (typeof FORMAT_MIME)[keyof typeof FORMAT_MIME];
/** The types refineMime corrects a sniffed one to (its return type holds it to this list). */
const REFINED_TYPES = ['audio/mp4', 'audio/webm', 'audio/x-matroska', 'video/ogg'] as const;

/** Every media type an artifact's file or frame may be served as (without parameters), for the OpenAPI document. */
export const ARTIFACT_MEDIA_TYPES: readonly string[] = bareTypes([...SNIFFED_TYPES, ...REFINED_TYPES, ...Object.values(FORMAT_MIME), 'image/png']);

function kindOf(mime: string, probe: Probe): MediaEvidence['kind'] {
  if (probe.video && (mime.startsWith('image/') || (IMAGE_FORMAT.test(probe.formatName) && !probe.audio))) return 'image';
  if (probe.video) return 'video';
  if (probe.audio) return 'audio';
  return 'other';
}

/** The sniffed type, corrected where the streams say otherwise (an mp4 with only sound is audio/mp4). */
function refineMime(sniffed: SniffedType, kind: MediaEvidence['kind'], probe: Probe): SniffedType | FormatMime | (typeof REFINED_TYPES)[number] {
  if (kind === 'audio') {
    if (sniffed === 'video/mp4' || sniffed === 'video/quicktime') return 'audio/mp4';
    if (sniffed === 'video/webm') return 'audio/webm';
    if (sniffed === 'video/x-matroska') return 'audio/x-matroska';
  }
  if (kind === 'video' && sniffed === 'audio/ogg') return 'video/ogg';
  if (sniffed === 'application/octet-stream') {
    const known = probe.formatName.split(',').map((f) => (FORMAT_MIME as Record<string, FormatMime>)[f]).find(Boolean);
    if (known) return known;
  }
  return sniffed;
}

/** Puts a frame's PNG at its key (through the store's temporary key, so never half-written). */
async function putFrame(store: ObjectStore, key: string, png: Buffer): Promise<FrameRecord> {
  const { size, sha256 } = await store.putBytes(key, png);
  return { path: key, sha256, size };
}

/** A decode failure of a file ffprobe could read is the file's fault, not the tool's. */
async function decode(file: string, opts: Parameters<typeof decodeFirstAndLast>[1]) {
  try {
    return await decodeFirstAndLast(file, opts);
  } catch (err) {
    if (err instanceof MediaToolError && err.reason !== 'failed') throw err;
    const detail = (err as Error).message.replace(/file:\S*/g, '<file>');
    throw new MediaError('media_undecodable', `the picture cannot be decoded: ${detail}`);
  }
}

const framePng = (f: Frame) => encodePngAsync(f.rgb, f.width, f.height);

/** The evidence of one stored file (see the top of this file). */
export async function analyzeMedia(o: AnalyzeOptions): Promise<MediaEvidence> {
  const { store } = o;
  // Asked for again before each tool starts, so that a signed URL (s3) is fresh whenever it is opened.
  const input = () => store.mediaInput(o.relPath);
  await input();
  for (const end of ['-first.png', '-last.png']) {
    const problem = storedPathProblem(o.framesPrefix + end, true);
    if (problem) throw unsafePath(problem);
  }
  const deadline = Date.now() + (o.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  const left = () => Math.max(1, deadline - Date.now());
  const head = await readHeadOf(store, o.relPath);
  const sniffed = sniffMime(head);
  const hashing = hashObject(store, o.relPath);
  // Rejections of the hash are handled where it is awaited; this only avoids an unhandled one meanwhile.
  hashing.catch(() => {});
  const base = {
    durationMs: null, width: null, height: null, frameRate: null, frameCount: null, videoCodec: null, audioCodec: null,
    hasVideo: false, hasAudio: false, rotation: 0, firstFrame: null, lastFrame: null, firstSignature: null, lastSignature: null,
  };
  if (DOCUMENT.test(sniffed)) {
    const { size, sha256 } = await hashing;
    return { kind: 'other', mimeType: sniffed, fileSize: size, sha256, ...base };
  }
  const probe = await probeMedia(await input(), { signal: o.signal, timeoutMs: left() });
  const kind = kindOf(sniffed, probe);
  const evidence: MediaEvidence = {
    ...base, kind, mimeType: refineMime(sniffed, kind, probe), fileSize: 0, sha256: '',
    durationMs: kind === 'image' ? null : probe.durationMs,
    videoCodec: probe.video?.codec ?? null, audioCodec: kind === 'image' ? null : probe.audio?.codec ?? null,
    hasVideo: kind === 'video', hasAudio: kind !== 'image' && probe.audio !== null,
    rotation: probe.video?.rotation ?? 0,
  };
  if (kind === 'video' || kind === 'image') {
    const decoded = await decode(await input(), { streamIndex: probe.video!.index, firstOnly: kind === 'image', signal: o.signal, timeoutMs: left() });
    const { first, last } = decoded;
    evidence.width = first.width;
    evidence.height = first.height;
    evidence.frameCount = kind === 'image' ? 1 : decoded.count;
    evidence.frameRate = kind === 'video' ? probe.video!.frameRate : null;
    evidence.firstSignature = signatureOf(first.rgb, first.width, first.height);
    evidence.lastSignature = last === first ? evidence.firstSignature : signatureOf(last.rgb, last.width, last.height);
    if (kind === 'video') {
      const [firstPng, lastPng] = await Promise.all([framePng(first), framePng(last)]);
      evidence.firstFrame = await putFrame(store, `${o.framesPrefix}-first.png`, firstPng);
      evidence.lastFrame = await putFrame(store, `${o.framesPrefix}-last.png`, lastPng);
    } else if (sniffed !== 'image/png') {
      evidence.firstFrame = evidence.lastFrame = await putFrame(store, `${o.framesPrefix}-first.png`, await framePng(first));
    }
  }
  const { size, sha256 } = await hashing;
  evidence.fileSize = size;
  evidence.sha256 = sha256;
  if (kind === 'image' && sniffed === 'image/png') evidence.firstFrame = evidence.lastFrame = { path: o.relPath, sha256, size };
  return evidence;
}
