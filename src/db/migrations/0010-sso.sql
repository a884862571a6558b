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
