// GET /api/usage/storage: the organization's stored bytes against the billing account's storage_gb
// (GiB), the split per project and the largest files, limited to the projects the caller can see.
import type { Ctx } from '../../directory/context.ts';
import { canSeeProject } from '../../directory/tenancy/scope.ts';
import { largestFiles } from './store.ts';
import { organizationStoredBytes, projectUsage } from '../../commercial/meters.ts';
import { storageLimitBytes } from './service.ts';
import type * as o from '../../kernel/view.ts';
import type { AssetKind } from './schema.ts';
import type { StorageUsageView } from './present.ts';

export async function storageUsage(ctx: Ctx): Promise<o.Out<typeof StorageUsageView>> {
  const organizationId = ctx.scope.organizationId!;
  const usedBytes = await organizationStoredBytes(ctx.db, organizationId);
  const limitBytes = await storageLimitBytes(ctx, organizationId);
  const visible = (await projectUsage(ctx.db, organizationId))
    .filter((p) => canSeeProject(ctx.actor, ctx.memberships, { id: p.project_id, workspace_id: p.workspace_id, organization_id: organizationId }));
  return {
    scope: { organizationId, workspaceId: ctx.scope.workspaceId, projectId: ctx.scope.projectId },
    usedBytes,
    limitBytes,
    remainingBytes: Math.max(0, limitBytes - usedBytes),
    occupancyRatio: limitBytes > 0 ? Math.round((usedBytes / limitBytes) * 1e6) / 1e6 : (usedBytes > 0 ? 1 : 0),
    projects: visible.map((p) => ({ projectId: p.project_id, projectName: p.project_name, workspaceId: p.workspace_id, usedBytes: p.bytes, files: p.files })),
    largestFiles: (await largestFiles(ctx.db, organizationId, visible.map((p) => p.project_id), 10)).map((f) => ({
      projectId: f.project_id, assetId: f.asset_id, assetName: f.asset_name, assetKind: f.asset_kind as AssetKind, versionId: f.id, versionNumber: f.number,
      fileName: f.file_name, mimeType: f.mime_type, fileSize: f.file_size, contentSha256: f.content_sha256, storagePath: f.storage_path,
    })),
  };
}
