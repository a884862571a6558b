// Finding and checking cleanup candidates through the object stores (never by walking folders): the
// active store's four cleanup folders, and on a remote driver also the local working folders tmp/ and
// cache/ under SVC_STORAGE_DIR (ffmpeg scratch files and staged copies live there on every driver).
// A store's list() never follows a symbolic link (LocalStore skips them), so a listed object is a
// regular file reached without one.
import fs from 'node:fs';
import path from 'node:path';
import type { Ctx } from '../directory/context.ts';
import { AppError } from '../kernel/errors.ts';
import { LocalStore } from '../kernel/storage/local.ts';
import type { IncompleteUpload, ObjectStore, StoredObject } from '../kernel/storage/store.ts';
import { CLEANUP_FOLDERS, oldEnough, ownerGone, type CleanupFolder, type Rules } from './storage-rules.ts';

export const SKIP_REASONS = ['protected', 'not_found', 'too_recent', 'not_a_file', 'failed'] as const;
export type SkipReason = (typeof SKIP_REASONS)[number];

/** Folders whose sub-directories are removed once a reclaim has emptied them (never the folder itself; local only). */
const PRUNED_FOLDERS: readonly string[] = ['outputs', 'frames'];
const WORKING_FOLDERS: readonly CleanupFolder[] = ['tmp', 'cache'];

/** A store and the cleanup folders looked at in it. */
export interface Source { store: ObjectStore; folders: readonly CleanupFolder[] }

export function sourcesOf(ctx: Ctx): Source[] {
  const sources: Source[] = [{ store: ctx.storage, folders: CLEANUP_FOLDERS }];
  if (ctx.storage.driver !== 'local') sources.push({ store: new LocalStore(ctx.config.storageDir), folders: WORKING_FOLDERS });
  return sources;
}

/** A candidate as found by a scan: which source holds it, and the version it had. */
export interface Found { path: string; bytes: number; modifiedAt: string; folder: CleanupFolder; source: number; version: string }

const byPath = (a: { path: string }, b: { path: string }) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);

/** Every old enough object of the sources' folders, sorted by path (a path found in two sources: the first). */
export async function scan(sources: readonly Source[], rules: Rules): Promise<Found[]> {
  const found = new Map<string, Found>();
  for (const [source, { store, folders }] of sources.entries()) {
    for (const folder of folders) {
      for await (const obj of store.list(`${folder}/`)) {
        if (found.has(obj.key) || !oldEnough(rules, folder, obj.key, obj.modifiedAt.getTime())) continue;
        found.set(obj.key, { path: obj.key, bytes: obj.size, modifiedAt: obj.modifiedAt.toISOString(), folder, source, version: obj.version });
      }
    }
  }
  return [...found.values()].sort(byPath);
}

export type Seen = { ok: true; bytes: number; source: number } | { ok: false; reason: SkipReason };

async function first(objects: AsyncIterable<StoredObject>): Promise<StoredObject | null> {
  for await (const o of objects) return o;
  return null;
}

/** Whether `rel` is, in one store, a plain object (listed: no symbolic link on its way) old enough now. */
async function inspectIn(store: ObjectStore, source: number, rel: string, rules: Rules): Promise<Seen> {
  // The shortest key starting with `rel` is `rel` itself: when it exists it is listed first.
  const obj = await first(store.list(rel));
  if (obj?.key === rel) {
    return oldEnough(rules, rel.split('/')[0], rel, obj.modifiedAt.getTime()) ? { ok: true, bytes: obj.size, source } : { ok: false, reason: 'too_recent' };
  }
  if (await first(store.list(`${rel}/`))) return { ok: false, reason: 'not_a_file' }; // a folder
  // Not listed: missing, or only reachable through a symbolic link (which stat() follows, or refuses
  // with 422 when it leads outside the root).
  try {
    return { ok: false, reason: (await store.stat(rel)) ? 'not_a_file' : 'not_found' };
  } catch (err) {
    if (err instanceof AppError && err.status === 422) return { ok: false, reason: 'not_a_file' };
    throw err;
  }
}

/** A named path: a candidate in the first source where it is one; else the most telling reason. */
export async function inspectNamed(sources: readonly Source[], rel: string, rules: Rules): Promise<Seen> {
  let why: Seen | null = null;
  const folder = rel.split('/')[0] as CleanupFolder;
  for (const [source, s] of sources.entries()) {
    if (!s.folders.includes(folder)) continue;
    const seen = await inspectIn(s.store, source, rel, rules);
    if (seen.ok) return seen;
    if (!why || (!why.ok && why.reason === 'not_found')) why = seen;
  }
  return why ?? { ok: false, reason: 'not_found' };
}

/** A scanned candidate again, right before it goes: unchanged since the scan (same version), or checked anew. */
export async function inspectFound(sources: readonly Source[], f: Found, rules: Rules): Promise<Seen> {
  const { store } = sources[f.source];
  let now: StoredObject | null;
  try {
    now = await store.stat(f.path);
  } catch (err) {
    if (err instanceof AppError && err.status === 422) return { ok: false, reason: 'not_a_file' };
    throw err;
  }
  if (!now) return { ok: false, reason: 'not_found' };
  if (now.version !== f.version) return inspectIn(store, f.source, f.path, rules);
  return oldEnough(rules, f.folder, f.path, now.modifiedAt.getTime()) ? { ok: true, bytes: now.size, source: f.source } : { ok: false, reason: 'too_recent' };
}

/** Incomplete multipart uploads no live writer can own (none on the local driver). */
export async function staleUploads(store: ObjectStore, rules: Rules): Promise<IncompleteUpload[]> {
  const found: IncompleteUpload[] = [];
  for await (const u of store.incompleteUploads('')) {
    const at = u.initiatedAt.getTime();
    if (at < rules.ownerlessBeforeMs || ownerGone(rules, u.key, at)) found.push(u);
  }
  return found.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.uploadId < b.uploadId ? -1 : 1));
}

/**
 * Removes the directories under outputs/ and frames/ of a local store that the deletions left empty
 * (deepest first). An object store has no directories: nothing to do there.
 */
export function pruneEmptyDirs(store: ObjectStore, deleted: readonly string[]): number {
  if (!(store instanceof LocalStore)) return 0;
  const dirs = new Set<string>();
  for (const rel of deleted) {
    const segs = rel.split('/');
    if (!PRUNED_FOLDERS.includes(segs[0])) continue;
    for (let n = segs.length - 1; n >= 2; n--) dirs.add(segs.slice(0, n).join('/'));
  }
  let removed = 0;
  for (const dir of [...dirs].sort((a, b) => b.split('/').length - a.split('/').length)) {
    try {
      fs.rmdirSync(path.join(store.root, dir)); // fails on a non-empty directory and never follows a link
      removed++;
    } catch { /* not empty, gone or not a directory: kept */ }
  }
  return removed;
}
