// SQL of assets and asset versions; every statement names the project or the organization.
import type { Db } from '../../db/db.ts';
import { LOCKS } from '../../directory/locks.ts';
import { lockClause, type RowRead } from '../../db/dialect.ts';

export interface AssetRow {
  id: string; organization_id: string; workspace_id: string; project_id: string;
  kind: string; name: string; description: string; tags: string; status: 'active' | 'archived';
  current_version_id: string | null; created_by: string | null; created_at: string; updated_at: string; archived_at: string | null;
}

export interface VersionRow {
  id: string; asset_id: string; organization_id: string; workspace_id: string; project_id: string;
  number: number; file_name: string; mime_type: string; declared_mime_type: string | null; file_size: number;
  content_sha256: string; storage_path: string; status: 'ok' | 'corrupt'; restored_from_version_id: string | null;
  verified_at: string | null; created_by: string | null; created_at: string;
}

export async function insertAsset(db: Db, a: AssetRow): Promise<void> {
  await db.run(
    `INSERT INTO assets (id, organization_id, workspace_id, project_id, kind, name, description, tags, status, current_version_id,
       created_by, created_at, updated_at, archived_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    a.id, a.organization_id, a.workspace_id, a.project_id, a.kind, a.name, a.description, a.tags, a.status, a.current_version_id,
    a.created_by, a.created_at, a.updated_at, a.archived_at,
  );
}

export async function updateAsset(db: Db, a: AssetRow): Promise<void> {
  await db.run(
    `UPDATE assets SET name = ?, description = ?, tags = ?, status = ?, current_version_id = ?, updated_at = ?, archived_at = ?
      WHERE id = ? AND project_id = ?`,
    a.name, a.description, a.tags, a.status, a.current_version_id, a.updated_at, a.archived_at, a.id, a.project_id,
  );
}

export const assetInProject = (db: Db, projectId: string, id: string, read?: RowRead) =>
  db.get<AssetRow>(`SELECT * FROM assets WHERE project_id = ? AND id = ?${lockClause(db, read)}`, projectId, id);

export interface AssetFilter { kind: string | null; q: string | null; includeArchived: boolean; limit: number; offset: number }

export async function assetsOfProject(db: Db, projectId: string, f: AssetFilter): Promise<{ rows: AssetRow[]; total: number }> {
  const where = `project_id = ?1 AND (kind = ?2 OR ?2 IS NULL) AND (?3 = 1 OR status = 'active')
    AND (instr(lower(name), lower(?4)) > 0 OR instr(lower(tags), lower(?4)) > 0 OR ?4 IS NULL)`;
  const args = [projectId, f.kind, f.includeArchived ? 1 : 0, f.q] as const;
  const total = (await db.get<{ n: number }>(`SELECT count(*) AS n FROM assets WHERE ${where}`, ...args))!.n;
  const rows = await db.all<AssetRow>(`SELECT * FROM assets WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT ?5 OFFSET ?6`, ...args, f.limit, f.offset);
  return { rows, total };
}

export async function insertVersion(db: Db, v: VersionRow): Promise<void> {
  await db.run(
    `INSERT INTO asset_versions (id, asset_id, organization_id, workspace_id, project_id, number, file_name, mime_type, declared_mime_type,
       file_size, content_sha256, storage_path, status, restored_from_version_id, verified_at, created_by, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    v.id, v.asset_id, v.organization_id, v.workspace_id, v.project_id, v.number, v.file_name, v.mime_type, v.declared_mime_type,
    v.file_size, v.content_sha256, v.storage_path, v.status, v.restored_from_version_id, v.verified_at, v.created_by, v.created_at,
  );
}

export const versionOfAsset = (db: Db, projectId: string, assetId: string, id: string) =>
  db.get<VersionRow>('SELECT * FROM asset_versions WHERE project_id = ? AND asset_id = ? AND id = ?', projectId, assetId, id);

export const versionsOfAsset = (db: Db, projectId: string, assetId: string) =>
  db.all<VersionRow>('SELECT * FROM asset_versions WHERE project_id = ? AND asset_id = ? ORDER BY number DESC', projectId, assetId);

/**
 * The asset's next version number (the highest + 1), inside the transaction that then inserts it: the
 * asset's key first (src/directory/locks.ts), so no two transactions take the same number. A caller
 * that reads the asset before takes the key itself first (taking it again here is free).
 */
export async function nextVersionNumber(db: Db, assetId: string): Promise<number> {
  await db.lock(LOCKS.asset(assetId));
  return (await db.get<{ n: number }>('SELECT coalesce(max(number), 0) + 1 AS n FROM asset_versions WHERE asset_id = ?', assetId))!.n;
}

export async function setVersionCheck(db: Db, projectId: string, id: string, status: 'ok' | 'corrupt', at: string): Promise<void> {
  await db.run('UPDATE asset_versions SET status = ?, verified_at = ? WHERE project_id = ? AND id = ?', status, at, projectId, id);
}

export const organizationHasFile = async (db: Db, organizationId: string, storagePath: string): Promise<boolean> =>
  await db.get('SELECT 1 FROM asset_versions WHERE organization_id = ? AND storage_path = ? LIMIT 1', organizationId, storagePath) !== undefined;

/**
 * Where the organization keeps a content hash, and whether it already does: its own path
 * (assetPathOf), or the shared path of before when the organization itself refers to the content
 * there (kept: no second copy, no second count); else its own path, not stored yet. Reads only the
 * organization's own rows.
 */
export async function organizationFileOf(db: Db, organizationId: string, paths: { own: string; legacy: string }): Promise<{ path: string; stored: boolean }> {
  if (await organizationHasFile(db, organizationId, paths.own)) return { path: paths.own, stored: true };
  if (await organizationHasFile(db, organizationId, paths.legacy)) return { path: paths.legacy, stored: true };
  return { path: paths.own, stored: false };
}

export const corruptVersionWithPath = async (db: Db, storagePath: string): Promise<boolean> =>
  await db.get("SELECT 1 FROM asset_versions WHERE storage_path = ? AND status = 'corrupt' LIMIT 1", storagePath) !== undefined;

export interface LargestFileRow extends VersionRow { asset_name: string; asset_kind: string }

/** The largest distinct files (by storage path) of the given projects; the newest version naming each. */
export async function largestFiles(db: Db, organizationId: string, projectIds: readonly string[], limit: number): Promise<LargestFileRow[]> {
  if (projectIds.length === 0) return [];
  return await db.all<LargestFileRow>(
    `SELECT v.*, a.name AS asset_name, a.kind AS asset_kind FROM asset_versions v JOIN assets a ON a.id = v.asset_id
      WHERE v.organization_id = ? AND v.project_id IN (SELECT value FROM ${db.dialect.jsonValues('?')})
        AND v.id = (SELECT w.id FROM asset_versions w WHERE w.project_id = v.project_id AND w.storage_path = v.storage_path
          ORDER BY w.created_at DESC, w.id DESC LIMIT 1)
      ORDER BY v.file_size DESC, v.id LIMIT ?`, organizationId, JSON.stringify(projectIds), limit);
}
