// Reviews of the current project (qa:review for every route; writes on an archived project are 409
// project_archived by the router's guard). Status set and transitions: service.ts.
import { json, type Router } from '../../http/router.ts';
import { CommentBody, DecisionBody, ReviewCreateBody, ReviewListQuery } from './schema.ts';
import * as o from '../../kernel/view.ts';
import {
  ReviewCommentView, ReviewDecisionView, ReviewDetailView, ReviewView, presentComment, presentDecision, presentReview,
} from './present.ts';
import { addComment, createReview, decide, getReview, listReviews, withdraw } from './service.ts';
import { commentsOf, decisionsOf } from './store.ts';
import type { Ctx } from '../../directory/context.ts';

async function reviewDetail(ctx: Ctx, reviewId: string): Promise<o.Out<typeof ReviewDetailView>> {
  const review = await getReview(ctx, reviewId);
  return {
    ...presentReview(review),
    comments: (await commentsOf(ctx.db, review.id)).map((c) => presentComment(c, review)),
    decisions: (await decisionsOf(ctx.db, review.id)).map(presentDecision),
  };
}

export function bindReviewRoutes(router: Router): void {
  const r = router.module(import.meta.url);
  const base = { tags: ['reviews'], scope: 'project' as const, permission: 'qa:review' as const };

  r.post('/api/production/reviews', {
    ...base, body: ReviewCreateBody, response: { status: 201, description: 'the review, status open', schema: ReviewView },
    summary: 'Request a review of an artifact: a shot\'s artifact (target shot) or an episode cut (target cut), recorded with its SHA-256. 422 when the artifact is neither or not in the project; 409 artifact_superseded when a newer artifact replaced it, 409 review_exists when a review of it is in play.',
  }, async ({ ctx, body }) => json(201, presentReview(await createReview(ctx, body))));

  r.get('/api/production/reviews', {
    ...base, query: ReviewListQuery, response: { description: 'a page of reviews, newest first', schema: o.page(ReviewView) },
    summary: 'Reviews of the current project, newest first; filters status, shotId, episodeId, artifactId; page, pageSize (default 50, at most 200).',
  }, async ({ ctx, query }) => {
    const { rows, pagination } = await listReviews(ctx, query);
    return json(200, { items: rows.map(presentReview), pagination });
  });

  r.get('/api/production/reviews/:reviewId', { ...base, summary: 'A review with its comments and decisions, oldest first.', response: { description: 'the review', schema: ReviewDetailView } },
    async ({ ctx, params }) => json(200, await reviewDetail(ctx, params.reviewId)));

  r.post('/api/production/reviews/:reviewId/comments', {
    ...base, body: CommentBody, response: { status: 201, description: 'the comment, pinned to the current artifact and its SHA-256', schema: ReviewCommentView },
    summary: 'Comment on the artifact under review: a video needs timeCodeMs or frame (the other is derived), audio timeCodeMs; a rectangle (fractions 0..1) on a picture. 422 beyond the duration or frame count; 409 review_withdrawn.',
  }, async ({ ctx, params, body }) => {
    const comment = await addComment(ctx, params.reviewId, body);
    return json(201, presentComment(comment, await getReview(ctx, params.reviewId)));
  });

  r.post('/api/production/reviews/:reviewId/decisions', {
    ...base, body: DecisionBody, response: { status: 201, description: 'the decision and the review', schema: o.object({ decision: ReviewDecisionView, review: ReviewView }) },
    summary: 'Decide: approve (status approved) or request_changes (status changes_requested), on the current artifact\'s SHA-256. 409 review_withdrawn.',
  }, async ({ ctx, params, body }) => {
    const { review, decision } = await decide(ctx, params.reviewId, body);
    return json(201, { decision: presentDecision(decision), review: presentReview(review) });
  });

  r.post('/api/production/reviews/:reviewId/withdraw', {
    ...base, summary: 'Withdraw a review (final). 409 review_withdrawn when it already is.', response: { description: 'the withdrawn review', schema: ReviewView },
  }, async ({ ctx, params }) => json(200, presentReview(await withdraw(ctx, params.reviewId))));
}
