// The editorial timeline of an export, as plain data that the OTIO, EDL and SRT writers turn into
// text: clips placed by frame at one rate. Time codes are non-drop-frame at the nominal rate
// (round(num/den) frames a second: 24000/1001 counts 24), frame counts are exact.
export interface Rate { num: number; den: number }

/** A file of the package that clips refer to. */
export interface TimelineMedia {
  /** Relative to the package root, e.g. "media/01-E01-cut.mp4". */
  path: string;
  fileName: string;
  artifactId: string;
  sha256: string;
  /** The file's length in frames at the timeline's rate. */
  frames: number;
}

export interface TimelineClip {
  name: string;
  media: TimelineMedia;
  /** Frames into the media where the clip starts (source in). */
  sourceIn: number;
  /** Where the clip starts on the timeline (record in). */
  recordIn: number;
  frames: number;
  video: boolean;
  audio: boolean;
  shotId: string | null;
  /** For a cut: the shot's own video and voice line the segment was made of. */
  sourceArtifactId: string | null;
  sourceSha256: string | null;
  voiceArtifactId: string | null;
  voiceSha256: string | null;
}

export interface Timeline {
  /** The file stem under timeline/ and subtitles/ (e.g. "E01"). */
  key: string;
  title: string;
  episodeId: string | null;
  rate: Rate;
  clips: TimelineClip[];
}

export const nominalFps = (r: Rate) => Math.max(1, Math.round(r.num / r.den));
export const framesToMs = (frames: number, r: Rate) => Math.round((frames * 1000 * r.den) / r.num);
export const msToFrames = (ms: number, r: Rate) => Math.round((ms * r.num) / (1000 * r.den));
export const rateValue = (r: Rate) => r.num / r.den;
export const totalFrames = (t: Timeline) => t.clips.reduce((end, c) => Math.max(end, c.recordIn + c.frames), 0);

const two = (n: number) => String(n).padStart(2, '0');

/** HH:MM:SS:FF, non-drop-frame at the nominal rate. */
export function timecode(frames: number, r: Rate): string {
  const fps = nominalFps(r);
  const ff = frames % fps;
  const totalSeconds = Math.floor(frames / fps);
  return `${two(Math.floor(totalSeconds / 3600))}:${two(Math.floor(totalSeconds / 60) % 60)}:${two(totalSeconds % 60)}:${two(ff)}`;
}

