-- 0003: TOTP multi-factor (factors, recovery codes, challenges), identity policy, SCIM directories.

-- == mfa ==
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

-- == scim ==
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
