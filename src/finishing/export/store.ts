// SQL of export packages: one row per delivery version, every read naming the project.
import { newestPageOfProject } from '../../db/page.ts';
import type { Db } from '../../db/db.ts';

export interface ExportRow {
  id: string; organization_id: string; workspace_id: string; project_id: string; delivery_id: string; delivery_version: number;
  storage_path: string; archive_path: string | null; archive_sha256: string | null; manifest_sha256: string;
  file_count: number; total_bytes: number; created_by: string | null; created_at: string;
}

const COLUMNS = [
  'id', 'organization_id', 'workspace_id', 'project_id', 'delivery_id', 'delivery_version', 'storage_path', 'archive_path',
  'archive_sha256', 'manifest_sha256', 'file_count', 'total_bytes', 'created_by', 'created_at',
] as const satisfies ReadonlyArray<keyof ExportRow>;

export async function insertExport(db: Db, e: ExportRow): Promise<void> {
  await db.run(`INSERT INTO exports (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map(() => '?').join(', ')})`, ...COLUMNS.map((c) => e[c]));
}

/** Records the archive of an export that has none yet: `changes` is 0 when another request recorded one first. */
export const setExportArchive = (db: Db, id: string, archivePath: string, sha256: string) =>
  db.run('UPDATE exports SET archive_path = ?, archive_sha256 = ? WHERE id = ? AND archive_path IS NULL', archivePath, sha256, id);

export const exportInProject = (db: Db, projectId: string, id: string) =>
  db.get<ExportRow>('SELECT * FROM exports WHERE project_id = ? AND id = ?', projectId, id);

export const exportOfVersion = (db: Db, projectId: string, deliveryId: string, version: number) =>
  db.get<ExportRow>('SELECT * FROM exports WHERE project_id = ? AND delivery_id = ? AND delivery_version = ?', projectId, deliveryId, version);

export interface ExportFilter { deliveryId: string | null; limit: number; offset: number }

/** Newest first. */
export function exportsOfProject(db: Db, projectId: string, f: ExportFilter): Promise<{ rows: ExportRow[]; total: number }> {
  return newestPageOfProject<ExportRow>(db, 'exports', projectId, f.deliveryId, f.limit, f.offset);
}
