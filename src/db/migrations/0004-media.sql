-- 0004: media evidence: artifacts with their real first and last frames, episode compositions,
-- continuity between consecutive shots; the episode a job works on.

ALTER TABLE generation_jobs ADD COLUMN episode_id TEXT REFERENCES episodes(id);
CREATE INDEX generation_jobs_episode ON generation_jobs(episode_id) WHERE episode_id IS NOT NULL;
UPDATE generation_jobs SET episode_id = (SELECT s.episode_id FROM shots s WHERE s.id = generation_jobs.shot_id) WHERE shot_id IS NOT NULL;

-- == media ==
-- One row per output file of a completed generation or composition job, written in the job's
-- completing transaction (so a job is never completed without its artifacts, and an artifact never
-- exists for a job that did not complete). Paths are relative to the storage root: storage_path
-- under outputs/<jobId>/, frames under frames/<jobId>/ (an image is its own first and last frame,
-- audio has none). Signatures are 32x32 RGB thumbnails of the first and last frames, for continuity.
CREATE TABLE media_artifacts (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  project_id TEXT NOT NULL REFERENCES projects(id),
  episode_id TEXT REFERENCES episodes(id),
  shot_id TEXT REFERENCES shots(id),
  job_id TEXT NOT NULL REFERENCES generation_jobs(id),
  kind TEXT NOT NULL CHECK (kind IN ('image', 'video', 'audio', 'other')),
  source TEXT NOT NULL CHECK (source IN ('generation', 'composition')),
  storage_path TEXT NOT NULL UNIQUE,
  file_name TEXT NOT NULL,
  mime_type TEXT NOT NULL,
  file_size INTEGER NOT NULL,
  content_sha256 TEXT NOT NULL,
  duration_ms INTEGER,
  width INTEGER,
  height INTEGER,
  frame_rate TEXT,
  frame_count INTEGER,
  video_codec TEXT,
  audio_codec TEXT,
  has_video INTEGER NOT NULL CHECK (has_video IN (0, 1)),
  has_audio INTEGER NOT NULL CHECK (has_audio IN (0, 1)),
  first_frame_path TEXT,
  first_frame_sha256 TEXT,
  first_frame_size INTEGER,
  last_frame_path TEXT,
  last_frame_sha256 TEXT,
  last_frame_size INTEGER,
  first_signature BLOB,
  last_signature BLOB,
  provenance TEXT NOT NULL DEFAULT '{}',
  created_at TEXT NOT NULL
);
CREATE INDEX media_artifacts_project ON media_artifacts(project_id, created_at);
CREATE INDEX media_artifacts_shot ON media_artifacts(shot_id, kind, created_at) WHERE shot_id IS NOT NULL;
CREATE INDEX media_artifacts_job ON media_artifacts(job_id);

-- An episode cut made by a compose job: its artifact and the inputs joined, in order, with the
-- hashes they had (JSON: [{ position, shotId, artifactId, path, contentSha256, startMs, durationMs, frames }]).
CREATE TABLE media_compositions (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  project_id TEXT NOT NULL REFERENCES projects(id),
  episode_id TEXT NOT NULL REFERENCES episodes(id),
  job_id TEXT NOT NULL UNIQUE REFERENCES generation_jobs(id),
  artifact_id TEXT NOT NULL UNIQUE REFERENCES media_artifacts(id),
  storage_path TEXT NOT NULL,
  width INTEGER NOT NULL,
  height INTEGER NOT NULL,
  frame_rate TEXT NOT NULL,
  duration_ms INTEGER NOT NULL,
  inputs TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX media_compositions_episode ON media_compositions(episode_id, created_at);

-- How the last frame of one shot's video matches the first frame of the next shot's video
-- (score 0..1, 1 = identical; metrics JSON), computed when either video is registered.
CREATE TABLE media_continuity (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  project_id TEXT NOT NULL REFERENCES projects(id),
  episode_id TEXT NOT NULL REFERENCES episodes(id),
  from_shot_id TEXT NOT NULL REFERENCES shots(id),
  to_shot_id TEXT NOT NULL REFERENCES shots(id),
  from_artifact_id TEXT NOT NULL REFERENCES media_artifacts(id),
  to_artifact_id TEXT NOT NULL REFERENCES media_artifacts(id),
  score REAL NOT NULL,
  metrics TEXT NOT NULL,
  created_at TEXT NOT NULL,
  UNIQUE (from_artifact_id, to_artifact_id)
);
CREATE INDEX media_continuity_to ON media_continuity(to_artifact_id);
