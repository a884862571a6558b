// SQL of QA runs and their checks. Every read names the project.
import type { Db } from '../../db/db.ts';

export interface QaRunRow {
  id: string; organization_id: string; workspace_id: string; project_id: string; target_kind: 'shot' | 'episode' | 'project' | 'artifacts';
  target_id: string | null; result: 'pass' | 'warn' | 'fail'; spec: string; summary: string; artifact_count: number; created_by: string | null;
  started_at: string; created_at: string;
}

export interface QaCheckRow {
  run_id: string; position: number; artifact_id: string; artifact_sha256: string; check_key: string; blocking: number;
  result: 'pass' | 'warn' | 'fail'; measured: string; expected: string | null; message: string; time_code_ms: number | null;
}

export async function insertRun(db: Db, r: QaRunRow): Promise<void> {
  await db.run(
    `INSERT INTO qa_runs (id, organization_id, workspace_id, project_id, target_kind, target_id, result, spec, summary, artifact_count, created_by,
       started_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    r.id, r.organization_id, r.workspace_id, r.project_id, r.target_kind, r.target_id, r.result, r.spec, r.summary, r.artifact_count, r.created_by,
    r.started_at, r.created_at);
}

export async function insertCheck(db: Db, c: QaCheckRow): Promise<void> {
  await db.run(
    `INSERT INTO qa_checks (run_id, position, artifact_id, artifact_sha256, check_key, blocking, result, measured, expected, message, time_code_ms)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    c.run_id, c.position, c.artifact_id, c.artifact_sha256, c.check_key, c.blocking, c.result, c.measured, c.expected, c.message, c.time_code_ms);
}

export const runInProject = (db: Db, projectId: string, id: string) =>
  db.get<QaRunRow>('SELECT * FROM qa_runs WHERE project_id = ? AND id = ?', projectId, id);

export const checksOfRun = (db: Db, runId: string) =>
  db.all<QaCheckRow>('SELECT * FROM qa_checks WHERE run_id = ? ORDER BY position', runId);

export interface RunFilter { targetKind: string | null; targetId: string | null; result: string | null; artifactId: string | null }

const FILTER = `project_id = ?1 AND (target_kind = ?2 OR ?2 IS NULL) AND (target_id = ?3 OR ?3 IS NULL) AND (result = ?4 OR ?4 IS NULL)
  AND (id IN (SELECT run_id FROM qa_checks WHERE artifact_id = ?5) OR ?5 IS NULL)`;

/** Newest first. */
export const runsOfProject = (db: Db, projectId: string, f: RunFilter, limit: number, offset: number) =>
  db.all<QaRunRow>(`SELECT * FROM qa_runs WHERE ${FILTER} ORDER BY created_at DESC, id DESC LIMIT ?6 OFFSET ?7`,
    projectId, f.targetKind, f.targetId, f.result, f.artifactId, limit, offset);

export const countRuns = async (db: Db, projectId: string, f: RunFilter) =>
  (await db.get<{ n: number }>(`SELECT count(*) AS n FROM qa_runs WHERE ${FILTER}`, projectId, f.targetKind, f.targetId, f.result, f.artifactId))!.n;

/** The newest run of the project that checked this artifact at this hash. */
export const newestRunOfArtifact = (db: Db, projectId: string, artifactId: string, sha256: string) =>
  db.get<{ id: string; created_at: string }>(
    `SELECT r.id, r.created_at FROM qa_checks c JOIN qa_runs r ON r.id = c.run_id
      WHERE c.artifact_id = ? AND c.artifact_sha256 = ? AND r.project_id = ? ORDER BY r.created_at DESC, r.id DESC LIMIT 1`,
    artifactId, sha256, projectId);

export const checksOfArtifactInRun = (db: Db, runId: string, artifactId: string, sha256: string) =>
  db.all<QaCheckRow>('SELECT * FROM qa_checks WHERE run_id = ? AND artifact_id = ? AND artifact_sha256 = ? ORDER BY position', runId, artifactId, sha256);
