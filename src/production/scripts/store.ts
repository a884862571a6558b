// SQL of script and bible revisions. Both tables have the same columns; a "document" is an episode's
// script (document_id = episode id) or a project's bible (document_id = project id). Rows are only
// ever inserted; every statement names the project.
import type { Db } from '../../db/db.ts';

export type DocKind = 'script' | 'bible';
const TABLE: Record<DocKind, string> = { script: 'script_revisions', bible: 'bible_revisions' };

export interface RevisionRow {
  id: string; organization_id: string; workspace_id: string; project_id: string; document_id: string;
  revision: number; restored_from: number | null; author_user_id: string | null; author_name: string;
  created_at: string; content: string; content_sha256: string; item_count: number;
}

export type RevisionSummaryRow = Omit<RevisionRow, 'content'>;
const SUMMARY = 'id, organization_id, workspace_id, project_id, document_id, revision, restored_from, author_user_id, author_name, created_at, content_sha256, item_count';

export async function insertRevision(db: Db, kind: DocKind, r: RevisionRow): Promise<void> {
  await db.run(
    `INSERT INTO ${TABLE[kind]} (id, organization_id, workspace_id, project_id, document_id, revision, restored_from, author_user_id,
       author_name, created_at, content, content_sha256, item_count) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    r.id, r.organization_id, r.workspace_id, r.project_id, r.document_id, r.revision, r.restored_from, r.author_user_id,
    r.author_name, r.created_at, r.content, r.content_sha256, r.item_count,
  );
}

export function currentRevision(db: Db, kind: DocKind, projectId: string, documentId: string): Promise<RevisionRow | undefined> {
  return db.get<RevisionRow>(
    `SELECT * FROM ${TABLE[kind]} WHERE project_id = ? AND document_id = ? ORDER BY revision DESC LIMIT 1`, projectId, documentId);
}

export function revisionAt(db: Db, kind: DocKind, projectId: string, documentId: string, revision: number): Promise<RevisionRow | undefined> {
  return db.get<RevisionRow>(
    `SELECT * FROM ${TABLE[kind]} WHERE project_id = ? AND document_id = ? AND revision = ?`, projectId, documentId, revision);
}

export async function revisionPage(db: Db, kind: DocKind, projectId: string, documentId: string, limit: number, offset: number): Promise<{ rows: RevisionSummaryRow[]; total: number }> {
  const total = (await db.get<{ n: number }>(`SELECT count(*) AS n FROM ${TABLE[kind]} WHERE project_id = ? AND document_id = ?`, projectId, documentId))!.n;
  const rows = await db.all<RevisionSummaryRow>(
    `SELECT ${SUMMARY} FROM ${TABLE[kind]} WHERE project_id = ? AND document_id = ? ORDER BY revision DESC LIMIT ? OFFSET ?`,
    projectId, documentId, limit, offset);
  return { rows, total };
}

export interface EpisodeRef { id: string; organization_id: string; workspace_id: string; project_id: string; title: string }

export function episodeInProject(db: Db, projectId: string, episodeId: string): Promise<EpisodeRef | undefined> {
  return db.get<EpisodeRef>('SELECT id, organization_id, workspace_id, project_id, title FROM episodes WHERE project_id = ? AND id = ?', projectId, episodeId);
}

/** Whether the episode has a script (its revisions are immutable, so the episode cannot be removed). */
export async function hasScript(db: Db, projectId: string, episodeId: string): Promise<boolean> {
  return await db.get('SELECT 1 AS x FROM script_revisions WHERE project_id = ? AND document_id = ? LIMIT 1', projectId, episodeId) !== undefined;
}
