// Media artifacts as the API shows them: the file's evidence (relative path, type, size, SHA-256,
// duration, resolution, frame rate, frame count, codecs, tracks), its first and last frames (hash,
// size, URL), provenance, continuity with the neighbouring shots and, for an episode cut, its inputs.
import type { Ctx } from '../../directory/context.ts';
import type { Db } from '../../db/db.ts';
import * as o from '../../kernel/view.ts';
import { hasPermission, type Permission } from '../../directory/roles.ts';
import { compositionOfArtifact, continuityOf, type ArtifactRow, type ContinuityRow } from './store.ts';

/** Who may see media evidence: the artifact routes, a shot's latest media, continuity in the graph. */
export const MEDIA_READ: Permission[] = ['qa:review', 'delivery:view'];
export const canSeeMedia = (ctx: Ctx) => MEDIA_READ.some((p) => hasPermission(ctx.permissions, p));

const contentUrl = (id: string) => `/api/production/media-artifacts/${id}/content`;

export const ARTIFACT_KINDS = ['image', 'video', 'audio', 'other'] as const;
export const ARTIFACT_SOURCES = ['generation', 'composition'] as const;

export const MediaFrameView = o.named('MediaFrame', o.object({
  path: o.text({ description: 'relative to the storage folder' }), sha256: o.nullable(o.text()), size: o.nullable(o.int('bytes')),
  mimeType: o.constant('image/png'), url: o.text({ description: 'the frame\'s content route (relative)' }),
}, 'a real first or last frame of the file, as PNG'));

function frame(a: ArtifactRow, which: 'first' | 'last'): o.Out<typeof MediaFrameView> | null {
  const p = which === 'first' ? a.first_frame_path : a.last_frame_path;
  if (!p) return null;
  return {
    path: p, sha256: which === 'first' ? a.first_frame_sha256 : a.last_frame_sha256,
    size: which === 'first' ? a.first_frame_size : a.last_frame_size, mimeType: 'image/png', url: `${contentUrl(a.id)}?frame=${which}`,
  };
}

export const ContinuityView = o.named('MediaContinuity', o.object({
  fromShotId: o.text(), toShotId: o.text(), fromArtifactId: o.text(), toArtifactId: o.text(),
  score: o.number('0..1: how well the last frame of the earlier shot matches the first frame of the later one'),
  metrics: o.record(o.number(), 'the measures behind the score (meanAbsDiff, histogramSimilarity)'), measuredAt: o.time(),
}));

export const presentContinuity = (c: ContinuityRow): o.Out<typeof ContinuityView> => ({
  fromShotId: c.from_shot_id, toShotId: c.to_shot_id, fromArtifactId: c.from_artifact_id, toArtifactId: c.to_artifact_id,
  score: c.score, metrics: JSON.parse(c.metrics) as Record<string, number>, measuredAt: c.created_at,
});

const CompositionInputView = o.object({
  position: o.int('the shot\'s position in the episode'), shotId: o.text(), artifactId: o.text(), path: o.text(), contentSha256: o.text(),
  audioArtifactId: o.optional(o.nullable(o.text({ description: 'the voice line mixed over the segment (absent in cuts made before voices were mixed)' }))),
  audioPath: o.optional(o.nullable(o.text())), audioContentSha256: o.optional(o.nullable(o.text())),
  startMs: o.int(), durationMs: o.int(), frames: o.int(),
});

export const MediaArtifactView = o.named('MediaArtifact', o.object({
  id: o.text(), organizationId: o.text(), workspaceId: o.text(), projectId: o.text(), episodeId: o.nullable(o.text()),
  shotId: o.nullable(o.text()), jobId: o.text(), kind: o.oneOf(ARTIFACT_KINDS), source: o.oneOf(ARTIFACT_SOURCES),
  path: o.text({ description: 'relative to the storage folder' }), fileName: o.text(),
  mimeType: o.text(), fileSize: o.int('bytes'), contentSha256: o.text(), durationMs: o.nullable(o.int()),
  width: o.nullable(o.int()), height: o.nullable(o.int()), resolution: o.nullable(o.text({ description: 'WIDTHxHEIGHT' })),
  frameRate: o.nullable(o.text({ description: 'as ffprobe gives it, e.g. 24000/1001' })), frameCount: o.nullable(o.int()),
  videoCodec: o.nullable(o.text()), audioCodec: o.nullable(o.text()),
  hasVideo: o.bool(), hasAudio: o.bool(),
  firstFrame: o.nullable(MediaFrameView), lastFrame: o.nullable(MediaFrameView),
  provenance: o.record(o.anything(), 'how the file was made (job, connector, model, parameters), as recorded at registration'),
  continuity: o.nullable(o.object({ previous: o.array(ContinuityView), next: o.array(ContinuityView) }, 'a shot video\'s continuity with the neighbouring shots')),
  composition: o.nullable(o.object({
    id: o.text(), episodeId: o.text(), width: o.int(), height: o.int(), frameRate: o.text(), durationMs: o.int(),
    inputs: o.array(CompositionInputView, 'the shot videos joined, in order'),
  }, 'an episode cut\'s composition')),
  contentUrl: o.text({ description: 'the file\'s content route (relative)' }), createdAt: o.time(),
}));

export async function presentArtifact(db: Db, a: ArtifactRow): Promise<o.Out<typeof MediaArtifactView>> {
  const continuity = a.kind === 'video' && a.shot_id ? await continuityOf(db, a.project_id, a.id) : null;
  const composition = a.source === 'composition' ? await compositionOfArtifact(db, a.project_id, a.id) : undefined;
  return {
    id: a.id, organizationId: a.organization_id, workspaceId: a.workspace_id, projectId: a.project_id, episodeId: a.episode_id,
    shotId: a.shot_id, jobId: a.job_id, kind: a.kind, source: a.source, path: a.storage_path, fileName: a.file_name,
    mimeType: a.mime_type, fileSize: a.file_size, contentSha256: a.content_sha256, durationMs: a.duration_ms,
    width: a.width, height: a.height, resolution: a.width && a.height ? `${a.width}x${a.height}` : null,
    frameRate: a.frame_rate, frameCount: a.frame_count, videoCodec: a.video_codec, audioCodec: a.audio_codec,
    hasVideo: a.has_video === 1, hasAudio: a.has_audio === 1,
    firstFrame: frame(a, 'first'), lastFrame: frame(a, 'last'),
    provenance: JSON.parse(a.provenance) as Record<string, unknown>,
    continuity: continuity ? { previous: continuity.previous.map(presentContinuity), next: continuity.next.map(presentContinuity) } : null,
    composition: composition ? {
      id: composition.id, episodeId: composition.episode_id, width: composition.width, height: composition.height,
      frameRate: composition.frame_rate, durationMs: composition.duration_ms, inputs: JSON.parse(composition.inputs) as o.Out<typeof CompositionInputView>[],
    } : null,
    contentUrl: contentUrl(a.id), createdAt: a.created_at,
  };
}
