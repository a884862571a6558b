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

-- Append-only: the triggers below refuse UPDATE and DELETE.
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
  request_id TEXT
);
CREATE INDEX audit_org_time ON audit_log(organization_id, created_at);
CREATE INDEX audit_target ON audit_log(target_type, target_id);
CREATE INDEX audit_actor ON audit_log(actor_user_id, created_at);
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
