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
