// Reviews as the API shows them.
import * as o from '../../kernel/view.ts';
import { ARTIFACT_KINDS } from '../../generation/media/present.ts';
import { REVIEW_STATUSES, type CommentRow, type DecisionRow, type ReviewRow } from './store.ts';

export const ReviewView = o.named('Review', o.object({
  id: o.text(), organizationId: o.text(), workspaceId: o.text(), projectId: o.text(),
  targetKind: o.oneOf(['shot', 'cut'] as const, 'a shot\'s artifact or an episode cut'), episodeId: o.nullable(o.text()), shotId: o.nullable(o.text()),
  artifactKind: o.oneOf(ARTIFACT_KINDS), artifactId: o.text(), artifactSha256: o.text({ description: 'the bytes under review' }),
  title: o.text(), note: o.nullable(o.text()), status: o.oneOf(REVIEW_STATUSES), reopenCount: o.int(),
  requestedBy: o.nullable(o.text()), createdAt: o.time(), updatedAt: o.time(),
}));

export const presentReview = (r: ReviewRow): o.Out<typeof ReviewView> => ({
  id: r.id, organizationId: r.organization_id, workspaceId: r.workspace_id, projectId: r.project_id,
  targetKind: r.target_kind, episodeId: r.episode_id, shotId: r.shot_id,
  artifactKind: r.artifact_kind, artifactId: r.artifact_id, artifactSha256: r.artifact_sha256,
  title: r.title, note: r.note, status: r.status, reopenCount: r.reopen_count,
  requestedBy: r.requested_by, createdAt: r.created_at, updatedAt: r.updated_at,
});

export const ReviewCommentView = o.named('ReviewComment', o.object({
  id: o.text(), reviewId: o.text(), artifactId: o.text(), artifactSha256: o.text(),
  onCurrentArtifact: o.bool('written on the bytes now under review (false for comments on a replaced version)'),
  authorId: o.nullable(o.text()), body: o.text(), timeCodeMs: o.nullable(o.int()), frame: o.nullable(o.int()),
  rect: o.nullable(o.object({ x: o.number(), y: o.number(), width: o.number(), height: o.number() }, 'a rectangle on the frame, in fractions 0..1 of its width and height')),
  createdAt: o.time(),
}));

/** onCurrentArtifact: written on the bytes now under review (false for comments on a replaced version). */
export const presentComment = (c: CommentRow, review: ReviewRow): o.Out<typeof ReviewCommentView> => ({
  id: c.id, reviewId: c.review_id, artifactId: c.artifact_id, artifactSha256: c.artifact_sha256,
  onCurrentArtifact: c.artifact_id === review.artifact_id && c.artifact_sha256 === review.artifact_sha256,
  authorId: c.author_id, body: c.body, timeCodeMs: c.time_code_ms, frame: c.frame,
  rect: c.rect_x === null ? null : { x: c.rect_x, y: c.rect_y!, width: c.rect_width!, height: c.rect_height! },
  createdAt: c.created_at,
});

export const ReviewDecisionView = o.named('ReviewDecision', o.object({
  id: o.text(), reviewId: o.text(), artifactId: o.text(), artifactSha256: o.text({ description: 'the bytes decided on' }),
  decision: o.oneOf(['approve', 'request_changes'] as const), note: o.nullable(o.text()), decidedBy: o.nullable(o.text()), createdAt: o.time(),
}));

export const presentDecision = (d: DecisionRow): o.Out<typeof ReviewDecisionView> => ({
  id: d.id, reviewId: d.review_id, artifactId: d.artifact_id, artifactSha256: d.artifact_sha256,
  decision: d.decision, note: d.note, decidedBy: d.decided_by, createdAt: d.created_at,
});

export const ReviewDetailView = o.named('ReviewDetail', o.extend(ReviewView, {
  comments: o.array(ReviewCommentView, 'oldest first'), decisions: o.array(ReviewDecisionView, 'oldest first'),
}));
