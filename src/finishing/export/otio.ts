// OpenTimelineIO JSON of a timeline: Timeline.1 > Stack.1 > Track.1 "V1" (Video) and, when any clip
// carries sound, Track.1 "A1" (Audio), each a run of Clip.2 (and Gap.1 where the track is silent or
// empty), with RationalTime.1 / TimeRange.1 at the timeline's rate. A clip's media is an
// ExternalReference.1 whose target_url is relative to the .otio file ("../media/..."), so it
// resolves inside the package wherever the package is unpacked; metadata.svc keeps the path from the
// package root and the artifact id and SHA-256.
import { rateValue, totalFrames, type Rate, type Timeline, type TimelineClip } from './timeline.ts';

const rationalTime = (value: number, rate: Rate) => ({ OTIO_SCHEMA: 'RationalTime.1', rate: rateValue(rate), value });
const timeRange = (start: number, duration: number, rate: Rate) => ({
  OTIO_SCHEMA: 'TimeRange.1', duration: rationalTime(duration, rate), start_time: rationalTime(start, rate),
});

const itemBase = (name: string) => ({ metadata: {} as Record<string, unknown>, name, effects: [], markers: [], enabled: true });

function clip(c: TimelineClip, rate: Rate) {
  return {
    OTIO_SCHEMA: 'Clip.2',
    ...itemBase(c.name),
    metadata: {
      svc: {
        shotId: c.shotId, artifactId: c.media.artifactId, sha256: c.media.sha256, packagePath: c.media.path,
        sourceArtifactId: c.sourceArtifactId, sourceSha256: c.sourceSha256, voiceArtifactId: c.voiceArtifactId,
      },
    },
    source_range: timeRange(c.sourceIn, c.frames, rate),
    media_references: {
      DEFAULT_MEDIA: {
        OTIO_SCHEMA: 'ExternalReference.1',
        metadata: { svc: { artifactId: c.media.artifactId, sha256: c.media.sha256 } },
        name: c.media.fileName,
        available_range: timeRange(0, c.media.frames, rate),
        available_image_bounds: null,
        target_url: `../${c.media.path}`,
      },
    },
    active_media_reference_key: 'DEFAULT_MEDIA',
  };
}

const gap = (frames: number, rate: Rate) => ({ OTIO_SCHEMA: 'Gap.1', ...itemBase(''), source_range: timeRange(0, frames, rate) });

/** A track of these clips, with gaps where none plays (clips do not overlap on one track). */
function track(name: string, kind: 'Video' | 'Audio', clips: TimelineClip[], rate: Rate) {
  const children: unknown[] = [];
  let at = 0;
  for (const c of [...clips].sort((a, b) => a.recordIn - b.recordIn)) {
    if (c.recordIn > at) children.push(gap(c.recordIn - at, rate));
    children.push(clip(c, rate));
    at = c.recordIn + c.frames;
  }
  return { OTIO_SCHEMA: 'Track.1', ...itemBase(name), source_range: null, children, kind };
}

export function otioOf(t: Timeline, metadata: Record<string, unknown>): string {
  const tracks = [track('V1', 'Video', t.clips.filter((c) => c.video), t.rate)];
  if (t.clips.some((c) => c.audio)) tracks.push(track('A1', 'Audio', t.clips.filter((c) => c.audio), t.rate));
  const timeline = {
    OTIO_SCHEMA: 'Timeline.1',
    metadata: { svc: { ...metadata, frameRate: `${t.rate.num}/${t.rate.den}`, frames: totalFrames(t) } },
    name: t.title,
    global_start_time: rationalTime(0, t.rate),
    tracks: { OTIO_SCHEMA: 'Stack.1', ...itemBase('tracks'), source_range: null, children: tracks },
  };
  return `${JSON.stringify(timeline, null, 2)}\n`;
}
