// Writing an export package into the store under a prefix (a fresh one under tmp/): the delivered
// files copied server-side into media/ and each video's real first and last frames into frames/,
// every copy read back, hashed and compared with the SHA-256 it was approved or registered with (409
// export_source_missing / export_source_changed otherwise); then shotlist.csv, timeline/<key>.otio
// and .edl, subtitles/<key>.srt, and last manifest.json listing every other file with its size,
// SHA-256 and the artifact it comes from.
import { flatMapSeq } from '../../kernel/seq.ts';
import type { Db } from '../../db/db.ts';
import { AppError, conflict } from '../../kernel/errors.ts';
import type { ObjectStore } from '../../kernel/storage/store.ts';
import { verifyObject } from '../../kernel/storage/verify.ts';
import { csvRow } from '../../kernel/export-stream.ts';
import { dialogueOfShot } from '../../production/scripts/dialogue.ts';
import { shotById } from '../../production/catalog/store.ts';
import { edlOf } from './edl.ts';
import { otioOf } from './otio.ts';
import { episodeLabel, shotLabel, type ExportPlan, type PackedMedia } from './plan.ts';
import { spreadLines, srtOf, type Cue } from './srt.ts';
import { framesToMs, timecode, totalFrames, type Timeline } from './timeline.ts';

export interface PackageFile {
  path: string;
  role: 'media' | 'frame' | 'shotlist' | 'timeline' | 'edl' | 'subtitles';
  size: number;
  sha256: string;
  /** The artifact the file is (media), was taken from (frame) or describes (a timeline's cut); null for the shot list. */
  artifactId: string | null;
  artifactSha256: string | null;
}

export interface PackageFacts { manifest: Record<string, unknown>; manifestSha256: string; manifestSize: number; files: PackageFile[] }

interface Source { storagePath: string; sha256: string; artifactId: string; position: number; what: string }

/** Where a package is written: the store and the key prefix of its folder (ending in "/"). */
export interface PackageTarget { store: ObjectStore; prefix: string }

/** Copies a stored object into the package (server-side) and checks the copy's bytes (a changed file is never packaged). */
async function copyVerified(to: PackageTarget, rel: string, s: Source): Promise<{ size: number; sha256: string }> {
  const details = { position: s.position, artifactId: s.artifactId, file: s.what };
  const missing = () => conflict('export_source_missing', `item ${s.position}: the ${s.what} of artifact ${s.artifactId} is not in storage`, details);
  try {
    if (!(await to.store.stat(s.storagePath))) throw missing();
    await to.store.copy(s.storagePath, `${to.prefix}${rel}`);
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    throw missing();
  }
  // The copy is what is packaged: it is the one checked.
  const got = await verifyObject(to.store, `${to.prefix}${rel}`, { sha256: s.sha256 });
  if (got.state !== 'ok') {
    throw conflict('export_source_changed', `item ${s.position}: the ${s.what} of artifact ${s.artifactId} no longer matches its SHA-256`, details);
  }
  return { size: got.size!, sha256: got.sha256! };
}

async function writeText(to: PackageTarget, rel: string, text: string): Promise<{ size: number; sha256: string }> {
  const { size, sha256 } = await to.store.putBytes(`${to.prefix}${rel}`, Buffer.from(text, 'utf8'));
  return { size, sha256 };
}

async function copyMedia(to: PackageTarget, m: PackedMedia): Promise<PackageFile[]> {
  const a = m.artifact;
  const base = { artifactId: a.id, position: m.item.position };
  const out: PackageFile[] = [];
  const got = await copyVerified(to, m.path, { ...base, storagePath: a.storage_path, sha256: m.item.artifact_sha256, what: 'file' });
  out.push({ path: m.path, role: 'media', ...got, artifactId: a.id, artifactSha256: m.item.artifact_sha256 });
  if (a.kind !== 'video') return out;
  for (const [which, p, sha] of [['first', a.first_frame_path, a.first_frame_sha256], ['last', a.last_frame_path, a.last_frame_sha256]] as const) {
    if (!p || !sha) continue;
    const rel = `frames/${m.stem}-${which}.png`;
    const frame = await copyVerified(to, rel, { ...base, storagePath: p, sha256: sha, what: `${which} frame` });
    out.push({ path: rel, role: 'frame', ...frame, artifactId: a.id, artifactSha256: m.item.artifact_sha256 });
  }
  return out;
}

const SHOTLIST_HEADER = [
  'timeline', 'episode', 'episode_title', 'shot', 'shot_title', 'record_in', 'record_out', 'duration_frames', 'duration_ms', 'frame_rate',
  'media_file', 'artifact_id', 'artifact_sha256', 'source_artifact_id', 'source_sha256', 'voice_artifact_id', 'voice_sha256',
];

/** One row a timeline clip, then one a delivered file that no timeline places (images). */
async function shotlistOf(db: Db, projectId: string, plan: ExportPlan): Promise<string> {
  let text = csvRow(SHOTLIST_HEADER);
  const placed = new Set<string>();
  for (const t of plan.timelines) {
    const episode = plan.media.find((m) => m.episode?.id === t.episodeId)?.episode;
    for (const c of [...t.clips].sort((a, b) => a.recordIn - b.recordIn)) {
      placed.add(c.media.artifactId);
      const shot = c.shotId ? await shotById(db, projectId, c.shotId) : undefined;
      text += csvRow([
        t.key, episodeLabel(episode), episode?.title ?? null, shotLabel(shot), shot?.title ?? null,
        timecode(c.recordIn, t.rate), timecode(c.recordIn + c.frames, t.rate), c.frames, framesToMs(c.frames, t.rate), `${t.rate.num}/${t.rate.den}`,
        c.media.path, c.media.artifactId, c.media.sha256, c.sourceArtifactId, c.sourceSha256, c.voiceArtifactId, c.voiceSha256,
      ]);
    }
  }
  for (const m of plan.media.filter((x) => !placed.has(x.artifact.id))) {
    text += csvRow([
      null, episodeLabel(m.episode), m.episode?.title ?? null, shotLabel(m.shot), m.shot?.title ?? null, null, null, null, m.artifact.duration_ms, null,
      m.path, m.artifact.id, m.item.artifact_sha256, null, null, null, null,
    ]);
  }
  return text;
}

/** A shot's dialogue over its clip (the first clip of the shot with pictures, else its first clip). */
async function cuesOf(db: Db, projectId: string, t: Timeline): Promise<Cue[]> {
  const chosen = new Map<string, Timeline['clips'][number]>();
  for (const c of [...t.clips].sort((a, b) => a.recordIn - b.recordIn)) {
    if (!c.shotId) continue;
    const had = chosen.get(c.shotId);
    if (!had || (!had.video && c.video)) chosen.set(c.shotId, c);
  }
  return await flatMapSeq([...chosen.values()].sort((a, b) => a.recordIn - b.recordIn), async (c) => {
    const shot = await shotById(db, projectId, c.shotId!);
    const lines = shot ? (await dialogueOfShot(db, projectId, shot)).map((l) => l.text) : [];
    return spreadLines(lines, framesToMs(c.recordIn, t.rate), framesToMs(c.recordIn + c.frames, t.rate));
  });
}

export interface PackageMeta { exportId: string; createdAt: string; createdBy: string | null; delivery: Record<string, unknown>; project: Record<string, unknown> }

/** The package's folders: always in its archive, even when empty. */
export const PACKAGE_FOLDERS = ['media', 'frames', 'timeline', 'subtitles'] as const;

/** Writes the whole package under `to.prefix` (where nothing is yet). Throws without cleaning up: the caller removes the prefix. */
export async function writePackage(db: Db, to: PackageTarget, projectId: string, plan: ExportPlan, meta: PackageMeta): Promise<PackageFacts> {
  const files: PackageFile[] = [];
  for (const m of plan.media) files.push(...await copyMedia(to, m));
  files.push({ path: 'shotlist.csv', role: 'shotlist', ...(await writeText(to, 'shotlist.csv', await shotlistOf(db, projectId, plan))), artifactId: null, artifactSha256: null });
  const timelines = [];
  for (const t of plan.timelines) {
    const cut = t.clips[0]?.sourceArtifactId ? t.clips[0].media : null;
    const source = { artifactId: cut?.artifactId ?? null, artifactSha256: cut?.sha256 ?? null };
    const rel = { otio: `timeline/${t.key}.otio`, edl: `timeline/${t.key}.edl`, subtitles: `subtitles/${t.key}.srt` };
    const svc = { exportId: meta.exportId, deliveryId: meta.delivery.id, episodeId: t.episodeId };
    files.push({ path: rel.otio, role: 'timeline', ...(await writeText(to, rel.otio, otioOf(t, svc))), ...source });
    files.push({ path: rel.edl, role: 'edl', ...(await writeText(to, rel.edl, edlOf(t))), ...source });
    files.push({ path: rel.subtitles, role: 'subtitles', ...(await writeText(to, rel.subtitles, srtOf(await cuesOf(db, projectId, t)))), ...source });
    timelines.push({ key: t.key, title: t.title, episodeId: t.episodeId, frameRate: `${t.rate.num}/${t.rate.den}`, frames: totalFrames(t), clips: t.clips.length, ...rel });
  }
  const manifest = { format: 'svc-export', formatVersion: 1, ...meta, timelines, files };
  const written = await writeText(to, 'manifest.json', `${JSON.stringify(manifest, null, 2)}\n`);
  return { manifest, manifestSha256: written.sha256, manifestSize: written.size, files };
}
