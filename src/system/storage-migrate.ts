// Moving a store from one driver to the other (svc storage migrate --to s3|local): every referenced
// object — what a reclaim protects (storage-rules.ts: artifacts and their frames, compositions, asset
// versions, a completed job's output files, everything under outputs/<jobId>/ and frames/<jobId>/ of
// a job not finished) plus export packages (every object under exports/<id>/) and their archives — is
// copied from the source store to the target store and verified there by its SHA-256: the recorded
// one where the database (or an export's manifest) has it, else the hash of the source's bytes.
//
// The source is only ever read, so the service keeps serving from it while the copy runs; the
// operator switches SVC_STORAGE_DRIVER once a run ends without failures. An object already at the
// target with the expected bytes is skipped, so a run interrupted at any point (even kill -9: a
// write is placed only once complete) resumes where it stopped. Keys stay the same on both drivers.
import type { Db } from '../db/db.ts';
import { perDialect } from '../db/dialect.ts';
import { AppError } from '../kernel/errors.ts';
import type { ObjectStore } from '../kernel/storage/store.ts';
import { hashObject, verifyObject } from '../kernel/storage/verify.ts';

/** An object to move, with what its bytes must hash to when the database records it. */
export interface MigrationItem { key: string; sha256: string | null; size: number | null }

export type MigrationOutcome = 'copied' | 'present' | 'missing' | 'failed';

export interface MigrationStep { key: string; outcome: MigrationOutcome; bytes: number; reason?: string }

export interface MigrationSummary {
  from: { driver: string; location: string };
  to: { driver: string; location: string };
  objects: number;
  copied: number;
  present: number;
  bytesCopied: number;
  missing: string[];
  failed: Array<{ key: string; reason: string }>;
}

const recordedSql = perDialect((d) => `
  SELECT storage_path AS key, content_sha256 AS sha256, file_size AS size FROM media_artifacts
  UNION ALL SELECT first_frame_path, first_frame_sha256, first_frame_size FROM media_artifacts WHERE first_frame_path IS NOT NULL
  UNION ALL SELECT last_frame_path, last_frame_sha256, last_frame_size FROM media_artifacts WHERE last_frame_path IS NOT NULL
  UNION ALL SELECT c.storage_path, CASE WHEN a.storage_path = c.storage_path THEN a.content_sha256 END, NULL
    FROM media_compositions c LEFT JOIN media_artifacts a ON a.id = c.artifact_id
  UNION ALL SELECT storage_path, content_sha256, file_size FROM asset_versions
  UNION ALL SELECT ${d.jsonText('f.value', 'path')}, ${d.jsonText('f.value', 'sha256')}, CAST(${d.jsonText('f.value', 'fileSize')} AS BIGINT)
    FROM generation_jobs j, ${d.jsonEach(d.jsonGet('j.output', 'files'), 'f')} WHERE j.status = 'completed' AND j.output IS NOT NULL
  UNION ALL SELECT archive_path, archive_sha256, NULL FROM exports WHERE archive_path IS NOT NULL`);

/** Folders whose every object is referenced, with the hashes known for some of their keys. */
interface Folder { prefix: string; known: Map<string, { sha256: string; size: number | null }> }

/** The keys and folders to move, read in one consistent snapshot of the database. */
async function referenced(db: Db): Promise<{ items: Map<string, MigrationItem>; folders: Folder[]; manifests: Array<{ prefix: string; sha256: string }> }> {
  return await db.tx(async () => {
    const items = new Map<string, MigrationItem>();
    for await (const r of db.iterate<{ key: string | null; sha256: string | null; size: number | null }>(recordedSql(db.dialect))) {
      if (typeof r.key !== 'string' || !r.key) continue;
      const had = items.get(r.key);
      if (!had || (had.sha256 === null && r.sha256)) items.set(r.key, { key: r.key, sha256: r.sha256 || null, size: typeof r.size === 'number' ? r.size : null });
    }
    const folders: Folder[] = [];
    for (const { id } of await db.all<{ id: string }>("SELECT id FROM generation_jobs WHERE status IN ('queued', 'running', 'blocked') ORDER BY id")) {
      folders.push({ prefix: `outputs/${id}/`, known: new Map() }, { prefix: `frames/${id}/`, known: new Map() });
    }
    const manifests = (await db.all<{ dir: string; sha256: string }>('SELECT storage_path AS dir, manifest_sha256 AS sha256 FROM exports ORDER BY id'))
      .map((e) => ({ prefix: `${e.dir.replace(/\/+$/, '')}/`, sha256: e.sha256 }));
    return { items, folders, manifests };
  });
}

/** An export package's folder: manifest.json by its recorded hash, the files it lists by theirs. */
async function exportFolder(source: ObjectStore, prefix: string, manifestSha256: string): Promise<Folder> {
  const known = new Map<string, { sha256: string; size: number | null }>([[`${prefix}manifest.json`, { sha256: manifestSha256, size: null }]]);
  try {
    const manifest = JSON.parse((await source.readBytes(`${prefix}manifest.json`)).toString('utf8')) as { files?: Array<{ path?: unknown; sha256?: unknown; size?: unknown }> };
    for (const f of manifest.files ?? []) {
      if (typeof f.path === 'string' && typeof f.sha256 === 'string') known.set(`${prefix}${f.path}`, { sha256: f.sha256, size: typeof f.size === 'number' ? f.size : null });
    }
  } catch { /* a missing or unreadable manifest: its files are checked against the source's bytes */ }
  return { prefix, known };
}

/** Every object to move, in key order. */
export async function migrationItems(db: Db, source: ObjectStore): Promise<MigrationItem[]> {
  const { items, folders, manifests } = await referenced(db);
  for (const m of manifests) folders.push(await exportFolder(source, m.prefix, m.sha256));
  for (const f of folders) {
    for await (const obj of source.list(f.prefix)) {
      const k = f.known.get(obj.key);
      if (!items.get(obj.key)?.sha256) items.set(obj.key, { key: obj.key, sha256: k?.sha256 ?? null, size: k?.size ?? null });
    }
    // A listed file the folder's listing missed (a manifest naming a file that is not there) is still expected.
    for (const [key, k] of f.known) if (!items.has(key)) items.set(key, { key, sha256: k.sha256, size: k.size });
  }
  return [...items.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/** Copies one object unless the target already holds the expected bytes; verifies the copy by reading it back. */
export async function migrateObject(source: ObjectStore, target: ObjectStore, item: MigrationItem): Promise<MigrationStep> {
  const { key } = item;
  const there = await target.stat(key);
  let expected = item.sha256 ? { sha256: item.sha256, ...(item.size !== null ? { size: item.size } : {}) } : null;
  if (there) {
    if (!expected) {
      try {
        expected = await hashObject(source, key);
      } catch (err) {
        if (err instanceof AppError && err.status === 404) return { key, outcome: 'missing', bytes: 0 };
        throw err;
      }
    }
    if ((await verifyObject(target, key, expected)).state === 'ok') return { key, outcome: 'present', bytes: 0 };
  }
  let stream;
  try {
    stream = await source.read(key);
  } catch (err) {
    if (err instanceof AppError && err.status === 404) return { key, outcome: 'missing', bytes: 0 };
    throw err;
  }
  const pending = await target.write(stream);
  if (expected && (pending.sha256 !== expected.sha256 || (expected.size !== undefined && pending.size !== expected.size))) {
    await pending.discard();
    return { key, outcome: 'failed', bytes: 0, reason: 'the source no longer matches its recorded SHA-256 (nothing written)' };
  }
  await pending.place(key, { replace: true });
  const check = await verifyObject(target, key, { sha256: pending.sha256, size: pending.size });
  if (check.state !== 'ok') return { key, outcome: 'failed', bytes: 0, reason: `the copy at the target reads back ${check.state}` };
  return { key, outcome: 'copied', bytes: pending.size };
}

/** Up to this many objects are copied at once (an object store's latency is per request). */
const PARALLEL = 4;

/** Moves every referenced object from `source` to `target`; `progress` hears of each object as it is done. */
export async function migrateStorage(
  db: Db, source: ObjectStore, target: ObjectStore, progress: (step: MigrationStep, done: number, total: number) => void = () => {},
): Promise<MigrationSummary> {
  if (source.driver === target.driver && source.location === target.location) {
    throw new AppError(422, 'validation_failed', `the target is the source (${source.driver} at ${source.location})`);
  }
  const items = await migrationItems(db, source);
  const summary: MigrationSummary = {
    from: { driver: source.driver, location: source.location }, to: { driver: target.driver, location: target.location },
    objects: items.length, copied: 0, present: 0, bytesCopied: 0, missing: [], failed: [],
  };
  let next = 0;
  let done = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++];
      let step: MigrationStep;
      try {
        step = await migrateObject(source, target, item);
      } catch (err) {
        step = { key: item.key, outcome: 'failed', bytes: 0, reason: err instanceof AppError ? err.message : `${(err as Error).name ?? 'Error'}: the copy failed` };
      }
      if (step.outcome === 'copied') {
        summary.copied++;
        summary.bytesCopied += step.bytes;
      } else if (step.outcome === 'present') summary.present++;
      else if (step.outcome === 'missing') summary.missing.push(step.key);
      else summary.failed.push({ key: step.key, reason: step.reason ?? 'failed' });
      progress(step, ++done, items.length);
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL, items.length) }, worker));
  summary.missing.sort();
  summary.failed.sort((a, b) => (a.key < b.key ? -1 : 1));
  return summary;
}
