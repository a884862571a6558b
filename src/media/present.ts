// Media artifacts as the API shows them: the file's evidence (relative path, type, size, SHA-256,
// duration, resolution, frame rate, frame count, codecs, tracks), its first and last frames (hash,
// size, URL), provenance, continuity with the neighbouring shots and, for an episode cut, its inputs.
import type { Ctx } from '../context.ts';
import type { Db } from '../db/db.ts';
import { hasPermission, type Permission } from '../tenancy/roles.ts';
import { compositionOfArtifact, continuityOf, type ArtifactRow, type ContinuityRow } from './store.ts';

/** Who may see media evidence: the artifact routes, a shot's latest media, continuity in the graph. */
export const MEDIA_READ: Permission[] = ['qa:review', 'delivery:view'];
export const canSeeMedia = (ctx: Ctx) => MEDIA_READ.some((p) => hasPermission(ctx.permissions, p));

const contentUrl = (id: string) => `/api/production/media-artifacts/${id}/content`;

function frame(a: ArtifactRow, which: 'first' | 'last') {
  const p = which === 'first' ? a.first_frame_path : a.last_frame_path;
  if (!p) return null;
  return {
    path: p, sha256: which === 'first' ? a.first_frame_sha256 : a.last_frame_sha256,
    size: which === 'first' ? a.first_frame_size : a.last_frame_size, mimeType: 'image/png', url: `${contentUrl(a.id)}?frame=${which}`,
  };
}

export const presentContinuity = (c: ContinuityRow) => ({
  fromShotId: c.from_shot_id, toShotId: c.to_shot_id, fromArtifactId: c.from_artifact_id, toArtifactId: c.to_artifact_id,
  score: c.score, metrics: JSON.parse(c.metrics) as Record<string, number>, measuredAt: c.created_at,
});

export function presentArtifact(db: Db, a: ArtifactRow) {
  const continuity = a.kind === 'video' && a.shot_id ? continuityOf(db, a.project_id, a.id) : null;
  const composition = a.source === 'composition' ? compositionOfArtifact(db, a.project_id, a.id) : undefined;
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
      frameRate: composition.frame_rate, durationMs: composition.duration_ms, inputs: JSON.parse(composition.inputs) as unknown[],
    } : null,
    contentUrl: contentUrl(a.id), createdAt: a.created_at,
  };
}
