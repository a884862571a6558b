// SQL of media evidence: artifacts, compositions and continuity. Reads name the project; the
// registration (src/generation/media/register.ts) writes inside the job's completing transaction.
import type { Db } from '../../db/db.ts';

export interface ArtifactRow {
  id: string; organization_id: string; workspace_id: string; project_id: string; episode_id: string | null; shot_id: string | null;
  job_id: string; kind: 'image' | 'video' | 'audio' | 'other'; source: 'generation' | 'composition';
  storage_path: string; file_name: string; mime_type: string; file_size: number; content_sha256: string;
  duration_ms: number | null; width: number | null; height: number | null; frame_rate: string | null; frame_count: number | null;
  video_codec: string | null; audio_codec: string | null; has_video: number; has_audio: number;
  first_frame_path: string | null; first_frame_sha256: string | null; first_frame_size: number | null;
  last_frame_path: string | null; last_frame_sha256: string | null; last_frame_size: number | null;
  first_signature: Uint8Array | null; last_signature: Uint8Array | null;
  provenance: string; created_at: string;
}

export interface CompositionRow {
  id: string; organization_id: string; workspace_id: string; project_id: string; episode_id: string; job_id: string; artifact_id: string;
  storage_path: string; width: number; height: number; frame_rate: string; duration_ms: number; inputs: string; created_at: string;
}

export interface ContinuityRow {
  id: string; organization_id: string; workspace_id: string; project_id: string; episode_id: string;
  from_shot_id: string; to_shot_id: string; from_artifact_id: string; to_artifact_id: string; score: number; metrics: string; created_at: string;
}

const ARTIFACT_COLUMNS = [
  'id', 'organization_id', 'workspace_id', 'project_id', 'episode_id', 'shot_id', 'job_id', 'kind', 'source', 'storage_path', 'file_name',
  'mime_type', 'file_size', 'content_sha256', 'duration_ms', 'width', 'height', 'frame_rate', 'frame_count', 'video_codec', 'audio_codec',
  'has_video', 'has_audio', 'first_frame_path', 'first_frame_sha256', 'first_frame_size', 'last_frame_path', 'last_frame_sha256',
  'last_frame_size', 'first_signature', 'last_signature', 'provenance', 'created_at',
] as const satisfies ReadonlyArray<keyof ArtifactRow>;

const insertSql = (table: string, columns: readonly string[]) =>
  `INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`;

export async function insertArtifact(db: Db, a: ArtifactRow): Promise<void> {
  await db.run(insertSql('media_artifacts', ARTIFACT_COLUMNS), ...ARTIFACT_COLUMNS.map((c) => a[c]));
}

export async function insertComposition(db: Db, c: CompositionRow): Promise<void> {
  const columns = Object.keys(c) as Array<keyof CompositionRow>;
  await db.run(insertSql('media_compositions', columns), ...columns.map((k) => c[k]));
}

/** A continuity measure, once per pair of artifacts (a repeated registration changes nothing). */
export async function insertContinuity(db: Db, c: ContinuityRow): Promise<void> {
  const columns = Object.keys(c) as Array<keyof ContinuityRow>;
  await db.run(`${insertSql('media_continuity', columns)} ON CONFLICT (from_artifact_id, to_artifact_id) DO NOTHING`, ...columns.map((k) => c[k]));
}

export const artifactInProject = (db: Db, projectId: string, id: string) =>
  db.get<ArtifactRow>('SELECT * FROM media_artifacts WHERE project_id = ? AND id = ?', projectId, id);

export interface ArtifactFilter { shotId: string | null; jobId: string | null; episodeId: string | null; kind: string | null; limit: number }

/** Newest first. */
export function artifactsOfProject(db: Db, projectId: string, f: ArtifactFilter): Promise<ArtifactRow[]> {
  return db.all<ArtifactRow>(
    `SELECT * FROM media_artifacts WHERE project_id = ?1 AND (shot_id = ?2 OR ?2 IS NULL) AND (job_id = ?3 OR ?3 IS NULL)
       AND (episode_id = ?4 OR ?4 IS NULL) AND (kind = ?5 OR ?5 IS NULL)
     ORDER BY created_at DESC, id DESC LIMIT ?6`, projectId, f.shotId, f.jobId, f.episodeId, f.kind, f.limit);
}

/** A shot's newest generated artifact of a kind: the one the shot is represented by for that kind (its cut, reviews). */
export const newestGeneratedOfShot = (db: Db, projectId: string, shotId: string, kind: ArtifactRow['kind']): Promise<ArtifactRow | undefined> =>
  db.get<ArtifactRow>(
    `SELECT * FROM media_artifacts WHERE project_id = ? AND shot_id = ? AND kind = ? AND source = 'generation'
      ORDER BY created_at DESC, id DESC LIMIT 1`, projectId, shotId, kind);

/**
 * The video a shot is represented by in its episode (the cut, continuity): its newest generated
 * video artifact.
 */
export const chosenVideoOfShot = (db: Db, projectId: string, shotId: string) => newestGeneratedOfShot(db, projectId, shotId, 'video');

/** The voice line a shot carries in its episode's cut: its newest generated audio artifact (a `tts` job bound to the shot). */
export const chosenVoiceOfShot = (db: Db, projectId: string, shotId: string) => newestGeneratedOfShot(db, projectId, shotId, 'audio');

/**
 * An episode's newest cut, the one QA, reviews and deliveries take: the artifact of the episode's
 * newest composition (by created_at, then id).
 */
export const newestCutOfEpisode = (db: Db, projectId: string, episodeId: string): Promise<ArtifactRow | undefined> =>
  db.get<ArtifactRow>(
    `SELECT a.* FROM media_compositions c JOIN media_artifacts a ON a.id = c.artifact_id AND a.project_id = c.project_id
      WHERE c.project_id = ? AND c.episode_id = ? ORDER BY c.created_at DESC, c.id DESC LIMIT 1`, projectId, episodeId);

export const compositionOfArtifact = (db: Db, projectId: string, artifactId: string) =>
  db.get<CompositionRow>('SELECT * FROM media_compositions WHERE project_id = ? AND artifact_id = ?', projectId, artifactId);

export const continuityBetween = (db: Db, projectId: string, fromArtifactId: string, toArtifactId: string) =>
  db.get<ContinuityRow>('SELECT * FROM media_continuity WHERE project_id = ? AND from_artifact_id = ? AND to_artifact_id = ?',
    projectId, fromArtifactId, toArtifactId);

/** Measures where the artifact is the later shot (previous) and the earlier one (next). */
export async function continuityOf(db: Db, projectId: string, artifactId: string): Promise<{ previous: ContinuityRow[]; next: ContinuityRow[] }> {
  return {
    previous: await db.all<ContinuityRow>('SELECT * FROM media_continuity WHERE project_id = ? AND to_artifact_id = ? ORDER BY created_at, id', projectId, artifactId),
    next: await db.all<ContinuityRow>('SELECT * FROM media_continuity WHERE project_id = ? AND from_artifact_id = ? ORDER BY created_at, id', projectId, artifactId),
  };
}
