// What each kind of output looks and sounds like, as ffmpeg arguments. Everything is a pure
// function of the render spec (plus the font found on this machine), so the same prompt and
// parameters always give the same bytes: no timestamps, no encoder version strings (bitexact).
import { BITEXACT } from '../../src/media-tools/ffmpeg.ts';
import { distinctColours, ffmpegColour, inkFor, promptColour, type Rgb } from './palette.ts';

export interface Size { width: number; height: number }

/** single: one picture; collage: a 2x2 grid of four colours; split: two colours side by side. */
export type Layout = 'single' | 'collage' | 'split';

export interface ImageSpec extends Size {
  kind: 'image';
  prompt: string;
  layout: Layout;
  /** 0 for the first image of an answer; later ones are shaded slightly so that each differs. */
  variant: number;
}
/**
 * A deliberate defect of a rendered video, for QA tests (the `videoDefect` fault): black frames from
 * 1 s to 3 s, a silent audio track, a full-scale square tone (true peak far above -1 dBTP), or the
 * picture held still from 1 s to 3 s.
 */
export type VideoDefect = 'black' | 'silent' | 'loud' | 'frozen';
export const VIDEO_DEFECTS = ['black', 'silent', 'loud', 'frozen'] as const satisfies readonly VideoDefect[];

export interface VideoSpec extends Size {
  kind: 'video'; prompt: string; seconds: number; fps: number;
  /** SHA-256 (hex) of the reference picture (Renderer.keepReference): the video shows it instead of the colour scene. */
  reference?: string;
  /** Absent for a normal video (so the cache names of normal videos stay as they were). */
  defect?: VideoDefect;
}
export interface SpeechSpec { kind: 'speech'; text: string; voice: string }
export type RenderSpec = ImageSpec | VideoSpec | SpeechSpec;

export const IMAGE_DEFAULT: Size = { width: 256, height: 256 };
export const VIDEO_DEFAULT: Size & { seconds: number; fps: number } = { width: 320, height: 180, seconds: 2, fps: 24 };
/** The lengths of video the server renders, in seconds. */
export const VIDEO_SECONDS = { min: 0.5, max: 20 } as const;
/**
 * Peak amplitudes (of full scale) of the sound: the video's tone and the speech-like voice each land
 * at about -24 LUFS integrated (EBU R128, as QA measures it with ebur128), so that a clip and a voice
 * line each, and an episode cut that sums the two (about -21 LUFS: compose adds them at unit gain),
 * are within the delivery spec's default -23 ± 2 LU; true peaks stay far below -1 dBTP.
 */
export const TONE_AMPLITUDE = 0.0963;
export const SPEECH_AMPLITUDE = 0.1408;
export const SPEECH_MS_PER_CHAR = 60;
export const SPEECH_SECONDS = { min: 0.5, max: 10 } as const;

/** Where the caption goes: the whole picture, or its first tile for composites. */
interface Region { x: number; y: number; width: number; height: number }

/** The text drawn on a picture or video. */
export function captionOf(spec: ImageSpec | VideoSpec): string {
  return spec.kind === 'image' && spec.variant > 0 ? `${spec.prompt} #${spec.variant + 1}` : spec.prompt;
}

/** The caption wrapped into lines that fit the region at the font size used for it. */
export function wrapCaption(caption: string, spec: ImageSpec | VideoSpec): string {
  const region = captionRegion(spec);
  const size = fontSize(spec);
  const perLine = Math.max(4, Math.floor(region.width / (size * 0.62)));
  const maxLines = Math.max(1, Math.min(8, Math.floor(region.height / (size * 1.4))));
  const lines: string[] = [];
  let line = '';
  for (const word of caption.trim().split(/\s+/)) {
    for (let piece = word; piece; piece = piece.slice(perLine)) {
      const chunk = piece.slice(0, perLine);
      if (!line) line = chunk;
      else if (line.length + 1 + chunk.length <= perLine) line += ' ' + chunk;
      else { lines.push(line); line = chunk; }
    }
  }
  if (line) lines.push(line);
  if (lines.length > maxLines) {
    lines.length = maxLines;
    lines[maxLines - 1] = lines[maxLines - 1].slice(0, perLine - 1) + '…';
  }
  return lines.join('\n');
}

function fontSize(spec: Size): number {
  return Math.max(8, Math.min(48, Math.round(Math.min(spec.width, spec.height) / 14)));
}

function captionRegion(spec: ImageSpec | VideoSpec): Region {
  const { width, height } = spec;
  if (spec.kind === 'image' && spec.layout === 'collage') return { x: 0, y: 0, width: width >> 1, height: height >> 1 };
  if (spec.kind === 'image' && spec.layout === 'split') return { x: 0, y: 0, width: width >> 1, height };
  // Over a reference picture the caption keeps to the bottom quarter, leaving the picture visible.
  if (spec.kind === 'video' && spec.reference) return { x: 0, y: height - (height >> 2), width, height: height >> 2 };
  return { x: 0, y: 0, width, height };
}

/**
 * ffmpeg's filter-graph escaping for a value given in an option (a file path): backslash-escape
 * for the option level, then again for the graph level (ffmpeg-filters "Notes on filtergraph
 * escaping"), so that any path works.
 */
export function filterValue(value: string): string {
  const optionLevel = value.replace(/[\\':]/g, (c) => '\\' + c);
  return optionLevel.replace(/[\\'[\],;]/g, (c) => '\\' + c);
}

/**
 * The drawtext filter for the caption held in `textFile`, or nothing without font or caption;
 * `boxed` puts it on a translucent dark box (over a picture of unknown colours).
 */
function drawCaption(spec: ImageSpec | VideoSpec, ink: Rgb, font: string | null, textFile: string | null, boxed = false): string[] {
  if (!font || !textFile) return [];
  const r = captionRegion(spec);
  return [[
    `drawtext=fontfile=${filterValue(font)}`, `textfile=${filterValue(textFile)}`, 'expansion=none',
    `fontsize=${fontSize(spec)}`, `fontcolor=${ffmpegColour(ink)}`, 'line_spacing=4',
    ...(boxed ? ['box=1', 'boxcolor=black@0.55', 'boxborderw=4'] : []),
    `x=${r.x}+(${r.width}-tw)/2`, `y=${r.y}+(${r.height}-th)/2`,
  ].join(':')];
}

/** The colour moved a little towards mid-grey per variant: the same hue, different bytes. */
function shade(c: Rgb, variant: number): Rgb {
  const step = (variant * 9) % 60;
  const f = (v: number) => (v > 127 ? v - step : v + step);
  return [f(c[0]), f(c[1]), f(c[2])];
}

function fillBox(x: number, y: number, w: number, h: number, c: Rgb): string {
  return `drawbox=x=${x}:y=${y}:w=${w}:h=${h}:color=${ffmpegColour(c)}:t=fill`;
}

/** The tiles drawn over the background for composite layouts. */
function layoutBoxes(spec: ImageSpec, colours: Rgb[]): string[] {
  const { width: w, height: h } = spec;
  const hw = w >> 1;
  const hh = h >> 1;
  if (spec.layout === 'split') return [fillBox(hw, 0, w - hw, h, colours[1])];
  if (spec.layout === 'collage') {
    return [fillBox(hw, 0, w - hw, hh, colours[1]), fillBox(0, hh, hw, h - hh, colours[2]), fillBox(hw, hh, w - hw, h - hh, colours[3])];
  }
  return [];
}


function imageArgs(spec: ImageSpec, font: string | null, textFile: string | null, out: string): string[] {
  const colours = distinctColours(shade(promptColour(spec.prompt), spec.variant), 4);
  const filters = [...layoutBoxes(spec, colours), ...drawCaption(spec, inkFor(colours[0]), font, textFile)];
  return [
    '-f', 'lavfi', '-i', `color=c=${ffmpegColour(colours[0])}:s=${spec.width}x${spec.height}:d=1`,
    ...(filters.length ? ['-vf', filters.join(',')] : []),
    '-frames:v', '1', '-c:v', 'png', ...BITEXACT, '-f', 'image2', '-y', out,
  ];
}

/** A tone pitch for the prompt's soundtrack, 220..660 Hz. */
function promptPitch(prompt: string): number {
  const [r, g] = promptColour(prompt);
  return 220 + ((r * 256 + g) % 441);
}

/** The tone under a video: its lavfi input (silence, or a full-scale square wave, for those defects). */
function toneInput(spec: VideoSpec): string[] {
  const d = spec.seconds;
  if (spec.defect === 'silent') return ['-f', 'lavfi', '-i', `aevalsrc=exprs=0:s=44100:d=${d}`];
  if (spec.defect === 'loud') return ['-f', 'lavfi', '-i', `aevalsrc=exprs=0.98*(2*gte(sin(2*PI*${promptPitch(spec.prompt)}*t)\\,0)-1):s=44100:d=${d}`];
  return ['-f', 'lavfi', '-i', `aevalsrc=exprs=${TONE_AMPLITUDE}*sin(2*PI*${promptPitch(spec.prompt)}*t):s=44100:d=${d}`];
}

/** First second and length (s) of the black or still stretch of a defective video. */
const DEFECT_AT = { start: 1, seconds: 2 } as const;

/**
 * Filters that put a picture defect on the finished frames: black frames over the stretch, or the
 * frame at its start repeated over it (the rest of the clip follows, the length stays the same).
 */
function defectFilters(spec: VideoSpec): string[] {
  const { start, seconds } = DEFECT_AT;
  if (spec.defect === 'black') return [`drawbox=x=0:y=0:w=iw:h=ih:color=black:t=fill:enable='between(t,${start},${start + seconds})'`];
  if (spec.defect !== 'frozen') return [];
  const frames = Math.max(1, Math.round(spec.seconds * spec.fps));
  return [`loop=loop=${seconds * spec.fps}:size=1:start=${start * spec.fps}`, `trim=end_frame=${frames}`, `setpts=N/(${spec.fps}*TB)`];
}

/** H.264 + AAC in MP4, as long as the shorter stream. */
const videoOutput = (out: string) => [
  '-c:v', 'libx264', '-preset', 'veryfast', '-pix_fmt', 'yuv420p', '-threads', '2',
  '-c:a', 'aac', '-b:a', '64k', '-ac', '1', '-shortest', '-movflags', '+faststart',
  ...BITEXACT, '-f', 'mp4', '-y', out,
];

/**
 * The prompt's colour fading to a contrasting one while a box crosses the frame, over a tone:
 * the first and last frames differ visibly, which a media check can verify.
 */
function videoArgs(spec: VideoSpec, font: string | null, textFile: string | null, out: string): string[] {
  const [start, end, box] = distinctColours(promptColour(spec.prompt), 3);
  const boxSide = Math.max(8, Math.round(Math.min(spec.width, spec.height) / 5));
  const d = spec.seconds;
  const graph = [
    `[0:v]fade=t=out:st=0:d=${d}:color=${ffmpegColour(end)}[bg]`,
    `[bg][1:v]overlay=x='(W-w)*t/${d}':y='(H-h)/2'[moving]`,
    `[moving]${[...drawCaption(spec, inkFor(start), font, textFile), ...defectFilters(spec), 'format=yuv420p'].join(',')}[v]`,
  ].join(';');
  return [
    '-f', 'lavfi', '-i', `color=c=${ffmpegColour(start)}:s=${spec.width}x${spec.height}:r=${spec.fps}:d=${d}`,
    '-f', 'lavfi', '-i', `color=c=${ffmpegColour(box)}:s=${boxSide}x${boxSide}:r=${spec.fps}:d=${d}`,
    ...toneInput(spec),
    '-filter_complex', graph, '-map', '[v]', '-map', '2:a',
    ...videoOutput(out),
  ];
}

/** How far the reference picture is zoomed in by the last frame (1 + this). */
const REFERENCE_ZOOM = 0.15;

/**
 * Image-to-video: the reference picture (`picture`, a PNG or JPEG file) scaled to fit the size and
 * padded with black, then zoomed in slowly towards its centre (the first frame is the whole
 * picture, later ones differ), captioned at the bottom, over the prompt's tone.
 */
function referenceVideoArgs(spec: VideoSpec, font: string | null, textFile: string | null, out: string, picture: string): string[] {
  const { width: w, height: h, fps } = spec;
  const frames = Math.max(1, Math.round(spec.seconds * fps));
  const filters = [
    `scale=${w}:${h}:force_original_aspect_ratio=decrease`, `pad=${w}:${h}:(ow-iw)/2:(oh-ih)/2:color=black`, 'setsar=1',
    `zoompan=z='1+${REFERENCE_ZOOM}*on/${frames}':d=${frames}:x='(iw-iw/zoom)/2':y='(ih-ih/zoom)/2':s=${w}x${h}:fps=${fps}`,
    ...drawCaption(spec, [255, 255, 255], font, textFile, true), ...defectFilters(spec), 'format=yuv420p',
  ];
  return [
    '-i', `file:${picture}`, ...toneInput(spec),
    '-filter_complex', `[0:v]${filters.join(',')}[v]`, '-map', '[v]', '-map', '1:a',
    ...videoOutput(out),
  ];
}

/** Pitch of a voice name: 110..300 Hz, stable per name. */
function voicePitch(voice: string): number {
  let h = 0;
  for (let i = 0; i < voice.length; i++) h = (h * 31 + voice.charCodeAt(i)) >>> 0;
  return 110 + (h % 191);
}

export function speechSeconds(text: string): number {
  const seconds = (text.length * SPEECH_MS_PER_CHAR) / 1000;
  return Math.min(SPEECH_SECONDS.max, Math.max(SPEECH_SECONDS.min, seconds));
}

/** A speech-like tone: a wobbling pitch whose loudness rises and falls at a syllable rate. */
function speechArgs(spec: SpeechSpec, out: string): string[] {
  const f = voicePitch(spec.voice);
  const expr = `${SPEECH_AMPLITUDE}*sin(2*PI*${f}*t+2*sin(2*PI*5*t))*abs(sin(2*PI*3*t))`;
  return [
    '-f', 'lavfi', '-i', `aevalsrc=exprs=${expr}:s=24000:d=${speechSeconds(spec.text).toFixed(3)}`,
    '-c:a', 'pcm_s16le', ...BITEXACT, '-f', 'wav', '-y', out,
  ];
}

/**
 * ffmpeg's arguments rendering `spec` into `out` (textFile holds the wrapped caption; `picture` is
 * the file of a video's reference picture, required when the spec names one).
 */
export function sceneArgs(spec: RenderSpec, font: string | null, textFile: string | null, out: string, picture: string | null = null): string[] {
  switch (spec.kind) {
    case 'image': return imageArgs(spec, font, textFile, out);
    case 'video':
      if (!spec.reference) return videoArgs(spec, font, textFile, out);
      if (!picture) throw new Error('the video names a reference picture but none was given');
      return referenceVideoArgs(spec, font, textFile, out, picture);
    case 'speech': return speechArgs(spec, out);
  }
}

export const FILE_TYPES = { image: { ext: 'png', mimeType: 'image/png' }, video: { ext: 'mp4', mimeType: 'video/mp4' }, speech: { ext: 'wav', mimeType: 'audio/wav' } } as const;

