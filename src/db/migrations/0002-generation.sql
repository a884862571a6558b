-- 0002: model connectors, generation job attempts and external handles, usage events, worker state.

-- A registered model service of one organization. capability and protocol are JSON; auth_env is the
-- NAME of an environment variable holding the credential (the credential is never stored).
-- status: pending (not yet probed), ready (probe succeeded; the only status the worker picks up),
-- unreachable (last probe failed), disabled, awaiting_approval (mixed or cloud, not yet approved).
CREATE TABLE model_connectors (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  label TEXT NOT NULL,
  endpoint TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('http-json', 'openai-compatible', 'comfyui')),
  capability TEXT NOT NULL DEFAULT '[]',
  cost_mode TEXT NOT NULL CHECK (cost_mode IN ('local', 'mixed', 'cloud')),
  auth_env TEXT,
  protocol TEXT NOT NULL DEFAULT '{}',
  status TEXT NOT NULL CHECK (status IN ('pending', 'ready', 'unreachable', 'disabled', 'awaiting_approval')),
  approved_by TEXT,
  approved_at TEXT,
  last_probe_at TEXT,
  last_probe_ok INTEGER,
  last_probe_latency_ms INTEGER,
  last_probe_status INTEGER,
  last_probe_error TEXT,
  created_by TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX model_connectors_org ON model_connectors(organization_id, status);

-- External handle of a running call (ComfyUI prompt id, video id) so that a reclaimed job resumes
-- or re-submits instead of reporting a result it never saw.
ALTER TABLE generation_jobs ADD COLUMN external_ref TEXT;
-- When the current (or last) attempt was claimed; its job_attempts row is written when it ends.
ALTER TABLE generation_jobs ADD COLUMN attempt_started_at TEXT;
-- By project in list order; not by status, so that a status change rewrites no entry of it.
DROP INDEX generation_jobs_project;
CREATE INDEX generation_jobs_project ON generation_jobs(project_id, created_at);
-- The queue in claim order: priority first, then age.
CREATE INDEX generation_jobs_claim ON generation_jobs(priority DESC, created_at, id) WHERE status = 'queued';
CREATE INDEX generation_jobs_running ON generation_jobs(leased_at) WHERE status = 'running';
CREATE INDEX generation_jobs_depends ON generation_jobs(depends_on) WHERE depends_on IS NOT NULL;
CREATE INDEX generation_jobs_org ON generation_jobs(organization_id, status);

-- Every finished attempt of a job: who ran it (worker id or a person through /run), when, how it ended.
-- A running attempt is the job row itself (leased_by, attempt, attempt_started_at).
CREATE TABLE job_attempts (
  job_id TEXT NOT NULL REFERENCES generation_jobs(id),
  attempt INTEGER NOT NULL,
  project_id TEXT NOT NULL REFERENCES projects(id),
  mode TEXT NOT NULL CHECK (mode IN ('worker', 'run')),
  runner TEXT NOT NULL,
  started_at TEXT NOT NULL,
  finished_at TEXT,
  outcome TEXT NOT NULL CHECK (outcome IN ('completed', 'retry', 'failed', 'reclaimed', 'cancelled')),
  error TEXT,
  latency_ms INTEGER,
  PRIMARY KEY (job_id, attempt)
);

-- Metered usage (a completed video job is one clip). One event per job at most.
CREATE TABLE usage_events (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  workspace_id TEXT REFERENCES workspaces(id),
  project_id TEXT REFERENCES projects(id),
  actor_user_id TEXT,
  kind TEXT NOT NULL,
  unit TEXT NOT NULL,
  quantity REAL NOT NULL,
  estimated_cost_minor INTEGER NOT NULL,
  currency TEXT NOT NULL,
  cost_center TEXT,
  job_id TEXT UNIQUE REFERENCES generation_jobs(id),
  metadata TEXT NOT NULL DEFAULT '{}',
  created_at TEXT NOT NULL
);
CREATE INDEX usage_events_org ON usage_events(organization_id, created_at);
CREATE INDEX usage_events_org_kind ON usage_events(organization_id, kind, created_at);

-- The worker's heartbeat and counters, written by the worker thread, read by the API and the CLI.
CREATE TABLE worker_state (
  worker_id TEXT PRIMARY KEY,
  started_at TEXT NOT NULL,
  heartbeat_at TEXT NOT NULL,
  enabled INTEGER NOT NULL,
  concurrency INTEGER NOT NULL,
  poll_ms INTEGER NOT NULL,
  lease_ms INTEGER NOT NULL,
  running INTEGER NOT NULL DEFAULT 0,
  stopped_at TEXT,
  last_claimed_at TEXT,
  last_completed_at TEXT,
  last_failed_at TEXT,
  last_reclaimed_at TEXT,
  last_retried_at TEXT,
  last_error TEXT
);

-- Search: only a change of the indexed text rewrites the FTS entry (job status changes are frequent).
DROP TRIGGER search_documents_au;
-- Only a change of the indexed text rewrites the FTS entry (a status change does not).
CREATE TRIGGER search_documents_au AFTER UPDATE ON search_documents
WHEN old.title IS NOT new.title OR old.subtitle IS NOT new.subtitle OR old.body IS NOT new.body BEGIN
  INSERT INTO search_fts(search_fts, rowid, title, subtitle, body) VALUES ('delete', old.rowid, old.title, old.subtitle, old.body);
  INSERT INTO search_fts(rowid, title, subtitle, body) VALUES (new.rowid, new.title, new.subtitle, new.body);
END;
