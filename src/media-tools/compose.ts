// Joining the chosen video of each shot, in shot order, into one episode cut: one ffmpeg run that
// brings every input to a common size, frame rate and audio layout, sums in each shot's voice line
// and concatenates them as H.264/AAC in an mp4. The filter graph, the voice-line mix and the
// duration arithmetic: docs/media-evidence.md#composing-an-episode-cut
import fs from 'node:fs';
import path from 'node:path';
import { tempKey } from '../kernel/storage/store.ts';
import { BITEXACT, inputArgs, isUrl, runFfmpeg, withoutUrls } from './ffmpeg.ts';

export interface ComposeInput {
  /** Absolute path of the shot's video, or an http(s) URL (a store's signed URL). */
  path: string;
  durationMs: number;
  width: number;
  height: number;
  /** As ffprobe prints it, e.g. "24000/1001". */
  frameRate: string;
  hasAudio: boolean;
  /** Absolute path (or http(s) URL) of the shot's voice line (any file with an audio stream), mixed over its segment. */
  voicePath?: string | null;
}

export interface ComposeTarget { width: number; height: number; frameRate: string }

export interface ComposeSegment { index: number; startFrame: number; frames: number; startMs: number; durationMs: number }

export interface ComposeResult {
  durationMs: number;
  frames: number;
  /** Reduced "num/den". */
  frameRate: string;
  width: number;
  height: number;
  /** One per input, in input order. */
  segments: ComposeSegment[];
}

export interface ComposeOptions {
  signal?: AbortSignal;
  /** Kills ffmpeg after this long (default ten minutes). */
  timeoutMs?: number;
}

export const AUDIO_RATE = 48_000;
const DEFAULT_TIMEOUT_MS = 10 * 60_000;
const MAX_SIDE = 8192;
const MAX_FPS = 240;
/** Graphs longer than this go through a script file (one argument may not exceed 128 KiB). */
const MAX_INLINE_GRAPH = 64 * 1024;

/** "24000/1001", "25/1", "25" or "29.97" as a reduced fraction; null for 0/0, negatives or junk. */
export function parseFrameRate(s: string): { num: number; den: number } | null {
  const m = /^\s*(\d+(?:\.\d+)?)(?:\s*\/\s*(\d+))?\s*$/.exec(String(s));
  if (!m) return null;
  const [whole, frac = ''] = m[1].split('.');
  let num = Number(whole + frac);
  let den = 10 ** frac.length * (m[2] === undefined ? 1 : Number(m[2]));
  if (!Number.isSafeInteger(num) || !Number.isSafeInteger(den) || num <= 0 || den <= 0) return null;
  const g = gcd(num, den);
  num /= g;
  den /= g;
  return { num, den };
}

function gcd(a: number, b: number): number {
  while (b) [a, b] = [b, a % b];
  return a;
}

/** The first input's size (rounded down to even numbers) and frame rate, unless overridden. */
export function composeTarget(inputs: ComposeInput[], override: Partial<ComposeTarget> = {}): ComposeTarget {
  const first = inputs[0];
  const width = override.width ?? (first ? first.width - (first.width % 2) : undefined);
  const height = override.height ?? (first ? first.height - (first.height % 2) : undefined);
  const frameRate = override.frameRate ?? first?.frameRate;
  if (width === undefined || height === undefined || frameRate === undefined) {
    throw new Error('compose target: no inputs to take the size and frame rate from');
  }
  return { width, height, frameRate };
}

/** Frames and audio samples of each segment (see the header for the arithmetic). */
export function planSegments(durationsMs: number[], rate: { num: number; den: number }): Array<ComposeSegment & { samples: number }> {
  const framesAt = (ms: number) => Math.round((ms * rate.num) / (1000 * rate.den));
  const samplesAt = (frames: number) => Math.round((frames * AUDIO_RATE * rate.den) / rate.num);
  const msAt = (frames: number) => Math.round((frames * 1000 * rate.den) / rate.num);
  let cumulativeMs = 0;
  let startFrame = 0;
  return durationsMs.map((d, index) => {
    cumulativeMs += d;
    const endFrame = framesAt(cumulativeMs);
    const segment = {
      index, startFrame, frames: endFrame - startFrame,
      startMs: msAt(startFrame), durationMs: msAt(endFrame) - msAt(startFrame),
      samples: samplesAt(endFrame) - samplesAt(startFrame),
    };
    startFrame = endFrame;
    return segment;
  });
}

function validate(inputs: ComposeInput[], target: ComposeTarget): { num: number; den: number } {
  if (!Array.isArray(inputs) || inputs.length === 0) throw new Error('compose needs at least one input');
  const evenSide = (v: number) => Number.isInteger(v) && v >= 2 && v <= MAX_SIDE && v % 2 === 0;
  if (!evenSide(target.width) || !evenSide(target.height)) {
    throw new Error(`compose target size ${target.width}x${target.height} must be even numbers from 2 to ${MAX_SIDE}`);
  }
  const rate = parseFrameRate(target.frameRate);
  if (!rate || rate.num / rate.den > MAX_FPS) throw new Error(`compose target frame rate "${target.frameRate}" is not a rate above 0 and up to ${MAX_FPS}`);
  inputs.forEach((input, i) => {
    const what = `compose input ${i} (${withoutUrls(String(input.path))})`;
    const openable = (p: unknown) => typeof p === 'string' && (path.isAbsolute(p) || isUrl(p));
    if (!openable(input.path)) throw new Error(`${what}: path must be absolute (or an http(s) URL)`);
    if (input.voicePath != null && !openable(input.voicePath)) throw new Error(`${what}: voice line path must be absolute (or an http(s) URL)`);
    if (!Number.isFinite(input.durationMs) || input.durationMs <= 0) throw new Error(`${what}: duration ${input.durationMs} ms is not positive`);
    const side = (v: number) => Number.isInteger(v) && v >= 1 && v <= MAX_SIDE;
    if (!side(input.width) || !side(input.height)) throw new Error(`${what}: size ${input.width}x${input.height} is not valid`);
    if (!parseFrameRate(input.frameRate)) throw new Error(`${what}: frame rate "${input.frameRate}" is not valid`);
  });
  return rate;
}

/**
 * The filter graph and its ffmpeg inputs in order: the video of each segment that has frames, then
 * the voice lines of those segments that have one.
 */
export function composeGraph(
  inputs: ComposeInput[], target: ComposeTarget, rate: { num: number; den: number },
  segments: Array<{ index: number; frames: number; samples: number }>,
): { graph: string; files: string[] } {
  const { width: W, height: H } = target;
  const fps = `${rate.num}/${rate.den}`;
  // Fit by display aspect: wider than the target -> full width, else full height; even, clamped.
  const w = `'if(gt(dar,${W}/${H}),${W},max(2,min(${W},2*round(${H}*dar/2))))'`;
  const h = `'if(gt(dar,${W}/${H}),max(2,min(${H},2*round(${W}/dar/2))),${H})'`;
  const layout = `aformat=sample_fmts=fltp:sample_rates=${AUDIO_RATE}:channel_layouts=stereo`;
  const conform = (stream: string, samples: number, out: string) =>
    `${stream}asetpts=PTS-STARTPTS,aresample=${AUDIO_RATE},${layout},apad=whole_len=${samples},atrim=end_sample=${samples}${out}`;
  const files = segments.map((s) => inputs[s.index].path);
  const chains: string[] = [];
  const pads: string[] = [];
  segments.forEach(({ index, frames, samples }, k) => {
    const { hasAudio, voicePath } = inputs[index];
    chains.push(`[${k}:v:0]setpts=PTS-STARTPTS,scale=w=${w}:h=${h}:flags=bicubic,format=yuv420p,`
      + `pad=${W}:${H}:(ow-iw)/2:(oh-ih)/2:black,setsar=1,fps=fps=${fps},`
      + `tpad=stop=${frames}:stop_mode=clone,trim=end_frame=${frames}[v${k}]`);
    chains.push(hasAudio
      ? conform(`[${k}:a:0]`, samples, `[a${k}]`)
      : `anullsrc=r=${AUDIO_RATE}:cl=stereo,aformat=sample_fmts=fltp,atrim=end_sample=${samples}[a${k}]`);
    if (voicePath) {
      files.push(voicePath);
      chains.push(conform(`[${files.length - 1}:a:0]`, samples, `[o${k}]`));
      chains.push(`[a${k}][o${k}]amerge=inputs=2,pan=stereo|c0=c0+c2|c1=c1+c3,${layout}[m${k}]`);
    }
    pads.push(`[v${k}][${voicePath ? 'm' : 'a'}${k}]`);
  });
  chains.push(`${pads.join('')}concat=n=${segments.length}:v=1:a=1[vc][ac]`);
  chains.push(`[vc]setpts=N*${rate.den}/(${rate.num}*TB)[v]`);
  chains.push('[ac]asetpts=N/SR/TB[a]');
  return { graph: chains.join(';'), files };
}

/**
 * Joins `inputs` (paths, or http(s) URLs) in order into an mp4 at `outAbs` (overwritten; the caller gives a temporary path
 * and renames it). Rejects with an Error for bad arguments and a MediaToolError when ffmpeg is
 * missing, fails, times out or is aborted.
 */
export async function composeVideos(inputs: ComposeInput[], target: ComposeTarget, outAbs: string, opts: ComposeOptions = {}): Promise<ComposeResult> {
  const rate = validate(inputs, target);
  const planned = planSegments(inputs.map((i) => i.durationMs), rate);
  const used = planned.filter((s) => s.frames > 0);
  if (used.length === 0) throw new Error('compose inputs are together shorter than half a frame');
  const { graph, files } = composeGraph(inputs, target, rate, used);
  // Decoders one thread each: an episode may open dozens of inputs at once.
  const opened = files.flatMap((f) => ['-threads', '1', ...inputArgs(f)]);
  let scriptDir: string | null = null;
  let graphArgs = ['-filter_complex', graph];
  if (graph.length > MAX_INLINE_GRAPH) {
    // Beside the output (the caller's storage/tmp/), named after its writer: a crash leaves it where
    // storage cleanup looks, a candidate once this process is gone.
    scriptDir = path.join(path.dirname(outAbs), path.basename(tempKey('compose-graph')));
    fs.mkdirSync(scriptDir);
    const script = path.join(scriptDir, 'graph.txt');
    fs.writeFileSync(script, graph);
    graphArgs = ['-filter_complex_script', script];
  }
  try {
    await runFfmpeg([
      '-v', 'error', '-nostats', ...opened, ...graphArgs, '-filter_complex_threads', '1',
      '-map', '[v]', '-map', '[a]', '-vsync', 'passthrough',
      '-c:v', 'libx264', '-preset', 'veryfast', '-pix_fmt', 'yuv420p', '-threads', '2',
      '-c:a', 'aac', '-b:a', '160k', '-ar', String(AUDIO_RATE), '-ac', '2',
      '-movflags', '+faststart', ...BITEXACT, '-f', 'mp4', '-y', outAbs,
    ], { signal: opts.signal, timeoutMs: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS });
  } finally {
    if (scriptDir) fs.rmSync(scriptDir, { recursive: true, force: true });
  }
  const frames = planned.reduce((n, s) => n + s.frames, 0);
  return {
    durationMs: Math.round((frames * 1000 * rate.den) / rate.num),
    frames,
    frameRate: `${rate.num}/${rate.den}`,
    width: target.width,
    height: target.height,
    segments: planned.map(({ samples: _samples, ...s }) => s),
  };
}
