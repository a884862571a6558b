// What storage cleanup may remove and what it must keep, shared by the preview, the reclaim and the
// store migration (which copies exactly what the reclaim protects).
//
// Age: a file of outputs/, frames/ or cache/ is old enough when modified before the cutoff
// (olderThanDays, default SVC_STORAGE_RETENTION_DAYS); a file of tmp/ when modified before the larger
// of olderThanDays and the retention (an upload may be in progress), or — whatever the retention —
// when no live writer can own it any more. Temporary names made by tempKey() carry their writer
// (tmp/<kind>.<host>.<pid>.<random>): such a file is ownerless when its writer is a process of this
// host that is gone, or when it is older than the longest allowed write (longestWriteMs). Old-style
// names (tmp/upload-*, tmp/compose-*.mp4 of earlier versions) keep the retention rule alone.
// Incomplete multipart uploads (s3) follow the same owner rule by their key and initiation time.
import path from 'node:path';
import type { Ctx } from '../directory/context.ts';
import type { Db } from '../db/db.ts';
import { perDialect } from '../db/dialect.ts';
import type { Config } from '../kernel/config.ts';
import { REQUEST_TIMEOUT_MS } from '../http/request.ts';
import { THIS_WRITER, writerOf } from '../kernel/storage/store.ts';

export const CLEANUP_FOLDERS = ['outputs', 'frames', 'tmp', 'cache'] as const;
export type CleanupFolder = (typeof CLEANUP_FOLDERS)[number];

const DAY_MS = 86_400_000;
/**
 * Added to the longest write: the time a writer may still spend placing its file after its time-out
 * fired (an aborted job or request cleans up after the signal), and clock differences between the
 * hosts that share a store (an s3 object's time is the server's clock).
 */
export const WRITE_MARGIN_MS = 3_600_000;

/**
 * The longest a write into tmp/ may take: the longest of a job attempt (SVC_JOB_TIMEOUT_MS: outputs
 * downloaded by the worker, compositions, frames, exports) and of an HTTP request (REQUEST_TIMEOUT_MS:
 * asset uploads stream within it), plus WRITE_MARGIN_MS. With the defaults: 30 min + 1 h.
 */
export function longestWriteMs(config: Config): number {
  return Math.max(config.jobTimeoutMs, REQUEST_TIMEOUT_MS) + WRITE_MARGIN_MS;
}

export interface Rules {
  olderThanDays: number;
  retentionDays: number;
  nowMs: number;
  cutoffMs: number;
  tmpCutoffMs: number;
  /** Objects of tmp/ (and incomplete uploads) modified before this have no live writer. */
  ownerlessBeforeMs: number;
}

export function rulesOf(ctx: Ctx, days: number | undefined): Rules {
  const retentionDays = ctx.config.storageRetentionDays;
  const d = days ?? retentionDays;
  const nowMs = ctx.now().getTime();
  return {
    olderThanDays: d, retentionDays, nowMs, cutoffMs: nowMs - d * DAY_MS, tmpCutoffMs: nowMs - Math.max(d, retentionDays) * DAY_MS,
    ownerlessBeforeMs: nowMs - longestWriteMs(ctx.config),
  };
}

/** Whether process `pid` of this host exists (EPERM: it exists but belongs to another user). */
export function processAlive(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Whether a temporary key (written at `modifiedMs`) has no writer that could still own it. Only keys
 * made by tempKey() name their writer; a writer on another host is judged by age alone.
 */
export function ownerGone(r: Rules, key: string, modifiedMs: number): boolean {
  const writer = writerOf(key);
  if (!writer) return false;
  if (modifiedMs < r.ownerlessBeforeMs) return true;
  return writer.host === THIS_WRITER.host && writer.pid !== process.pid && !processAlive(writer.pid);
}

/** Whether an object of `folder` modified at `modifiedMs` is old enough (or ownerless enough) to delete. */
export function oldEnough(r: Rules, folder: string, key: string, modifiedMs: number): boolean {
  if (folder !== 'tmp') return modifiedMs < r.cutoffMs;
  return modifiedMs < r.tmpCutoffMs || ownerGone(r, key, modifiedMs);
}

// Every stored relative path a row refers to. The columns are not indexed for lookups by path, so
// the set is read in one pass rather than queried per file.
const referencedSql = perDialect((d) => `
  SELECT storage_path AS p FROM media_artifacts
  UNION SELECT first_frame_path FROM media_artifacts WHERE first_frame_path IS NOT NULL
  UNION SELECT last_frame_path FROM media_artifacts WHERE last_frame_path IS NOT NULL
  UNION SELECT storage_path FROM media_compositions
  UNION SELECT storage_path FROM asset_versions
  UNION SELECT ${d.jsonText('f.value', 'path')} FROM generation_jobs j, ${d.jsonEach(d.jsonGet('j.output', 'files'), 'f')}
    WHERE j.status = 'completed' AND j.output IS NOT NULL`);

/** What a reclaim must keep: the referenced paths, and the folders of jobs that may still write files. */
export interface Protection { paths: Set<string>; activeJobs: Set<string> }

export async function protectionOf(db: Db): Promise<Protection> {
  const paths = new Set<string>();
  for await (const r of db.iterate<{ p: string }>(referencedSql(db.dialect))) paths.add(path.posix.normalize(r.p));
  // outputs/<jobId>/ and frames/<jobId>/ of a job that is not finished are being (or will be) written
  // by it: a crashed attempt's files stay until the job ends (its retry writes the same names).
  const activeJobs = new Set((await db.all<{ id: string }>("SELECT id FROM generation_jobs WHERE status IN ('queued', 'running', 'blocked')")).map((r) => r.id));
  return { paths, activeJobs };
}

export function isProtected(p: Protection, rel: string): boolean {
  const normal = path.posix.normalize(rel);
  const [folder, jobId] = normal.split('/');
  return p.paths.has(normal) || ((folder === 'outputs' || folder === 'frames') && p.activeJobs.has(jobId));
}
