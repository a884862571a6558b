// Assets and versions as the API shows them (relative storage paths only, never absolute ones).
import type { AssetRow, VersionRow } from './store.ts';

export const presentVersion = (v: VersionRow) => ({
  id: v.id, assetId: v.asset_id, projectId: v.project_id, number: v.number, fileName: v.file_name, mimeType: v.mime_type,
  declaredMimeType: v.declared_mime_type, fileSize: v.file_size, contentSha256: v.content_sha256, storagePath: v.storage_path,
  status: v.status, restoredFromVersionId: v.restored_from_version_id, verifiedAt: v.verified_at,
  createdBy: v.created_by, createdAt: v.created_at,
});

export const presentAsset = (a: AssetRow, current?: VersionRow | null) => ({
  id: a.id, organizationId: a.organization_id, workspaceId: a.workspace_id, projectId: a.project_id,
  kind: a.kind, name: a.name, description: a.description, tags: JSON.parse(a.tags) as string[], status: a.status,
  currentVersionId: a.current_version_id, currentVersion: current ? presentVersion(current) : null,
  createdBy: a.created_by, createdAt: a.created_at, updatedAt: a.updated_at, archivedAt: a.archived_at,
});
