-- svc: the current schema, PostgreSQL 15 edition: the twin of schema.sql at the same version, table by
-- table in the same order (test/db/schema-drift.test.ts compares the two). A new PostgreSQL database
-- gets this file; an existing one is brought here by the steps in src/db/migrations/pg/. The table
-- svc_schema_version records the version (src/db/migrate.ts).
-- Times are ISO 8601 UTC strings; ids are opaque prefixed strings; money is integer minor units.
--
-- Mapping from schema.sql: TEXT -> text, INTEGER -> bigint (every integer, 0/1 flags too: allBig()
-- reads each of them as a bigint, as SQLite's INTEGER), REAL -> double precision, BLOB -> bytea; an
-- INTEGER PRIMARY KEY (a rowid alias) -> an identity column, or a plain key where the one row is
-- always written with id 1. SQLite's triggers are plpgsql trigger functions with the same messages;
-- the FTS5 index search_fts is a plain table with trigram (pg_trgm) indexes, kept in step by the same
-- three triggers. The functions below let the statements of src/ stay the same text on both engines.

-- Text compares by code point (SQLite's BINARY): ISO timestamps compare as text, and lower() folds
-- ASCII only, as SQLite's. So the database must have the C (or POSIX) collation and character type
-- (CREATE DATABASE ... TEMPLATE template0 LC_COLLATE 'C' LC_CTYPE 'C' ENCODING 'UTF8').
DO $$
DECLARE d pg_database%ROWTYPE;
BEGIN
  SELECT * INTO d FROM pg_database WHERE datname = current_database();
  IF d.datcollate NOT IN ('C', 'POSIX') OR d.datctype NOT IN ('C', 'POSIX') OR pg_encoding_to_char(d.encoding) <> 'UTF8' THEN
    RAISE EXCEPTION 'svc needs a UTF8 database with the C collation and character type; % has %, %, %',
      current_database(), pg_encoding_to_char(d.encoding), d.datcollate, d.datctype;
  END IF;
END $$;

-- Trigram indexes for search_fts (trusted: the database owner may create it).
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- svc_sha256(text): lowercase hex SHA-256 of the text's UTF-8 bytes; NULL for NULL (db.ts registers
-- the same function on SQLite; the audit log's hash chain uses it).
CREATE FUNCTION svc_sha256(text) RETURNS text
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  AS $$ SELECT encode(sha256(convert_to($1, 'UTF8')), 'hex') $$;

-- SQLite's ifnull(a, b): coalesce of two. Immutable, so the index workflow_templates_key can use it.
CREATE FUNCTION ifnull(anycompatible, anycompatible) RETURNS anycompatible
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT coalesce($1, $2) $$;

-- SQLite's instr(haystack, needle): the 1-based position of the first occurrence, 0 when absent;
-- NULL when either is NULL.
CREATE FUNCTION instr(text, text) RETURNS integer
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  AS $$ SELECT strpos($1, $2) $$;

-- SQLite's scalar max(a, b) and min(a, b) (the one-argument forms stay PostgreSQL's aggregates): the
-- larger or smaller argument, NULL when either is NULL (GREATEST and LEAST would skip a NULL).
CREATE FUNCTION max(anycompatible, anycompatible) RETURNS anycompatible
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT CASE WHEN $1 IS NULL OR $2 IS NULL THEN NULL WHEN $1 >= $2 THEN $1 ELSE $2 END $$;
CREATE FUNCTION min(anycompatible, anycompatible) RETURNS anycompatible
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT CASE WHEN $1 IS NULL OR $2 IS NULL THEN NULL WHEN $1 <= $2 THEN $1 ELSE $2 END $$;

-- The one trigger function of the refusing triggers (SQLite's RAISE(ABORT, message)): aborts the
-- statement with the message given as the trigger's argument, as an integrity constraint violation
-- (SQLite reports it as a constraint failure too).
CREATE FUNCTION svc_refuse() RETURNS trigger
  LANGUAGE plpgsql
  AS $$ BEGIN RAISE EXCEPTION USING MESSAGE = TG_ARGV[0], ERRCODE = 'integrity_constraint_violation'; END $$;

CREATE TABLE users (
  id text PRIMARY KEY,
  email text NOT NULL,
  email_normalized text NOT NULL UNIQUE,
  name text NOT NULL,
  status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'suspended')),
  is_system_admin bigint NOT NULL DEFAULT 0 CHECK (is_system_admin IN (0, 1)),
  password_hash text,
  password_must_change bigint NOT NULL DEFAULT 0 CHECK (password_must_change IN (0, 1)),
  password_changed_at text,
  mfa_enabled bigint NOT NULL DEFAULT 0 CHECK (mfa_enabled IN (0, 1)),
  last_login_at text,
  created_at text NOT NULL,
  updated_at text NOT NULL
);

CREATE TABLE sessions (
  id text PRIMARY KEY,
  token_hash text NOT NULL UNIQUE,
  user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  kind text NOT NULL CHECK (kind IN ('bearer', 'browser')),
  created_at text NOT NULL,
  last_seen_at text NOT NULL,
  expires_at text NOT NULL,
  revoked_at text,
  revoked_reason text,
  ip text,
  user_agent text,
  organization_id text,
  workspace_id text,
  project_id text
);
CREATE INDEX sessions_user ON sessions(user_id, revoked_at);

CREATE TABLE organizations (
  id text PRIMARY KEY,
  name text NOT NULL,
  time_zone text NOT NULL DEFAULT 'UTC',
  created_at text NOT NULL,
  created_by text
);

-- One per organization, made with it. Money in integer minor units of `currency`.
CREATE TABLE billing_accounts (
  organization_id text PRIMARY KEY REFERENCES organizations(id),
  plan_name text NOT NULL,
  billing_cycle text NOT NULL CHECK (billing_cycle IN ('monthly', 'quarterly', 'annual')),
  currency text NOT NULL,
  base_fee_minor bigint NOT NULL DEFAULT 0,
  seat_unit_price_e4 bigint NOT NULL DEFAULT 0,
  storage_unit_price_e4 bigint NOT NULL DEFAULT 0,
  clip_unit_price_e4 bigint NOT NULL DEFAULT 0,
  seat_limit bigint NOT NULL,
  storage_gb double precision NOT NULL,
  monthly_clip_quota bigint NOT NULL,
  quota_warning_percent double precision NOT NULL,
  local_runner_only bigint NOT NULL DEFAULT 0 CHECK (local_runner_only IN (0, 1)),
  cloud_connectors_require_approval bigint NOT NULL DEFAULT 1 CHECK (cloud_connectors_require_approval IN (0, 1)),
  created_at text NOT NULL,
  updated_at text NOT NULL,
  invoice_prefix text NOT NULL DEFAULT 'INV-',
  next_invoice_number bigint NOT NULL DEFAULT 1
);

CREATE TABLE workspaces (
  id text PRIMARY KEY,
  organization_id text NOT NULL REFERENCES organizations(id),
  name text NOT NULL,
  created_at text NOT NULL,
  created_by text
);
CREATE INDEX workspaces_org ON workspaces(organization_id);

CREATE TABLE projects (
  id text PRIMARY KEY,
  organization_id text NOT NULL REFERENCES organizations(id),
  workspace_id text NOT NULL REFERENCES workspaces(id),
  name text NOT NULL,
  status text NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'active', 'paused', 'in_review', 'archived')),
  template_id text,
  created_at text NOT NULL,
  created_by text,
  updated_at text NOT NULL,
  archived_at text,
  archived_by text,
  archived_from_status text
);
CREATE INDEX projects_workspace ON projects(workspace_id);
CREATE INDEX projects_org ON projects(organization_id);

-- The production hierarchy of a project: series -> season -> episode -> shot. Every row carries its
-- project and tenant ids so that every query can filter by them.
CREATE TABLE series (
  id text PRIMARY KEY,
  organization_id text NOT NULL REFERENCES organizations(id),
  workspace_id text NOT NULL REFERENCES workspaces(id),
  project_id text NOT NULL REFERENCES projects(id),
  title text NOT NULL,
  created_at text NOT NULL
);
CREATE INDEX series_project ON series(project_id);

CREATE TABLE seasons (
  id text PRIMARY KEY,
  organization_id text NOT NULL REFERENCES organizations(id),
  workspace_id text NOT NULL REFERENCES workspaces(id),
  project_id text NOT NULL REFERENCES projects(id),
  series_id text NOT NULL REFERENCES series(id),
  number bigint NOT NULL,
  title text NOT NULL,
  status text NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'in_production', 'review', 'approved', 'delivered')),
  position bigint NOT NULL,
  created_at text NOT NULL,
  updated_at text NOT NULL
);
CREATE INDEX seasons_project ON seasons(project_id, position);

CREATE TABLE episodes (
  id text PRIMARY KEY,
  organization_id text NOT NULL REFERENCES organizations(id),
  workspace_id text NOT NULL REFERENCES workspaces(id),
  project_id text NOT NULL REFERENCES projects(id),
  season_id text NOT NULL REFERENCES seasons(id),
  number bigint NOT NULL,
  title text NOT NULL,
  status text NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'in_production', 'review', 'approved', 'delivered')),
  position bigint NOT NULL,
  created_at text NOT NULL,
  updated_at text NOT NULL
);
CREATE INDEX episodes_project ON episodes(project_id, season_id, position);

CREATE TABLE shots (
  id text PRIMARY KEY,
  organization_id text NOT NULL REFERENCES organizations(id),
  workspace_id text NOT NULL REFERENCES workspaces(id),
  project_id text NOT NULL REFERENCES projects(id),
  episode_id text NOT NULL REFERENCES episodes(id),
  position bigint NOT NULL,
  title text NOT NULL,
  scene_id text,
  description text NOT NULL DEFAULT '',
  prompt text NOT NULL DEFAULT '',
  negative_prompt text NOT NULL DEFAULT '',
  duration_target_ms bigint,
  aspect_ratio text NOT NULL DEFAULT '9:16' CHECK (aspect_ratio IN ('9:16', '16:9', '1:1', '4:5')),
  status text NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'ready', 'generating', 'review', 'approved')),
  created_at text NOT NULL,
  updated_at text NOT NULL
);
CREATE INDEX shots_episode ON shots(project_id, episode_id, position);

-- Generation jobs (filled by the jobs issue; the project lifecycle reads their status).
CREATE TABLE generation_jobs (
  id text PRIMARY KEY,
  organization_id text NOT NULL REFERENCES organizations(id),
  workspace_id text NOT NULL REFERENCES workspaces(id),
  project_id text NOT NULL REFERENCES projects(id),
  shot_id text REFERENCES shots(id),
  kind text NOT NULL,
  status text NOT NULL CHECK (status IN ('queued', 'running', 'blocked', 'failed', 'completed', 'cancelled')),
  connector_id text,
  priority bigint NOT NULL DEFAULT 0,
  attempt bigint NOT NULL DEFAULT 0,
  max_attempts bigint NOT NULL DEFAULT 3,
  depends_on text REFERENCES generation_jobs(id),
  leased_by text,
  leased_at text,
  run_after text,
  input text NOT NULL DEFAULT '{}',
  output text,
  error text,
  created_by text,
  created_at text NOT NULL,
  updated_at text NOT NULL,
  started_at text,
  finished_at text,
  -- External handle of a running call (ComfyUI prompt id, video id) so that a reclaimed job resumes
  -- or re-submits instead of reporting a result it never saw.
  external_ref text,
  -- When the current (or last) attempt was claimed; its job_attempts row is written when it ends.
  attempt_started_at text,
  -- The episode a job works on (a shot's episode, or the episode a compose job cuts).
  episode_id text REFERENCES episodes(id),
  -- The workflow run whose step made the job (that step names it: workflow_run_steps.job_id); NULL
  -- for any other job, whose status changes the trigger workflow_runs_follow_jobs skips.
  workflow_run_id text
);
-- By project in list order; not by status, so that a status change rewrites no entry of it.
CREATE INDEX generation_jobs_project ON generation_jobs(project_id, created_at);

-- Invitations: the token is shown once; only its SHA-256 and a short hint are kept.
CREATE TABLE invitations (
  id text PRIMARY KEY,
  organization_id text NOT NULL REFERENCES organizations(id),
  workspace_id text REFERENCES workspaces(id),
  project_id text REFERENCES projects(id),
  email text NOT NULL,
  email_normalized text NOT NULL,
  role text NOT NULL,
  status text NOT NULL CHECK (status IN ('pending', 'accepted', 'revoked', 'expired')),
  token_hash text UNIQUE,
  token_hint text,
  expires_at text NOT NULL,
  invited_by text,
  created_at text NOT NULL,
  updated_at text NOT NULL,
  accepted_at text,
  accepted_by text,
  revoked_at text,
  revoked_by text
);
CREATE INDEX invitations_org ON invitations(organization_id, status);
CREATE UNIQUE INDEX invitations_one_pending ON invitations(organization_id, email_normalized) WHERE status = 'pending';

-- One row per role a user holds at one level. scope_id is the id of the organization, workspace or
-- project the role applies to; the parent ids are denormalized so every query can filter by tenant.
CREATE TABLE memberships (
  id text PRIMARY KEY,
  user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  level text NOT NULL CHECK (level IN ('organization', 'workspace', 'project')),
  scope_id text NOT NULL,
  organization_id text NOT NULL REFERENCES organizations(id),
  workspace_id text REFERENCES workspaces(id),
  project_id text REFERENCES projects(id),
  role text NOT NULL,
  access_mode text NOT NULL DEFAULT 'full' CHECK (access_mode IN ('full', 'project-only')),
  status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'inactive')),
  created_at text NOT NULL,
  created_by text,
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
  seq bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  id text NOT NULL UNIQUE,
  created_at text NOT NULL,
  actor_type text NOT NULL CHECK (actor_type IN ('user', 'operator', 'system', 'anonymous', 'api_client')),
  actor_user_id text,
  actor_name text,
  organization_id text,
  workspace_id text,
  project_id text,
  action text NOT NULL,
  target_type text,
  target_id text,
  result text NOT NULL CHECK (result IN ('success', 'failure', 'denied')),
  metadata text NOT NULL DEFAULT '{}',
  ip text,
  user_agent text,
  request_id text,
  prev_hash text NOT NULL,
  hash text NOT NULL
);
-- The indexes keep seq order within an organization, a target and an actor (SQLite ends every index
-- with the rowid, seq): the list and the export read newest first without sorting.
CREATE INDEX audit_org_seq ON audit_log(organization_id, seq);
CREATE INDEX audit_target ON audit_log(target_type, target_id);
CREATE INDEX audit_actor ON audit_log(actor_user_id, seq);
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
  FOR EACH ROW EXECUTE FUNCTION svc_refuse('audit_log is append-only');
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
  FOR EACH ROW EXECUTE FUNCTION svc_refuse('audit_log is append-only');
-- TRUNCATE skips DELETE triggers (SQLite has no TRUNCATE): every table whose rows are never deleted
-- refuses it too.
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
  FOR EACH STATEMENT EXECUTE FUNCTION svc_refuse('audit_log is append-only');
-- The head of the chain: seq and hash of the last row (0 and 64 zeros before the first). An append
-- reads it with the row's values (locked on PostgreSQL until the transaction ends), so appends from
-- every connection and process take turns: each chains to the row before it and takes the next seq,
-- without gaps and in commit order. The trigger moves the head to each new row. `svc audit verify`
-- compares its seq with the last row's: a higher one means rows at the end were removed.
CREATE TABLE audit_chain_head (
  id bigint PRIMARY KEY CHECK (id = 1),
  seq bigint NOT NULL,
  hash text NOT NULL
);
INSERT INTO audit_chain_head (id, seq, hash) VALUES (1, 0, '0000000000000000000000000000000000000000000000000000000000000000');
CREATE FUNCTION audit_log_head() RETURNS trigger
  LANGUAGE plpgsql
  AS $$
BEGIN
  UPDATE audit_chain_head SET seq = NEW.seq, hash = NEW.hash WHERE id = 1 AND seq < NEW.seq;
  RETURN NULL;
END $$;
CREATE TRIGGER audit_log_head AFTER INSERT ON audit_log
  FOR EACH ROW EXECUTE FUNCTION audit_log_head();

-- == notifications ==
-- Inbox: one row per recipient of an event (src/notifications/service.ts computes the recipients).
CREATE TABLE notifications (
  id text PRIMARY KEY,
  user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  organization_id text NOT NULL REFERENCES organizations(id),
  workspace_id text REFERENCES workspaces(id),
  project_id text REFERENCES projects(id),
  event_id text NOT NULL,
  category text NOT NULL,
  type text NOT NULL,
  subject text NOT NULL,
  body text,
  link text,
  read_at text,
  created_at text NOT NULL
);
CREATE INDEX notifications_inbox ON notifications(user_id, organization_id, created_at);
CREATE INDEX notifications_unread ON notifications(user_id, organization_id) WHERE read_at IS NULL;

-- A missing row means enabled.
CREATE TABLE notification_preferences (
  user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  organization_id text NOT NULL REFERENCES organizations(id),
  category text NOT NULL,
  enabled bigint NOT NULL CHECK (enabled IN (0, 1)),
  updated_at text NOT NULL,
  PRIMARY KEY (user_id, organization_id, category)
);

-- Organization-level channels: a local JSON-lines log or a Standard Webhooks endpoint. The webhook
-- secret is kept AES-256-GCM encrypted (key file DATA_DIR/notifications/secrets.key); only a hint is shown.
CREATE TABLE notification_channels (
  id text PRIMARY KEY,
  organization_id text NOT NULL REFERENCES organizations(id),
  kind text NOT NULL CHECK (kind IN ('log', 'webhook')),
  url text,
  description text NOT NULL DEFAULT '',
  enabled bigint NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
  categories text NOT NULL DEFAULT '[]',
  secret_encrypted text,
  secret_hint text,
  created_at text NOT NULL,
  created_by text,
  updated_at text NOT NULL,
  CHECK ((kind = 'webhook' AND url IS NOT NULL AND secret_encrypted IS NOT NULL) OR (kind = 'log' AND url IS NULL))
);
CREATE INDEX notification_channels_org ON notification_channels(organization_id);

-- Public destinations an organization's webhooks may reach (private and loopback ones need no entry).
CREATE TABLE notification_allow_list (
  id text PRIMARY KEY,
  organization_id text NOT NULL REFERENCES organizations(id),
  cidr text NOT NULL,
  description text NOT NULL DEFAULT '',
  created_at text NOT NULL,
  created_by text,
  UNIQUE (organization_id, cidr)
);

-- Persistent outbox: one row per event and channel; the id is the webhook-id. A restart keeps it.
CREATE TABLE notification_outbox (
  id text PRIMARY KEY,
  channel_id text NOT NULL REFERENCES notification_channels(id) ON DELETE CASCADE,
  organization_id text NOT NULL REFERENCES organizations(id),
  event_id text NOT NULL,
  category text NOT NULL,
  type text NOT NULL,
  payload text NOT NULL,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts bigint NOT NULL DEFAULT 0,
  next_attempt_at text NOT NULL,
  lease_until text,
  last_attempt_at text,
  last_status_code bigint,
  last_error text,
  delivered_at text,
  created_at text NOT NULL
);
CREATE INDEX notification_outbox_due ON notification_outbox(status, next_attempt_at);
CREATE INDEX notification_outbox_channel ON notification_outbox(channel_id, created_at);

-- == collaboration tasks ==
CREATE TABLE tasks (
  id text PRIMARY KEY,
  organization_id text NOT NULL REFERENCES organizations(id),
  workspace_id text NOT NULL REFERENCES workspaces(id),
  project_id text NOT NULL REFERENCES projects(id),
  title text NOT NULL,
  description text NOT NULL DEFAULT '',
  type text NOT NULL,
  priority text NOT NULL,
  status text NOT NULL CHECK (status IN ('todo', 'in_progress', 'blocked', 'done', 'cancelled')),
  assignee_user_id text REFERENCES users(id),
  due_at text,
  linked_page text,
  created_by text,
  created_at text NOT NULL,
  updated_at text NOT NULL,
  completed_at text
);
CREATE INDEX tasks_project ON tasks(project_id, status, created_at);
CREATE INDEX tasks_assignee ON tasks(project_id, assignee_user_id);

-- == production content ==
-- A shot's references to story bible entries and assets (ids; checked once those tables exist),
-- in the order given.
CREATE TABLE shot_references (
  shot_id text NOT NULL REFERENCES shots(id) ON DELETE CASCADE,
  project_id text NOT NULL REFERENCES projects(id),
  kind text NOT NULL CHECK (kind IN ('bible', 'asset')),
  ref_id text NOT NULL,
  position bigint NOT NULL,
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
  id text PRIMARY KEY,
  organization_id text NOT NULL REFERENCES organizations(id),
  workspace_id text NOT NULL REFERENCES workspaces(id),
  project_id text NOT NULL REFERENCES projects(id),
  document_id text NOT NULL REFERENCES episodes(id),
  revision bigint NOT NULL CHECK (revision >= 1),
  restored_from bigint,
  author_user_id text,
  author_name text NOT NULL,
  created_at text NOT NULL,
  content text NOT NULL,
  content_sha256 text NOT NULL,
  item_count bigint NOT NULL,
  UNIQUE (document_id, revision)
);
CREATE INDEX script_revisions_project ON script_revisions(project_id, document_id, revision);
CREATE TRIGGER script_revisions_no_update BEFORE UPDATE ON script_revisions
  FOR EACH ROW EXECUTE FUNCTION svc_refuse('script revisions are immutable');
CREATE TRIGGER script_revisions_no_delete BEFORE DELETE ON script_revisions
  FOR EACH ROW EXECUTE FUNCTION svc_refuse('script revisions are immutable');
CREATE TRIGGER script_revisions_no_truncate BEFORE TRUNCATE ON script_revisions
  FOR EACH STATEMENT EXECUTE FUNCTION svc_refuse('script revisions are immutable');

CREATE TABLE bible_revisions (
  id text PRIMARY KEY,
  organization_id text NOT NULL REFERENCES organizations(id),
  workspace_id text NOT NULL REFERENCES workspaces(id),
  project_id text NOT NULL REFERENCES projects(id),
  document_id text NOT NULL REFERENCES projects(id),
  revision bigint NOT NULL CHECK (revision >= 1),
  restored_from bigint,
  author_user_id text,
  author_name text NOT NULL,
  created_at text NOT NULL,
  content text NOT NULL,
  content_sha256 text NOT NULL,
  item_count bigint NOT NULL,
  UNIQUE (document_id, revision),
  CHECK (document_id = project_id)
);
CREATE TRIGGER bible_revisions_no_update BEFORE UPDATE ON bible_revisions
  FOR EACH ROW EXECUTE FUNCTION svc_refuse('bible revisions are immutable');
CREATE TRIGGER bible_revisions_no_delete BEFORE DELETE ON bible_revisions
  FOR EACH ROW EXECUTE FUNCTION svc_refuse('bible revisions are immutable');
CREATE TRIGGER bible_revisions_no_truncate BEFORE TRUNCATE ON bible_revisions
  FOR EACH STATEMENT EXECUTE FUNCTION svc_refuse('bible revisions are immutable');


-- == assets ==
-- Assets of a project (image, video, audio, voice, reference, document) and their immutable file
-- versions. A version's file lives at storage_path, relative to the storage root
-- (assets/<first two hex digits>/<sha256>); identical content shares one file.
CREATE TABLE assets (
  id text PRIMARY KEY,
  organization_id text NOT NULL REFERENCES organizations(id),
  workspace_id text NOT NULL REFERENCES workspaces(id),
  project_id text NOT NULL REFERENCES projects(id),
  kind text NOT NULL CHECK (kind IN ('image', 'video', 'audio', 'voice', 'reference', 'document')),
  name text NOT NULL,
  description text NOT NULL DEFAULT '',
  tags text NOT NULL DEFAULT '[]',
  status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'archived')),
  current_version_id text,
  created_by text,
  created_at text NOT NULL,
  updated_at text NOT NULL,
  archived_at text
);
CREATE INDEX assets_project ON assets(project_id, status, created_at);

CREATE TABLE asset_versions (
  id text PRIMARY KEY,
  asset_id text NOT NULL REFERENCES assets(id),
  organization_id text NOT NULL REFERENCES organizations(id),
  workspace_id text NOT NULL REFERENCES workspaces(id),
  project_id text NOT NULL REFERENCES projects(id),
  number bigint NOT NULL,
  file_name text NOT NULL,
  mime_type text NOT NULL,
  declared_mime_type text,
  file_size bigint NOT NULL,
  content_sha256 text NOT NULL,
  storage_path text NOT NULL,
  status text NOT NULL DEFAULT 'ok' CHECK (status IN ('ok', 'corrupt')),
  restored_from_version_id text,
  verified_at text,
  created_by text,
  created_at text NOT NULL,
  UNIQUE (asset_id, number)
);
CREATE INDEX asset_versions_org_path ON asset_versions(organization_id, storage_path);
CREATE INDEX asset_versions_project ON asset_versions(project_id, storage_path);

-- == search ==
-- One row per searchable object, written by the domains through src/search/index.ts in the same
-- transaction as the object. Only chosen display fields are indexed: never endpoints, keys, tokens
-- or storage paths. search_fts holds the indexed text under trigram indexes (kept in step by triggers).
-- rid stands for SQLite's rowid (the key search_fts refers to; an upsert keeps it): the last column,
-- so the others keep schema.sql's order.
CREATE TABLE search_documents (
  doc_key text NOT NULL UNIQUE,
  type text NOT NULL,
  target_id text NOT NULL,
  organization_id text NOT NULL,
  workspace_id text,
  project_id text,
  title text NOT NULL,
  subtitle text NOT NULL DEFAULT '',
  body text NOT NULL DEFAULT '',
  status text NOT NULL DEFAULT '',
  target_tab text NOT NULL,
  updated_at text NOT NULL,
  rid bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY
);
CREATE INDEX search_documents_project ON search_documents(project_id, updated_at);
CREATE INDEX search_documents_org ON search_documents(organization_id, updated_at);
-- SQLite's FTS5 trigram table search_fts (title, subtitle, body), here a plain table keyed by the
-- document's rid with a trigram GIN index on each column (LIKE, ILIKE and similarity searches). Apart
-- from search_documents, as in SQLite, so that a status change rewrites no index entry of the text.
CREATE TABLE search_fts (
  rid bigint PRIMARY KEY,
  title text,
  subtitle text,
  body text
);
CREATE INDEX search_fts_title ON search_fts USING gin (title gin_trgm_ops);
CREATE INDEX search_fts_subtitle ON search_fts USING gin (subtitle gin_trgm_ops);
CREATE INDEX search_fts_body ON search_fts USING gin (body gin_trgm_ops);
CREATE FUNCTION search_documents_sync() RETURNS trigger
  LANGUAGE plpgsql
  AS $$
BEGIN
  IF TG_OP IN ('DELETE', 'UPDATE') THEN
    DELETE FROM search_fts WHERE rid = OLD.rid;
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    INSERT INTO search_fts (rid, title, subtitle, body) VALUES (NEW.rid, NEW.title, NEW.subtitle, NEW.body);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER search_documents_ai AFTER INSERT ON search_documents
  FOR EACH ROW EXECUTE FUNCTION search_documents_sync();
CREATE TRIGGER search_documents_ad AFTER DELETE ON search_documents
  FOR EACH ROW EXECUTE FUNCTION search_documents_sync();
-- Only a change of the indexed text rewrites the search_fts row (a status change does not).
CREATE TRIGGER search_documents_au AFTER UPDATE ON search_documents
  FOR EACH ROW WHEN (OLD.title IS DISTINCT FROM NEW.title OR OLD.subtitle IS DISTINCT FROM NEW.subtitle OR OLD.body IS DISTINCT FROM NEW.body)
  EXECUTE FUNCTION search_documents_sync();

-- == model connectors, jobs, usage, worker ==
-- A registered model service of one organization. capability and protocol are JSON; auth_env is the
-- NAME of an environment variable holding the credential (the credential is never stored).
-- status: pending (not yet probed), ready (probe succeeded; the only status the worker picks up),
-- unreachable (last probe failed), disabled, awaiting_approval (mixed or cloud, not yet approved).
CREATE TABLE model_connectors (
  id text PRIMARY KEY,
  organization_id text NOT NULL REFERENCES organizations(id),
  label text NOT NULL,
  endpoint text NOT NULL,
  kind text NOT NULL CHECK (kind IN ('http-json', 'openai-compatible', 'comfyui')),
  capability text NOT NULL DEFAULT '[]',
  cost_mode text NOT NULL CHECK (cost_mode IN ('local', 'mixed', 'cloud')),
  auth_env text,
  protocol text NOT NULL DEFAULT '{}',
  status text NOT NULL CHECK (status IN ('pending', 'ready', 'unreachable', 'disabled', 'awaiting_approval')),
  approved_by text,
  approved_at text,
  last_probe_at text,
  last_probe_ok bigint,
  last_probe_latency_ms bigint,
  last_probe_status bigint,
  last_probe_error text,
  created_by text,
  created_at text NOT NULL,
  updated_at text NOT NULL
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
  job_id text NOT NULL REFERENCES generation_jobs(id),
  attempt bigint NOT NULL,
  project_id text NOT NULL REFERENCES projects(id),
  mode text NOT NULL CHECK (mode IN ('worker', 'run')),
  runner text NOT NULL,
  started_at text NOT NULL,
  finished_at text,
  outcome text NOT NULL CHECK (outcome IN ('completed', 'retry', 'failed', 'reclaimed', 'cancelled')),
  error text,
  latency_ms bigint,
  PRIMARY KEY (job_id, attempt)
);

-- Metered usage (a completed video job is one clip). One event per job at most.
CREATE TABLE usage_events (
  id text PRIMARY KEY,
  organization_id text NOT NULL REFERENCES organizations(id),
  workspace_id text REFERENCES workspaces(id),
  project_id text REFERENCES projects(id),
  actor_user_id text,
  kind text NOT NULL,
  unit text NOT NULL,
  quantity double precision NOT NULL,
  estimated_cost_e4 bigint NOT NULL,
  currency text NOT NULL,
  cost_center_id text,
  job_id text UNIQUE REFERENCES generation_jobs(id),
  metadata text NOT NULL DEFAULT '{}',
  created_at text NOT NULL,
  event_key text,
  unit_price_e4 bigint NOT NULL DEFAULT 0
);
CREATE INDEX usage_events_org ON usage_events(organization_id, created_at);
CREATE INDEX usage_events_org_kind ON usage_events(organization_id, kind, created_at);

-- The worker's heartbeat and counters, written by the worker thread, read by the API and the CLI.
CREATE TABLE worker_state (
  worker_id text PRIMARY KEY,
  started_at text NOT NULL,
  heartbeat_at text NOT NULL,
  enabled bigint NOT NULL,
  concurrency bigint NOT NULL,
  poll_ms bigint NOT NULL,
  lease_ms bigint NOT NULL,
  running bigint NOT NULL DEFAULT 0,
  stopped_at text,
  last_claimed_at text,
  last_completed_at text,
  last_failed_at text,
  last_reclaimed_at text,
  last_retried_at text,
  last_error text
);

CREATE INDEX generation_jobs_episode ON generation_jobs(episode_id) WHERE episode_id IS NOT NULL;

-- == media ==
-- One row per output file of a completed generation or composition job, written in the job's
-- completing transaction (so a job is never completed without its artifacts, and an artifact never
-- exists for a job that did not complete). Paths are relative to the storage root: storage_path
-- under outputs/<jobId>/, frames under frames/<jobId>/ (an image is its own first and last frame,
-- audio has none). Signatures are 32x32 RGB thumbnails of the first and last frames, for continuity.
CREATE TABLE media_artifacts (
  id text PRIMARY KEY,
  organization_id text NOT NULL REFERENCES organizations(id),
  workspace_id text NOT NULL REFERENCES workspaces(id),
  project_id text NOT NULL REFERENCES projects(id),
  episode_id text REFERENCES episodes(id),
  shot_id text REFERENCES shots(id),
  job_id text NOT NULL REFERENCES generation_jobs(id),
  kind text NOT NULL CHECK (kind IN ('image', 'video', 'audio', 'other')),
  source text NOT NULL CHECK (source IN ('generation', 'composition')),
  storage_path text NOT NULL UNIQUE,
  file_name text NOT NULL,
  mime_type text NOT NULL,
  file_size bigint NOT NULL,
  content_sha256 text NOT NULL,
  duration_ms bigint,
  width bigint,
  height bigint,
  frame_rate text,
  frame_count bigint,
  video_codec text,
  audio_codec text,
  has_video bigint NOT NULL CHECK (has_video IN (0, 1)),
  has_audio bigint NOT NULL CHECK (has_audio IN (0, 1)),
  first_frame_path text,
  first_frame_sha256 text,
  first_frame_size bigint,
  last_frame_path text,
  last_frame_sha256 text,
  last_frame_size bigint,
  first_signature bytea,
  last_signature bytea,
  provenance text NOT NULL DEFAULT '{}',
  created_at text NOT NULL
);
CREATE INDEX media_artifacts_project ON media_artifacts(project_id, created_at);
CREATE INDEX media_artifacts_shot ON media_artifacts(shot_id, kind, created_at) WHERE shot_id IS NOT NULL;
CREATE INDEX media_artifacts_job ON media_artifacts(job_id);

-- An episode cut made by a compose job: its artifact and the inputs joined, in order, with the
-- hashes they had (JSON: [{ position, shotId, artifactId, path, contentSha256, startMs, durationMs, frames }]).
CREATE TABLE media_compositions (
  id text PRIMARY KEY,
  organization_id text NOT NULL REFERENCES organizations(id),
  workspace_id text NOT NULL REFERENCES workspaces(id),
  project_id text NOT NULL REFERENCES projects(id),
  episode_id text NOT NULL REFERENCES episodes(id),
  job_id text NOT NULL UNIQUE REFERENCES generation_jobs(id),
  artifact_id text NOT NULL UNIQUE REFERENCES media_artifacts(id),
  storage_path text NOT NULL,
  width bigint NOT NULL,
  height bigint NOT NULL,
  frame_rate text NOT NULL,
  duration_ms bigint NOT NULL,
  inputs text NOT NULL,
  created_at text NOT NULL
);
CREATE INDEX media_compositions_episode ON media_compositions(episode_id, created_at);

-- How the last frame of one shot's video matches the first frame of the next shot's video
-- (score 0..1, 1 = identical; metrics JSON), computed when either video is registered.
CREATE TABLE media_continuity (
  id text PRIMARY KEY,
  organization_id text NOT NULL REFERENCES organizations(id),
  workspace_id text NOT NULL REFERENCES workspaces(id),
  project_id text NOT NULL REFERENCES projects(id),
  episode_id text NOT NULL REFERENCES episodes(id),
  from_shot_id text NOT NULL REFERENCES shots(id),
  to_shot_id text NOT NULL REFERENCES shots(id),
  from_artifact_id text NOT NULL REFERENCES media_artifacts(id),
  to_artifact_id text NOT NULL REFERENCES media_artifacts(id),
  score double precision NOT NULL,
  metrics text NOT NULL,
  created_at text NOT NULL,
  UNIQUE (from_artifact_id, to_artifact_id)
);
CREATE INDEX media_continuity_to ON media_continuity(to_artifact_id);

-- == identity: mfa ==
-- (tables of TOTP factors, recovery codes, login/enrollment challenges and the identity policy)

-- A user's TOTP factor: pending from set-up until a first code confirms it, then enabled. The secret
-- is AES-256-GCM ciphertext under SVC_MFA_ENCRYPTION_KEY (key_id: fingerprint of that key);
-- last_used_step is the time step of the last accepted code (a code of that step or earlier is refused).
CREATE TABLE mfa_factors (
  user_id text PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
  status text NOT NULL CHECK (status IN ('pending', 'enabled')),
  secret_enc bytea NOT NULL,
  key_id text NOT NULL,
  last_used_step bigint,
  last_used_at text,
  created_at text NOT NULL,
  enabled_at text,
  updated_at text NOT NULL
);

-- One-time recovery codes, stored as SHA-256 of user id and code; used_at set when one is spent.
CREATE TABLE mfa_recovery_codes (
  id text PRIMARY KEY,
  user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  code_hash text NOT NULL,
  created_at text NOT NULL,
  used_at text
);
CREATE UNIQUE INDEX mfa_recovery_codes_user ON mfa_recovery_codes(user_id, code_hash);

-- Login (TOTP after the first factor) and enrollment challenges: the token is stored as SHA-256;
-- valid 5 minutes, single use, locked after 5 consecutive wrong codes.
CREATE TABLE mfa_challenges (
  id text PRIMARY KEY,
  token_hash text NOT NULL UNIQUE,
  user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  purpose text NOT NULL CHECK (purpose IN ('login', 'enrollment')),
  session_kind text NOT NULL CHECK (session_kind IN ('bearer', 'browser')),
  method text NOT NULL,
  failed_attempts bigint NOT NULL DEFAULT 0,
  created_at text NOT NULL,
  expires_at text NOT NULL,
  locked_at text,
  consumed_at text,
  ip text
);
CREATE INDEX mfa_challenges_user ON mfa_challenges(user_id, created_at);
CREATE INDEX mfa_challenges_expiry ON mfa_challenges(expires_at);

-- The identity policy: one row (id 1), absent until first changed (defaults apply). NULL session
-- lifetimes fall back to SVC_SESSION_IDLE_MINUTES / SVC_SESSION_ABSOLUTE_HOURS.
CREATE TABLE identity_policy (
  id bigint PRIMARY KEY CHECK (id = 1),
  mfa_required bigint NOT NULL DEFAULT 0 CHECK (mfa_required IN (0, 1)),
  password_min_length bigint NOT NULL DEFAULT 12 CHECK (password_min_length BETWEEN 8 AND 128),
  password_breached_check bigint NOT NULL DEFAULT 1 CHECK (password_breached_check IN (0, 1)),
  session_idle_minutes bigint CHECK (session_idle_minutes IS NULL OR session_idle_minutes >= 1),
  session_absolute_hours bigint CHECK (session_absolute_hours IS NULL OR session_absolute_hours >= 1),
  updated_at text,
  updated_by text
);

-- Organizations whose active members must use MFA (besides identity_policy.mfa_required for everyone).
CREATE TABLE identity_policy_mfa_organizations (
  organization_id text PRIMARY KEY REFERENCES organizations(id) ON DELETE CASCADE,
  created_at text NOT NULL
);

-- == identity: scim ==
-- (tables of SCIM directories and the users they provision)
-- A SCIM 2.0 directory: an identity provider's provisioning client, bound to one organization. Its
-- bearer token is shown once; only the SHA-256 (token_hash) and a short hint are kept. default_role
-- is the organization role (org_member, org_admin) of the users it provisions, or a workspace role
-- given at default_workspace_id (the users are then org_member at organization level).
CREATE TABLE scim_directories (
  id text PRIMARY KEY,
  organization_id text NOT NULL REFERENCES organizations(id),
  name text NOT NULL,
  default_workspace_id text REFERENCES workspaces(id),
  default_role text NOT NULL,
  status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
  token_hash text NOT NULL UNIQUE,
  token_hint text NOT NULL,
  token_rotated_at text,
  created_by text,
  created_at text NOT NULL,
  updated_at text NOT NULL
);
CREATE INDEX scim_directories_org ON scim_directories(organization_id);

-- The users a directory provisions (its SCIM User resources; the resource id is the user id). A user
-- belongs to at most one directory per organization. user_name_key is the lower-cased userName
-- (unique per directory regardless of case); emails is a JSON array of { value, type, primary }.
-- owns_account: the directory created the account, so the account's name and e-mail follow it.
CREATE TABLE scim_users (
  directory_id text NOT NULL REFERENCES scim_directories(id) ON DELETE CASCADE,
  user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  organization_id text NOT NULL REFERENCES organizations(id),
  user_name text NOT NULL,
  user_name_key text NOT NULL,
  external_id text,
  given_name text,
  family_name text,
  formatted_name text,
  display_name text,
  emails text NOT NULL DEFAULT '[]',
  active bigint NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
  owns_account bigint NOT NULL DEFAULT 0 CHECK (owns_account IN (0, 1)),
  created_at text NOT NULL,
  updated_at text NOT NULL,
  PRIMARY KEY (directory_id, user_id),
  UNIQUE (directory_id, user_name_key),
  UNIQUE (directory_id, external_id),
  UNIQUE (organization_id, user_id)
);
CREATE INDEX scim_users_user ON scim_users(user_id);
-- Workflow templates (global built-in, organization, workspace), their immutable versions, and the
-- runs made from them: one row a step (its job once queued) and one row a quality gate.

CREATE TABLE workflow_templates (
  id text PRIMARY KEY,
  scope text NOT NULL CHECK (scope IN ('global', 'organization', 'workspace')),
  organization_id text REFERENCES organizations(id),
  workspace_id text REFERENCES workspaces(id),
  template_key text NOT NULL,
  version bigint NOT NULL,
  created_by text,
  created_at text NOT NULL,
  updated_at text NOT NULL,
  CHECK ((scope = 'global' AND organization_id IS NULL AND workspace_id IS NULL)
      OR (scope = 'organization' AND organization_id IS NOT NULL AND workspace_id IS NULL)
      OR (scope = 'workspace' AND organization_id IS NOT NULL AND workspace_id IS NOT NULL))
);
CREATE UNIQUE INDEX workflow_templates_key ON workflow_templates(scope, ifnull(organization_id, ''), ifnull(workspace_id, ''), template_key);
CREATE INDEX workflow_templates_org ON workflow_templates(organization_id, template_key);

-- Every create and update writes a version; a version never changes (the trigger refuses it).
CREATE TABLE workflow_template_versions (
  template_id text NOT NULL REFERENCES workflow_templates(id),
  version bigint NOT NULL,
  name text NOT NULL,
  category text NOT NULL,
  status text NOT NULL CHECK (status IN ('draft', 'active', 'archived')),
  description text NOT NULL,
  default_adapter_id text,
  steps text NOT NULL,
  gates text NOT NULL,
  created_by text,
  created_at text NOT NULL,
  PRIMARY KEY (template_id, version)
);
CREATE TRIGGER workflow_template_versions_immutable BEFORE UPDATE ON workflow_template_versions
  FOR EACH ROW EXECUTE FUNCTION svc_refuse('workflow template versions are immutable');

-- A run: plan (no jobs) or queue (one job a step). Its status follows its jobs and gates (the
-- triggers below store it).
CREATE TABLE workflow_runs (
  id text PRIMARY KEY,
  organization_id text NOT NULL REFERENCES organizations(id),
  workspace_id text NOT NULL REFERENCES workspaces(id),
  project_id text NOT NULL REFERENCES projects(id),
  template_id text NOT NULL,
  template_version bigint NOT NULL,
  mode text NOT NULL CHECK (mode IN ('plan', 'queue')),
  status text NOT NULL DEFAULT 'queued'
    CHECK (status IN ('planned', 'queued', 'running', 'blocked', 'awaiting_qa', 'failed', 'completed', 'cancelled')),
  revision bigint NOT NULL DEFAULT 0,
  shot_id text REFERENCES shots(id),
  episode_id text REFERENCES episodes(id),
  adapter_id text,
  priority bigint NOT NULL,
  approve_external bigint NOT NULL CHECK (approve_external IN (0, 1)),
  created_by text,
  created_at text NOT NULL,
  FOREIGN KEY (template_id, template_version) REFERENCES workflow_template_versions(template_id, version)
);
CREATE INDEX workflow_runs_project ON workflow_runs(project_id, created_at);
CREATE INDEX workflow_runs_project_status ON workflow_runs(project_id, status, created_at);

CREATE TABLE workflow_run_steps (
  run_id text NOT NULL REFERENCES workflow_runs(id),
  position bigint NOT NULL,
  step_key text NOT NULL,
  label text NOT NULL,
  job_kind text NOT NULL,
  shot_id text,
  connector_id text,
  job_id text UNIQUE REFERENCES generation_jobs(id),
  preview text NOT NULL,
  blockers text NOT NULL,
  PRIMARY KEY (run_id, position)
);

-- Gates are evaluated by QA; a blocking gate that has not passed holds a run whose jobs completed.
CREATE TABLE workflow_run_gates (
  run_id text NOT NULL REFERENCES workflow_runs(id),
  gate_key text NOT NULL,
  label text NOT NULL,
  blocking bigint NOT NULL CHECK (blocking IN (0, 1)),
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'passed', 'failed')),
  decided_by text,
  decided_at text,
  note text,
  -- The QA run whose measures decided the gate (src/qa/gates.ts); null when undecided or decided by a
  -- person. A later QA run re-decides the gates QA decided, never the ones a person decided.
  qa_run_id text,
  PRIMARY KEY (run_id, gate_key)
);

-- A change to a run's steps, to the status or attempt of one of its jobs or to one of its gates
-- bumps the run's `revision`; the trigger on `revision` stores the run status (first match wins):
-- plan mode -> planned; a step's job failed -> blocked; a step's job cancelled -> cancelled; every
-- job completed -> failed (a blocking gate failed), awaiting_qa (a blocking gate pending) or
-- completed; a job started, running or done -> running; else queued.
-- sum() of a condition cast to integer keeps SQLite's sum(condition) exactly: a step without a job
-- (LEFT JOIN) counts as NULL, and a run without steps sums to NULL (so it is queued, not completed).
CREATE FUNCTION workflow_runs_derive_status() RETURNS trigger
  LANGUAGE plpgsql
  AS $$
BEGIN
  UPDATE workflow_runs SET status = (
    SELECT CASE
      WHEN NEW.mode = 'plan' THEN 'planned'
      WHEN sum((j.status = 'failed')::integer) > 0 THEN 'blocked'
      WHEN sum((j.status = 'cancelled')::integer) > 0 THEN 'cancelled'
      WHEN sum((j.status = 'completed')::integer) = count(*) THEN CASE
        WHEN EXISTS (SELECT 1 FROM workflow_run_gates g WHERE g.run_id = NEW.id AND g.blocking = 1 AND g.status = 'failed') THEN 'failed'
        WHEN EXISTS (SELECT 1 FROM workflow_run_gates g WHERE g.run_id = NEW.id AND g.blocking = 1 AND g.status = 'pending') THEN 'awaiting_qa'
        ELSE 'completed' END
      WHEN sum((j.status IN ('running', 'completed') OR j.attempt > 0)::integer) > 0 THEN 'running'
      ELSE 'queued' END
    FROM workflow_run_steps st LEFT JOIN generation_jobs j ON j.id = st.job_id WHERE st.run_id = NEW.id)
  WHERE id = NEW.id;
  RETURN NULL;
END $$;
CREATE TRIGGER workflow_runs_derive_status AFTER UPDATE OF revision ON workflow_runs
  FOR EACH ROW EXECUTE FUNCTION workflow_runs_derive_status();
CREATE FUNCTION workflow_runs_follow_jobs() RETURNS trigger
  LANGUAGE plpgsql
  AS $$
BEGIN
  UPDATE workflow_runs SET revision = revision + 1 WHERE id = (SELECT st.run_id FROM workflow_run_steps st WHERE st.job_id = NEW.id);
  RETURN NULL;
END $$;
CREATE TRIGGER workflow_runs_follow_jobs AFTER UPDATE OF status, attempt ON generation_jobs
  FOR EACH ROW WHEN (NEW.workflow_run_id IS NOT NULL) EXECUTE FUNCTION workflow_runs_follow_jobs();
-- A step inserted or a gate's status set: the run of NEW.run_id.
CREATE FUNCTION workflow_runs_follow_run_id() RETURNS trigger
  LANGUAGE plpgsql
  AS $$
BEGIN
  UPDATE workflow_runs SET revision = revision + 1 WHERE id = NEW.run_id;
  RETURN NULL;
END $$;
CREATE TRIGGER workflow_runs_follow_steps AFTER INSERT ON workflow_run_steps
  FOR EACH ROW EXECUTE FUNCTION workflow_runs_follow_run_id();
CREATE TRIGGER workflow_runs_follow_gates AFTER UPDATE OF status ON workflow_run_gates
  FOR EACH ROW EXECUTE FUNCTION workflow_runs_follow_run_id();

-- Every change of a billing account: the fields before and after (JSON) and who made it.
CREATE TABLE billing_account_events (
  id text PRIMARY KEY,
  organization_id text NOT NULL REFERENCES organizations(id),
  actor_user_id text,
  actor_name text,
  changed text NOT NULL,
  before text NOT NULL,
  after text NOT NULL,
  created_at text NOT NULL
);
CREATE INDEX billing_account_events_org ON billing_account_events(organization_id, created_at);

-- Cost centers: one per workspace (made with it), more per organization; a budget per billing period.
CREATE TABLE cost_centers (
  id text PRIMARY KEY,
  organization_id text NOT NULL REFERENCES organizations(id),
  workspace_id text UNIQUE REFERENCES workspaces(id),
  code text NOT NULL,
  name text NOT NULL,
  budget_minor bigint,
  created_at text NOT NULL,
  updated_at text NOT NULL,
  UNIQUE (organization_id, code)
);

-- A workspace's own limits within the organization's plan (null: only the organization's applies).
CREATE TABLE workspace_quotas (
  id text PRIMARY KEY,
  organization_id text NOT NULL REFERENCES organizations(id),
  workspace_id text NOT NULL UNIQUE REFERENCES workspaces(id),
  monthly_clip_quota bigint,
  storage_gb double precision,
  created_at text NOT NULL,
  updated_at text NOT NULL
);

-- One notification per threshold crossing: (scope, metric, period, threshold, quota) is recorded once;
-- a changed quota can be crossed again.
CREATE TABLE quota_warnings (
  organization_id text NOT NULL REFERENCES organizations(id),
  workspace_id text NOT NULL DEFAULT '',
  metric text NOT NULL CHECK (metric IN ('clips', 'storage')),
  period text NOT NULL,
  threshold bigint NOT NULL,
  used bigint NOT NULL,
  quota bigint NOT NULL,
  created_at text NOT NULL,
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
  id text PRIMARY KEY,
  organization_id text NOT NULL REFERENCES organizations(id),
  period_start text NOT NULL,
  period_end text NOT NULL,
  status text NOT NULL CHECK (status IN ('draft', 'issued', 'paid', 'overdue', 'void')),
  number text,
  currency text NOT NULL,
  tax_rate text NOT NULL,
  due_days bigint NOT NULL,
  subtotal_minor bigint NOT NULL,
  tax_minor bigint NOT NULL,
  total_minor bigint NOT NULL,
  snapshot text NOT NULL,
  created_by text,
  created_at text NOT NULL,
  updated_at text NOT NULL,
  issued_at text,
  due_at text,
  paid_at text,
  voided_at text,
  UNIQUE (organization_id, period_start, period_end),
  UNIQUE (organization_id, number)
);
CREATE INDEX invoices_org ON invoices(organization_id, period_start);

-- A line: quantity (exact decimal text) x unit price (e4, per price unit) = amount_exact (exact decimal
-- text, minor units), rounded half-up once to amount_minor.
CREATE TABLE invoice_lines (
  invoice_id text NOT NULL REFERENCES invoices(id),
  position bigint NOT NULL,
  kind text NOT NULL,
  description text NOT NULL,
  workspace_id text,
  cost_center_id text,
  quantity text NOT NULL,
  unit text NOT NULL,
  unit_price_e4 bigint NOT NULL,
  price_unit text NOT NULL,
  amount_exact text NOT NULL,
  amount_minor bigint NOT NULL,
  PRIMARY KEY (invoice_id, position)
);
-- An invoice's snapshot and lines never change once generated; only its status moves (and the number
-- is given once, at issue). Invoices are never deleted.
CREATE TRIGGER invoice_lines_immutable BEFORE UPDATE ON invoice_lines
  FOR EACH ROW EXECUTE FUNCTION svc_refuse('invoice lines are immutable');
CREATE TRIGGER invoice_lines_kept BEFORE DELETE ON invoice_lines
  FOR EACH ROW EXECUTE FUNCTION svc_refuse('invoice lines are immutable');
CREATE TRIGGER invoice_lines_no_truncate BEFORE TRUNCATE ON invoice_lines
  FOR EACH STATEMENT EXECUTE FUNCTION svc_refuse('invoice lines are immutable');
-- UPDATE OF fires when a listed column is set, changed or not (as in SQLite).
CREATE TRIGGER invoices_snapshot_immutable BEFORE UPDATE OF organization_id, period_start, period_end, currency, tax_rate, due_days,
  subtotal_minor, tax_minor, total_minor, snapshot, created_at ON invoices
  FOR EACH ROW EXECUTE FUNCTION svc_refuse('an invoice snapshot is immutable');
CREATE TRIGGER invoices_number_once BEFORE UPDATE OF number ON invoices
  FOR EACH ROW WHEN (OLD.number IS NOT NULL AND NEW.number IS DISTINCT FROM OLD.number)
  EXECUTE FUNCTION svc_refuse('an invoice number is given once');
CREATE TRIGGER invoices_kept BEFORE DELETE ON invoices
  FOR EACH ROW EXECUTE FUNCTION svc_refuse('invoices are never deleted');
CREATE TRIGGER invoices_no_truncate BEFORE TRUNCATE ON invoices
  FOR EACH STATEMENT EXECUTE FUNCTION svc_refuse('invoices are never deleted');

CREATE TABLE invoice_events (
  id text PRIMARY KEY,
  invoice_id text NOT NULL REFERENCES invoices(id),
  organization_id text NOT NULL REFERENCES organizations(id),
  action text NOT NULL,
  from_status text,
  to_status text NOT NULL,
  actor_user_id text,
  actor_name text,
  note text,
  created_at text NOT NULL
);
CREATE INDEX invoice_events_invoice ON invoice_events(invoice_id, created_at);
-- Stored files are never deleted as rows (the bound of stored bytes below never falls below the truth).
CREATE TRIGGER asset_versions_no_delete BEFORE DELETE ON asset_versions
  FOR EACH ROW EXECUTE FUNCTION svc_refuse('asset_versions rows are never deleted');
CREATE TRIGGER asset_versions_no_truncate BEFORE TRUNCATE ON asset_versions
  FOR EACH STATEMENT EXECUTE FUNCTION svc_refuse('asset_versions rows are never deleted');
CREATE TRIGGER media_artifacts_no_delete BEFORE DELETE ON media_artifacts
  FOR EACH ROW EXECUTE FUNCTION svc_refuse('media_artifacts rows are never deleted');
CREATE TRIGGER media_artifacts_no_truncate BEFORE TRUNCATE ON media_artifacts
  FOR EACH STATEMENT EXECUTE FUNCTION svc_refuse('media_artifacts rows are never deleted');
-- The bytes of the files stored per organization and workspace ever, each file counted whole (an asset
-- version; a media artifact with its frames), added by the triggers below in the transaction that
-- registers the file: the storage warnings (src/commercial/quotas/warnings.ts) bound a scope's stored
-- bytes from above by an exact count plus what was added since, by whatever connection or process.
CREATE TABLE storage_added (
  organization_id text NOT NULL,
  workspace_id text NOT NULL,
  bytes bigint NOT NULL,
  PRIMARY KEY (organization_id, workspace_id)
);
CREATE FUNCTION asset_versions_added() RETURNS trigger
  LANGUAGE plpgsql
  AS $$
BEGIN
  INSERT INTO storage_added (organization_id, workspace_id, bytes) VALUES (NEW.organization_id, NEW.workspace_id, NEW.file_size)
    ON CONFLICT (organization_id, workspace_id) DO UPDATE SET bytes = storage_added.bytes + excluded.bytes;
  RETURN NULL;
END $$;
CREATE TRIGGER asset_versions_added AFTER INSERT ON asset_versions
  FOR EACH ROW EXECUTE FUNCTION asset_versions_added();
CREATE FUNCTION media_artifacts_added() RETURNS trigger
  LANGUAGE plpgsql
  AS $$
BEGIN
  INSERT INTO storage_added (organization_id, workspace_id, bytes) VALUES (NEW.organization_id, NEW.workspace_id, NEW.file_size + coalesce(NEW.first_frame_size, 0) + coalesce(NEW.last_frame_size, 0))
    ON CONFLICT (organization_id, workspace_id) DO UPDATE SET bytes = storage_added.bytes + excluded.bytes;
  RETURN NULL;
END $$;
CREATE TRIGGER media_artifacts_added AFTER INSERT ON media_artifacts
  FOR EACH ROW EXECUTE FUNCTION media_artifacts_added();

-- System administration: database snapshots (src/system/backups.ts). One row per snapshot file in
-- DATA_DIR/backups/ kept by the retention; the row goes with its file.
CREATE TABLE system_backups (
  id text PRIMARY KEY,
  file_name text NOT NULL UNIQUE,
  size_bytes bigint NOT NULL,
  sha256 text NOT NULL,
  integrity text NOT NULL,
  created_by text,
  created_at text NOT NULL
);
CREATE INDEX system_backups_created ON system_backups(created_at);

-- == review, QA, delivery, export ==
-- Review, QA, delivery and export (src/review, src/qa, src/delivery). Every decision keeps the
-- SHA-256 of the bytes it was made on.

-- A project's delivery spec (JSON, see src/qa/spec.ts): picture size, frame rate, loudness targets.
-- No row: the documented defaults.
CREATE TABLE project_delivery_specs (
  project_id text PRIMARY KEY REFERENCES projects(id),
  organization_id text NOT NULL REFERENCES organizations(id),
  spec text NOT NULL,
  updated_by text,
  updated_at text NOT NULL
);

-- A review request on one artifact (a shot's artifact or an episode cut). artifact_id/artifact_sha256
-- name the artifact currently under review: a newer artifact of the same shot and kind (or a newer cut
-- of the episode) moves the review to it and re-opens it (status reopened, reopen_count + 1).
CREATE TABLE reviews (
  id text PRIMARY KEY,
  organization_id text NOT NULL REFERENCES organizations(id),
  workspace_id text NOT NULL REFERENCES workspaces(id),
  project_id text NOT NULL REFERENCES projects(id),
  target_kind text NOT NULL CHECK (target_kind IN ('shot', 'cut')),
  episode_id text REFERENCES episodes(id),
  shot_id text REFERENCES shots(id),
  artifact_kind text NOT NULL CHECK (artifact_kind IN ('image', 'video', 'audio', 'other')),
  artifact_id text NOT NULL REFERENCES media_artifacts(id),
  artifact_sha256 text NOT NULL,
  title text NOT NULL,
  note text,
  status text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'changes_requested', 'approved', 'reopened', 'withdrawn')),
  reopen_count bigint NOT NULL DEFAULT 0,
  requested_by text,
  created_at text NOT NULL,
  updated_at text NOT NULL
);
CREATE INDEX reviews_project ON reviews(project_id, created_at);
CREATE INDEX reviews_artifact ON reviews(artifact_id);
CREATE INDEX reviews_shot ON reviews(shot_id, artifact_kind) WHERE shot_id IS NOT NULL;
CREATE INDEX reviews_episode_cut ON reviews(episode_id) WHERE target_kind = 'cut';

-- A reviewer's comment, pinned to the artifact (and its hash) it was written on: a time code (ms)
-- or a frame number, and optionally a rectangle on the frame (fractions 0..1 of width and height).
CREATE TABLE review_comments (
  id text PRIMARY KEY,
  review_id text NOT NULL REFERENCES reviews(id),
  artifact_id text NOT NULL REFERENCES media_artifacts(id),
  artifact_sha256 text NOT NULL,
  author_id text,
  body text NOT NULL,
  time_code_ms bigint,
  frame bigint,
  rect_x double precision,
  rect_y double precision,
  rect_width double precision,
  rect_height double precision,
  created_at text NOT NULL
);
CREATE INDEX review_comments_review ON review_comments(review_id, created_at);

-- A decision: approve or request changes, on the exact bytes (artifact id and SHA-256).
CREATE TABLE review_decisions (
  id text PRIMARY KEY,
  review_id text NOT NULL REFERENCES reviews(id),
  artifact_id text NOT NULL REFERENCES media_artifacts(id),
  artifact_sha256 text NOT NULL,
  decision text NOT NULL CHECK (decision IN ('approve', 'request_changes')),
  note text,
  decided_by text,
  created_at text NOT NULL
);
CREATE INDEX review_decisions_review ON review_decisions(review_id, created_at);
CREATE TRIGGER review_decisions_immutable BEFORE UPDATE ON review_decisions
  FOR EACH ROW EXECUTE FUNCTION svc_refuse('review decisions are immutable');

-- A QA run: automated checks over the artifacts of a shot, an episode or the project, with the
-- delivery spec it was measured against. result: fail if any check failed, else warn if any warned,
-- else pass.
CREATE TABLE qa_runs (
  id text PRIMARY KEY,
  organization_id text NOT NULL REFERENCES organizations(id),
  workspace_id text NOT NULL REFERENCES workspaces(id),
  project_id text NOT NULL REFERENCES projects(id),
  target_kind text NOT NULL CHECK (target_kind IN ('shot', 'episode', 'project', 'artifacts')),
  target_id text,
  result text NOT NULL CHECK (result IN ('pass', 'warn', 'fail')),
  spec text NOT NULL,
  summary text NOT NULL,
  artifact_count bigint NOT NULL,
  created_by text,
  started_at text NOT NULL,
  created_at text NOT NULL
);
CREATE INDEX qa_runs_project ON qa_runs(project_id, created_at);

-- One check of one artifact in a QA run, with the measured value (JSON) and what was expected.
-- time_code_ms: where the problem starts (black and frozen stretches), when it has a place.
CREATE TABLE qa_checks (
  run_id text NOT NULL REFERENCES qa_runs(id),
  position bigint NOT NULL,
  artifact_id text NOT NULL REFERENCES media_artifacts(id),
  artifact_sha256 text NOT NULL,
  check_key text NOT NULL,
  blocking bigint NOT NULL CHECK (blocking IN (0, 1)),
  result text NOT NULL CHECK (result IN ('pass', 'warn', 'fail')),
  measured text NOT NULL,
  expected text,
  message text NOT NULL,
  time_code_ms bigint,
  PRIMARY KEY (run_id, position)
);
CREATE INDEX qa_checks_artifact ON qa_checks(artifact_id, artifact_sha256);

-- A delivery: a set of episode cuts (or chosen artifacts) for a client. version rises with each
-- change of the set while draft; approval records every item's hash and freezes it.
CREATE TABLE deliveries (
  id text PRIMARY KEY,
  organization_id text NOT NULL REFERENCES organizations(id),
  workspace_id text NOT NULL REFERENCES workspaces(id),
  project_id text NOT NULL REFERENCES projects(id),
  title text NOT NULL,
  note text,
  status text NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'approved', 'withdrawn')),
  version bigint NOT NULL DEFAULT 1,
  created_by text,
  created_at text NOT NULL,
  updated_at text NOT NULL,
  approved_by text,
  approved_at text
);
CREATE INDEX deliveries_project ON deliveries(project_id, created_at);

-- The items of a delivery's current version, in order, with the artifact's hash when gathered.
CREATE TABLE delivery_items (
  delivery_id text NOT NULL REFERENCES deliveries(id),
  position bigint NOT NULL,
  artifact_id text NOT NULL REFERENCES media_artifacts(id),
  artifact_sha256 text NOT NULL,
  episode_id text REFERENCES episodes(id),
  shot_id text REFERENCES shots(id),
  qa_run_id text REFERENCES qa_runs(id),
  review_id text REFERENCES reviews(id),
  PRIMARY KEY (delivery_id, position),
  UNIQUE (delivery_id, artifact_id)
);

-- A client delivery link: the token is shown once and stored as its SHA-256 only.
CREATE TABLE delivery_links (
  id text PRIMARY KEY,
  delivery_id text NOT NULL REFERENCES deliveries(id),
  organization_id text NOT NULL REFERENCES organizations(id),
  token_hash text NOT NULL UNIQUE,
  label text,
  expires_at text NOT NULL,
  revoked_at text,
  revoked_by text,
  created_by text,
  created_at text NOT NULL,
  last_used_at text,
  download_count bigint NOT NULL DEFAULT 0,
  -- 1: the link also opens the export package of its delivery's version (includeExport at creation).
  allow_export bigint NOT NULL DEFAULT 0
);
CREATE INDEX delivery_links_delivery ON delivery_links(delivery_id, created_at);

-- An export package written under storage/exports/<id>/ (and optionally storage/exports/<id>.tar):
-- one per delivery version.
CREATE TABLE exports (
  id text PRIMARY KEY,
  organization_id text NOT NULL REFERENCES organizations(id),
  workspace_id text NOT NULL REFERENCES workspaces(id),
  project_id text NOT NULL REFERENCES projects(id),
  delivery_id text NOT NULL REFERENCES deliveries(id),
  delivery_version bigint NOT NULL,
  storage_path text NOT NULL,
  archive_path text,
  archive_sha256 text,
  manifest_sha256 text NOT NULL,
  file_count bigint NOT NULL,
  total_bytes bigint NOT NULL,
  created_by text,
  created_at text NOT NULL,
  UNIQUE (delivery_id, delivery_version)
);
CREATE INDEX exports_project ON exports(project_id, created_at);

-- == operations: feature flags, API clients ==
-- System administration: feature flags and API clients (src/system).

-- A named flag's global value (the flag itself is declared in src/system/flags.ts with its default;
-- no row = the declared default) and per-organization values that win over it.
CREATE TABLE feature_flags (
  flag_key text PRIMARY KEY,
  enabled bigint NOT NULL CHECK (enabled IN (0, 1)),
  updated_by text,
  updated_at text NOT NULL
);

CREATE TABLE feature_flag_organizations (
  flag_key text NOT NULL,
  organization_id text NOT NULL REFERENCES organizations(id),
  enabled bigint NOT NULL CHECK (enabled IN (0, 1)),
  updated_by text,
  updated_at text NOT NULL,
  PRIMARY KEY (flag_key, organization_id)
);

-- A service account for an integration: bound to an organization (and optionally one workspace or
-- project of it), holding a chosen set of permissions (JSON array). Its secret is stored as a
-- SHA-256 only (secret_hint: the last characters, for recognition); rotation replaces it.
CREATE TABLE api_clients (
  id text PRIMARY KEY,
  organization_id text NOT NULL REFERENCES organizations(id),
  workspace_id text REFERENCES workspaces(id),
  project_id text REFERENCES projects(id),
  name text NOT NULL,
  permissions text NOT NULL,
  secret_hash text NOT NULL UNIQUE,
  secret_hint text NOT NULL,
  status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'revoked')),
  created_by text,
  created_at text NOT NULL,
  rotated_at text,
  revoked_at text,
  revoked_by text,
  last_used_at text
);
CREATE INDEX api_clients_org ON api_clients(organization_id, created_at);

-- Access tokens obtained with a client's secret (stored as SHA-256). Rotation and revocation delete
-- the client's tokens, so they stop working at once.
CREATE TABLE api_client_tokens (
  token_hash text PRIMARY KEY,
  client_id text NOT NULL REFERENCES api_clients(id),
  expires_at text NOT NULL,
  created_at text NOT NULL
);
CREATE INDEX api_client_tokens_client ON api_client_tokens(client_id);

-- The health probe's write-and-read round trip (src/system/health.ts): one row, rewritten by each probe.
CREATE TABLE system_health_probe (
  id bigint PRIMARY KEY CHECK (id = 1),
  nonce text NOT NULL,
  written_at text NOT NULL
);

-- == identity: single sign-on ==
-- Single sign-on (src/identity/sso): OIDC and SAML 2.0 identity providers, one-time flow states,
-- one-time login tickets and the identities providers vouch for.

-- A sign-in provider bound to an organization (and optionally a workspace, whose members it creates
-- with default_role). config is JSON without secrets: OIDC { issuer, clientId, clientSecretRef,
-- scopes, claimMapping }, SAML { idpEntityId, ssoUrl, idpCertRef, spEntityId, attributeMapping };
-- *Ref fields name environment variables, never values.
CREATE TABLE identity_providers (
  id text PRIMARY KEY,
  kind text NOT NULL CHECK (kind IN ('oidc', 'saml')),
  name text NOT NULL,
  organization_id text NOT NULL REFERENCES organizations(id),
  workspace_id text REFERENCES workspaces(id),
  default_role text NOT NULL,
  status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
  config text NOT NULL,
  created_by text,
  created_at text NOT NULL,
  updated_at text NOT NULL,
  probed_at text,
  probe_status text CHECK (probe_status IS NULL OR probe_status IN ('ok', 'failed')),
  probe_detail text
);
CREATE INDEX identity_providers_org ON identity_providers(organization_id);

-- A flow in progress (an OIDC authorization request, a SAML AuthnRequest): found by the SHA-256 of its
-- handle (the OIDC state, the SAML request id), single use (deleted when taken), short-lived; payload is
-- AES-256-GCM ciphertext under SVC_OIDC_STORAGE_KEY (nonce, PKCE verifier, return path, relay state, the
-- browser binding's hash).
CREATE TABLE sso_states (
  handle_hash text PRIMARY KEY,
  provider_id text NOT NULL REFERENCES identity_providers(id),
  kind text NOT NULL CHECK (kind IN ('oidc', 'saml')),
  payload text NOT NULL,
  created_at text NOT NULL,
  expires_at text NOT NULL
);
CREATE INDEX sso_states_expires ON sso_states(expires_at);

-- A one-time ticket handed to the front end after a provider vouched for a user: its SHA-256 only,
-- valid for 60 seconds, redeemed once for a session (or an MFA challenge). browser_hash: the SHA-256 of
-- the flow cookie of the browser the flow belonged to; when set, only a redemption carrying that cookie
-- succeeds (no login CSRF with a ticket passed to someone else).
CREATE TABLE sso_tickets (
  ticket_hash text PRIMARY KEY,
  user_id text NOT NULL REFERENCES users(id),
  provider_id text NOT NULL REFERENCES identity_providers(id),
  return_to text,
  created_at text NOT NULL,
  expires_at text NOT NULL,
  used_at text,
  browser_hash text
);
CREATE INDEX sso_tickets_expires ON sso_tickets(expires_at);

-- Who a provider says a user is: the provider's subject (OIDC sub, SAML NameID) linked to one user.
CREATE TABLE sso_identities (
  provider_id text NOT NULL REFERENCES identity_providers(id),
  subject text NOT NULL,
  user_id text NOT NULL REFERENCES users(id),
  email text,
  created_at text NOT NULL,
  last_login_at text,
  PRIMARY KEY (provider_id, subject)
);
CREATE INDEX sso_identities_user ON sso_identities(user_id);

-- Attempt limits (src/auth/ratelimit.ts) in the database: each row is one attempt that counts against a
-- limit: reserved before the expensive check (scrypt, TOTP, token lookup) and kept when it failed, or
-- deleted when the outcome releases or clears it. Shared by every process on the database file and kept
-- across restarts. key_hash: SHA-256 of the limited key (an e-mail address, a client address, a client
-- id, a user id), never the key itself. Rows past expires_at_ms are pruned.
CREATE TABLE attempt_limits (
  id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  bucket text NOT NULL,
  key_hash text NOT NULL,
  at_ms bigint NOT NULL,
  expires_at_ms bigint NOT NULL
);
CREATE INDEX attempt_limits_key ON attempt_limits(bucket, key_hash, at_ms);
CREATE INDEX attempt_limits_expires ON attempt_limits(expires_at_ms);

-- Events (src/directory/events.ts): one row per event and subscriber, written in the emitting
-- transaction and marked done in the transaction of its handler. Rows with done_at NULL are pending:
-- dispatched after the emitting commit, and again at server start when a crash or a failing handler
-- left them (attempts counts tries; last_error keeps the latest failure's message). Payloads are ids
-- and plain values, never secrets.
CREATE TABLE event_outbox (
  id text PRIMARY KEY,
  event text NOT NULL,
  subscriber text NOT NULL,
  payload text NOT NULL,
  created_at text NOT NULL,
  attempts bigint NOT NULL DEFAULT 0,
  last_error text,
  done_at text
);
CREATE INDEX event_outbox_pending ON event_outbox(created_at, id) WHERE done_at IS NULL;
