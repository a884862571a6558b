// Assets and voice of the current project, and storage usage. Reads: script:read, delivery:view,
// asset:edit or voice:edit; writes: asset:edit or voice:edit on the route, then the asset's kind
// decides (voice -> voice:edit, others -> asset:edit).
import { mapSeq } from '../../kernel/seq.ts';
import { READ_ACCESS } from '../../directory/tenancy/reads.ts';
import { json, type Router } from '../../http/router.ts';
import { AppError, validationFailed } from '../../kernel/errors.ts';
import type { Permission } from '../../directory/roles.ts';
import { AssetCreateBody, AssetListQuery, AssetPatchBody, UploadQuery } from './schema.ts';
import * as o from '../../kernel/view.ts';
import {
  AssetDetailView, AssetUploadView, AssetVerificationView, AssetVersionWrittenView, AssetView, StorageUsageView, presentAsset, presentVersion,
} from './present.ts';
import { fileResponse, storedReply } from '../../http/content.ts';
import { SNIFFED_TYPES, bareTypes } from '../../kernel/files.ts';
import { storageUsage } from './usage.ts';
import { dispositionFileName, firstFilePart, multipartBoundary } from '../../kernel/multipart.ts';
import {
  archiveAsset, assetVersions, changeAsset, createAsset, currentVersion, getAsset, getVersion, listAssets, restoreVersion,
  uploadVersion, verifyAsset,
} from './service.ts';

const READ: Permission[] = READ_ACCESS.asset;
const WRITE: Permission[] = ['asset:edit', 'voice:edit'];
/** An asset version's file: served with the type sniffed from its bytes. */
const FILE = fileResponse(bareTypes(SNIFFED_TYPES));

/** A file name safe to store and show: its last path segment, without control characters. */
function cleanFileName(raw: string | null | undefined): string {
  // eslint-disable-next-line no-control-regex
  const name = (raw ?? '').split(/[\\/]/).pop()!.replace(/[\x00-\x1f\x7f]/g, '').trim();
  if (!name || name === '.' || name === '..') throw validationFailed({ fileName: 'give the file name in ?fileName= or Content-Disposition' });
  return name.slice(0, 255);
}

export function bindAssetRoutes(router: Router): void {
  const r = router.module(import.meta.url);
  const tags = ['assets'];
  const base = { tags, scope: 'project' as const };
  r.get('/api/assets', { ...base, summary: 'Assets of the current project; kind, q (name or tag substring), includeArchived, page, pageSize.', permission: READ, query: AssetListQuery, response: { description: 'a page of assets, newest first', schema: o.page(AssetView) } },
    async ({ ctx, query }) => {
      const { rows, pagination } = await listAssets(ctx, query);
      return json(200, { items: await mapSeq(rows, async (a) => presentAsset(a, await currentVersion(ctx, a))), pagination });
    });
  r.post('/api/assets', { ...base, summary: 'Create an asset (voice: voice:edit; other kinds: asset:edit).', permission: WRITE, body: AssetCreateBody, response: { status: 201, description: 'the asset', schema: AssetView } },
    async ({ ctx, body }) => json(201, presentAsset(await createAsset(ctx, body))));
  r.get('/api/assets/:assetId', { ...base, summary: 'An asset with its versions, newest first.', permission: READ, response: { description: 'the asset with its versions', schema: AssetDetailView } }, async ({ ctx, params }) => {
    const a = await getAsset(ctx, params.assetId);
    return json(200, { ...presentAsset(a, await currentVersion(ctx, a)), versions: (await assetVersions(ctx, a)).map(presentVersion) });
  });
  r.patch('/api/assets/:assetId', { ...base, summary: 'Change name, description or tags.', permission: WRITE, body: AssetPatchBody, response: { description: 'the changed asset', schema: AssetView } },
    async ({ ctx, params, body }) => json(200, presentAsset(await changeAsset(ctx, params.assetId, body))));
  r.delete('/api/assets/:assetId', { ...base, summary: 'Archive the asset (versions and files are kept).', permission: WRITE, response: { description: 'the archived asset', schema: AssetView } },
    async ({ ctx, params }) => json(200, presentAsset(await archiveAsset(ctx, params.assetId))));
  r.post('/api/assets/:assetId/versions/upload', {
    ...base, permission: WRITE, query: UploadQuery,
    response: { status: 201, description: 'the new version, with deduplicated: true when this organization already stored the same bytes (another organization\'s files never count: each organization keeps its own copy)', schema: AssetUploadView },
    summary: 'Upload a new version: the raw file as the body (name in ?fileName= or Content-Disposition) or multipart/form-data (the first part with a filename); the MIME type is sniffed from the bytes. 413 over SVC_MAX_UPLOAD_BYTES, 409 storage_quota_exceeded over the organization quota.',
  }, async ({ ctx, req, params, query }) => {
    const contentType = String(req.headers['content-type'] ?? '');
    const type = contentType.split(';')[0].trim().toLowerCase();
    const declared = req.headers['content-length'];
    const source = req.iterator({ destroyOnReturn: false });
    const boundary = type === 'multipart/form-data' ? multipartBoundary(contentType) : null;
    if (type.startsWith('multipart/') && !boundary) throw new AppError(415, 'unsupported_media_type', 'multipart uploads must be multipart/form-data with a boundary');
    const part = boundary ? await firstFilePart(source, boundary) : null;
    const result = await uploadVersion(ctx, params.assetId, part
      ? { source: part.bytes, fileName: cleanFileName(query.fileName ?? part.fileName), declaredType: part.contentType, contentLength: null }
      : {
        source, fileName: cleanFileName(query.fileName ?? dispositionFileName(req.headers['content-disposition'])), declaredType: type || null,
        contentLength: declared !== undefined && /^\d+$/.test(declared) ? Number(declared) : null,
      });
    return json(201, { ...presentVersion(result.version), deduplicated: result.deduplicated, asset: presentAsset(result.asset, result.version) });
  });
  r.post('/api/assets/:assetId/verify', { ...base, summary: 'Re-read the current version\'s file and compare hash and size; the result is audited (asset.verified); a mismatch marks the version corrupt.', permission: WRITE, response: { description: 'the verification result', schema: AssetVerificationView } },
    async ({ ctx, params }) => json(200, await verifyAsset(ctx, params.assetId)));
  r.post('/api/assets/:assetId/versions/:versionId/restore', { ...base, summary: 'Make an older version current again, as a new version with the same file.', permission: WRITE, response: { status: 201, description: 'the new version, with the asset it now heads', schema: AssetVersionWrittenView } },
    async ({ ctx, params }) => {
      const { asset, version } = await restoreVersion(ctx, params.assetId, params.versionId);
      return json(201, { ...presentVersion(version), asset: presentAsset(asset, version) });
    });
  r.get('/api/assets/:assetId/content', { ...base, summary: 'The current version\'s file (ETag, If-None-Match 304, Range 206).', permission: READ, response: FILE }, async ({ ctx, req, params }) => {
    const a = await getAsset(ctx, params.assetId);
    const v = await currentVersion(ctx, a);
    if (!v) throw new AppError(404, 'not_found', 'the asset has no file yet');
    return storedReply(req, ctx.storage, v);
  });
  r.get('/api/assets/:assetId/versions/:versionId/content', { ...base, summary: 'One version\'s file (ETag, If-None-Match 304, Range 206).', permission: READ, response: FILE },
    async ({ ctx, req, params }) => storedReply(req, ctx.storage, await getVersion(ctx, await getAsset(ctx, params.assetId), params.versionId)));
  r.get('/api/usage/storage', {
    tags: ['usage'], scope: 'organization',
    summary: 'Storage of the current organization: usedBytes, limitBytes (billing storageGb in GiB), remainingBytes, occupancyRatio, projects (visible ones), largestFiles (top 10).',
    response: { description: 'storage of the organization', schema: StorageUsageView },
  }, async ({ ctx }) => json(200, await storageUsage(ctx)));
}
