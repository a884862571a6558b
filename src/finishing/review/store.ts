// SQL of reviews, their comments and decisions. Every read names the project (a review's comments and
// decisions are reached through a review of the project). Decisions are immutable (a trigger).
import type { Db, Param } from '../../db/db.ts';
import { lockClause, type RowRead } from '../../db/dialect.ts';

export const REVIEW_STATUSES = ['open', 'changes_requested', 'approved', 'reopened', 'withdrawn'] as const;
export type ReviewStatus = (typeof REVIEW_STATUSES)[number];

export interface ReviewRow {
  id: string; organization_id: string; workspace_id: string; project_id: string; target_kind: 'shot' | 'cut';
  episode_id: string | null; shot_id: string | null; artifact_kind: 'image' | 'video' | 'audio' | 'other';
  artifact_id: string; artifact_sha256: string; title: string; note: string | null; status: ReviewStatus;
  reopen_count: number; requested_by: string | null; created_at: string; updated_at: string;
}

export interface CommentRow {
  id: string; review_id: string; artifact_id: string; artifact_sha256: string; author_id: string | null; body: string;
  time_code_ms: number | null; frame: number | null; rect_x: number | null; rect_y: number | null;
  rect_width: number | null; rect_height: number | null; created_at: string;
}

export interface DecisionRow {
  id: string; review_id: string; artifact_id: string; artifact_sha256: string; decision: 'approve' | 'request_changes';
  note: string | null; decided_by: string | null; created_at: string;
}

async function insertRow(db: Db, table: string, row: object): Promise<void> {
  const entries = Object.entries(row);
  await db.run(`INSERT INTO ${table} (${entries.map(([k]) => k).join(', ')}) VALUES (${entries.map(() => '?').join(', ')})`,
    ...entries.map(([, v]) => v as Param));
}

export const insertReview = (db: Db, r: ReviewRow) => insertRow(db, 'reviews', r);
export const insertComment = (db: Db, c: CommentRow) => insertRow(db, 'review_comments', c);
export const insertDecision = (db: Db, d: DecisionRow) => insertRow(db, 'review_decisions', d);

/** Status, current artifact and re-open count: the only columns that change after creation. */
export async function updateReviewState(db: Db, r: ReviewRow): Promise<void> {
  await db.run(
    'UPDATE reviews SET status = ?, artifact_id = ?, artifact_sha256 = ?, reopen_count = ?, updated_at = ? WHERE id = ? AND project_id = ?',
    r.status, r.artifact_id, r.artifact_sha256, r.reopen_count, r.updated_at, r.id, r.project_id,
  );
}

export const reviewInProject = (db: Db, projectId: string, id: string, read?: RowRead) =>
  db.get<ReviewRow>(`SELECT * FROM reviews WHERE project_id = ? AND id = ?${lockClause(db, read)}`, projectId, id);

/** A review of the artifact that is still in play (not withdrawn), if any. */
export const activeReviewOfArtifact = (db: Db, projectId: string, artifactId: string) =>
  db.get<ReviewRow>(
    `SELECT * FROM reviews WHERE project_id = ? AND artifact_id = ? AND status <> 'withdrawn'
      ORDER BY created_at DESC, id DESC LIMIT 1`, projectId, artifactId);

/** The review whose current artifact this is: one in play before a withdrawn one, newest first. */
export const currentReviewOfArtifact = (db: Db, projectId: string, artifactId: string) =>
  db.get<ReviewRow>(
    `SELECT * FROM reviews WHERE project_id = ? AND artifact_id = ?
      ORDER BY status = 'withdrawn', created_at DESC, id DESC LIMIT 1`, projectId, artifactId);

export interface ReviewFilter {
  status: string | null; shotId: string | null; episodeId: string | null; artifactId: string | null; limit: number; offset: number;
}

/** Newest first. */
export async function reviewsOfProject(db: Db, projectId: string, f: ReviewFilter): Promise<{ rows: ReviewRow[]; total: number }> {
  const where = `project_id = ?1 AND (status = ?2 OR ?2 IS NULL) AND (shot_id = ?3 OR ?3 IS NULL)
    AND (episode_id = ?4 OR ?4 IS NULL) AND (artifact_id = ?5 OR ?5 IS NULL)`;
  const params = [projectId, f.status, f.shotId, f.episodeId, f.artifactId] as const;
  const total = (await db.get<{ n: number }>(`SELECT count(*) AS n FROM reviews WHERE ${where}`, ...params))!.n;
  const rows = await db.all<ReviewRow>(`SELECT * FROM reviews WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT ?6 OFFSET ?7`,
    ...params, f.limit, f.offset);
  return { rows, total };
}

/** Oldest first. */
export const commentsOf = (db: Db, reviewId: string) =>
  db.all<CommentRow>('SELECT * FROM review_comments WHERE review_id = ? ORDER BY created_at, id', reviewId);

/** Oldest first. */
export const decisionsOf = (db: Db, reviewId: string) =>
  db.all<DecisionRow>('SELECT * FROM review_decisions WHERE review_id = ? ORDER BY created_at, id', reviewId);

export const latestDecisionOf = (db: Db, reviewId: string) =>
  db.get<DecisionRow>('SELECT * FROM review_decisions WHERE review_id = ? ORDER BY created_at DESC, id DESC LIMIT 1', reviewId);

/** Reviews in play on an older artifact of the shot and kind (re-open candidates). */
export const shotReviewsBefore = (db: Db, projectId: string, shotId: string, kind: string, artifactId: string, read?: RowRead) =>
  db.all<ReviewRow>(
    `SELECT * FROM reviews WHERE project_id = ? AND target_kind = 'shot' AND shot_id = ? AND artifact_kind = ?
      AND artifact_id <> ? AND status <> 'withdrawn' ORDER BY created_at, id${lockClause(db, read)}`, projectId, shotId, kind, artifactId);

/** Reviews in play on an older cut of the episode (re-open candidates). */
export const cutReviewsBefore = (db: Db, projectId: string, episodeId: string, artifactId: string, read?: RowRead) =>
  db.all<ReviewRow>(
    `SELECT * FROM reviews WHERE project_id = ? AND target_kind = 'cut' AND episode_id = ?
      AND artifact_id <> ? AND status <> 'withdrawn' ORDER BY created_at, id${lockClause(db, read)}`, projectId, episodeId, artifactId);

/** Who decided on an artifact under the review (distinct, in order). */
export const decidersOn = async (db: Db, reviewId: string, artifactId: string) =>
  (await db.all<{ decided_by: string }>(
    `SELECT decided_by FROM review_decisions WHERE review_id = ? AND artifact_id = ? AND decided_by IS NOT NULL
      GROUP BY decided_by ORDER BY min(created_at || ' ' || id)`, reviewId, artifactId)).map((r) => r.decided_by);
