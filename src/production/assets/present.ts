// Assets and versions as the API shows them (relative storage paths only, never absolute ones).
import * as o from '../../kernel/view.ts';
import { ASSET_KINDS, type AssetKind } from './schema.ts';
import type { AssetRow, VersionRow } from './store.ts';

export const ASSET_STATUSES = ['active', 'archived'] as const;
export const VERSION_STATUSES = ['ok', 'corrupt'] as const;

export const AssetVersionView = o.named('AssetVersion', o.object({
  id: o.text(), assetId: o.text(), projectId: o.text(), number: o.int('1, 2, ... per asset'), fileName: o.text(),
  mimeType: o.text({ description: 'sniffed from the bytes' }),
  declaredMimeType: o.nullable(o.text({ description: 'the type the uploader declared, if any (never trusted)' })),
  fileSize: o.int('bytes'), contentSha256: o.text(), storagePath: o.text({ description: 'relative to the storage folder' }),
  status: o.oneOf(VERSION_STATUSES, 'corrupt once a verification found the file missing or changed'),
  restoredFromVersionId: o.nullable(o.text()), verifiedAt: o.nullable(o.time()),
  createdBy: o.nullable(o.text()), createdAt: o.time(),
}));

export const presentVersion = (v: VersionRow): o.Out<typeof AssetVersionView> => ({
  id: v.id, assetId: v.asset_id, projectId: v.project_id, number: v.number, fileName: v.file_name, mimeType: v.mime_type,
  declaredMimeType: v.declared_mime_type, fileSize: v.file_size, contentSha256: v.content_sha256, storagePath: v.storage_path,
  status: v.status, restoredFromVersionId: v.restored_from_version_id, verifiedAt: v.verified_at,
  createdBy: v.created_by, createdAt: v.created_at,
});

export const AssetView = o.named('Asset', o.object({
  id: o.text(), organizationId: o.text(), workspaceId: o.text(), projectId: o.text(),
  kind: o.oneOf(ASSET_KINDS), name: o.text(), description: o.text(), tags: o.array(o.text()), status: o.oneOf(ASSET_STATUSES),
  currentVersionId: o.nullable(o.text()), currentVersion: o.nullable(AssetVersionView),
  createdBy: o.nullable(o.text()), createdAt: o.time(), updatedAt: o.time(), archivedAt: o.nullable(o.time()),
}));

export const presentAsset = (a: AssetRow, current?: VersionRow | null): o.Out<typeof AssetView> => ({
  id: a.id, organizationId: a.organization_id, workspaceId: a.workspace_id, projectId: a.project_id,
  kind: a.kind as AssetKind, name: a.name, description: a.description, tags: JSON.parse(a.tags) as string[], status: a.status,
  currentVersionId: a.current_version_id, currentVersion: current ? presentVersion(current) : null,
  createdBy: a.created_by, createdAt: a.created_at, updatedAt: a.updated_at, archivedAt: a.archived_at,
});

/** An asset with every version, newest first. */
export const AssetDetailView = o.named('AssetDetail', o.extend(AssetView, { versions: o.array(AssetVersionView, 'newest first') }));

/** A version just written (uploaded or restored), with the asset it now heads. */
export const AssetVersionWrittenView = o.named('AssetVersionWritten', o.extend(AssetVersionView, { asset: AssetView }));

export const AssetUploadView = o.named('AssetUpload', o.extend(AssetVersionView, {
  deduplicated: o.bool('true when this organization already stored the same bytes (the file is shared, not stored twice)'),
  asset: AssetView,
}));

export const AssetVerificationView = o.named('AssetVerification', o.object({
  assetId: o.text(), versionId: o.text(), ok: o.bool(),
  reason: o.oneOf(['match', 'hash_mismatch', 'size_mismatch', 'missing'] as const),
  expectedSha256: o.text(), actualSha256: o.nullable(o.text({ description: 'null when the file is missing' })),
  expectedSize: o.int(), actualSize: o.nullable(o.int('null when the file is missing')),
  status: o.oneOf(VERSION_STATUSES, 'the version\'s status after the check'),
}));

export const StorageUsageView = o.named('StorageUsage', o.object({
  scope: o.object({ organizationId: o.text(), workspaceId: o.nullable(o.text()), projectId: o.nullable(o.text()) }),
  usedBytes: o.int('distinct stored files of the organization'),
  limitBytes: o.int('the billing account\'s storageGb, in bytes (GiB)'),
  remainingBytes: o.int(),
  occupancyRatio: o.number('usedBytes / limitBytes, 6 decimals'),
  projects: o.array(o.object({ projectId: o.text(), projectName: o.text(), workspaceId: o.text(), usedBytes: o.int(), files: o.int() }), 'visible projects, largest first'),
  largestFiles: o.array(o.object({
    projectId: o.text(), assetId: o.text(), assetName: o.text(), assetKind: o.oneOf(ASSET_KINDS), versionId: o.text(), versionNumber: o.int(),
    fileName: o.text(), mimeType: o.text(), fileSize: o.int(), contentSha256: o.text(), storagePath: o.text(),
  }), 'the ten largest files of the visible projects'),
}));
