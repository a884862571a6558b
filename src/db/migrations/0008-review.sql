-- Review, QA, delivery and export (src/review, src/qa, src/delivery). Every decision keeps the
-- SHA-256 of the bytes it was made on.

-- A project's delivery spec (JSON, see src/qa/spec.ts): picture size, frame rate, loudness targets.
-- No row: the documented defaults.
CREATE TABLE project_delivery_specs (
  project_id TEXT PRIMARY KEY REFERENCES projects(id),
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  spec TEXT NOT NULL,
  updated_by TEXT,
  updated_at TEXT NOT NULL
);

-- A review request on one artifact (a shot's artifact or an episode cut). artifact_id/artifact_sha256
-- name the artifact currently under review: a newer artifact of the same shot and kind (or a newer cut
-- of the episode) moves the review to it and re-opens it (status reopened, reopen_count + 1).
CREATE TABLE reviews (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  project_id TEXT NOT NULL REFERENCES projects(id),
  target_kind TEXT NOT NULL CHECK (target_kind IN ('shot', 'cut')),
  episode_id TEXT REFERENCES episodes(id),
  shot_id TEXT REFERENCES shots(id),
  artifact_kind TEXT NOT NULL CHECK (artifact_kind IN ('image', 'video', 'audio', 'other')),
  artifact_id TEXT NOT NULL REFERENCES media_artifacts(id),
  artifact_sha256 TEXT NOT NULL,
  title TEXT NOT NULL,
  note TEXT,
  status TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'changes_requested', 'approved', 'reopened', 'withdrawn')),
  reopen_count INTEGER NOT NULL DEFAULT 0,
  requested_by TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX reviews_project ON reviews(project_id, created_at);
CREATE INDEX reviews_artifact ON reviews(artifact_id);
CREATE INDEX reviews_shot ON reviews(shot_id, artifact_kind) WHERE shot_id IS NOT NULL;
CREATE INDEX reviews_episode_cut ON reviews(episode_id) WHERE target_kind = 'cut';

-- A reviewer's comment, pinned to the artifact (and its hash) it was written on: a time code (ms)
-- or a frame number, and optionally a rectangle on the frame (fractions 0..1 of width and height).
CREATE TABLE review_comments (
  id TEXT PRIMARY KEY,
  review_id TEXT NOT NULL REFERENCES reviews(id),
  artifact_id TEXT NOT NULL REFERENCES media_artifacts(id),
  artifact_sha256 TEXT NOT NULL,
  author_id TEXT,
  body TEXT NOT NULL,
  time_code_ms INTEGER,
  frame INTEGER,
  rect_x REAL,
  rect_y REAL,
  rect_width REAL,
  rect_height REAL,
  created_at TEXT NOT NULL
);
CREATE INDEX review_comments_review ON review_comments(review_id, created_at);

-- A decision: approve or request changes, on the exact bytes (artifact id and SHA-256).
CREATE TABLE review_decisions (
  id TEXT PRIMARY KEY,
  review_id TEXT NOT NULL REFERENCES reviews(id),
  artifact_id TEXT NOT NULL REFERENCES media_artifacts(id),
  artifact_sha256 TEXT NOT NULL,
  decision TEXT NOT NULL CHECK (decision IN ('approve', 'request_changes')),
  note TEXT,
  decided_by TEXT,
  created_at TEXT NOT NULL
);
CREATE INDEX review_decisions_review ON review_decisions(review_id, created_at);
CREATE TRIGGER review_decisions_immutable BEFORE UPDATE ON review_decisions
BEGIN
  SELECT RAISE(ABORT, 'review decisions are immutable');
END;

-- A QA run: automated checks over the artifacts of a shot, an episode or the project, with the
-- delivery spec it was measured against. result: fail if any check failed, else warn if any warned,
-- else pass.
CREATE TABLE qa_runs (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  project_id TEXT NOT NULL REFERENCES projects(id),
  target_kind TEXT NOT NULL CHECK (target_kind IN ('shot', 'episode', 'project', 'artifacts')),
  target_id TEXT,
  result TEXT NOT NULL CHECK (result IN ('pass', 'warn', 'fail')),
  spec TEXT NOT NULL,
  summary TEXT NOT NULL,
  artifact_count INTEGER NOT NULL,
  created_by TEXT,
  started_at TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX qa_runs_project ON qa_runs(project_id, created_at);

-- One check of one artifact in a QA run, with the measured value (JSON) and what was expected.
-- time_code_ms: where the problem starts (black and frozen stretches), when it has a place.
CREATE TABLE qa_checks (
  run_id TEXT NOT NULL REFERENCES qa_runs(id),
  position INTEGER NOT NULL,
  artifact_id TEXT NOT NULL REFERENCES media_artifacts(id),
  artifact_sha256 TEXT NOT NULL,
  check_key TEXT NOT NULL,
  blocking INTEGER NOT NULL CHECK (blocking IN (0, 1)),
  result TEXT NOT NULL CHECK (result IN ('pass', 'warn', 'fail')),
  measured TEXT NOT NULL,
  expected TEXT,
  message TEXT NOT NULL,
  time_code_ms INTEGER,
  PRIMARY KEY (run_id, position)
);
CREATE INDEX qa_checks_artifact ON qa_checks(artifact_id, artifact_sha256);

-- A delivery: a set of episode cuts (or chosen artifacts) for a client. version rises with each
-- change of the set while draft; approval records every item's hash and freezes it.
CREATE TABLE deliveries (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  project_id TEXT NOT NULL REFERENCES projects(id),
  title TEXT NOT NULL,
  note TEXT,
  status TEXT NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'approved', 'withdrawn')),
  version INTEGER NOT NULL DEFAULT 1,
  created_by TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  approved_by TEXT,
  approved_at TEXT
);
CREATE INDEX deliveries_project ON deliveries(project_id, created_at);

-- The items of a delivery's current version, in order, with the artifact's hash when gathered.
CREATE TABLE delivery_items (
  delivery_id TEXT NOT NULL REFERENCES deliveries(id),
  position INTEGER NOT NULL,
  artifact_id TEXT NOT NULL REFERENCES media_artifacts(id),
  artifact_sha256 TEXT NOT NULL,
  episode_id TEXT REFERENCES episodes(id),
  shot_id TEXT REFERENCES shots(id),
  qa_run_id TEXT REFERENCES qa_runs(id),
  review_id TEXT REFERENCES reviews(id),
  PRIMARY KEY (delivery_id, position),
  UNIQUE (delivery_id, artifact_id)
);

-- A client delivery link: the token is shown once and stored as its SHA-256 only.
CREATE TABLE delivery_links (
  id TEXT PRIMARY KEY,
  delivery_id TEXT NOT NULL REFERENCES deliveries(id),
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  token_hash TEXT NOT NULL UNIQUE,
  label TEXT,
  expires_at TEXT NOT NULL,
  revoked_at TEXT,
  revoked_by TEXT,
  created_by TEXT,
  created_at TEXT NOT NULL,
  last_used_at TEXT,
  download_count INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX delivery_links_delivery ON delivery_links(delivery_id, created_at);

-- An export package written under storage/exports/<id>/ (and optionally storage/exports/<id>.tar):
-- one per delivery version.
CREATE TABLE exports (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  project_id TEXT NOT NULL REFERENCES projects(id),
  delivery_id TEXT NOT NULL REFERENCES deliveries(id),
  delivery_version INTEGER NOT NULL,
  storage_path TEXT NOT NULL,
  archive_path TEXT,
  archive_sha256 TEXT,
  manifest_sha256 TEXT NOT NULL,
  file_count INTEGER NOT NULL,
  total_bytes INTEGER NOT NULL,
  created_by TEXT,
  created_at TEXT NOT NULL,
  UNIQUE (delivery_id, delivery_version)
);
CREATE INDEX exports_project ON exports(project_id, created_at);
