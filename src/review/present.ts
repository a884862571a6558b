// Reviews as the API shows them.
import type { CommentRow, DecisionRow, ReviewRow } from './store.ts';

export const presentReview = (r: ReviewRow) => ({
  id: r.id, organizationId: r.organization_id, workspaceId: r.workspace_id, projectId: r.project_id,
  targetKind: r.target_kind, episodeId: r.episode_id, shotId: r.shot_id,
  artifactKind: r.artifact_kind, artifactId: r.artifact_id, artifactSha256: r.artifact_sha256,
  title: r.title, note: r.note, status: r.status, reopenCount: r.reopen_count,
  requestedBy: r.requested_by, createdAt: r.created_at, updatedAt: r.updated_at,
});

/** onCurrentArtifact: written on the bytes now under review (false for comments on a replaced version). */
export const presentComment = (c: CommentRow, review: ReviewRow) => ({
  id: c.id, reviewId: c.review_id, artifactId: c.artifact_id, artifactSha256: c.artifact_sha256,
  onCurrentArtifact: c.artifact_id === review.artifact_id && c.artifact_sha256 === review.artifact_sha256,
  authorId: c.author_id, body: c.body, timeCodeMs: c.time_code_ms, frame: c.frame,
  rect: c.rect_x === null ? null : { x: c.rect_x, y: c.rect_y, width: c.rect_width, height: c.rect_height },
  createdAt: c.created_at,
});

export const presentDecision = (d: DecisionRow) => ({
  id: d.id, reviewId: d.review_id, artifactId: d.artifact_id, artifactSha256: d.artifact_sha256,
  decision: d.decision, note: d.note, decidedBy: d.decided_by, createdAt: d.created_at,
});
