// Storage cleanup: the preview lists the objects under outputs/, frames/, tmp/ and cache/ of the
// store (ctx.storage: a folder on the local driver, a bucket on s3; symbolic links never followed) —
// and on a remote driver also the local working folders tmp/ and cache/ — that are old enough
// (storage-rules.ts: the retention, SVC_STORAGE_RETENTION_DAYS or olderThanDays; a tmp/ object whose
// writer is gone, whatever the retention) and that no row refers to (storage-rules.ts: protectionOf).
// Incomplete multipart uploads no writer can own are shown too (s3) and aborted by a reclaim.
// Reclaim deletes the candidates, or the listed paths that are candidates now; unsafe paths refuse
// the whole request (422 unsafe_path) before anything is deleted.
import type { Ctx } from '../directory/context.ts';
import { record } from '../platform/audit/service.ts';
import { AppError, requireSystemAdmin } from '../kernel/errors.ts';
import { storedPathProblem } from '../kernel/files.ts';
import type { IncompleteUpload } from '../kernel/storage/store.ts';
import { array, int, object, optional, string, type Infer } from '../kernel/validate.ts';
import * as o from '../kernel/view.ts';
import { CLEANUP_FOLDERS, isProtected, protectionOf, rulesOf, type Protection, type Rules } from './storage-rules.ts';
import { SKIP_REASONS, inspectFound, inspectNamed, pruneEmptyDirs, scan, sourcesOf, staleUploads, type Found, type Seen, type Source } from './storage-scan.ts';

export { CLEANUP_FOLDERS, type CleanupFolder } from './storage-rules.ts';
export { SKIP_REASONS, type SkipReason } from './storage-scan.ts';

const MAX_DAYS = 36_500;
/** Deleted paths named in the audit record; the counts and bytes are always complete. */
export const AUDIT_PATHS_KEPT = 100;
/** One deletion batch (references read once for it) ends after this many files or this long. */
const BATCH_FILES = 1000;
const BATCH_MS = 200;

const olderThanDays = () => int({ min: 0, max: MAX_DAYS, description: `files modified more than this many days ago (0..${MAX_DAYS}); default SVC_STORAGE_RETENTION_DAYS. tmp/ files younger than the configured retention are never included.` });

export const CleanupPreviewQuery = object({ olderThanDays: optional(olderThanDays()) });

export const ReclaimBody = object({
  paths: optional(array(string({ trim: false, allowNul: true, max: 4096, description: 'a path relative to the storage root, inside outputs/, frames/, tmp/ or cache/' }), { max: 10_000 })),
  olderThanDays: optional(olderThanDays()),
}, { description: 'without paths every current candidate is deleted; with paths (even empty) only those that are candidates now' });

export type ReclaimInput = Infer<typeof ReclaimBody>;

export const CandidateView = o.named('CleanupCandidate', o.object({
  path: o.text({ description: 'relative to the storage root' }), bytes: o.int(), modifiedAt: o.time(), folder: o.oneOf(CLEANUP_FOLDERS),
}, 'an unreferenced file old enough to delete'));
export type Candidate = o.Out<typeof CandidateView>;

export const IncompleteUploadView = o.named('IncompleteUpload', o.object({
  key: o.text({ description: 'the key the upload was begun under (tmp/<kind>.<host>.<pid>.<random>)' }),
  uploadId: o.text(),
  initiatedAt: o.time(),
}, 'a multipart upload begun and never completed, that no live writer can own any more'));

export const CleanupPreviewView = o.named('CleanupPreview', o.object({
  candidates: o.array(CandidateView),
  count: o.int(),
  estimatedBytes: o.int('bytes a reclaim would free'),
  olderThanDays: o.int(),
  retentionDays: o.int('SVC_STORAGE_RETENTION_DAYS'),
  incompleteUploads: o.optional(o.array(IncompleteUploadView, 'only on a driver with multipart uploads (s3): those a reclaim aborts')),
}));
export type CleanupPreview = o.Out<typeof CleanupPreviewView>;

export const ReclaimResultView = o.named('StorageReclaim', o.object({
  deleted: o.array(o.object({ path: o.text(), bytes: o.int() })),
  skipped: o.array(o.object({ path: o.text(), reason: o.oneOf(SKIP_REASONS) })),
  freedBytes: o.int(),
  removedDirectories: o.int('empty folders removed after the files'),
  olderThanDays: o.int(),
  abortedUploads: o.optional(o.array(IncompleteUploadView, 'only on a driver with multipart uploads (s3): the incomplete uploads aborted')),
}));
export type ReclaimResult = o.Out<typeof ReclaimResultView>;

const uploadView = (u: IncompleteUpload) => ({ key: u.key, uploadId: u.uploadId, initiatedAt: u.initiatedAt.toISOString() });

/** The scan's candidates that nothing protects (references read once, after the scan). */
async function candidatesOf(ctx: Ctx, sources: readonly Source[], rules: Rules): Promise<Found[]> {
  const found = await scan(sources, rules);
  const keep = await protectionOf(ctx.db);
  return found.filter((c) => !isProtected(keep, c.path));
}

export async function previewCleanup(ctx: Ctx, days?: number): Promise<CleanupPreview> {
  requireSystemAdmin(ctx);
  const rules = rulesOf(ctx, days);
  const candidates = (await candidatesOf(ctx, sourcesOf(ctx), rules)).map(({ path, bytes, modifiedAt, folder }) => ({ path, bytes, modifiedAt, folder }));
  const preview: CleanupPreview = {
    candidates,
    count: candidates.length,
    estimatedBytes: candidates.reduce((n, c) => n + c.bytes, 0),
    olderThanDays: rules.olderThanDays,
    retentionDays: rules.retentionDays,
  };
  if (ctx.storage.driver !== 'local') preview.incompleteUploads = (await staleUploads(ctx.storage, rules)).map(uploadView);
  return preview;
}

/** Why `rel` may not be named in a reclaim, or null when it is a safe path inside the four folders. */
export function unsafeReason(rel: string): string | null {
  const problem = storedPathProblem(rel, true);
  if (problem) return problem;
  const segs = rel.split('/');
  if (!(CLEANUP_FOLDERS as readonly string[]).includes(segs[0])) return 'is outside outputs/, frames/, tmp/ and cache/';
  if (segs.length < 2) return 'names a whole folder, not a file';
  return null;
}

/** One path to delete: named by the caller, or found by the scan (then checked against its version). */
type Wanted = { path: string; found: Found | null };

/**
 * Deletes each of `wanted` that is a candidate at that moment, in batches, into `result`.
 *
 * Why nothing registered meanwhile is deleted, now that deletions are asynchronous (an object store
 * cannot delete inside a database transaction): each batch reads the protection set in a transaction
 * (after the scan, so a row committed since the preview or the scan is seen), then checks and deletes
 * its files. A path that is not protected at that moment cannot become protected before its deletion,
 * because rows only ever come to refer to (1) files under outputs/<jobId>/ and frames/<jobId>/ of a job
 * that is queued, running or blocked — protected as a whole folder for as long as the job is not
 * finished, and a finished job never runs again (a retry is the same job, still active; a new job has a
 * new id) — (2) content-addressed keys under assets/ and packages under exports/, which are no cleanup
 * folders, and (3) never to tmp/ (a temporary object is only placed under another key by its writer,
 * and one is deleted only once no live writer can own it). After each batch the protection set is read
 * again: a deleted path found protected would mean that reasoning broke, and is logged as an error.
 */
async function deleteObjects(ctx: Ctx, sources: readonly Source[], wanted: readonly Wanted[], rules: Rules, result: ReclaimResult): Promise<void> {
  for (let i = 0; i < wanted.length;) {
    let keep!: Protection;
    await ctx.db.tx(async () => {
      keep = await protectionOf(ctx.db);
    });
    const started = performance.now();
    const batch: Array<{ path: string; source: number }> = [];
    while (i < wanted.length && batch.length < BATCH_FILES && performance.now() - started < BATCH_MS) {
      const w = wanted[i++];
      if (isProtected(keep, w.path)) {
        result.skipped.push({ path: w.path, reason: 'protected' });
        continue;
      }
      let seen: Seen;
      try {
        seen = w.found ? await inspectFound(sources, w.found, rules) : await inspectNamed(sources, w.path, rules);
      } catch (err) {
        ctx.log.warn('storage reclaim could not check an object', { path: w.path, error: (err as Error).message });
        seen = { ok: false, reason: 'failed' };
      }
      if (!seen.ok) {
        result.skipped.push({ path: w.path, reason: seen.reason });
        continue;
      }
      try {
        await sources[seen.source].store.delete(w.path);
      } catch (err) {
        result.skipped.push({ path: w.path, reason: 'failed' });
        ctx.log.warn('storage reclaim could not delete an object', { path: w.path, error: (err as Error).message });
        continue;
      }
      batch.push({ path: w.path, source: seen.source });
      result.deleted.push({ path: w.path, bytes: seen.bytes });
      result.freedBytes += seen.bytes;
    }
    const after = await protectionOf(ctx.db);
    for (const d of batch) {
      if (isProtected(after, d.path)) ctx.log.error('storage reclaim deleted an object that became referenced meanwhile', { path: d.path });
    }
    for (const [source, { store }] of sources.entries()) {
      result.removedDirectories += pruneEmptyDirs(store, batch.filter((d) => d.source === source).map((d) => d.path));
    }
  }
}

/** Aborts the incomplete uploads no writer can own (with `named`: only those whose key is named). */
async function abortUploads(ctx: Ctx, rules: Rules, named: ReadonlySet<string> | null): Promise<IncompleteUpload[]> {
  const aborted: IncompleteUpload[] = [];
  for (const u of await staleUploads(ctx.storage, rules)) {
    if (named && !named.has(u.key)) continue;
    try {
      await ctx.storage.abortUpload(u);
      aborted.push(u);
    } catch (err) {
      ctx.log.warn('storage reclaim could not abort an incomplete upload', { key: u.key, error: (err as Error).message });
    }
  }
  return aborted;
}

export async function reclaimStorage(ctx: Ctx, input: ReclaimInput = {}): Promise<ReclaimResult> {
  requireSystemAdmin(ctx);
  const rules = rulesOf(ctx, input.olderThanDays);
  const sources = sourcesOf(ctx);
  let wanted: Wanted[];
  if (input.paths) {
    const unsafe = input.paths.map((p) => ({ path: p, reason: unsafeReason(p) })).filter((u) => u.reason !== null);
    if (unsafe.length) {
      throw new AppError(422, 'unsafe_path', `unsafe path ${JSON.stringify(unsafe[0].path)}: ${unsafe[0].reason}; nothing was deleted`,
        { paths: unsafe.slice(0, AUDIT_PATHS_KEPT) });
    }
    wanted = [...new Set(input.paths)].map((p) => ({ path: p, found: null }));
  } else {
    wanted = (await candidatesOf(ctx, sources, rules)).map((c) => ({ path: c.path, found: c }));
  }
  const result: ReclaimResult = { deleted: [], skipped: [], freedBytes: 0, removedDirectories: 0, olderThanDays: rules.olderThanDays };
  const requested = wanted.length;
  if (ctx.storage.driver !== 'local') {
    const aborted = await abortUploads(ctx, rules, input.paths ? new Set(input.paths) : null);
    result.abortedUploads = aborted.map(uploadView);
    // A named key that was an upload (not an object) was handled by aborting it.
    const uploadKeys = new Set(aborted.map((u) => u.key));
    wanted = wanted.filter((w) => w.found || !uploadKeys.has(w.path));
  }
  await deleteObjects(ctx, sources, wanted, rules, result);
  const byReason: Record<string, number> = {};
  for (const s of result.skipped) byReason[s.reason] = (byReason[s.reason] ?? 0) + 1;
  await record(ctx, {
    action: 'system.storage.reclaimed', targetType: 'storage', targetId: 'storage',
    organizationId: null, workspaceId: null, projectId: null,
    metadata: {
      mode: input.paths ? 'paths' : 'candidates',
      olderThanDays: rules.olderThanDays,
      requested,
      deletedCount: result.deleted.length,
      skippedCount: result.skipped.length,
      skippedByReason: byReason,
      freedBytes: result.freedBytes,
      removedDirectories: result.removedDirectories,
      deletedPaths: result.deleted.slice(0, AUDIT_PATHS_KEPT).map((d) => d.path),
      deletedPathsTruncated: result.deleted.length > AUDIT_PATHS_KEPT,
      ...(result.abortedUploads ? { abortedUploads: result.abortedUploads.length } : {}),
    },
  });
  return result;
}
