-- svc: the current schema. A new database gets this file; an existing one is brought here by the
-- numbered steps in src/db/migrations/. PRAGMA user_version records the version (src/db/migrate.ts).
-- Times are ISO 8601 UTC strings; ids are opaque prefixed strings; money is integer minor units.

CREATE TABLE users (
  id TEXT PRIMARY KEY,
  email TEXT NOT NULL,
  email_normalized TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'suspended')),
  is_system_admin INTEGER NOT NULL DEFAULT 0 CHECK (is_system_admin IN (0, 1)),
  password_hash TEXT,
  password_must_change INTEGER NOT NULL DEFAULT 0 CHECK (password_must_change IN (0, 1)),
  password_changed_at TEXT,
  mfa_enabled INTEGER NOT NULL DEFAULT 0 CHECK (mfa_enabled IN (0, 1)),
  last_login_at TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);

CREATE TABLE sessions (
  id TEXT PRIMARY KEY,
  token_hash TEXT NOT NULL UNIQUE,
  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  kind TEXT NOT NULL CHECK (kind IN ('bearer', 'browser')),
  created_at TEXT NOT NULL,
  last_seen_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  revoked_at TEXT,
  revoked_reason TEXT,
  ip TEXT,
  user_agent TEXT,
  organization_id TEXT,
  workspace_id TEXT,
  project_id TEXT
);
CREATE INDEX sessions_user ON sessions(user_id, revoked_at);

CREATE TABLE organizations (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  time_zone TEXT NOT NULL DEFAULT 'UTC',
  created_at TEXT NOT NULL,
  created_by TEXT
);

-- One per organization, made with it. Money in integer minor units of `currency`.
CREATE TABLE billing_accounts (
  organization_id TEXT PRIMARY KEY REFERENCES organizations(id),
  plan_name TEXT NOT NULL,
  billing_cycle TEXT NOT NULL CHECK (billing_cycle IN ('monthly', 'quarterly', 'annual')),
  currency TEXT NOT NULL,
  base_fee_minor INTEGER NOT NULL DEFAULT 0,
  seat_unit_price_e4 INTEGER NOT NULL DEFAULT 0,
  storage_unit_price_e4 INTEGER NOT NULL DEFAULT 0,
  clip_unit_price_e4 INTEGER NOT NULL DEFAULT 0,
  seat_limit INTEGER NOT NULL,
  storage_gb REAL NOT NULL,
  monthly_clip_quota INTEGER NOT NULL,
  quota_warning_percent REAL NOT NULL,
  local_runner_only INTEGER NOT NULL DEFAULT 0 CHECK (local_runner_only IN (0, 1)),
  cloud_connectors_require_approval INTEGER NOT NULL DEFAULT 1 CHECK (cloud_connectors_require_approval IN (0, 1)),
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  invoice_prefix TEXT NOT NULL DEFAULT 'INV-',
  next_invoice_number INTEGER NOT NULL DEFAULT 1
);

CREATE TABLE workspaces (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  name TEXT NOT NULL,
  created_at TEXT NOT NULL,
  created_by TEXT
);
CREATE INDEX workspaces_org ON workspaces(organization_id);

CREATE TABLE projects (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  name TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'active', 'paused', 'in_review', 'archived')),
  template_id TEXT,
  created_at TEXT NOT NULL,
  created_by TEXT,
  updated_at TEXT NOT NULL,
  archived_at TEXT,
  archived_by TEXT,
  archived_from_status TEXT
);
CREATE INDEX projects_workspace ON projects(workspace_id);
CREATE INDEX projects_org ON projects(organization_id);

-- The production hierarchy of a project: series -> season -> episode -> shot. Every row carries its
-- project and tenant ids so that every query can filter by them.
CREATE TABLE series (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  project_id TEXT NOT NULL REFERENCES projects(id),
  title TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX series_project ON series(project_id);

CREATE TABLE seasons (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  project_id TEXT NOT NULL REFERENCES projects(id),
  series_id TEXT NOT NULL REFERENCES series(id),
  number INTEGER NOT NULL,
  title TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'in_production', 'review', 'approved', 'delivered')),
  position INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX seasons_project ON seasons(project_id, position);

CREATE TABLE episodes (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  project_id TEXT NOT NULL REFERENCES projects(id),
  season_id TEXT NOT NULL REFERENCES seasons(id),
  number INTEGER NOT NULL,
  title TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'in_production', 'review', 'approved', 'delivered')),
  position INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX episodes_project ON episodes(project_id, season_id, position);

CREATE TABLE shots (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  project_id TEXT NOT NULL REFERENCES projects(id),
  episode_id TEXT NOT NULL REFERENCES episodes(id),
  position INTEGER NOT NULL,
  title TEXT NOT NULL,
  scene_id TEXT,
  description TEXT NOT NULL DEFAULT '',
  prompt TEXT NOT NULL DEFAULT '',
  negative_prompt TEXT NOT NULL DEFAULT '',
  duration_target_ms INTEGER,
  aspect_ratio TEXT NOT NULL DEFAULT '9:16' CHECK (aspect_ratio IN ('9:16', '16:9', '1:1', '4:5')),
  status TEXT NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'ready', 'generating', 'review', 'approved')),
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX shots_episode ON shots(project_id, episode_id, position);

-- Generation jobs (filled by the jobs issue; the project lifecycle reads their status).
CREATE TABLE generation_jobs (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  project_id TEXT NOT NULL REFERENCES projects(id),
  shot_id TEXT REFERENCES shots(id),
  kind TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'blocked', 'failed', 'completed', 'cancelled')),
  connector_id TEXT,
  priority INTEGER NOT NULL DEFAULT 0,
  attempt INTEGER NOT NULL DEFAULT 0,
  max_attempts INTEGER NOT NULL DEFAULT 3,
  depends_on TEXT REFERENCES generation_jobs(id),
  leased_by TEXT,
  leased_at TEXT,
  run_after TEXT,
  input TEXT NOT NULL DEFAULT '{}',
  output TEXT,
  error TEXT,
  created_by TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  started_at TEXT,
  finished_at TEXT,
  -- External handle of a running call (ComfyUI prompt id, video id) so that a reclaimed job resumes
  -- or re-submits instead of reporting a result it never saw.
  external_ref TEXT,
  -- When the current (or last) attempt was claimed; its job_attempts row is written when it ends.
  attempt_started_at TEXT,
  -- The episode a job works on (a shot's episode, or the episode a compose job cuts).
  episode_id TEXT REFERENCES episodes(id),
  -- The workflow run whose step made the job (that step names it: workflow_run_steps.job_id); NULL
  -- for any other job, whose status changes the trigger workflow_runs_follow_jobs skips.
  workflow_run_id TEXT
);
-- By project in list order; not by status, so that a status change rewrites no entry of it.
CREATE INDEX generation_jobs_project ON generation_jobs(project_id, created_at);

-- Invitations: the token is shown once; only its SHA-256 and a short hint are kept.
CREATE TABLE invitations (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  workspace_id TEXT REFERENCES workspaces(id),
  project_id TEXT REFERENCES projects(id),
  email TEXT NOT NULL,
  email_normalized TEXT NOT NULL,
  role TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'accepted', 'revoked', 'expired')),
  token_hash TEXT UNIQUE,
  token_hint TEXT,
  expires_at TEXT NOT NULL,
  invited_by TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  accepted_at TEXT,
  accepted_by TEXT,
  revoked_at TEXT,
  revoked_by TEXT
);
CREATE INDEX invitations_org ON invitations(organization_id, status);
CREATE UNIQUE INDEX invitations_one_pending ON invitations(organization_id, email_normalized) WHERE status = 'pending';

-- One row per role a user holds at one level. scope_id is the id of the organization, workspace or
-- project the role applies to; the parent ids are denormalized so every query can filter by tenant.
CREATE TABLE memberships (
  id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  level TEXT NOT NULL CHECK (level IN ('organization', 'workspace', 'project')),
  scope_id TEXT NOT NULL,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  workspace_id TEXT REFERENCES workspaces(id),
  project_id TEXT REFERENCES projects(id),
  role TEXT NOT NULL,
  access_mode TEXT NOT NULL DEFAULT 'full' CHECK (access_mode IN ('full', 'project-only')),
  status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'inactive')),
  created_at TEXT NOT NULL,
  created_by TEXT,
  UNIQUE (user_id, level, scope_id),
  CHECK ((level = 'organization' AND workspace_id IS NULL AND project_id IS NULL AND scope_id = organization_id)
      OR (level = 'workspace' AND workspace_id IS NOT NULL AND project_id IS NULL AND scope_id = workspace_id)
      OR (level = 'project' AND workspace_id IS NOT NULL AND project_id IS NOT NULL AND scope_id = project_id))
);
CREATE INDEX memberships_user ON memberships(user_id, status);
CREATE INDEX memberships_scope ON memberships(scope_id, status);
CREATE INDEX memberships_org ON memberships(organization_id, level);

-- Append-only: the triggers below refuse UPDATE and DELETE. Tamper evidence: each row carries
-- prev_hash (the hash of the row before it in seq order; 64 zeros for the first row) and
-- hash = lowercase hex SHA-256 of the UTF-8 text json_array(id, created_at, actor_type,
-- actor_user_id, actor_name, organization_id, workspace_id, project_id, action, target_type,
-- target_id, result, metadata, ip, user_agent, request_id, prev_hash), each value a JSON string or
-- null (the same text as JavaScript's JSON.stringify of that array). Rows are appended by one
-- INSERT ... SELECT from the chain's head (audit_chain_head, below) that hashes with svc_sha256()
-- (src/platform/audit/store.ts);
-- `svc audit verify` re-walks the chain. The hash columns stay nullable only so that a row written
-- by hand without them can exist; verify reports such a row as broken.
CREATE TABLE audit_log (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  created_at TEXT NOT NULL,
  actor_type TEXT NOT NULL CHECK (actor_type IN ('user', 'operator', 'system', 'anonymous', 'api_client')),
  actor_user_id TEXT,
  actor_name TEXT,
  organization_id TEXT,
  workspace_id TEXT,
  project_id TEXT,
  action TEXT NOT NULL,
  target_type TEXT,
  target_id TEXT,
  result TEXT NOT NULL CHECK (result IN ('success', 'failure', 'denied')),
  metadata TEXT NOT NULL DEFAULT '{}',
  ip TEXT,
  user_agent TEXT,
  request_id TEXT,
  prev_hash TEXT NOT NULL,
  hash TEXT NOT NULL
);
-- The indexes keep seq order within an organization, a target and an actor (every index ends with
-- the rowid, seq): the list and the export read newest first without sorting.
CREATE INDEX audit_org_seq ON audit_log(organization_id, seq);
CREATE INDEX audit_target ON audit_log(target_type, target_id);
CREATE INDEX audit_actor ON audit_log(actor_user_id, seq);
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
-- The head of the chain: seq and hash of the last row (0 and 64 zeros before the first). An append
-- reads it with the row's values (locked on PostgreSQL until the transaction ends), so appends from
-- every connection and process take turns: each chains to the row before it and takes the next seq,
-- without gaps and in commit order. The trigger moves the head to each new row. `svc audit verify`
-- compares its seq with the last row's: a higher one means rows at the end were removed.
CREATE TABLE audit_chain_head (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  seq INTEGER NOT NULL,
  hash TEXT NOT NULL
);
INSERT INTO audit_chain_head (id, seq, hash) VALUES (1, 0, '0000000000000000000000000000000000000000000000000000000000000000');
CREATE TRIGGER audit_log_head AFTER INSERT ON audit_log
BEGIN UPDATE audit_chain_head SET seq = NEW.seq, hash = NEW.hash WHERE id = 1 AND seq < NEW.seq; END;

-- == notifications ==
-- Inbox: one row per recipient of an event (src/notifications/service.ts computes the recipients).
CREATE TABLE notifications (
  id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  workspace_id TEXT REFERENCES workspaces(id),
  project_id TEXT REFERENCES projects(id),
  event_id TEXT NOT NULL,
  category TEXT NOT NULL,
  type TEXT NOT NULL,
  subject TEXT NOT NULL,
  body TEXT,
  link TEXT,
  read_at TEXT,
  created_at TEXT NOT NULL
);
CREATE INDEX notifications_inbox ON notifications(user_id, organization_id, created_at);
CREATE INDEX notifications_unread ON notifications(user_id, organization_id) WHERE read_at IS NULL;

-- A missing row means enabled.
CREATE TABLE notification_preferences (
  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  category TEXT NOT NULL,
  enabled INTEGER NOT NULL CHECK (enabled IN (0, 1)),
  updated_at TEXT NOT NULL,
  PRIMARY KEY (user_id, organization_id, category)
);

-- Organization-level channels: a local JSON-lines log or a Standard Webhooks endpoint. The webhook
-- secret is kept AES-256-GCM encrypted (key file DATA_DIR/notifications/secrets.key); only a hint is shown.
CREATE TABLE notification_channels (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  kind TEXT NOT NULL CHECK (kind IN ('log', 'webhook')),
  url TEXT,
  description TEXT NOT NULL DEFAULT '',
  enabled INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
  categories TEXT NOT NULL DEFAULT '[]',
  secret_encrypted TEXT,
  secret_hint TEXT,
  created_at TEXT NOT NULL,
  created_by TEXT,
  updated_at TEXT NOT NULL,
  CHECK ((kind = 'webhook' AND url IS NOT NULL AND secret_encrypted IS NOT NULL) OR (kind = 'log' AND url IS NULL))
);
CREATE INDEX notification_channels_org ON notification_channels(organization_id);

-- Public destinations an organization's webhooks may reach (private and loopback ones need no entry).
CREATE TABLE notification_allow_list (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  cidr TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL,
  created_by TEXT,
  UNIQUE (organization_id, cidr)
);

-- Persistent outbox: one row per event and channel; the id is the webhook-id. A restart keeps it.
CREATE TABLE notification_outbox (
  id TEXT PRIMARY KEY,
  channel_id TEXT NOT NULL REFERENCES notification_channels(id) ON DELETE CASCADE,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  event_id TEXT NOT NULL,
  category TEXT NOT NULL,
  type TEXT NOT NULL,
  payload TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at TEXT NOT NULL,
  lease_until TEXT,
  last_attempt_at TEXT,
  last_status_code INTEGER,
  last_error TEXT,
  delivered_at TEXT,
  created_at TEXT NOT NULL
);
CREATE INDEX notification_outbox_due ON notification_outbox(status, next_attempt_at);
CREATE INDEX notification_outbox_channel ON notification_outbox(channel_id, created_at);

-- == collaboration tasks ==
CREATE TABLE tasks (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  project_id TEXT NOT NULL REFERENCES projects(id),
  title TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  type TEXT NOT NULL,
  priority TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('todo', 'in_progress', 'blocked', 'done', 'cancelled')),
  assignee_user_id TEXT REFERENCES users(id),
  due_at TEXT,
  linked_page TEXT,
  created_by TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  completed_at TEXT
);
CREATE INDEX tasks_project ON tasks(project_id, status, created_at);
CREATE INDEX tasks_assignee ON tasks(project_id, assignee_user_id);

-- == production content ==
-- A shot's references to story bible entries and assets (ids; checked once those tables exist),
-- in the order given.
CREATE TABLE shot_references (
  shot_id TEXT NOT NULL REFERENCES shots(id) ON DELETE CASCADE,
  project_id TEXT NOT NULL REFERENCES projects(id),
  kind TEXT NOT NULL CHECK (kind IN ('bible', 'asset')),
  ref_id TEXT NOT NULL,
  position INTEGER NOT NULL,
  PRIMARY KEY (shot_id, kind, ref_id)
);
CREATE INDEX shot_references_ref ON shot_references(project_id, kind, ref_id);
-- A shot's generation history and the removal checks read jobs by shot.
CREATE INDEX generation_jobs_shot ON generation_jobs(shot_id, created_at);

-- == scripts and bible ==
-- Script (one per episode) and story bible (one per project): append-only revisions. The current
-- document is the highest revision; every save or restore inserts revision n+1 with the full
-- content JSON and its SHA-256. Revisions are never changed or removed (triggers refuse it).
CREATE TABLE script_revisions (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  project_id TEXT NOT NULL REFERENCES projects(id),
  document_id TEXT NOT NULL REFERENCES episodes(id),
  revision INTEGER NOT NULL CHECK (revision >= 1),
  restored_from INTEGER,
  author_user_id TEXT,
  author_name TEXT NOT NULL,
  created_at TEXT NOT NULL,
  content TEXT NOT NULL,
  content_sha256 TEXT NOT NULL,
  item_count INTEGER NOT NULL,
  UNIQUE (document_id, revision)
);
CREATE INDEX script_revisions_project ON script_revisions(project_id, document_id, revision);
CREATE TRIGGER script_revisions_no_update BEFORE UPDATE ON script_revisions
BEGIN SELECT RAISE(ABORT, 'script revisions are immutable'); END;
CREATE TRIGGER script_revisions_no_delete BEFORE DELETE ON script_revisions
BEGIN SELECT RAISE(ABORT, 'script revisions are immutable'); END;

CREATE TABLE bible_revisions (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  project_id TEXT NOT NULL REFERENCES projects(id),
  document_id TEXT NOT NULL REFERENCES projects(id),
  revision INTEGER NOT NULL CHECK (revision >= 1),
  restored_from INTEGER,
  author_user_id TEXT,
  author_name TEXT NOT NULL,
  created_at TEXT NOT NULL,
  content TEXT NOT NULL,
  content_sha256 TEXT NOT NULL,
  item_count INTEGER NOT NULL,
  UNIQUE (document_id, revision),
  CHECK (document_id = project_id)
);
CREATE TRIGGER bible_revisions_no_update BEFORE UPDATE ON bible_revisions
BEGIN SELECT RAISE(ABORT, 'bible revisions are immutable'); END;
CREATE TRIGGER bible_revisions_no_delete BEFORE DELETE ON bible_revisions
BEGIN SELECT RAISE(ABORT, 'bible revisions are immutable'); END;


-- == assets ==
-- Assets of a project (image, video, audio, voice, reference, document) and their immutable file
-- versions. A version's file lives at storage_path, relative to the storage root
-- (assets/<first two hex digits>/<sha256>); identical content shares one file.
CREATE TABLE assets (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  project_id TEXT NOT NULL REFERENCES projects(id),
  kind TEXT NOT NULL CHECK (kind IN ('image', 'video', 'audio', 'voice', 'reference', 'document')),
  name TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  tags TEXT NOT NULL DEFAULT '[]',
  status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'archived')),
  current_version_id TEXT,
  created_by TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  archived_at TEXT
);
CREATE INDEX assets_project ON assets(project_id, status, created_at);

CREATE TABLE asset_versions (
  id TEXT PRIMARY KEY,
  asset_id TEXT NOT NULL REFERENCES assets(id),
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  project_id TEXT NOT NULL REFERENCES projects(id),
  number INTEGER NOT NULL,
  file_name TEXT NOT NULL,
  mime_type TEXT NOT NULL,
  declared_mime_type TEXT,
  file_size INTEGER NOT NULL,
  content_sha256 TEXT NOT NULL,
  storage_path TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'ok' CHECK (status IN ('ok', 'corrupt')),
  restored_from_version_id TEXT,
  verified_at TEXT,
  created_by TEXT,
  created_at TEXT NOT NULL,
  UNIQUE (asset_id, number)
);
CREATE INDEX asset_versions_org_path ON asset_versions(organization_id, storage_path);
CREATE INDEX asset_versions_project ON asset_versions(project_id, storage_path);

-- == search ==
-- One row per searchable object, written by the domains through src/search/index.ts in the same
-- transaction as the object. Only chosen display fields are indexed: never endpoints, keys, tokens
-- or storage paths. search_fts is an FTS5 trigram index over it (kept in step by triggers).
CREATE TABLE search_documents (
  doc_key TEXT NOT NULL UNIQUE,
  type TEXT NOT NULL,
  target_id TEXT NOT NULL,
  organization_id TEXT NOT NULL,
  workspace_id TEXT,
  project_id TEXT,
  title TEXT NOT NULL,
  subtitle TEXT NOT NULL DEFAULT '',
  body TEXT NOT NULL DEFAULT '',
  status TEXT NOT NULL DEFAULT '',
  target_tab TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX search_documents_project ON search_documents(project_id, updated_at);
CREATE INDEX search_documents_org ON search_documents(organization_id, updated_at);
CREATE VIRTUAL TABLE search_fts USING fts5(title, subtitle, body, content='search_documents', content_rowid='rowid', tokenize='trigram');
CREATE TRIGGER search_documents_ai AFTER INSERT ON search_documents BEGIN
  INSERT INTO search_fts(rowid, title, subtitle, body) VALUES (new.rowid, new.title, new.subtitle, new.body);
END;
CREATE TRIGGER search_documents_ad AFTER DELETE ON search_documents BEGIN
  INSERT INTO search_fts(search_fts, rowid, title, subtitle, body) VALUES ('delete', old.rowid, old.title, old.subtitle, old.body);
END;
-- Only a change of the indexed text rewrites the FTS entry (a status change does not).
CREATE TRIGGER search_documents_au AFTER UPDATE ON search_documents
WHEN old.title IS NOT new.title OR old.subtitle IS NOT new.subtitle OR old.body IS NOT new.body BEGIN
  INSERT INTO search_fts(search_fts, rowid, title, subtitle, body) VALUES ('delete', old.rowid, old.title, old.subtitle, old.body);
  INSERT INTO search_fts(rowid, title, subtitle, body) VALUES (new.rowid, new.title, new.subtitle, new.body);
END;

-- == model connectors, jobs, usage, worker ==
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
  estimated_cost_e4 INTEGER NOT NULL,
  currency TEXT NOT NULL,
  cost_center_id TEXT,
  job_id TEXT UNIQUE REFERENCES generation_jobs(id),
  metadata TEXT NOT NULL DEFAULT '{}',
  created_at TEXT NOT NULL,
  event_key TEXT,
  unit_price_e4 INTEGER NOT NULL DEFAULT 0
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

CREATE INDEX generation_jobs_episode ON generation_jobs(episode_id) WHERE episode_id IS NOT NULL;

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

-- == identity: mfa ==
-- (tables of TOTP factors, recovery codes, login/enrollment challenges and the identity policy)

-- A user's TOTP factor: pending from set-up until a first code confirms it, then enabled. The secret
-- is AES-256-GCM ciphertext under SVC_MFA_ENCRYPTION_KEY (key_id: fingerprint of that key);
-- last_used_step is the time step of the last accepted code (a code of that step or earlier is refused).
CREATE TABLE mfa_factors (
  user_id TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
  status TEXT NOT NULL CHECK (status IN ('pending', 'enabled')),
  secret_enc BLOB NOT NULL,
  key_id TEXT NOT NULL,
  last_used_step INTEGER,
  last_used_at TEXT,
  created_at TEXT NOT NULL,
  enabled_at TEXT,
  updated_at TEXT NOT NULL
);

-- One-time recovery codes, stored as SHA-256 of user id and code; used_at set when one is spent.
CREATE TABLE mfa_recovery_codes (
  id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  code_hash TEXT NOT NULL,
  created_at TEXT NOT NULL,
  used_at TEXT
);
CREATE UNIQUE INDEX mfa_recovery_codes_user ON mfa_recovery_codes(user_id, code_hash);

-- Login (TOTP after the first factor) and enrollment challenges: the token is stored as SHA-256;
-- valid 5 minutes, single use, locked after 5 consecutive wrong codes.
CREATE TABLE mfa_challenges (
  id TEXT PRIMARY KEY,
  token_hash TEXT NOT NULL UNIQUE,
  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  purpose TEXT NOT NULL CHECK (purpose IN ('login', 'enrollment')),
  session_kind TEXT NOT NULL CHECK (session_kind IN ('bearer', 'browser')),
  method TEXT NOT NULL,
  failed_attempts INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  locked_at TEXT,
  consumed_at TEXT,
  ip TEXT
);
CREATE INDEX mfa_challenges_user ON mfa_challenges(user_id, created_at);
CREATE INDEX mfa_challenges_expiry ON mfa_challenges(expires_at);

-- The identity policy: one row (id 1), absent until first changed (defaults apply). NULL session
-- lifetimes fall back to SVC_SESSION_IDLE_MINUTES / SVC_SESSION_ABSOLUTE_HOURS.
CREATE TABLE identity_policy (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  mfa_required INTEGER NOT NULL DEFAULT 0 CHECK (mfa_required IN (0, 1)),
  password_min_length INTEGER NOT NULL DEFAULT 12 CHECK (password_min_length BETWEEN 8 AND 128),
  password_breached_check INTEGER NOT NULL DEFAULT 1 CHECK (password_breached_check IN (0, 1)),
  session_idle_minutes INTEGER CHECK (session_idle_minutes IS NULL OR session_idle_minutes >= 1),
  session_absolute_hours INTEGER CHECK (session_absolute_hours IS NULL OR session_absolute_hours >= 1),
  updated_at TEXT,
  updated_by TEXT
);

-- Organizations whose active members must use MFA (besides identity_policy.mfa_required for everyone).
CREATE TABLE identity_policy_mfa_organizations (
  organization_id TEXT PRIMARY KEY REFERENCES organizations(id) ON DELETE CASCADE,
  created_at TEXT NOT NULL
);

-- == identity: scim ==
-- (tables of SCIM directories and the users they provision)
-- A SCIM 2.0 directory: an identity provider's provisioning client, bound to one organization. Its
-- bearer token is shown once; only the SHA-256 (token_hash) and a short hint are kept. default_role
-- is the organization role (org_member, org_admin) of the users it provisions, or a workspace role
-- given at default_workspace_id (the users are then org_member at organization level).
CREATE TABLE scim_directories (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  name TEXT NOT NULL,
  default_workspace_id TEXT REFERENCES workspaces(id),
  default_role TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
  token_hash TEXT NOT NULL UNIQUE,
  token_hint TEXT NOT NULL,
  token_rotated_at TEXT,
  created_by TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX scim_directories_org ON scim_directories(organization_id);

-- The users a directory provisions (its SCIM User resources; the resource id is the user id). A user
-- belongs to at most one directory per organization. user_name_key is the lower-cased userName
-- (unique per directory regardless of case); emails is a JSON array of { value, type, primary }.
-- owns_account: the directory created the account, so the account's name and e-mail follow it.
CREATE TABLE scim_users (
  directory_id TEXT NOT NULL REFERENCES scim_directories(id) ON DELETE CASCADE,
  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  user_name TEXT NOT NULL,
  user_name_key TEXT NOT NULL,
  external_id TEXT,
  given_name TEXT,
  family_name TEXT,
  formatted_name TEXT,
  display_name TEXT,
  emails TEXT NOT NULL DEFAULT '[]',
  active INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
  owns_account INTEGER NOT NULL DEFAULT 0 CHECK (owns_account IN (0, 1)),
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (directory_id, user_id),
  UNIQUE (directory_id, user_name_key),
  UNIQUE (directory_id, external_id),
  UNIQUE (organization_id, user_id)
);
CREATE INDEX scim_users_user ON scim_users(user_id);
-- Workflow templates (global built-in, organization, workspace), their immutable versions, and the
-- runs made from them: one row a step (its job once queued) and one row a quality gate.

CREATE TABLE workflow_templates (
  id TEXT PRIMARY KEY,
  scope TEXT NOT NULL CHECK (scope IN ('global', 'organization', 'workspace')),
  organization_id TEXT REFERENCES organizations(id),
  workspace_id TEXT REFERENCES workspaces(id),
  template_key TEXT NOT NULL,
  version INTEGER NOT NULL,
  created_by TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  CHECK ((scope = 'global' AND organization_id IS NULL AND workspace_id IS NULL)
      OR (scope = 'organization' AND organization_id IS NOT NULL AND workspace_id IS NULL)
      OR (scope = 'workspace' AND organization_id IS NOT NULL AND workspace_id IS NOT NULL))
);
CREATE UNIQUE INDEX workflow_templates_key ON workflow_templates(scope, ifnull(organization_id, ''), ifnull(workspace_id, ''), template_key);
CREATE INDEX workflow_templates_org ON workflow_templates(organization_id, template_key);

-- Every create and update writes a version; a version never changes (the trigger refuses it).
CREATE TABLE workflow_template_versions (
  template_id TEXT NOT NULL REFERENCES workflow_templates(id),
  version INTEGER NOT NULL,
  name TEXT NOT NULL,
  category TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('draft', 'active', 'archived')),
  description TEXT NOT NULL,
  default_adapter_id TEXT,
  steps TEXT NOT NULL,
  gates TEXT NOT NULL,
  created_by TEXT,
  created_at TEXT NOT NULL,
  PRIMARY KEY (template_id, version)
);
CREATE TRIGGER workflow_template_versions_immutable BEFORE UPDATE ON workflow_template_versions
BEGIN
  SELECT RAISE(ABORT, 'workflow template versions are immutable');
END;

-- A run: plan (no jobs) or queue (one job a step). Its status follows its jobs and gates (the
-- triggers below store it).
CREATE TABLE workflow_runs (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  project_id TEXT NOT NULL REFERENCES projects(id),
  template_id TEXT NOT NULL,
  template_version INTEGER NOT NULL,
  mode TEXT NOT NULL CHECK (mode IN ('plan', 'queue')),
  status TEXT NOT NULL DEFAULT 'queued'
    CHECK (status IN ('planned', 'queued', 'running', 'blocked', 'awaiting_qa', 'failed', 'completed', 'cancelled')),
  revision INTEGER NOT NULL DEFAULT 0,
  shot_id TEXT REFERENCES shots(id),
  episode_id TEXT REFERENCES episodes(id),
  adapter_id TEXT,
  priority INTEGER NOT NULL,
  approve_external INTEGER NOT NULL CHECK (approve_external IN (0, 1)),
  created_by TEXT,
  created_at TEXT NOT NULL,
  FOREIGN KEY (template_id, template_version) REFERENCES workflow_template_versions(template_id, version)
);
CREATE INDEX workflow_runs_project ON workflow_runs(project_id, created_at);
CREATE INDEX workflow_runs_project_status ON workflow_runs(project_id, status, created_at);

CREATE TABLE workflow_run_steps (
  run_id TEXT NOT NULL REFERENCES workflow_runs(id),
  position INTEGER NOT NULL,
  step_key TEXT NOT NULL,
  label TEXT NOT NULL,
  job_kind TEXT NOT NULL,
  shot_id TEXT,
  connector_id TEXT,
  job_id TEXT UNIQUE REFERENCES generation_jobs(id),
  preview TEXT NOT NULL,
  blockers TEXT NOT NULL,
  PRIMARY KEY (run_id, position)
);

-- Gates are evaluated by QA; a blocking gate that has not passed holds a run whose jobs completed.
CREATE TABLE workflow_run_gates (
  run_id TEXT NOT NULL REFERENCES workflow_runs(id),
  gate_key TEXT NOT NULL,
  label TEXT NOT NULL,
  blocking INTEGER NOT NULL CHECK (blocking IN (0, 1)),
  status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'passed', 'failed')),
  decided_by TEXT,
  decided_at TEXT,
  note TEXT,
  -- The QA run whose measures decided the gate (src/qa/gates.ts); null when undecided or decided by a
  -- person. A later QA run re-decides the gates QA decided, never the ones a person decided.
  qa_run_id TEXT,
  PRIMARY KEY (run_id, gate_key)
);

-- A change to a run's steps, to the status or attempt of one of its jobs or to one of its gates
-- bumps the run's `revision`; the trigger on `revision` stores the run status (first match wins):
-- plan mode -> planned; a step's job failed -> blocked; a step's job cancelled -> cancelled; every
-- job completed -> failed (a blocking gate failed), awaiting_qa (a blocking gate pending) or
-- completed; a job started, running or done -> running; else queued.
CREATE TRIGGER workflow_runs_derive_status AFTER UPDATE OF revision ON workflow_runs
BEGIN
  UPDATE workflow_runs SET status = (
    SELECT CASE
      WHEN NEW.mode = 'plan' THEN 'planned'
      WHEN sum(j.status = 'failed') > 0 THEN 'blocked'
      WHEN sum(j.status = 'cancelled') > 0 THEN 'cancelled'
      WHEN sum(j.status = 'completed') = count(*) THEN CASE
        WHEN EXISTS (SELECT 1 FROM workflow_run_gates g WHERE g.run_id = NEW.id AND g.blocking = 1 AND g.status = 'failed') THEN 'failed'
        WHEN EXISTS (SELECT 1 FROM workflow_run_gates g WHERE g.run_id = NEW.id AND g.blocking = 1 AND g.status = 'pending') THEN 'awaiting_qa'
        ELSE 'completed' END
      WHEN sum(j.status IN ('running', 'completed') OR j.attempt > 0) > 0 THEN 'running'
      ELSE 'queued' END
    FROM workflow_run_steps st LEFT JOIN generation_jobs j ON j.id = st.job_id WHERE st.run_id = NEW.id)
  WHERE id = NEW.id;
END;
CREATE TRIGGER workflow_runs_follow_jobs AFTER UPDATE OF status, attempt ON generation_jobs WHEN NEW.workflow_run_id IS NOT NULL
BEGIN
  UPDATE workflow_runs SET revision = revision + 1 WHERE id = (SELECT st.run_id FROM workflow_run_steps st WHERE st.job_id = NEW.id);
END;
CREATE TRIGGER workflow_runs_follow_steps AFTER INSERT ON workflow_run_steps
BEGIN
  UPDATE workflow_runs SET revision = revision + 1 WHERE id = NEW.run_id;
END;
CREATE TRIGGER workflow_runs_follow_gates AFTER UPDATE OF status ON workflow_run_gates
BEGIN
  UPDATE workflow_runs SET revision = revision + 1 WHERE id = NEW.run_id;
END;

-- Every change of a billing account: the fields before and after (JSON) and who made it.
CREATE TABLE billing_account_events (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  actor_user_id TEXT,
  actor_name TEXT,
  changed TEXT NOT NULL,
  before TEXT NOT NULL,
  after TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX billing_account_events_org ON billing_account_events(organization_id, created_at);

-- Cost centers: one per workspace (made with it), more per organization; a budget per billing period.
CREATE TABLE cost_centers (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  workspace_id TEXT UNIQUE REFERENCES workspaces(id),
  code TEXT NOT NULL,
  name TEXT NOT NULL,
  budget_minor INTEGER,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  UNIQUE (organization_id, code)
);

-- A workspace's own limits within the organization's plan (null: only the organization's applies).
CREATE TABLE workspace_quotas (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  workspace_id TEXT NOT NULL UNIQUE REFERENCES workspaces(id),
  monthly_clip_quota INTEGER,
  storage_gb REAL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);

-- One notification per threshold crossing: (scope, metric, period, threshold, quota) is recorded once;
-- a changed quota can be crossed again.
CREATE TABLE quota_warnings (
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  workspace_id TEXT NOT NULL DEFAULT '',
  metric TEXT NOT NULL CHECK (metric IN ('clips', 'storage')),
  period TEXT NOT NULL,
  threshold INTEGER NOT NULL,
  used INTEGER NOT NULL,
  quota INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY (organization_id, workspace_id, metric, period, threshold, quota)
);

-- Usage events: the exact estimated cost, the cost center, and an idempotency key (the same event
-- recorded twice is stored once).
CREATE UNIQUE INDEX usage_events_key ON usage_events(organization_id, event_key);
-- Storage use counts generated media per organization and workspace (quotas, invoices).
CREATE INDEX media_artifacts_org ON media_artifacts(organization_id, workspace_id);
CREATE INDEX usage_events_org_workspace ON usage_events(organization_id, workspace_id, created_at);
CREATE INDEX usage_events_org_workspace_kind ON usage_events(organization_id, workspace_id, kind, created_at);
-- Clips reserved by video jobs not finished yet (quota checks count them with the month's clips).
CREATE INDEX generation_jobs_pending_video ON generation_jobs(organization_id, workspace_id) WHERE kind = 'video' AND status IN ('queued', 'running', 'blocked');
CREATE INDEX usage_events_org_project ON usage_events(organization_id, project_id, created_at);
CREATE INDEX usage_events_org_user ON usage_events(organization_id, actor_user_id, created_at);
CREATE INDEX usage_events_org_cost_center ON usage_events(organization_id, cost_center_id, created_at);
-- Covering: the usage list's totals by unit are summed from the index alone (src/commercial/usage-store.ts).
CREATE INDEX usage_events_org_unit ON usage_events(organization_id, unit, created_at, quantity, estimated_cost_e4);

-- Invoices: one per organization and period (half-open [period_start, period_end), UTC instants of the
-- organization's local midnights); a draft snapshot with its lines; numbered when issued.
CREATE TABLE invoices (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  period_start TEXT NOT NULL,
  period_end TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('draft', 'issued', 'paid', 'overdue', 'void')),
  number TEXT,
  currency TEXT NOT NULL,
  tax_rate TEXT NOT NULL,
  due_days INTEGER NOT NULL,
  subtotal_minor INTEGER NOT NULL,
  tax_minor INTEGER NOT NULL,
  total_minor INTEGER NOT NULL,
  snapshot TEXT NOT NULL,
  created_by TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  issued_at TEXT,
  due_at TEXT,
  paid_at TEXT,
  voided_at TEXT,
  UNIQUE (organization_id, period_start, period_end),
  UNIQUE (organization_id, number)
);
CREATE INDEX invoices_org ON invoices(organization_id, period_start);

-- A line: quantity (exact decimal text) x unit price (e4, per price unit) = amount_exact (exact decimal
-- text, minor units), rounded half-up once to amount_minor.
CREATE TABLE invoice_lines (
  invoice_id TEXT NOT NULL REFERENCES invoices(id),
  position INTEGER NOT NULL,
  kind TEXT NOT NULL,
  description TEXT NOT NULL,
  workspace_id TEXT,
  cost_center_id TEXT,
  quantity TEXT NOT NULL,
  unit TEXT NOT NULL,
  unit_price_e4 INTEGER NOT NULL,
  price_unit TEXT NOT NULL,
  amount_exact TEXT NOT NULL,
  amount_minor INTEGER NOT NULL,
  PRIMARY KEY (invoice_id, position)
);
-- An invoice's snapshot and lines never change once generated; only its status moves (and the number
-- is given once, at issue). Invoices are never deleted.
CREATE TRIGGER invoice_lines_immutable BEFORE UPDATE ON invoice_lines
BEGIN
  SELECT RAISE(ABORT, 'invoice lines are immutable');
END;
CREATE TRIGGER invoice_lines_kept BEFORE DELETE ON invoice_lines
BEGIN
  SELECT RAISE(ABORT, 'invoice lines are immutable');
END;
CREATE TRIGGER invoices_snapshot_immutable BEFORE UPDATE OF organization_id, period_start, period_end, currency, tax_rate, due_days,
  subtotal_minor, tax_minor, total_minor, snapshot, created_at ON invoices
BEGIN
  SELECT RAISE(ABORT, 'an invoice snapshot is immutable');
END;
CREATE TRIGGER invoices_number_once BEFORE UPDATE OF number ON invoices WHEN OLD.number IS NOT NULL AND NEW.number IS NOT OLD.number
BEGIN
  SELECT RAISE(ABORT, 'an invoice number is given once');
END;
CREATE TRIGGER invoices_kept BEFORE DELETE ON invoices
BEGIN
  SELECT RAISE(ABORT, 'invoices are never deleted');
END;

CREATE TABLE invoice_events (
  id TEXT PRIMARY KEY,
  invoice_id TEXT NOT NULL REFERENCES invoices(id),
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  action TEXT NOT NULL,
  from_status TEXT,
  to_status TEXT NOT NULL,
  actor_user_id TEXT,
  actor_name TEXT,
  note TEXT,
  created_at TEXT NOT NULL
);
CREATE INDEX invoice_events_invoice ON invoice_events(invoice_id, created_at);
-- Stored files are never deleted as rows (the bound of stored bytes below never falls below the truth).
CREATE TRIGGER asset_versions_no_delete BEFORE DELETE ON asset_versions
BEGIN SELECT RAISE(ABORT, 'asset_versions rows are never deleted'); END;
CREATE TRIGGER media_artifacts_no_delete BEFORE DELETE ON media_artifacts
BEGIN SELECT RAISE(ABORT, 'media_artifacts rows are never deleted'); END;
-- The bytes of the files stored per organization and workspace ever, each file counted whole (an asset
-- version; a media artifact with its frames), added by the triggers below in the transaction that
-- registers the file: the storage warnings (src/commercial/quotas/warnings.ts) bound a scope's stored
-- bytes from above by an exact count plus what was added since, by whatever connection or process.
CREATE TABLE storage_added (
  organization_id TEXT NOT NULL,
  workspace_id TEXT NOT NULL,
  bytes INTEGER NOT NULL,
  PRIMARY KEY (organization_id, workspace_id)
);
CREATE TRIGGER asset_versions_added AFTER INSERT ON asset_versions
BEGIN
  INSERT INTO storage_added (organization_id, workspace_id, bytes) VALUES (NEW.organization_id, NEW.workspace_id, NEW.file_size)
    ON CONFLICT (organization_id, workspace_id) DO UPDATE SET bytes = storage_added.bytes + excluded.bytes;
END;
CREATE TRIGGER media_artifacts_added AFTER INSERT ON media_artifacts
BEGIN
  INSERT INTO storage_added (organization_id, workspace_id, bytes) VALUES (NEW.organization_id, NEW.workspace_id, NEW.file_size + coalesce(NEW.first_frame_size, 0) + coalesce(NEW.last_frame_size, 0))
    ON CONFLICT (organization_id, workspace_id) DO UPDATE SET bytes = storage_added.bytes + excluded.bytes;
END;

-- System administration: database snapshots (src/system/backups.ts). One row per snapshot file in
-- DATA_DIR/backups/ kept by the retention; the row goes with its file.
CREATE TABLE system_backups (
  id TEXT PRIMARY KEY,
  file_name TEXT NOT NULL UNIQUE,
  size_bytes INTEGER NOT NULL,
  sha256 TEXT NOT NULL,
  integrity TEXT NOT NULL,
  created_by TEXT,
  created_at TEXT NOT NULL
);
CREATE INDEX system_backups_created ON system_backups(created_at);

-- == review, QA, delivery, export ==
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
  download_count INTEGER NOT NULL DEFAULT 0,
  -- 1: the link also opens the export package of its delivery's version (includeExport at creation).
  allow_export INTEGER NOT NULL DEFAULT 0
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

-- == operations: feature flags, API clients ==
-- System administration: feature flags and API clients (src/system).

-- A named flag's global value (the flag itself is declared in src/system/flags.ts with its default;
-- no row = the declared default) and per-organization values that win over it.
CREATE TABLE feature_flags (
  flag_key TEXT PRIMARY KEY,
  enabled INTEGER NOT NULL CHECK (enabled IN (0, 1)),
  updated_by TEXT,
  updated_at TEXT NOT NULL
);

CREATE TABLE feature_flag_organizations (
  flag_key TEXT NOT NULL,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  enabled INTEGER NOT NULL CHECK (enabled IN (0, 1)),
  updated_by TEXT,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (flag_key, organization_id)
);

-- A service account for an integration: bound to an organization (and optionally one workspace or
-- project of it), holding a chosen set of permissions (JSON array). Its secret is stored as a
-- SHA-256 only (secret_hint: the last characters, for recognition); rotation replaces it.
CREATE TABLE api_clients (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  workspace_id TEXT REFERENCES workspaces(id),
  project_id TEXT REFERENCES projects(id),
  name TEXT NOT NULL,
  permissions TEXT NOT NULL,
  secret_hash TEXT NOT NULL UNIQUE,
  secret_hint TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'revoked')),
  created_by TEXT,
  created_at TEXT NOT NULL,
  rotated_at TEXT,
  revoked_at TEXT,
  revoked_by TEXT,
  last_used_at TEXT
);
CREATE INDEX api_clients_org ON api_clients(organization_id, created_at);

-- Access tokens obtained with a client's secret (stored as SHA-256). Rotation and revocation delete
-- the client's tokens, so they stop working at once.
CREATE TABLE api_client_tokens (
  token_hash TEXT PRIMARY KEY,
  client_id TEXT NOT NULL REFERENCES api_clients(id),
  expires_at TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX api_client_tokens_client ON api_client_tokens(client_id);

-- The health probe's write-and-read round trip (src/system/health.ts): one row, rewritten by each probe.
CREATE TABLE system_health_probe (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  nonce TEXT NOT NULL,
  written_at TEXT NOT NULL
);

-- == identity: single sign-on ==
-- Single sign-on (src/identity/sso): OIDC and SAML 2.0 identity providers, one-time flow states,
-- one-time login tickets and the identities providers vouch for.

-- A sign-in provider bound to an organization (and optionally a workspace, whose members it creates
-- with default_role). config is JSON without secrets: OIDC { issuer, clientId, clientSecretRef,
-- scopes, claimMapping }, SAML { idpEntityId, ssoUrl, idpCertRef, spEntityId, attributeMapping };
-- *Ref fields name environment variables, never values.
CREATE TABLE identity_providers (
  id TEXT PRIMARY KEY,
  kind TEXT NOT NULL CHECK (kind IN ('oidc', 'saml')),
  name TEXT NOT NULL,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  workspace_id TEXT REFERENCES workspaces(id),
  default_role TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
  config TEXT NOT NULL,
  created_by TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  probed_at TEXT,
  probe_status TEXT CHECK (probe_status IS NULL OR probe_status IN ('ok', 'failed')),
  probe_detail TEXT
);
CREATE INDEX identity_providers_org ON identity_providers(organization_id);

-- A flow in progress (an OIDC authorization request, a SAML AuthnRequest): found by the SHA-256 of its
-- handle (the OIDC state, the SAML request id), single use (deleted when taken), short-lived; payload is
-- AES-256-GCM ciphertext under SVC_OIDC_STORAGE_KEY (nonce, PKCE verifier, return path, relay state, the
-- browser binding's hash).
CREATE TABLE sso_states (
  handle_hash TEXT PRIMARY KEY,
  provider_id TEXT NOT NULL REFERENCES identity_providers(id),
  kind TEXT NOT NULL CHECK (kind IN ('oidc', 'saml')),
  payload TEXT NOT NULL,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL
);
CREATE INDEX sso_states_expires ON sso_states(expires_at);

-- A one-time ticket handed to the front end after a provider vouched for a user: its SHA-256 only,
-- valid for 60 seconds, redeemed once for a session (or an MFA challenge). browser_hash: the SHA-256 of
-- the flow cookie of the browser the flow belonged to; when set, only a redemption carrying that cookie
-- succeeds (no login CSRF with a ticket passed to someone else).
CREATE TABLE sso_tickets (
  ticket_hash TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users(id),
  provider_id TEXT NOT NULL REFERENCES identity_providers(id),
  return_to TEXT,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  used_at TEXT,
  browser_hash TEXT
);
CREATE INDEX sso_tickets_expires ON sso_tickets(expires_at);

-- Who a provider says a user is: the provider's subject (OIDC sub, SAML NameID) linked to one user.
CREATE TABLE sso_identities (
  provider_id TEXT NOT NULL REFERENCES identity_providers(id),
  subject TEXT NOT NULL,
  user_id TEXT NOT NULL REFERENCES users(id),
  email TEXT,
  created_at TEXT NOT NULL,
  last_login_at TEXT,
  PRIMARY KEY (provider_id, subject)
);
CREATE INDEX sso_identities_user ON sso_identities(user_id);

-- Attempt limits (src/auth/ratelimit.ts) in the database: each row is one attempt that counts against a
-- limit: reserved before the expensive check (scrypt, TOTP, token lookup) and kept when it failed, or
-- deleted when the outcome releases or clears it. Shared by every process on the database file and kept
-- across restarts. key_hash: SHA-256 of the limited key (an e-mail address, a client address, a client
-- id, a user id), never the key itself. Rows past expires_at_ms are pruned.
CREATE TABLE attempt_limits (
  id INTEGER PRIMARY KEY,
  bucket TEXT NOT NULL,
  key_hash TEXT NOT NULL,
  at_ms INTEGER NOT NULL,
  expires_at_ms INTEGER NOT NULL
);
CREATE INDEX attempt_limits_key ON attempt_limits(bucket, key_hash, at_ms);
CREATE INDEX attempt_limits_expires ON attempt_limits(expires_at_ms);

-- Events (src/directory/events.ts): one row per event and subscriber, written in the emitting
-- transaction and marked done in the transaction of its handler. Rows with done_at NULL are pending:
-- dispatched after the emitting commit, and again at server start when a crash or a failing handler
-- left them (attempts counts tries; last_error keeps the latest failure's message). Payloads are ids
-- and plain values, never secrets.
CREATE TABLE event_outbox (
  id TEXT PRIMARY KEY,
  event TEXT NOT NULL,
  subscriber TEXT NOT NULL,
  payload TEXT NOT NULL,
  created_at TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  last_error TEXT,
  done_at TEXT
);
CREATE INDEX event_outbox_pending ON event_outbox(created_at, id) WHERE done_at IS NULL;
