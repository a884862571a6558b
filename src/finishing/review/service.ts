// Reviews of the current project (qa:review). A review asks for a decision on one artifact: a shot's
// artifact (target shot) or an episode cut (target cut), always the one currently in use (the shot's
// newest artifact of its kind, the episode's newest cut). Status:
//   open --decide--> approved | changes_requested --decide--> approved | changes_requested ...
//   open | changes_requested | approved | reopened --new artifact registered--> reopened (review.reopened, reopen.ts)
//   any but withdrawn --withdraw--> withdrawn (final: no comments, decisions or withdrawal after it)
// Comments never change the status. Every write is audited and runs in one transaction; requests
// notify the qa:review holders, decisions the requester (review category).
import type { Ctx } from '../../directory/context.ts';
import { LOCKS } from '../../directory/locks.ts';
import type { RowRead } from '../../db/dialect.ts';
import { conflict, notFound, validationFailed } from '../../kernel/errors.ts';
import { pageWindow } from '../../kernel/validate.ts';
import { newId } from '../../kernel/ids.ts';
import { record } from '../../platform/audit/service.ts';
import { notify } from '../../platform/notifications/service.ts';
import { artifactInProject, compositionOfArtifact, newestCutOfEpisode, newestGeneratedOfShot, type ArtifactRow } from '../../generation/media/store.ts';
import { episodeById, shotById } from '../../production/catalog/store.ts';
import { shotsAfterApproval } from '../../generation/media/shot-status.ts';
import type { CommentInput, DecisionInput, ReviewCreate, ReviewListFilter } from './schema.ts';
import { pinOf } from './pin.ts';
import {
  activeReviewOfArtifact, insertComment, insertDecision, insertReview, reviewInProject,
  reviewsOfProject, updateReviewState, type CommentRow, type DecisionRow, type ReviewRow,
} from './store.ts';
import { consoleLinks } from '../../kernel/links.ts';

interface Target { kind: 'shot' | 'cut'; episodeId: string | null; shotId: string | null; current: ArtifactRow | undefined; title: string }

/** What the artifact is a version of, and which artifact is current there; 422 when it is neither a shot's nor a cut. */
async function targetOf(ctx: Ctx, a: ArtifactRow): Promise<Target> {
  const projectId = a.project_id;
  const composition = a.source === 'composition' ? await compositionOfArtifact(ctx.db, projectId, a.id) : undefined;
  if (composition) {
    const ep = await episodeById(ctx.db, projectId, composition.episode_id);
    return {
      kind: 'cut', episodeId: composition.episode_id, shotId: null, current: await newestCutOfEpisode(ctx.db, projectId, composition.episode_id),
      title: `Cut of episode ${ep?.number ?? ''} ${ep ? `"${ep.title}"` : ''}`.replace(/\s+/g, ' ').trim(),
    };
  }
  if (a.shot_id && a.source === 'generation') {
    const shot = await shotById(ctx.db, projectId, a.shot_id);
    return {
      kind: 'shot', episodeId: shot?.episode_id ?? a.episode_id, shotId: a.shot_id,
      current: await newestGeneratedOfShot(ctx.db, projectId, a.shot_id, a.kind),
      title: `${a.kind[0].toUpperCase()}${a.kind.slice(1)} of shot ${shot ? `"${shot.title}"` : a.shot_id}`,
    };
  }
  throw validationFailed({ artifactId: 'is neither an artifact of a shot nor an episode cut' });
}

export async function createReview(ctx: Ctx, input: ReviewCreate): Promise<ReviewRow> {
  const projectId = ctx.scope.projectId!;
  return await ctx.db.tx(async () => {
    // The artifact's review key before the reads (src/directory/locks.ts): of two requests at once,
    // the second finds the first's review in play (no unique key keeps one review an artifact).
    await ctx.db.lock(LOCKS.review(input.artifactId));
    const a = await artifactInProject(ctx.db, projectId, input.artifactId);
    if (!a) throw validationFailed({ artifactId: 'names no media artifact of this project' });
    const target = await targetOf(ctx, a);
    if (target.current && target.current.id !== a.id) {
      throw conflict('artifact_superseded', `a newer artifact (${target.current.id}) replaced this one; review that one`, { currentArtifactId: target.current.id });
    }
    const existing = await activeReviewOfArtifact(ctx.db, projectId, a.id);
    if (existing) throw conflict('review_exists', `review ${existing.id} of this artifact is ${existing.status}`, { reviewId: existing.id });
    const now = ctx.now().toISOString();
    const review: ReviewRow = {
      id: newId('rev'), organization_id: a.organization_id, workspace_id: a.workspace_id, project_id: projectId, target_kind: target.kind,
      episode_id: target.episodeId, shot_id: target.shotId, artifact_kind: a.kind, artifact_id: a.id, artifact_sha256: a.content_sha256,
      title: input.title ?? target.title, note: input.note || null, status: 'open', reopen_count: 0, requested_by: ctx.actor.userId,
      created_at: now, updated_at: now,
    };
    await insertReview(ctx.db, review);
    await record(ctx, {
      action: 'review.requested', targetType: 'review', targetId: review.id,
      metadata: { targetKind: review.target_kind, shotId: review.shot_id, episodeId: review.episode_id, artifactId: a.id, artifactSha256: a.content_sha256 },
    });
    await notify(ctx, {
      category: 'review', type: 'review.requested', organizationId: review.organization_id, workspaceId: review.workspace_id, projectId,
      subject: `Review requested: ${review.title}`, body: review.note, link: consoleLinks.review({ id: review.id, projectId }),
    });
    return review;
  });
}

/** The review; `read` { forUpdate } for the change computed from it (src/db/dialect.ts RowRead). */
export async function getReview(ctx: Ctx, reviewId: string, read?: RowRead): Promise<ReviewRow> {
  const review = await reviewInProject(ctx.db, ctx.scope.projectId!, reviewId, read);
  if (!review) throw notFound('no such review in this project');
  return review;
}

export async function listReviews(ctx: Ctx, q: ReviewListFilter) {
  const { page, pageSize, offset } = pageWindow(q.page, q.pageSize);
  const { rows, total } = await reviewsOfProject(ctx.db, ctx.scope.projectId!, {
    status: q.status ?? null, shotId: q.shotId ?? null, episodeId: q.episodeId ?? null, artifactId: q.artifactId ?? null, limit: pageSize, offset,
  });
  return { rows, pagination: { page, pageSize, total } };
}

/**
 * The review, in play (404 when not in the project, 409 review_withdrawn once withdrawn); inside the
 * caller's transaction, its row locked: a withdrawal and a comment or a decision take turns.
 */
async function reviewInPlay(ctx: Ctx, reviewId: string): Promise<ReviewRow> {
  const review = await getReview(ctx, reviewId, { forUpdate: true });
  if (review.status === 'withdrawn') throw conflict('review_withdrawn', 'the review was withdrawn', { reviewId });
  return review;
}

export async function addComment(ctx: Ctx, reviewId: string, input: CommentInput): Promise<CommentRow> {
  return await ctx.db.tx(async () => {
    const review = await reviewInPlay(ctx, reviewId);
    const a = (await artifactInProject(ctx.db, review.project_id, review.artifact_id))!;
    const pin = pinOf(a, input);
    const comment: CommentRow = {
      id: newId('rvc'), review_id: review.id, artifact_id: review.artifact_id, artifact_sha256: review.artifact_sha256,
      author_id: ctx.actor.userId, body: input.body, time_code_ms: pin.timeCodeMs, frame: pin.frame,
      rect_x: pin.rect?.x ?? null, rect_y: pin.rect?.y ?? null, rect_width: pin.rect?.width ?? null, rect_height: pin.rect?.height ?? null,
      created_at: ctx.now().toISOString(),
    };
    await insertComment(ctx.db, comment);
    await record(ctx, {
      action: 'review.commented', targetType: 'review', targetId: review.id,
      metadata: { commentId: comment.id, artifactId: comment.artifact_id, timeCodeMs: pin.timeCodeMs, frame: pin.frame, rect: pin.rect },
    });
    return comment;
  });
}

export async function decide(ctx: Ctx, reviewId: string, input: DecisionInput): Promise<{ review: ReviewRow; decision: DecisionRow }> {
  return await ctx.db.tx(async () => {
    const review = await reviewInPlay(ctx, reviewId);
    const now = ctx.now().toISOString();
    const decision: DecisionRow = {
      id: newId('rvd'), review_id: review.id, artifact_id: review.artifact_id, artifact_sha256: review.artifact_sha256,
      decision: input.decision, note: input.note || null, decided_by: ctx.actor.userId, created_at: now,
    };
    await insertDecision(ctx.db, decision);
    const next: ReviewRow = { ...review, status: input.decision === 'approve' ? 'approved' : 'changes_requested', updated_at: now };
    await updateReviewState(ctx.db, next);
    await record(ctx, {
      action: 'review.decided', targetType: 'review', targetId: review.id,
      metadata: { decisionId: decision.id, decision: decision.decision, artifactId: decision.artifact_id, artifactSha256: decision.artifact_sha256, from: review.status, to: next.status },
    });
    // The shot(s) whose video was approved move to approved (src/generation/media/shot-status.ts).
    if (input.decision === 'approve') await shotsAfterApproval(ctx, review.id, (await artifactInProject(ctx.db, review.project_id, review.artifact_id))!);
    if (review.requested_by && review.requested_by !== ctx.actor.userId) {
      await notify(ctx, {
        category: 'review', type: 'review.decided', organizationId: review.organization_id, workspaceId: review.workspace_id, projectId: review.project_id,
        subject: `${input.decision === 'approve' ? 'Approved' : 'Changes requested'}: ${review.title}`, body: decision.note,
        link: consoleLinks.review({ id: review.id, projectId: review.project_id }), recipients: [review.requested_by],
      });
    }
    return { review: next, decision };
  });
}

export async function withdraw(ctx: Ctx, reviewId: string): Promise<ReviewRow> {
  return await ctx.db.tx(async () => {
    const review = await reviewInPlay(ctx, reviewId);
    const next: ReviewRow = { ...review, status: 'withdrawn', updated_at: ctx.now().toISOString() };
    await updateReviewState(ctx.db, next);
    await record(ctx, { action: 'review.withdrawn', targetType: 'review', targetId: review.id, metadata: { from: review.status, artifactId: review.artifact_id } });
    return next;
  });
}
