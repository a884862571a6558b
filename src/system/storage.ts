// Storage cleanup: the preview lists regular files under outputs/, frames/, tmp/ and cache/ (walked
// recursively, symbolic links never followed) whose mtime is older than the retention period
// (SVC_STORAGE_RETENTION_DAYS, or olderThanDays) and that no media_artifacts (file, first and last
// frame), media_compositions or asset_versions row refers to, nor the output files of a completed job
// (a job completed before media artifacts were registered has files but no artifact rows), nor
// anything under outputs/<jobId>/ or frames/<jobId>/ of a job still queued, running or blocked. Files in tmp/ younger than the
// configured retention are never candidates, whatever olderThanDays says (uploads in progress).
// Reclaim deletes the candidates, or the listed paths that are candidates now; unsafe paths refuse
// the whole request (422 unsafe_path) before anything is deleted. References are read again right
// before the files go, inside a write transaction, so that nothing registered meanwhile is lost.
import fs from 'node:fs';
import path from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Ctx } from '../directory/context.ts';
import type { Db } from '../db/db.ts';
import { record } from '../platform/audit/service.ts';
import { AppError, requireSystemAdmin } from '../kernel/errors.ts';
import { storedPathProblem } from '../kernel/files.ts';
import { array, int, object, optional, string, type Infer } from '../kernel/validate.ts';
import * as o from '../kernel/view.ts';

export const CLEANUP_FOLDERS = ['outputs', 'frames', 'tmp', 'cache'] as const;
export type CleanupFolder = (typeof CLEANUP_FOLDERS)[number];
/** Folders whose sub-directories are removed once a reclaim has emptied them (never the folder itself). */
const PRUNED_FOLDERS: readonly string[] = ['outputs', 'frames'];

const DAY_MS = 86_400_000;
const MAX_DAYS = 36_500;
/** Deleted paths named in the audit record; the counts and bytes are always complete. */
export const AUDIT_PATHS_KEPT = 100;
/** One deletion batch (references re-read, write lock held) ends after this many files or this long. */
const BATCH_FILES = 1000;
const BATCH_MS = 200;

const olderThanDays = () => int({ min: 0, max: MAX_DAYS, description: `files modified more than this many days ago (0..${MAX_DAYS}); default SVC_STORAGE_RETENTION_DAYS. tmp/ files younger than the configured retention are never included.` });

export const CleanupPreviewQuery = object({ olderThanDays: optional(olderThanDays()) });

export const ReclaimBody = object({
  paths: optional(array(string({ trim: false, max: 4096, description: 'a path relative to the storage root, inside outputs/, frames/, tmp/ or cache/' }), { max: 10_000 })),
  olderThanDays: optional(olderThanDays()),
}, { description: 'without paths every current candidate is deleted; with paths (even empty) only those that are candidates now' });

export type ReclaimInput = Infer<typeof ReclaimBody>;

export const CandidateView = o.named('CleanupCandidate', o.object({
  path: o.text({ description: 'relative to the storage root' }), bytes: o.int(), modifiedAt: o.time(), folder: o.oneOf(CLEANUP_FOLDERS),
}, 'an unreferenced file old enough to delete'));
export type Candidate = o.Out<typeof CandidateView>;

export const CleanupPreviewView = o.named('CleanupPreview', o.object({
  candidates: o.array(CandidateView),
  count: o.int(),
  estimatedBytes: o.int('bytes a reclaim would free'),
  olderThanDays: o.int(),
  retentionDays: o.int('SVC_STORAGE_RETENTION_DAYS'),
}));
export type CleanupPreview = o.Out<typeof CleanupPreviewView>;

export const SKIP_REASONS = ['protected', 'not_found', 'too_recent', 'not_a_file', 'failed'] as const;
export type SkipReason = (typeof SKIP_REASONS)[number];

export const ReclaimResultView = o.named('StorageReclaim', o.object({
  deleted: o.array(o.object({ path: o.text(), bytes: o.int() })),
  skipped: o.array(o.object({ path: o.text(), reason: o.oneOf(SKIP_REASONS) })),
  freedBytes: o.int(),
  removedDirectories: o.int('empty folders removed after the files'),
  olderThanDays: o.int(),
}));
export type ReclaimResult = o.Out<typeof ReclaimResultView>;

interface Rules { olderThanDays: number; retentionDays: number; cutoffMs: number; tmpCutoffMs: number }

function rulesOf(ctx: Ctx, days: number | undefined): Rules {
  const retentionDays = ctx.config.storageRetentionDays;
  const d = days ?? retentionDays;
  const now = ctx.now().getTime();
  return { olderThanDays: d, retentionDays, cutoffMs: now - d * DAY_MS, tmpCutoffMs: now - Math.max(d, retentionDays) * DAY_MS };
}

const oldEnough = (r: Rules, folder: string, mtimeMs: number): boolean =>
  mtimeMs < (folder === 'tmp' ? r.tmpCutoffMs : r.cutoffMs);

// Every stored relative path a row refers to. The columns are not indexed for lookups by path, so
// the set is read in one pass rather than queried per file.
const REFERENCED_SQL = `
  SELECT storage_path AS p FROM media_artifacts
  UNION SELECT first_frame_path FROM media_artifacts WHERE first_frame_path IS NOT NULL
  UNION SELECT last_frame_path FROM media_artifacts WHERE last_frame_path IS NOT NULL
  UNION SELECT storage_path FROM media_compositions
  UNION SELECT storage_path FROM asset_versions
  UNION SELECT json_extract(f.value, '$.path') FROM generation_jobs j, json_each(j.output, '$.files') f
    WHERE j.status = 'completed' AND j.output IS NOT NULL`;

/** What a reclaim must keep: the referenced paths, and the folders of jobs that may still write files. */
interface Protection { paths: Set<string>; activeJobs: Set<string> }

function protectionOf(db: Db): Protection {
  const paths = new Set<string>();
  for (const r of db.iterate<{ p: string }>(REFERENCED_SQL)) paths.add(path.posix.normalize(r.p));
  // outputs/<jobId>/ and frames/<jobId>/ of a job that is not finished are being (or will be) written
  // by it: a crashed attempt's files stay until the job ends (its retry writes the same names).
  const activeJobs = new Set(db.all<{ id: string }>("SELECT id FROM generation_jobs WHERE status IN ('queued', 'running', 'blocked')").map((r) => r.id));
  return { paths, activeJobs };
}

function isProtected(p: Protection, rel: string): boolean {
  const normal = path.posix.normalize(rel);
  const [folder, jobId] = normal.split('/');
  return p.paths.has(normal) || ((folder === 'outputs' || folder === 'frames') && p.activeJobs.has(jobId));
}

/** The storage root with symbolic links resolved (it is configuration, not content), or null when missing. */
function storageRoot(ctx: Ctx): string | null {
  try {
    return fs.realpathSync(path.resolve(ctx.config.storageDir));
  } catch {
    return null;
  }
}

const errCode = (err: unknown): string | undefined => (err as NodeJS.ErrnoException)?.code;

async function walk(ctx: Ctx, abs: string, rel: string, folder: CleanupFolder, rules: Rules, out: Candidate[]): Promise<void> {
  let entries: fs.Dirent[];
  try {
    entries = await fs.promises.readdir(abs, { withFileTypes: true });
  } catch (err) {
    if (errCode(err) !== 'ENOENT') ctx.log.warn('storage cleanup could not read a directory', { path: rel, code: errCode(err) });
    return;
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const e of entries) {
    const childAbs = path.join(abs, e.name);
    const childRel = `${rel}/${e.name}`;
    if (e.isSymbolicLink()) continue;
    if (e.isDirectory()) {
      await walk(ctx, childAbs, childRel, folder, rules, out);
      continue;
    }
    if (!e.isFile()) continue;
    let st: fs.Stats;
    try {
      st = await fs.promises.lstat(childAbs);
    } catch {
      continue; // removed meanwhile
    }
    if (st.isFile() && oldEnough(rules, folder, st.mtimeMs)) {
      out.push({ path: childRel, bytes: st.size, modifiedAt: st.mtime.toISOString(), folder });
    }
  }
}

async function candidatesOf(ctx: Ctx, rules: Rules): Promise<Candidate[]> {
  const root = storageRoot(ctx);
  if (!root) return [];
  const found: Candidate[] = [];
  for (const folder of CLEANUP_FOLDERS) {
    const abs = path.join(root, folder);
    let st: fs.Stats;
    try {
      st = await fs.promises.lstat(abs);
    } catch {
      continue;
    }
    if (!st.isDirectory()) {
      ctx.log.warn('storage cleanup skips a folder that is not a plain directory (symbolic links are never followed)', { folder });
      continue;
    }
    await walk(ctx, abs, folder, folder, rules, found);
  }
  const keep = protectionOf(ctx.db);
  return found.filter((c) => !isProtected(keep, c.path)).sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

export async function previewCleanup(ctx: Ctx, days?: number): Promise<CleanupPreview> {
  requireSystemAdmin(ctx);
  const rules = rulesOf(ctx, days);
  const candidates = await candidatesOf(ctx, rules);
  return {
    candidates,
    count: candidates.length,
    estimatedBytes: candidates.reduce((n, c) => n + c.bytes, 0),
    olderThanDays: rules.olderThanDays,
    retentionDays: rules.retentionDays,
  };
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

type Seen = { ok: true; bytes: number } | { ok: false; reason: SkipReason };

/** Whether `rel` is an old enough regular file now, reached without any symbolic link. */
function inspect(root: string, rel: string, rules: Rules): Seen {
  const segs = rel.split('/');
  let cur = root;
  for (let i = 0; i < segs.length; i++) {
    cur = path.join(cur, segs[i]);
    let st: fs.Stats;
    try {
      st = fs.lstatSync(cur);
    } catch {
      return { ok: false, reason: 'not_found' };
    }
    if (i < segs.length - 1) {
      if (!st.isDirectory()) return { ok: false, reason: st.isSymbolicLink() ? 'not_a_file' : 'not_found' };
    } else if (!st.isFile()) {
      return { ok: false, reason: 'not_a_file' };
    } else if (!oldEnough(rules, segs[0], st.mtimeMs)) {
      return { ok: false, reason: 'too_recent' };
    } else {
      return { ok: true, bytes: st.size };
    }
  }
  return { ok: false, reason: 'not_found' };
}

/** Removes the directories under outputs/ and frames/ that the deletions left empty (deepest first). */
function pruneEmptyDirs(root: string, deleted: readonly string[]): number {
  const dirs = new Set<string>();
  for (const rel of deleted) {
    const segs = rel.split('/');
    if (!PRUNED_FOLDERS.includes(segs[0])) continue;
    for (let n = segs.length - 1; n >= 2; n--) dirs.add(segs.slice(0, n).join('/'));
  }
  let removed = 0;
  for (const dir of [...dirs].sort((a, b) => b.split('/').length - a.split('/').length)) {
    try {
      fs.rmdirSync(path.join(root, dir)); // fails on a non-empty directory and never follows a link
      removed++;
    } catch { /* not empty, gone or not a directory: kept */ }
  }
  return removed;
}

/** Deletes each of `wanted` that is a candidate at that moment, in batches, into `result`. */
async function deleteFiles(ctx: Ctx, root: string, wanted: readonly string[], rules: Rules, result: ReclaimResult): Promise<void> {
  for (let i = 0; i < wanted.length;) {
    const batch: string[] = [];
    // The transaction writes nothing: BEGIN IMMEDIATE holds the write lock, so no row can start
    // referring to a file between the check and its deletion.
    ctx.db.tx(() => {
      const keep = protectionOf(ctx.db);
      const started = performance.now();
      while (i < wanted.length && batch.length < BATCH_FILES && performance.now() - started < BATCH_MS) {
        const rel = wanted[i++];
        if (isProtected(keep, rel)) {
          result.skipped.push({ path: rel, reason: 'protected' });
          continue;
        }
        const seen = inspect(root, rel, rules);
        if (!seen.ok) {
          result.skipped.push({ path: rel, reason: seen.reason });
          continue;
        }
        try {
          fs.unlinkSync(path.join(root, rel));
        } catch (err) {
          result.skipped.push({ path: rel, reason: errCode(err) === 'ENOENT' ? 'not_found' : 'failed' });
          if (errCode(err) !== 'ENOENT') ctx.log.warn('storage reclaim could not delete a file', { path: rel, code: errCode(err) });
          continue;
        }
        batch.push(rel);
        result.deleted.push({ path: rel, bytes: seen.bytes });
        result.freedBytes += seen.bytes;
      }
    });
    result.removedDirectories += pruneEmptyDirs(root, batch);
    if (i < wanted.length) await nextTurn(); // let requests in between batches
  }
}

export async function reclaimStorage(ctx: Ctx, input: ReclaimInput = {}): Promise<ReclaimResult> {
  requireSystemAdmin(ctx);
  const rules = rulesOf(ctx, input.olderThanDays);
  let wanted: string[];
  if (input.paths) {
    const unsafe = input.paths.map((p) => ({ path: p, reason: unsafeReason(p) })).filter((u) => u.reason !== null);
    if (unsafe.length) {
      throw new AppError(422, 'unsafe_path', `unsafe path ${JSON.stringify(unsafe[0].path)}: ${unsafe[0].reason}; nothing was deleted`,
        { paths: unsafe.slice(0, AUDIT_PATHS_KEPT) });
    }
    wanted = [...new Set(input.paths)];
  } else {
    wanted = (await candidatesOf(ctx, rules)).map((c) => c.path);
  }
  const root = storageRoot(ctx);
  const result: ReclaimResult = { deleted: [], skipped: [], freedBytes: 0, removedDirectories: 0, olderThanDays: rules.olderThanDays };
  if (root) await deleteFiles(ctx, root, wanted, rules, result);
  else for (const p of wanted) result.skipped.push({ path: p, reason: 'not_found' });
  const byReason: Record<string, number> = {};
  for (const s of result.skipped) byReason[s.reason] = (byReason[s.reason] ?? 0) + 1;
  record(ctx, {
    action: 'system.storage.reclaimed', targetType: 'storage', targetId: 'storage',
    organizationId: null, workspaceId: null, projectId: null,
    metadata: {
      mode: input.paths ? 'paths' : 'candidates',
      olderThanDays: rules.olderThanDays,
      requested: wanted.length,
      deletedCount: result.deleted.length,
      skippedCount: result.skipped.length,
      skippedByReason: byReason,
      freedBytes: result.freedBytes,
      removedDirectories: result.removedDirectories,
      deletedPaths: result.deleted.slice(0, AUDIT_PATHS_KEPT).map((d) => d.path),
      deletedPathsTruncated: result.deleted.length > AUDIT_PATHS_KEPT,
    },
  });
  return result;
}
