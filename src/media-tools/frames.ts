// The real first and last frames of a video: ONE decode pass of one video stream, every frame on a
// pipe as PPM rgb24, keeping only the first, the latest complete and the arriving frame (never the
// whole video), and counting them. Why passthrough timing and PPM:
// docs/media-evidence.md#first-and-last-frames
import { inputArgs, runFfmpeg } from './ffmpeg.ts';

export interface Frame { rgb: Buffer; width: number; height: number }
export interface DecodedFrames { first: Frame; last: Frame; count: number }

const HEADER_MAX = 64;

/**
 * Incremental parser of a stream of binary PPM (P6, maxval 255) images. Buffers: the first frame,
 * the latest complete frame and the one being filled; a frame's buffer is reused once a later
 * frame has replaced it.
 */
class PpmFrames {
  first: Frame | null = null;
  last: Frame | null = null;
  count = 0;
  private header = Buffer.alloc(HEADER_MAX);
  private headerLen = 0;
  private current: Frame | null = null;
  private filled = 0;
  private spare: Frame | null = null;

  push(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length) {
      if (!this.current) {
        at = this.readHeader(chunk, at);
        continue;
      }
      const n = Math.min(chunk.length - at, this.current.rgb.length - this.filled);
      chunk.copy(this.current.rgb, this.filled, at, at + n);
      this.filled += n;
      at += n;
      if (this.filled === this.current.rgb.length) this.complete();
    }
  }

  /** Partial frame at the end of the stream? */
  get pending(): boolean {
    return this.current !== null || this.headerLen > 0;
  }

  private readHeader(chunk: Buffer, at: number): number {
    while (at < chunk.length) {
      if (this.headerLen >= HEADER_MAX) throw new Error('ffmpeg wrote an unexpected frame header');
      this.header[this.headerLen++] = chunk[at++];
      // "P6" <ws> width <ws> height <ws> 255 <one ws>: complete once the fourth token has ended.
      const text = this.header.toString('latin1', 0, this.headerLen);
      const m = /^P6\s+(\d+)\s+(\d+)\s+(\d+)\s$/.exec(text);
      if (!m) {
        if (!/^(P(6(\s+\d*(\s+\d*(\s+\d*)?)?)?)?)?$/.test(text)) throw new Error('ffmpeg wrote an unexpected frame header');
        continue;
      }
      const [width, height, maxval] = [Number(m[1]), Number(m[2]), Number(m[3])];
      if (maxval !== 255 || !width || !height) throw new Error(`ffmpeg wrote an unexpected frame (${width}x${height}, maxval ${maxval})`);
      this.headerLen = 0;
      this.filled = 0;
      const size = width * height * 3;
      if (this.spare && this.spare.rgb.length === size) {
        this.current = { rgb: this.spare.rgb, width, height };
        this.spare = null;
      } else {
        this.current = { rgb: Buffer.allocUnsafe(size), width, height };
      }
      return at;
    }
    return at;
  }

  private complete(): void {
    const frame = this.current!;
    this.current = null;
    this.count++;
    if (!this.first) {
      this.first = frame;
      return;
    }
    if (this.last) this.spare = this.last;
    this.last = frame;
  }
}

export interface DecodeOptions {
  /** Absolute index of the stream to decode (ffprobe's `index`); default the first video stream. */
  streamIndex?: number;
  /** Stop after the first frame (images). */
  firstOnly?: boolean;
  signal?: AbortSignal;
  /** Kills ffmpeg after this long (default ten minutes). */
  timeoutMs?: number;
}

/**
 * Decodes `file` (an absolute path, or an http(s) URL) once and returns its first and last frames (the same object when
 * there is one frame) and the number of frames decoded. Rejects with MediaToolError (missing,
 * failed, timeout, aborted), or a plain Error when no frame came out.
 */
export async function decodeFirstAndLast(file: string, opts: DecodeOptions = {}): Promise<DecodedFrames> {
  const frames = new PpmFrames();
  await runFfmpeg([
    '-v', 'error', ...inputArgs(file),
    '-map', opts.streamIndex === undefined ? '0:v:0' : `0:${opts.streamIndex}`, '-an', '-sn', '-dn',
    ...(opts.firstOnly ? ['-frames:v', '1'] : []),
    '-vsync', 'passthrough', '-f', 'image2pipe', '-c:v', 'ppm', '-pix_fmt', 'rgb24', 'pipe:1',
  ], { signal: opts.signal, timeoutMs: opts.timeoutMs ?? 600_000, onStdout: (c) => frames.push(c) });
  if (frames.pending) throw new Error('ffmpeg output ended inside a frame');
  if (!frames.first) throw new Error('ffmpeg decoded no frame');
  return { first: frames.first, last: frames.last ?? frames.first, count: frames.count };
}
