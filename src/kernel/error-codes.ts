// The catalogue of error codes: every `code` of the contract's error body { "error": { "code",
// "message", "details"? } } that the service answers, or that `svc` prints with --json, with the
// HTTP statuses it comes with and what it means to a client. `ErrorCode` is its key type: AppError,
// its factories (src/kernel/errors.ts) and CliError accept nothing else, so a code that is not here
// fails the type-check; forbidden(), conflict() and the helpers that take a status accept only the
// codes listed with that status (ErrorCodeWithStatus). docs/errors.md is generated from it (npm run docs:errors), and
// test/kernel/error-codes.test.ts keeps both in step with the sources.
// SCIM errors (src/identity/scim/errors.ts) have no code: RFC 7644 gives them a scimType instead.

/** Where a code is met, the section of docs/errors.md it is listed under. */
export type ErrorArea =
  | 'request'
  | 'access'
  | 'sign-in'
  | 'mfa'
  | 'sso'
  | 'api-clients'
  | 'organizations'
  | 'commercial'
  | 'production'
  | 'generation'
  | 'finishing'
  | 'platform'
  | 'system'
  | 'cli';

export interface ErrorEntry {
  readonly area: ErrorArea;
  /** The HTTP statuses the code is answered with; none for what only the command line reports. */
  readonly status: readonly number[];
  /** What happened and what to do, for an API client. */
  readonly meaning: string;
}

export const ERROR_AREAS: Readonly<Record<ErrorArea, string>> = {
  request: 'Any request: transport, body and route',
  access: 'Access: sessions, permissions and scope',
  'sign-in': 'Sign-in, accounts and invitations',
  mfa: 'Multi-factor authentication',
  sso: 'Single sign-on (OIDC and SAML)',
  'api-clients': 'API clients (OAuth 2.0 client credentials)',
  organizations: 'Organizations and members',
  commercial: 'Billing, quotas and invoices',
  production: 'Projects, catalog, scripts and assets',
  generation: 'Connectors, jobs, worker and workflows',
  finishing: 'Review, delivery and export',
  platform: 'Notifications and feature flags',
  system: 'Storage and system administration',
  cli: 'Command line only (svc ... --json)',
};

// A table, one code a line (Prettier would spread most entries over several lines).
// prettier-ignore
export const ERROR_CODES = {
  // Any request
  bad_request: { area: 'request', status: [400], meaning: 'The request is not valid HTTP/1.1; the connection is closed. Fix the client or proxy that sent it.' },
  client_closed_request: { area: 'request', status: [499], meaning: 'The client closed the connection before its request body was complete; nothing was written. Only the access log shows it.' },
  headers_too_large: { area: 'request', status: [431], meaning: 'The request line and headers exceed 16 KiB; send a shorter URL or fewer headers.' },
  internal_error: { area: 'request', status: [500], meaning: 'An unexpected failure; the request id (x-request-id) identifies it in the service log. Retry, or report it with the request id.' },
  invalid_json: { area: 'request', status: [400], meaning: 'The request body is not valid JSON; send a JSON document.' },
  method_not_allowed: { area: 'request', status: [405], meaning: 'The path exists but not with this method; details.allow and the Allow header name the methods it takes.' },
  not_found: { area: 'request', status: [404], meaning: 'No such route, or no such record visible to you in the current scope; check the path and its ids.' },
  payload_too_large: { area: 'request', status: [413], meaning: 'The request body or upload exceeds details.limit bytes (SVC_MAX_UPLOAD_BYTES for uploads); send less.' },
  rate_limited: { area: 'request', status: [429], meaning: 'Too many attempts from this address or for this account; wait details.retryAfterSeconds (the Retry-After header) before trying again.' },
  request_timeout: { area: 'request', status: [408], meaning: 'The request or its headers were not received in time; the connection is closed. Send the request again.' },
  unsupported_media_type: { area: 'request', status: [415], meaning: 'The body\'s Content-Type is not one the route takes (JSON, a form, or multipart/form-data with a boundary); send the named type.' },
  validation_failed: { area: 'request', status: [422], meaning: 'The input is not valid; details.fields names each wrong field and why. Correct those fields and send again.' },

  // Access
  browser_session_required: { area: 'access', status: [403], meaning: 'The route accepts only a browser session (the session cookie), not a Bearer token; call it from the console.' },
  no_session: { area: 'access', status: [409], meaning: 'Only a session has a current scope to change; an API token names its scope per request.' },
  origin_forbidden: { area: 'access', status: [403], meaning: 'A state-changing request with a cookie session came without an Origin of the service or its front end; send it from the console, or use a Bearer token.' },
  organization_forbidden: { area: 'access', status: [403], meaning: 'The organization\'s commercial records (billing, invoices, usage) are not accessible to you; ask one of its owners.' },
  password_change_required: { area: 'access', status: [403], meaning: 'The account has a one-time password; change it with POST /api/auth/password before anything else.' },
  permission_denied: { area: 'access', status: [403], meaning: 'You lack the permission the action needs (details.permission when one is named); ask an administrator of the scope for a role that has it.' },
  scope_forbidden: { area: 'access', status: [403], meaning: 'The organization, workspace or project asked for is not accessible to you; choose a scope you belong to.' },
  unauthenticated: { area: 'access', status: [401], meaning: 'No valid session or token came with the request; log in (or obtain a token) and send it again.' },

  // Sign-in, accounts and invitations
  account_suspended: { area: 'sign-in', status: [403], meaning: 'The account is suspended; its sessions were ended. Contact your administrator.' },
  cannot_suspend_self: { area: 'sign-in', status: [409], meaning: 'You cannot suspend your own account; another administrator must.' },
  email_already_registered: { area: 'sign-in', status: [409], meaning: 'An account with this e-mail address exists; log in, or use another address.' },
  invalid_credentials: { area: 'sign-in', status: [401], meaning: 'The e-mail address or password is wrong; try again (repeated failures are rate limited).' },
  invitation_already_pending: { area: 'sign-in', status: [409], meaning: 'An invitation for that e-mail address is pending (details.invitationId); resend or revoke it instead.' },
  invitation_email_mismatch: { area: 'sign-in', status: [403], meaning: 'The invitation was sent to another e-mail address; accept it signed in as that address.' },
  invitation_expired: { area: 'sign-in', status: [410], meaning: 'The invitation has expired; ask the organization for a new one.' },
  invitation_not_found: { area: 'sign-in', status: [404], meaning: 'No invitation has that token (it may have been resent, revoked or used); ask for a new one.' },
  invitation_not_pending: { area: 'sign-in', status: [409], meaning: 'The invitation is no longer pending (details.status: accepted, revoked or expired); nothing to do with it.' },
  invitation_recipient_already_member: { area: 'sign-in', status: [409], meaning: 'That e-mail address already belongs to a member of the organization; no invitation is needed.' },
  last_system_admin: { area: 'sign-in', status: [409], meaning: 'The account is the last active system administrator; grant the identity to another account first.' },
  only_organization_owner: { area: 'sign-in', status: [409], meaning: 'The user is the only active owner of the organizations in details.organizationIds; make someone else org_owner first.' },

  // Multi-factor authentication
  mfa_already_enabled: { area: 'mfa', status: [409], meaning: 'TOTP is already enabled for the account; disable it first, or log in with a code.' },
  mfa_challenge_expired: { area: 'mfa', status: [401], meaning: 'The MFA challenge has expired (5 minutes); log in again.' },
  mfa_challenge_invalid: { area: 'mfa', status: [401], meaning: 'The MFA challenge token is unknown or already used, or MFA was turned off meanwhile; log in again.' },
  mfa_challenge_locked: { area: 'mfa', status: [401], meaning: 'Too many wrong codes locked the MFA challenge; log in again.' },
  mfa_code_invalid: { area: 'mfa', status: [401], meaning: 'The code is wrong, expired or already used; details.attemptsLeft says how many tries the challenge has left.' },
  mfa_not_enabled: { area: 'mfa', status: [409], meaning: 'TOTP is not enabled for the account; there is nothing to disable or regenerate.' },
  mfa_required_by_policy: { area: 'mfa', status: [409], meaning: 'The identity policy requires MFA for the account; it cannot be turned off.' },
  mfa_setup_required: { area: 'mfa', status: [409], meaning: 'No authenticator is set up yet; call the setup route the message names first.' },

  // Single sign-on
  email_not_verified: { area: 'sso', status: [401], meaning: 'The OIDC provider marks the e-mail address unverified; verify it at the provider and sign in again.' },
  invalid_callback: { area: 'sso', status: [400], meaning: 'The OIDC callback lacks its state or code parameter; start the sign-in again.' },
  invalid_id_token: { area: 'sso', status: [401], meaning: 'The provider\'s ID token failed verification (signature, nonce, audience or subject); sign in again, or check the provider\'s configuration.' },
  invalid_state: { area: 'sso', status: [401], meaning: 'The OIDC state is unknown, used or expired; start the sign-in again.' },
  invalid_ticket: { area: 'sso', status: [401], meaning: 'The sign-in ticket is unknown, used or expired; sign in again.' },
  issuer_mismatch: { area: 'sso', status: [401], meaning: 'The callback\'s iss differs from the configured provider; check the provider\'s issuer.' },
  provider_error: { area: 'sso', status: [401], meaning: 'The OIDC provider answered with an error instead of a code; see the provider, then sign in again.' },
  provider_unavailable: { area: 'sso', status: [401], meaning: 'The OIDC provider of the flow is missing, disabled or not OIDC; ask an administrator.' },
  saml_response_invalid: { area: 'sso', status: [400], meaning: 'The SAML response is malformed (exactly one SAMLResponse, a valid document); start the sign-in again from the service.' },
  saml_response_rejected: { area: 'sso', status: [401], meaning: 'The SAML response failed verification (signature, audience, time, InResponseTo or relay state); sign in again, or check the provider\'s configuration.' },
  sso_browser_mismatch: { area: 'sso', status: [401], meaning: 'The sign-in finished in a browser that did not start it (flow cookie missing or different); sign in again in one browser.' },
  sso_email_missing: { area: 'sso', status: [401], meaning: 'The provider gave no e-mail address for a first sign-in; configure it to release one.' },
  sso_failed: { area: 'sso', status: [401], meaning: 'Single sign-on failed (no usable subject, unknown provider, or the linked account is gone); sign in again or ask an administrator.' },
  sso_link_refused: { area: 'sso', status: [401], meaning: 'This account may not be linked to a sign-in provider (for example a service administrator); sign in with a password.' },
  sso_not_configured: { area: 'sso', status: [409], meaning: 'Single sign-on lacks a setting (details.variable: SVC_PUBLIC_URL, SVC_OIDC_REDIRECT_URI or a secret the provider names); an operator must set it.' },
  sso_provider_disabled: { area: 'sso', status: [401], meaning: 'The sign-in provider is disabled; ask an administrator.' },
  sso_provider_unavailable: { area: 'sso', status: [502], meaning: 'The identity provider could not be reached; try again later.' },
  sso_provider_unknown: { area: 'sso', status: [400], meaning: 'No active SAML provider has that id; check the provider link.' },
  token_exchange_failed: { area: 'sso', status: [401], meaning: 'The OIDC provider refused or failed the code exchange; sign in again, or check the client secret.' },

  // API clients
  api_client_revoked: { area: 'api-clients', status: [409], meaning: 'A revoked API client cannot be rotated; create a new client.' },
  invalid_client: { area: 'api-clients', status: [401], meaning: 'Client authentication failed: unknown client, wrong secret or revoked client (RFC 6749 section 5.2).' },
  invalid_request: { area: 'api-clients', status: [400], meaning: 'The token request is malformed (grant_type missing, two ways of client authentication, non-string members); see RFC 6749 section 5.2.' },
  unsupported_grant_type: { area: 'api-clients', status: [400], meaning: 'Only grant_type=client_credentials is supported.' },

  // Organizations and members
  last_owner: { area: 'organizations', status: [409], meaning: 'An organization must keep an active owner; make someone else org_owner first.' },
  seat_limit_reached: { area: 'organizations', status: [409], meaning: 'Every seat of the plan is used by members and pending invitations (details: used, limit); free a seat or raise the limit.' },

  // Billing, quotas and invoices
  billing_cycle_locked: { area: 'commercial', status: [409], meaning: 'The billing cycle cannot change while the organization has an invoice that is not void; void it first.' },
  clip_quota_below_usage: { area: 'commercial', status: [409], meaning: 'The monthly clip quota asked for is below this month\'s clips (details: requested, minimum).' },
  clip_quota_exceeded: { area: 'commercial', status: [409], meaning: 'The monthly clip quota is used up (details: used, quota, scope); wait for next month or raise the quota.' },
  currency_locked: { area: 'commercial', status: [409], meaning: 'The currency cannot change once the organization has usage events or invoices.' },
  invoice_final: { area: 'commercial', status: [409], meaning: 'The invoice is paid or void and cannot change.' },
  invoice_period_overlap: { area: 'commercial', status: [409], meaning: 'The period overlaps an invoice that is not void (details.invoice); void that one first or choose another period.' },
  quota_above_plan: { area: 'commercial', status: [409], meaning: 'A workspace quota would be above the organization\'s plan limit; lower the quota or raise the plan.' },
  quota_below_usage: { area: 'commercial', status: [409], meaning: 'The workspace quota asked for is below what the workspace uses now.' },
  seat_limit_below_reserved: { area: 'commercial', status: [409], meaning: 'The seat limit asked for is below active members plus pending invitations (details: requested, minimum).' },
  storage_below_usage: { area: 'commercial', status: [409], meaning: 'The storage limit asked for (GiB) is below the bytes stored (details: requested, minimum, usedBytes).' },
  storage_quota_exceeded: { area: 'commercial', status: [409], meaning: 'The upload does not fit in the workspace\'s or organization\'s storage quota; delete files or raise the quota.' },
  time_zone_locked: { area: 'commercial', status: [409], meaning: 'The billing time zone cannot change while the organization has an invoice that is not void; void it first.' },

  // Projects, catalog, scripts and assets
  asset_archived: { area: 'production', status: [409], meaning: 'The asset is archived; it can no longer change.' },
  asset_has_no_version: { area: 'production', status: [409], meaning: 'The asset has no file yet; upload one first.' },
  episode_has_jobs: { area: 'production', status: [409], meaning: 'Generation jobs reference shots of the episode; it keeps their history and cannot be deleted.' },
  episode_has_script: { area: 'production', status: [409], meaning: 'The episode has a script, whose revisions are kept for good; it cannot be deleted.' },
  episode_has_shots: { area: 'production', status: [409], meaning: 'Remove the shots of the episode first (details.shots).' },
  invalid_transition: { area: 'production', status: [409], meaning: 'The record\'s status does not allow that change (a project, an invoice or a workflow template); read it again and see the allowed moves.' },
  project_archived: { area: 'production', status: [409], meaning: 'The project is archived and read-only; restore it to change it.' },
  project_has_active_jobs: { area: 'production', status: [409], meaning: 'Jobs of the project are queued, running or blocked (details.activeJobs); cancel or finish them before archiving.' },
  project_has_no_series: { area: 'production', status: [409], meaning: 'The project has no series to add a season to; create the series first.' },
  revision_conflict: { area: 'production', status: [409], meaning: 'The script changed since the revision you edited; reload it, reapply your change and save on the current revision.' },
  season_has_episodes: { area: 'production', status: [409], meaning: 'Remove or move the episodes of the season first (details.episodes).' },
  shot_has_jobs: { area: 'production', status: [409], meaning: 'Generation jobs reference the shot; it keeps their history and cannot be deleted.' },
  version_corrupt: { area: 'production', status: [409], meaning: 'That asset version failed verification; it cannot be restored.' },

  // Connectors, jobs, worker and workflows
  approval_not_needed: { area: 'generation', status: [409], meaning: 'Local connectors need no approval.' },
  connector_changed: { area: 'generation', status: [409], meaning: 'The connector changed while its endpoint was being checked; send the change again.' },
  connector_not_approved: { area: 'generation', status: [409], meaning: 'The connector costs money and needs an administrator\'s approval first.' },
  connector_not_ready: { area: 'generation', status: [409], meaning: 'The job has no connector, or it is not ready; probe the connector until it is.' },
  dependency_not_completed: { area: 'generation', status: [409], meaning: 'The job depends on a job that has not completed; run that one first.' },
  external_approval_required: { area: 'generation', status: [409], meaning: 'The connector may cost money; send approveExternal: true to run it.' },
  job_cancelled: { area: 'generation', status: [409], meaning: 'The job was cancelled; retry it first.' },
  job_finished: { area: 'generation', status: [409], meaning: 'The job has already finished (or finished meanwhile); nothing to change.' },
  job_not_retryable: { area: 'generation', status: [409], meaning: 'Only a failed or cancelled job can be retried.' },
  job_running: { area: 'generation', status: [409], meaning: 'The job is running (or was claimed meanwhile); wait for it or cancel it.' },
  local_runner_only: { area: 'generation', status: [409], meaning: 'The organization runs local connectors only; a connector that may cost money is refused.' },
  run_not_ready: { area: 'generation', status: [409], meaning: 'The workflow run\'s gates are decided once every step\'s job has completed.' },
  template_changed: { area: 'generation', status: [409], meaning: 'The workflow template changed meanwhile; read it again.' },
  template_key_taken: { area: 'generation', status: [409], meaning: 'The scope already has a workflow template with that key; change that one instead.' },
  template_not_active: { area: 'generation', status: [409], meaning: 'Only active workflow templates can be instantiated.' },
  template_read_only: { area: 'generation', status: [409], meaning: 'Built-in workflow templates are read-only; create a workspace or organization template with the same templateKey to replace it.' },
  worker_unavailable: { area: 'generation', status: [409], meaning: 'A dispatch needs a worker in the server process and none runs there; dispatch through a server that runs its worker.' },

  // Review, delivery and export
  artifact_superseded: { area: 'finishing', status: [409], meaning: 'A newer artifact replaced this one (details.currentArtifactId); review that one.' },
  delivery_changed: { area: 'finishing', status: [409], meaning: 'The delivery changed meanwhile (details.version); try again.' },
  delivery_empty: { area: 'finishing', status: [409], meaning: 'The delivery has no items to export.' },
  delivery_file_changed: { area: 'finishing', status: [410], meaning: 'The approved file behind a delivery link is no longer available as approved.' },
  delivery_link_invalid: { area: 'finishing', status: [401], meaning: 'The delivery link is unknown, revoked or expired (or links are turned off); ask the sender for a new one.' },
  delivery_not_approved: { area: 'finishing', status: [409], meaning: 'Only an approved delivery gets links or is exported (details.status).' },
  delivery_not_draft: { area: 'finishing', status: [409], meaning: 'Only a draft delivery can change; create a new delivery instead.' },
  delivery_not_ready: { area: 'finishing', status: [409], meaning: 'The delivery cannot be approved yet; details.gaps lists what is missing.' },
  delivery_withdrawn: { area: 'finishing', status: [409], meaning: 'The delivery is already withdrawn.' },
  export_file_changed: { area: 'finishing', status: [410], meaning: 'A file of the export package is no longer available as it was written; export again.' },
  export_missing: { area: 'finishing', status: [409], meaning: 'The export package is no longer on disk; export again.' },
  export_source_changed: { area: 'finishing', status: [409], meaning: 'An artifact of the delivery no longer matches its approved bytes (SHA-256); nothing was exported.' },
  export_source_missing: { area: 'finishing', status: [409], meaning: 'An artifact of the delivery, or its file, no longer exists; nothing was exported.' },
  nothing_to_deliver: { area: 'finishing', status: [409], meaning: 'No episode of the project has a cut yet; compose one or name artifactIds.' },
  review_exists: { area: 'finishing', status: [409], meaning: 'The artifact already has a review (details.reviewId); use that one.' },
  review_withdrawn: { area: 'finishing', status: [409], meaning: 'The review was withdrawn; it takes no more decisions.' },

  // Notifications and feature flags
  allow_list_entry_exists: { area: 'platform', status: [409], meaning: 'That address range is already on the organization\'s webhook allow list.' },
  channel_disabled: { area: 'platform', status: [409], meaning: 'The notification channel is disabled; enable it first.' },
  feature_disabled: { area: 'platform', status: [409], meaning: 'The feature flag in details.flag is turned off for this organization; ask an administrator to turn it on.' },
  not_a_webhook: { area: 'platform', status: [409], meaning: 'Only webhook channels have a secret.' },

  // Storage and system administration
  unsafe_path: { area: 'system', status: [422], meaning: 'A stored file path is unsafe (outside the storage root or malformed); nothing was read or deleted. An operator should inspect the record.' },
  backup_failed: { area: 'system', status: [500], meaning: 'The database snapshot could not be written or failed its integrity check; nothing was kept. See the message and the service log.' },

  // Command line only
  audit_chain_broken: { area: 'cli', status: [], meaning: 'svc audit verify found the audit hash chain broken; details.broken names the first bad entry.' },
  database_copy_mismatch: { area: 'cli', status: [], meaning: 'svc db copy read back rows that differ from the source (details.tables names the tables); the copy was rolled back and the target holds the schema only.' },
  database_not_empty: { area: 'cli', status: [], meaning: 'svc db copy found data in the target database (details.tables names the tables); nothing was written. Copy into an empty database.' },
  interrupted: { area: 'cli', status: [], meaning: 'A second stop signal arrived during shutdown; svc exited at once.' },
  invalid_configuration: { area: 'cli', status: [], meaning: 'A flag or SVC_* setting is out of range; the message names it.' },
  shutdown_failed: { area: 'cli', status: [], meaning: 'The server or worker failed to shut down cleanly; see the message.' },
  unsupported_schema_version: { area: 'cli', status: [], meaning: 'The database has a newer schema version than this svc knows, or tables without an svc schema version (or, for svc db copy, a source at another version than this svc writes); it is left untouched.' },
  usage_error: { area: 'cli', status: [], meaning: 'The command line is not valid (unknown or missing flags or commands, exit 2); details.fields and details.help say what to fix.' },
} as const satisfies Record<string, ErrorEntry>;

/** Every error code the service and the command line answer with. */
export type ErrorCode = keyof typeof ERROR_CODES;

/** The codes the catalogue lists with the status S (with any member of S, for a union of statuses). */
export type ErrorCodeWithStatus<S extends number> = {
  [K in ErrorCode]: S extends (typeof ERROR_CODES)[K]['status'][number] ? K : never;
}[ErrorCode];

export const isErrorCode = (code: string): code is ErrorCode => Object.hasOwn(ERROR_CODES, code);

/** The codes an HTTP answer may carry (the command line's own left out), sorted: the OpenAPI document's enum. */
export const HTTP_ERROR_CODES: readonly ErrorCode[] = (Object.keys(ERROR_CODES) as ErrorCode[]).filter((code) => ERROR_CODES[code].status.length > 0).sort();
