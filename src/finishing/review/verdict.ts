// The review verdict of an artifact at a hash, for delivery approval: the review whose current artifact
// this is (one in play before a withdrawn one, newest first); approved only when its status is
// approved and its latest decision approves exactly these bytes.
import type { Db } from '../../db/db.ts';
import { currentReviewOfArtifact, latestDecisionOf } from './store.ts';

export interface ReviewVerdict { reviewId: string; status: string; approved: boolean; decidedBy: string | null; decidedAt: string | null }

export async function reviewVerdictOf(db: Db, projectId: string, artifactId: string, sha256: string): Promise<ReviewVerdict | null> {
  const review = await currentReviewOfArtifact(db, projectId, artifactId);
  if (!review) return null;
  const last = await latestDecisionOf(db, review.id);
  const approved = review.status === 'approved' && review.artifact_sha256 === sha256
    && last?.decision === 'approve' && last.artifact_id === artifactId && last.artifact_sha256 === sha256;
  return { reviewId: review.id, status: review.status, approved, decidedBy: last?.decided_by ?? null, decidedAt: last?.created_at ?? null };
}
