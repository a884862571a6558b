// What an export package holds, decided from the database before any byte is copied: each delivered
// artifact with its file name in media/ (position, episode E<number>, shot S<position>, kind), and
// the timelines. An episode cut is a timeline of its own: one clip a shot, each a range of the cut
// file (source in = record in), at the cut's frame rate, from its composition's inputs. Other
// video and audio items form one timeline per episode, in delivery order, back to back from frame 0,
// at the rate of the group's first video (24/1 without one). Images are delivered but not timed.
import { mapSeq } from '../../kernel/seq.ts';
import type { Db } from '../../db/db.ts';
import { conflict } from '../../kernel/errors.ts';
import { parseFrameRate } from '../../media-tools/compose.ts';
import { artifactInProject, compositionOfArtifact, type ArtifactRow, type CompositionRow } from '../../generation/media/store.ts';
import type { CompositionDraft } from '../../generation/media/register.ts';
import { episodeById, shotById, type EpisodeRow, type ShotRow } from '../../production/catalog/store.ts';
import type { DeliveryItemRow } from '../delivery/store.ts';
import { msToFrames, type Rate, type Timeline, type TimelineClip, type TimelineMedia } from './timeline.ts';

export interface PackedMedia {
  item: DeliveryItemRow;
  artifact: ArtifactRow;
  /** Relative to the package root: media/<stem><ext>. */
  path: string;
  stem: string;
  episode: EpisodeRow | undefined;
  shot: ShotRow | undefined;
  composition: CompositionRow | undefined;
}

export interface ExportPlan { media: PackedMedia[]; timelines: Timeline[] }

const DEFAULT_RATE: Rate = { num: 24, den: 1 };
const EXT_OF_MIME: Record<string, string> = { 'video/mp4': '.mp4', 'audio/wav': '.wav', 'audio/mpeg': '.mp3', 'image/png': '.png', 'image/jpeg': '.jpg' };

const pad = (n: number, w = 2) => String(n).padStart(w, '0');
export const episodeLabel = (e: EpisodeRow | undefined) => (e ? `E${pad(e.number)}` : null);
export const shotLabel = (s: ShotRow | undefined) => (s ? `S${pad(s.position)}` : null);

function extensionOf(a: ArtifactRow): string {
  const ext = /\.[A-Za-z0-9]{1,8}$/.exec(a.file_name)?.[0].toLowerCase();
  return ext ?? EXT_OF_MIME[a.mime_type.split(';')[0]] ?? '.bin';
}

/** The delivered artifacts, in item order, with their package names; 409 when an item's artifact is gone or changed. */
export async function packedMedia(db: Db, projectId: string, items: DeliveryItemRow[]): Promise<PackedMedia[]> {
  const width = Math.max(2, String(items.length).length);
  return await mapSeq(items, async (item, i) => {
    const artifact = await artifactInProject(db, projectId, item.artifact_id);
    if (!artifact) throw conflict('export_source_missing', `item ${item.position}: artifact ${item.artifact_id} no longer exists`, { position: item.position, artifactId: item.artifact_id });
    if (artifact.content_sha256 !== item.artifact_sha256) {
      throw conflict('export_source_changed', `item ${item.position}: artifact ${item.artifact_id} is not the approved bytes`, { position: item.position, artifactId: item.artifact_id });
    }
    const episodeId = item.episode_id ?? artifact.episode_id;
    const shotId = item.shot_id ?? artifact.shot_id;
    const episode = episodeId ? await episodeById(db, projectId, episodeId) : undefined;
    const shot = shotId ? await shotById(db, projectId, shotId) : undefined;
    const composition = artifact.source === 'composition' ? await compositionOfArtifact(db, projectId, artifact.id) : undefined;
    const what = composition ? 'cut' : artifact.kind;
    const stem = [pad(i + 1, width), episodeLabel(episode), composition ? null : shotLabel(shot), what].filter(Boolean).join('-');
    return { item, artifact, path: `media/${stem}${extensionOf(artifact)}`, stem, episode, shot, composition };
  });
}

const mediaOf = (m: PackedMedia, frames: number): TimelineMedia =>
  ({ path: m.path, fileName: m.path.slice('media/'.length), artifactId: m.artifact.id, sha256: m.artifact.content_sha256, frames });

const clipName = (shot: ShotRow | undefined, fallback: string) => (shot ? `${shotLabel(shot)} ${shot.title}`.trim() : fallback);

/** The timeline of an episode cut: its composition's segments in order (a segment of no frame is left out, as in the cut). */
async function cutTimeline(db: Db, m: PackedMedia, c: CompositionRow): Promise<Omit<Timeline, 'key'>> {
  const rate = parseFrameRate(c.frame_rate) ?? DEFAULT_RATE;
  const inputs = (JSON.parse(c.inputs) as CompositionDraft['inputs']).filter((i) => i.frames > 0).sort((a, b) => a.position - b.position);
  const total = inputs.reduce((n, i) => n + i.frames, 0);
  const media = mediaOf(m, m.artifact.frame_count ?? total);
  let at = 0;
  const clips = await mapSeq(inputs, async (input): Promise<TimelineClip> => {
    const clip: TimelineClip = {
      name: clipName(await shotById(db, m.artifact.project_id, input.shotId), `shot ${input.position}`), media,
      sourceIn: at, recordIn: at, frames: input.frames, video: true, audio: m.artifact.has_audio === 1, shotId: input.shotId,
      sourceArtifactId: input.artifactId, sourceSha256: input.contentSha256,
      voiceArtifactId: input.audioArtifactId ?? null, voiceSha256: input.audioContentSha256 ?? null,
    };
    at += input.frames;
    return clip;
  });
  return { title: [episodeLabel(m.episode), m.episode?.title, '(cut)'].filter(Boolean).join(' '), episodeId: c.episode_id, rate, clips };
}

const rateOf = (a: ArtifactRow) => (a.frame_rate ? parseFrameRate(a.frame_rate) : null);

/** How many frames of `rate` an artifact lasts: its frame count at its own rate, else its duration. */
function framesAt(a: ArtifactRow, rate: Rate): number {
  const own = rateOf(a);
  if (a.frame_count && own && own.num * rate.den === rate.num * own.den) return a.frame_count;
  return a.duration_ms ? Math.max(1, msToFrames(a.duration_ms, rate)) : 0;
}

/** Video and audio items that are not cuts, back to back in delivery order. */
function itemsTimeline(group: PackedMedia[]): Omit<Timeline, 'key'> {
  const firstVideo = group.find((m) => m.artifact.kind === 'video');
  const rate = (firstVideo && rateOf(firstVideo.artifact)) || DEFAULT_RATE;
  let at = 0;
  const clips = group.map((m): TimelineClip => {
    const frames = framesAt(m.artifact, rate);
    const video = m.artifact.kind === 'video' && m.artifact.has_video === 1;
    const clip: TimelineClip = {
      name: clipName(m.shot, m.stem), media: mediaOf(m, frames), sourceIn: 0, recordIn: at, frames,
      video, audio: m.artifact.has_audio === 1, shotId: m.shot?.id ?? null,
      sourceArtifactId: null, sourceSha256: null, voiceArtifactId: null, voiceSha256: null,
    };
    at += frames;
    return clip;
  });
  const first = group[0];
  return { title: first.episode ? `${episodeLabel(first.episode)} ${first.episode.title} (items)` : 'Delivered items', episodeId: first.episode?.id ?? null, rate, clips };
}

export async function planExport(db: Db, projectId: string, items: DeliveryItemRow[]): Promise<ExportPlan> {
  const media = await packedMedia(db, projectId, items);
  const made: Array<{ base: string; t: Omit<Timeline, 'key'> }> = [];
  const groups = new Map<string, PackedMedia[]>();
  for (const m of media) {
    if (m.composition) made.push({ base: episodeLabel(m.episode) ?? 'cut', t: await cutTimeline(db, m, m.composition) });
    else if ((m.artifact.kind === 'video' || m.artifact.kind === 'audio') && framesAt(m.artifact, DEFAULT_RATE) > 0) {
      const key = m.episode?.id ?? '';
      groups.set(key, [...(groups.get(key) ?? []), m]);
    }
  }
  for (const group of groups.values()) made.push({ base: episodeLabel(group[0].episode) ?? 'items', t: itemsTimeline(group) });
  const used = new Map<string, number>();
  const timelines = made.map(({ base, t }) => {
    const n = (used.get(base) ?? 0) + 1;
    used.set(base, n);
    return { ...t, key: n === 1 ? base : `${base}-${n}` };
  });
  return { media, timelines };
}
