// Export rows as the API shows them (paths relative to the storage root).
import type { ExportRow } from './store.ts';

export const presentExport = (e: ExportRow) => ({
  id: e.id, organizationId: e.organization_id, workspaceId: e.workspace_id, projectId: e.project_id,
  deliveryId: e.delivery_id, deliveryVersion: e.delivery_version, path: e.storage_path,
  archive: e.archive_path ? { path: e.archive_path, sha256: e.archive_sha256 } : null,
  manifestSha256: e.manifest_sha256, fileCount: e.file_count, totalBytes: e.total_bytes, createdBy: e.created_by, createdAt: e.created_at,
});
