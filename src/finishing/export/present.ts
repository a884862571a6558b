// Export rows as the API shows them (paths relative to the storage root).
import * as o from '../../kernel/view.ts';
import type { ExportRow } from './store.ts';

export const ExportView = o.named('Export', o.object({
  id: o.text(), organizationId: o.text(), workspaceId: o.text(), projectId: o.text(),
  deliveryId: o.text(), deliveryVersion: o.int(), path: o.text({ description: 'the package folder, relative to the storage root' }),
  archive: o.nullable(o.object({ path: o.text({ description: 'relative to the storage root' }), sha256: o.nullable(o.text()) }, 'the .tar of the package, when one was written')),
  manifestSha256: o.text(), fileCount: o.int('files of the package, manifest.json included'), totalBytes: o.int(),
  createdBy: o.nullable(o.text()), createdAt: o.time(),
}));

export const ExportDetailView = o.named('ExportDetail', o.extend(ExportView, {
  manifestIntact: o.bool('whether manifest.json still has its recorded SHA-256'),
  manifest: o.anything('manifest.json as stored on disk ({ format: "svc-export", formatVersion, delivery facts, timelines, files with size and SHA-256 }); null when it cannot be read'),
}));

export const presentExport = (e: ExportRow): o.Out<typeof ExportView> => ({
  id: e.id, organizationId: e.organization_id, workspaceId: e.workspace_id, projectId: e.project_id,
  deliveryId: e.delivery_id, deliveryVersion: e.delivery_version, path: e.storage_path,
  archive: e.archive_path ? { path: e.archive_path, sha256: e.archive_sha256 } : null,
  manifestSha256: e.manifest_sha256, fileCount: e.file_count, totalBytes: e.total_bytes, createdBy: e.created_by, createdAt: e.created_at,
});
