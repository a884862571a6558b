// Re-opening: a newly registered artifact replaces the one under review. A shot's new artifact of a
// kind (its newest generated one) takes over the reviews in play (not withdrawn) on the shot's older
// artifacts of that kind; an episode's new cut those on its older cuts. Each such review moves to the
// new artifact and its SHA-256, becomes `reopened`, reopen_count + 1, with an audit record
// (review.reopened) and a notification (review category) to whoever decided on the replaced artifact,
// or to the requester when nobody had. Runs on the event media.artifacts_registered, in the
// transaction that handles it right after the job's completing one commits (the worker's context,
// scoped to the job's project; src/subscribers.ts binds it).
import { mapSeq } from '../../kernel/seq.ts';
import type { Ctx } from '../../directory/context.ts';
import { record } from '../../platform/audit/service.ts';
import { notify } from '../../platform/notifications/service.ts';
import { artifactInProject, newestGeneratedOfShot, type ArtifactRow } from '../../generation/media/store.ts';
import type { ArtifactsRegistered } from '../../generation/media/register.ts';
import { consoleLinks } from '../../kernel/links.ts';
import { cutReviewsBefore, decidersOn, shotReviewsBefore, updateReviewState, type ReviewRow } from './store.ts';

async function moveReview(ctx: Ctx, review: ReviewRow, to: ArtifactRow, at: string): Promise<void> {
  const next: ReviewRow = {
    ...review, artifact_id: to.id, artifact_sha256: to.content_sha256, status: 'reopened', reopen_count: review.reopen_count + 1, updated_at: at,
  };
  await updateReviewState(ctx.db, next);
  await record(ctx, {
    action: 'review.reopened', targetType: 'review', targetId: review.id,
    organizationId: review.organization_id, workspaceId: review.workspace_id, projectId: review.project_id,
    metadata: {
      from: review.status, fromArtifactId: review.artifact_id, fromSha256: review.artifact_sha256,
      toArtifactId: to.id, toSha256: to.content_sha256, jobId: to.job_id, reopenCount: next.reopen_count,
    },
  });
  const deciders = await decidersOn(ctx.db, review.id, review.artifact_id);
  const recipients = deciders.length ? deciders : review.requested_by ? [review.requested_by] : [];
  if (!recipients.length) return;
  await notify(ctx, {
    category: 'review', type: 'review.reopened', organizationId: review.organization_id, workspaceId: review.workspace_id, projectId: review.project_id,
    subject: `Review re-opened by a new version: ${review.title}`,
    body: `A new ${to.kind} (${to.file_name}) replaced the one under review; the review was ${review.status.replace('_', ' ')}.`,
    link: consoleLinks.review({ id: review.id, projectId: review.project_id }), recipients,
  });
}

/**
 * Moves the reviews of the artifacts the registered ones replace (see the top of this file), each read
 * locked: the status, artifact and reopen count written are computed from the row as it is.
 */
export async function reopenReviews(ctx: Ctx, rows: readonly ArtifactRow[], cut: { artifact: ArtifactRow; episodeId: string } | null, at: string): Promise<void> {
  const seen = new Set<string>();
  for (const row of rows) {
    if (!row.shot_id || row.source !== 'generation') continue;
    const key = `${row.shot_id}\u0000${row.kind}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const current = await newestGeneratedOfShot(ctx.db, row.project_id, row.shot_id, row.kind);
    if (!current || !rows.some((r) => r.id === current.id)) continue;
    const reviews = await shotReviewsBefore(ctx.db, row.project_id, row.shot_id, row.kind, current.id, { forUpdate: true });
    for (const review of reviews) await moveReview(ctx, review, current, at);
  }
  if (cut) {
    const reviews = await cutReviewsBefore(ctx.db, cut.artifact.project_id, cut.episodeId, cut.artifact.id, { forUpdate: true });
    for (const review of reviews) await moveReview(ctx, review, cut.artifact, at);
  }
}

/** The handler of media.artifacts_registered: the rows as they are now, then reopenReviews. */
export async function reopenOnRegistered(ctx: Ctx, news: ArtifactsRegistered): Promise<void> {
  const rows = (await mapSeq(news.artifactIds, (id) => artifactInProject(ctx.db, news.projectId, id))).filter((r): r is ArtifactRow => r !== undefined);
  const cutRow = news.cut && rows.find((r) => r.id === news.cut!.artifactId);
  await reopenReviews(ctx, rows, news.cut && cutRow ? { artifact: cutRow, episodeId: news.cut.episodeId } : null, news.at);
}
