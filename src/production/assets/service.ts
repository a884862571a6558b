// Assets of the current project and their file versions. Voice assets need voice:edit, the other
// kinds asset:edit. Uploads stream to a temporary object of the store (ctx.storage) while hashing,
// under the per-file maximum (413) and the organization's and the workspace's own storage quota (409
// storage_quota_exceeded; a copy of a file the scope stores adds nothing), then are placed at
// assets/<organization>/<sha prefix>/<sha256> (identical content is kept once per organization, never
// shared across organizations: nothing an upload answers depends on another tenant's files) and
// registered in one transaction; on any failure nothing stays in the store or the database.
import { Readable } from 'node:stream';
import type { Ctx } from '../../directory/context.ts';
import { AppError, conflict, forbidden, notFound, payloadTooLarge, validationFailed } from '../../kernel/errors.ts';
import type { Infer } from '../../kernel/validate.ts';
import { newId } from '../../kernel/ids.ts';
import { record } from '../../platform/audit/service.ts';
import { billingAccountOf } from '../../directory/plan/account.ts';
import { organizationStoredBytes } from '../../commercial/meters.ts';
import {
  checkWorkspaceStorage, gbToBytes, largestAssetFile, quotaContextOf, quotaOfWorkspace, storesAssetFileOfSize,
  workspaceStorageBound, type QuotaContext, type WorkspaceStorageBound,
} from '../../commercial/quotas/service.ts';
import type { Db } from '../../db/db.ts';
import type { RowRead } from '../../db/dialect.ts';
import { LOCKS } from '../../directory/locks.ts';
import { storageQuotaWarnings } from '../../commercial/quotas/warnings.ts';
import { hasPermission } from '../../directory/roles.ts';
import { projectById } from '../../directory/tenancy/store.ts';
import type { AssetCreateBody, AssetPatchBody } from './schema.ts';
import { assetPathOf, legacyAssetPathOf, sniffMime } from '../../kernel/files.ts';
import { hashObject } from '../../kernel/storage/verify.ts';
import type { PendingWrite, Written } from '../../kernel/storage/store.ts';
import { keyLock, placeAt } from './placement.ts';
import { indexDocument, removeDocument } from '../../platform/search/index.ts';
import { pageWindow } from '../../kernel/validate.ts';
import {
  assetInProject, assetsOfProject, corruptVersionWithPath, insertAsset, insertVersion, nextVersionNumber, organizationFileOf, organizationHasFile,
  setVersionCheck, updateAsset, versionOfAsset, versionsOfAsset, type AssetRow, type VersionRow,
} from './store.ts';

function requireKindPermission(ctx: Ctx, kind: string): void {
  const wanted = kind === 'voice' ? 'voice:edit' : 'asset:edit';
  if (!hasPermission(ctx.permissions, wanted)) {
    throw forbidden('permission_denied', `permission ${wanted} is required for ${kind} assets`, { permission: wanted });
  }
}

/** The asset; `read` { forUpdate } for the change computed from it (src/db/dialect.ts RowRead). */
export async function getAsset(ctx: Ctx, assetId: string, read?: RowRead): Promise<AssetRow> {
  const a = await assetInProject(ctx.db, ctx.scope.projectId!, assetId, read);
  if (!a) throw notFound('no such asset in this project');
  return a;
}

async function editableAsset(ctx: Ctx, assetId: string, read?: RowRead): Promise<AssetRow> {
  const a = await getAsset(ctx, assetId, read);
  requireKindPermission(ctx, a.kind);
  if (a.status === 'archived') throw conflict('asset_archived', 'the asset is archived; it can no longer change');
  return a;
}

export const currentVersion = async (ctx: Ctx, a: AssetRow): Promise<VersionRow | null> =>
  a.current_version_id ? await versionOfAsset(ctx.db, a.project_id, a.id, a.current_version_id) ?? null : null;

/** The search document of an asset: name, kind, tags, description and file name; never its storage path. */
async function indexAsset(ctx: Ctx, a: AssetRow, fileName?: string): Promise<void> {
  const tags = (JSON.parse(a.tags) as string[]).join(' ');
  await indexDocument(ctx.db, {
    type: 'asset', id: a.id, organizationId: a.organization_id, workspaceId: a.workspace_id, projectId: a.project_id,
    title: a.name, subtitle: [a.kind, fileName].filter(Boolean).join(' · '), body: `${tags}\n${a.description}`, status: a.status, updatedAt: a.updated_at,
  });
}

export async function createAsset(ctx: Ctx, input: Infer<typeof AssetCreateBody>): Promise<AssetRow> {
  requireKindPermission(ctx, input.kind);
  const p = (await projectById(ctx.db, ctx.scope.projectId!))!;
  const now = ctx.now().toISOString();
  const a: AssetRow = {
    id: newId('ast'), organization_id: p.organization_id, workspace_id: p.workspace_id, project_id: p.id, kind: input.kind,
    name: input.name, description: input.description ?? '', tags: JSON.stringify([...new Set(input.tags ?? [])]), status: 'active',
    current_version_id: null, created_by: ctx.actor.userId, created_at: now, updated_at: now, archived_at: null,
  };
  return await ctx.db.tx(async () => {
    await insertAsset(ctx.db, a);
    await indexAsset(ctx, a);
    await record(ctx, { action: 'asset.created', targetType: 'asset', targetId: a.id, metadata: { kind: a.kind, name: a.name } });
    return a;
  });
}

export async function changeAsset(ctx: Ctx, assetId: string, patch: Infer<typeof AssetPatchBody>): Promise<AssetRow> {
  if (patch.name === undefined && patch.description === undefined && patch.tags === undefined) {
    throw validationFailed({ body: 'name at least one field to change' });
  }
  return await ctx.db.tx(async () => {
    const a = await editableAsset(ctx, assetId, { forUpdate: true }); // the row is written whole: no other change of it in between
    const next: AssetRow = {
      ...a, name: patch.name ?? a.name, description: patch.description ?? a.description,
      tags: patch.tags ? JSON.stringify([...new Set(patch.tags)]) : a.tags, updated_at: ctx.now().toISOString(),
    };
    await updateAsset(ctx.db, next);
    await indexAsset(ctx, next);
    await record(ctx, { action: 'asset.updated', targetType: 'asset', targetId: a.id, metadata: { fields: Object.keys(patch).filter((k) => (patch as Record<string, unknown>)[k] !== undefined) } });
    return next;
  });
}

/** DELETE archives: the asset leaves lists, its versions and files stay (history, other references). */
export async function archiveAsset(ctx: Ctx, assetId: string): Promise<AssetRow> {
  return await ctx.db.tx(async () => {
    const a = await editableAsset(ctx, assetId, { forUpdate: true });
    const now = ctx.now().toISOString();
    const next: AssetRow = { ...a, status: 'archived', archived_at: now, updated_at: now };
    await updateAsset(ctx.db, next);
    await removeDocument(ctx.db, 'asset', a.id);
    await record(ctx, { action: 'asset.archived', targetType: 'asset', targetId: a.id, metadata: { name: a.name } });
    return next;
  });
}

export async function listAssets(ctx: Ctx, q: { kind?: string; q?: string; includeArchived?: boolean; page?: number; pageSize?: number }) {
  const { page, pageSize, offset } = pageWindow(q.page, q.pageSize);
  const { rows, total } = await assetsOfProject(ctx.db, ctx.scope.projectId!, {
    kind: q.kind ?? null, q: q.q ?? null, includeArchived: q.includeArchived ?? false, limit: pageSize, offset,
  });
  return { rows, pagination: { page, pageSize, total } };
}

export const assetVersions = (ctx: Ctx, a: AssetRow) => versionsOfAsset(ctx.db, a.project_id, a.id);

export async function getVersion(ctx: Ctx, a: AssetRow, versionId: string): Promise<VersionRow> {
  const v = await versionOfAsset(ctx.db, a.project_id, a.id, versionId);
  if (!v) throw notFound('no such version of this asset');
  return v;
}

// ---- quota -------------------------------------------------------------------------------------

export async function storageLimitBytes(ctx: Ctx, organizationId: string): Promise<number> {
  const account = await billingAccountOf(ctx.db, organizationId);
  return gbToBytes(account?.storage_gb ?? 0);
}

const quotaExceeded = (used: number, limit: number, requested: number) =>
  new AppError(409, 'storage_quota_exceeded', 'the upload does not fit in the organization\'s storage quota',
    { usedBytes: used, limitBytes: limit, requestedBytes: requested }, { connection: 'close' });

// ---- upload ------------------------------------------------------------------------------------

export interface UploadInput { source: Readable | AsyncIterable<Buffer>; fileName: string; declaredType: string | null; contentLength: number | null }

export interface UploadResult { asset: AssetRow; version: VersionRow; deduplicated: boolean }

/**
 * Before the content is hashed, a storage quota refuses an upload only when it cannot be a copy of an
 * asset file its scope (the organization, or the workspace) already stores, because a copy adds
 * nothing (it is judged at commit): with a known length, when no such file has exactly that size;
 * while streaming, once more bytes arrived than its largest file holds.
 */
function mayBeCopy(ctx: Ctx, organizationId: string, workspaceId: string | null, canExceed: boolean): CopyCheck {
  // The largest file is read before the bytes stream (the streaming check is synchronous), and only
  // when the quota can be exceeded at all.
  return {
    exact: (bytes) => storesAssetFileOfSize(ctx.db, organizationId, workspaceId, bytes),
    largest: async () => (canExceed ? await largestAssetFile(ctx.db, organizationId, workspaceId) : 0),
  };
}

interface CopyCheck { exact(bytes: number): Promise<boolean>; largest(): Promise<number> }

export async function uploadVersion(ctx: Ctx, assetId: string, input: UploadInput): Promise<UploadResult> {
  const a = await editableAsset(ctx, assetId);
  const max = ctx.config.maxUploadBytes;
  const limit = await storageLimitBytes(ctx, a.organization_id);
  const used = await organizationStoredBytes(ctx.db, a.organization_id);
  const own = await workspaceStorageBound(ctx.db, a.organization_id, a.workspace_id, await quotaOfWorkspace(ctx.db, a.organization_id, a.workspace_id));
  const [orgCopy, wsCopy] = [
    mayBeCopy(ctx, a.organization_id, null, used + max > limit),
    mayBeCopy(ctx, a.organization_id, a.workspace_id, own !== null && own.usedBytes + max > own.limitBytes),
  ];
  const [orgLargest, wsLargest] = [await orgCopy.largest(), await wsCopy.largest()];
  if (input.contentLength !== null && input.contentLength > max) throw payloadTooLarge(max);
  if (input.contentLength !== null) {
    const bytes = input.contentLength;
    if (used + bytes > limit && !await orgCopy.exact(bytes)) throw quotaExceeded(used, limit, bytes);
    if (own && own.usedBytes + bytes > own.limitBytes && !await wsCopy.exact(bytes)) checkWorkspaceStorage(own, bytes);
  }
  const pending = await ctx.storage.write(input.source, (total) => {
    if (total > max) throw payloadTooLarge(max);
    if (used + total > limit && total > orgLargest) throw quotaExceeded(used, limit, total);
    if (own && own.usedBytes + total > own.limitBytes && total > wsLargest) checkWorkspaceStorage(own, total);
  });
  return commitFile(ctx, assetId, pending, input.fileName, input.declaredType);
}

/** Registers bytes already in memory (small generated files, fixtures) through the same path as an upload. */
export async function addVersionFromBytes(ctx: Ctx, assetId: string, bytes: Buffer, fileName: string): Promise<UploadResult> {
  await editableAsset(ctx, assetId);
  if (bytes.length > ctx.config.maxUploadBytes) throw payloadTooLarge(ctx.config.maxUploadBytes);
  return commitFile(ctx, assetId, await ctx.storage.write(Readable.from([bytes])), fileName, null);
}

const referenced = (ctx: Ctx, key: string) => async () => await ctx.db.get('SELECT 1 FROM asset_versions WHERE storage_path = ? LIMIT 1', key) !== undefined;

/**
 * Places a complete write at the organization's key for its content, then registers the version in
 * one transaction (placement.ts tells why this order is safe and what a failure removes). The write's
 * temporary object is gone afterwards, whatever happens.
 */
async function commitFile(ctx: Ctx, assetId: string, pending: PendingWrite, fileName: string, declaredType: string | null): Promise<UploadResult> {
  try {
    const a0 = await editableAsset(ctx, assetId);
    // The organization's own copy of these bytes, if any: another organization's files play no part.
    const rel = (await organizationFileOf(ctx.db, a0.organization_id, { own: assetPathOf(a0.organization_id, pending.sha256), legacy: legacyAssetPathOf(pending.sha256) })).path;
    return await keyLock(ctx.storage, rel, async () => {
      const placement = await placeAt(ctx.storage, pending, rel, await corruptVersionWithPath(ctx.db, rel));
      let result: UploadResult;
      try {
        result = await ctx.db.tx(() => registerVersion(ctx, a0.organization_id, assetId, pending, rel, fileName, declaredType));
      } catch (err) {
        await placement.undo(referenced(ctx, rel));
        throw err;
      }
      await placement.settle(ctx.log);
      return result;
    });
  } finally {
    await pending.discard();
  }
}

/** What holdStorageQuota read, for the quota warnings after the file. */
export interface StorageHeld {
  /** The organization stores the file already (this copy adds nothing to its bytes). */
  deduplicated: boolean;
  quotas: QuotaContext;
  /** The organization's stored bytes before the file. */
  used: number;
  own: WorkspaceStorageBound | null;
}

/**
 * The storage quota check that decides, inside the transaction that then registers a file of `size`
 * bytes at `rel` in the workspace: 409 storage_quota_exceeded when it does not fit the organization's
 * quota or the workspace's own (a copy of a file the scope stores adds nothing). The organization's
 * storage key comes first (src/directory/locks.ts), so no other file of the organization is registered
 * between these sums and this transaction's end; the checks while the bytes streamed only answer early.
 */
export async function holdStorageQuota(db: Db, organizationId: string, workspaceId: string, rel: string, size: number): Promise<StorageHeld> {
  await db.lock(LOCKS.storage(organizationId));
  const deduplicated = await organizationHasFile(db, organizationId, rel);
  // The account, time zone and workspace quota, and the stored bytes, read once for the checks and the warnings.
  const quotas = await quotaContextOf(db, organizationId, workspaceId);
  const limit = gbToBytes(quotas.account?.storage_gb ?? 0);
  const used = await organizationStoredBytes(db, organizationId);
  if (!deduplicated && used + size > limit) throw quotaExceeded(used, limit, size);
  const own = await workspaceStorageBound(db, organizationId, workspaceId, quotas.ownQuota, rel);
  checkWorkspaceStorage(own, size);
  return { deduplicated, quotas, used, own };
}

async function registerVersion(
  ctx: Ctx, organizationId: string, assetId: string, got: Written, rel: string, fileName: string, declaredType: string | null,
): Promise<UploadResult> {
  // The keys in their order, before the reads (src/directory/locks.ts): the organization's storage
  // quotas, then the asset (its next version number); then the row, written whole below.
  await ctx.db.lock(LOCKS.storage(organizationId));
  await ctx.db.lock(LOCKS.asset(assetId));
  const a = await editableAsset(ctx, assetId, { forUpdate: true });
  const { deduplicated, quotas, used, own } = await holdStorageQuota(ctx.db, a.organization_id, a.workspace_id, rel, got.size);
  const now = ctx.now().toISOString();
  const v: VersionRow = {
    id: newId('asv'), asset_id: a.id, organization_id: a.organization_id, workspace_id: a.workspace_id, project_id: a.project_id,
    number: await nextVersionNumber(ctx.db, a.id), file_name: fileName, mime_type: sniffMime(got.head), declared_mime_type: declaredType,
    file_size: got.size, content_sha256: got.sha256, storage_path: rel, status: 'ok', restored_from_version_id: null,
    verified_at: null, created_by: ctx.actor.userId, created_at: now,
  };
  const next = await addCurrentVersion(ctx, a, v, 'asset.version_uploaded',
    { fileName, mimeType: v.mime_type, fileSize: v.file_size, contentSha256: v.content_sha256, deduplicated });
  // After this file: a copy of a file the scope stores adds nothing (the workspace's bound is null then: counted if needed).
  await storageQuotaWarnings(ctx, a.organization_id, a.workspace_id, quotas,
    { organization: used + (deduplicated ? 0 : got.size), workspace: own ? own.usedBytes + got.size : null });
  return { asset: next, version: v, deduplicated };
}

/** Registers a version, makes it the asset's current one and audits it; inside the caller's transaction. */
async function addCurrentVersion(ctx: Ctx, a: AssetRow, v: VersionRow, action: string, metadata: Record<string, unknown>): Promise<AssetRow> {
  await insertVersion(ctx.db, v);
  const next: AssetRow = { ...a, current_version_id: v.id, updated_at: v.created_at };
  await updateAsset(ctx.db, next);
  await indexAsset(ctx, next, v.file_name);
  await record(ctx, { action, targetType: 'asset', targetId: a.id, metadata: { versionId: v.id, number: v.number, ...metadata } });
  return next;
}

// ---- restore and verify ------------------------------------------------------------------------

export async function restoreVersion(ctx: Ctx, assetId: string, versionId: string): Promise<{ asset: AssetRow; version: VersionRow }> {
  return await ctx.db.tx(async () => {
    await ctx.db.lock(LOCKS.asset(assetId)); // before the reads (src/directory/locks.ts)
    const a = await editableAsset(ctx, assetId, { forUpdate: true });
    const old = await getVersion(ctx, a, versionId);
    if (old.status === 'corrupt') throw conflict('version_corrupt', 'that version failed verification; it cannot be restored');
    const now = ctx.now().toISOString();
    const v: VersionRow = {
      ...old, id: newId('asv'), number: await nextVersionNumber(ctx.db, a.id), restored_from_version_id: old.id,
      verified_at: null, created_by: ctx.actor.userId, created_at: now,
    };
    const next = await addCurrentVersion(ctx, a, v, 'asset.version_restored',
      { restoredFromVersionId: old.id, restoredFromNumber: old.number, contentSha256: v.content_sha256 });
    return { asset: next, version: v };
  });
}

export interface VerifyResult {
  assetId: string; versionId: string; ok: boolean; reason: 'match' | 'hash_mismatch' | 'size_mismatch' | 'missing';
  expectedSha256: string; actualSha256: string | null; expectedSize: number; actualSize: number | null; status: 'ok' | 'corrupt';
}

/** Re-reads the current version's file (streamed); a mismatch or a missing file marks the version corrupt. Audited either way. */
export async function verifyAsset(ctx: Ctx, assetId: string): Promise<VerifyResult> {
  const a = await getAsset(ctx, assetId);
  requireKindPermission(ctx, a.kind);
  const v = await currentVersion(ctx, a);
  if (!v) throw conflict('asset_has_no_version', 'the asset has no file yet');
  let actual: { size: number; sha256: string } | null = null;
  try {
    actual = await hashObject(ctx.storage, v.storage_path);
  } catch (err) {
    // Gone (404), or on a folder a file the service cannot read (a directory, no permission): missing,
    // as before. An unsafe key (422) or a failing remote store is an error, never a verdict on the bytes.
    const unreadableFile = ctx.storage.driver === 'local' && !(err instanceof AppError) && (err as NodeJS.ErrnoException).code;
    if (!(err instanceof AppError && err.status === 404) && !unreadableFile) throw err;
  }
  const reason: VerifyResult['reason'] = !actual ? 'missing' : actual.size !== v.file_size ? 'size_mismatch'
    : actual.sha256 !== v.content_sha256 ? 'hash_mismatch' : 'match';
  const ok = reason === 'match';
  const status = ok ? 'ok' : 'corrupt';
  const result: VerifyResult = {
    assetId: a.id, versionId: v.id, ok, reason, expectedSha256: v.content_sha256, actualSha256: actual?.sha256 ?? null,
    expectedSize: v.file_size, actualSize: actual?.size ?? null, status,
  };
  await ctx.db.tx(async () => {
    await setVersionCheck(ctx.db, a.project_id, v.id, status, ctx.now().toISOString());
    await record(ctx, {
      action: 'asset.verified', targetType: 'asset', targetId: a.id, result: ok ? 'success' : 'failure',
      metadata: { versionId: v.id, reason, expectedSha256: v.content_sha256, actualSha256: result.actualSha256, expectedSize: v.file_size, actualSize: result.actualSize },
    });
  });
  return result;
}
