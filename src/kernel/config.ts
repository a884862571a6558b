// One typed, frozen Config built from command-line flags and SVC_* environment variables.
// Flags win over environment, environment wins over the default. Every setting is declared once in
// SETTINGS below; the README's configuration table is checked against it by test/docs/readme.test.ts.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseOriginList } from './urls.ts';

/** The service's version, from package.json: the API document's info.version, the webhook user agent. */
export const VERSION: string = (JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

type Kind = 'string' | 'int' | 'bool' | 'enum';

interface Setting {
  key: keyof ConfigValues;
  env: string;
  flag?: string;
  kind: Kind;
  default: string;
  doc: string;
  min?: number;
  max?: number;
  values?: readonly string[];
  /** Out-of-range integers are clamped into [min, max] instead of refused. */
  clamp?: boolean;
  secret?: boolean;
}

export interface ConfigValues {
  host: string;
  port: number;
  dataDir: string;
  storageDir: string;
  dbSynchronous: 'full' | 'normal';
  database: 'sqlite' | 'postgres';
  postgresUrl: string;
  postgresPoolSize: number;
  role: 'all' | 'api' | 'worker';
  allowDevContext: boolean;
  frontendOrigin: string;
  publicUrl: string;
  trustProxy: boolean;
  maxBodyBytes: number;
  sessionIdleMinutes: number;
  sessionAbsoluteHours: number;
  mfaEncryptionKey: string;
  oidcStorageKey: string;
  oidcRedirectUri: string;
  sessionSecret: string;
  connectorSecretPrefix: string;
  connectorSecretNames: string;
  scryptLogN: number;
  loginMaxFailuresPerEmail: number;
  loginMaxFailuresPerAddress: number;
  loginWindowSeconds: number;
  logLevel: 'debug' | 'info' | 'warn' | 'error' | 'silent';
  webhookRetryBaseMs: number;
  maxUploadBytes: number;
  ffmpegPath: string;
  ffprobePath: string;
  workerEnabled: boolean;
  workerId: string;
  workerConcurrency: number;
  workerPollMs: number;
  workerLeaseMs: number;
  workerStaleMs: number;
  workerRetryBaseMs: number;
  connectorTimeoutMs: number;
  jobTimeoutMs: number;
  maxOutputBytes: number;
  connectorOutputOrigins: string;
  storageRetentionDays: number;
  backupRetention: number;
  storageDriver: 'local' | 's3';
  s3Endpoint: string;
  s3Bucket: string;
  s3Region: string;
  s3ForcePathStyle: boolean;
  s3Prefix: string;
  s3AccessKeyId: string;
  s3SecretAccessKey: string;
  s3SessionToken: string;
  storageUrlTtlSeconds: number;
}

export const SETTINGS: readonly Setting[] = [
  { key: 'host', env: 'SVC_HOST', flag: 'host', kind: 'string', default: '127.0.0.1', doc: 'Address to listen on.' },
  { key: 'port', env: 'SVC_PORT', flag: 'port', kind: 'int', default: '8080', min: 0, max: 65535, doc: 'Port to listen on; 0 picks any free port.' },
  { key: 'dataDir', env: 'SVC_DATA_DIR', flag: 'data-dir', kind: 'string', default: './data', doc: 'Data directory: the SQLite file `svc.db` and snapshots in `backups/`.' },
  { key: 'storageDir', env: 'SVC_STORAGE_DIR', flag: 'storage-dir', kind: 'string', default: './storage', doc: 'Storage root with `assets/`, `outputs/`, `frames/`, `tmp/`, `cache/`.' },
  { key: 'dbSynchronous', env: 'SVC_DB_SYNCHRONOUS', kind: 'enum', values: ['full', 'normal'], default: 'full', doc: '`full`: a committed write survives power loss. `normal`: faster, the last commits may be lost on power loss (never corrupted).' },
  { key: 'database', env: 'SVC_DATABASE', kind: 'enum', values: ['sqlite', 'postgres'], default: 'sqlite', doc: 'The business database: `sqlite` (the file `DATA_DIR/svc.db`, nothing else to run) or `postgres` (the server of `SVC_POSTGRES_URL`, which several `svc serve` processes on several hosts can share). PostgreSQL is active only when this says `postgres`, never because `PLATFORM_POSTGRES_URL` is set.' },
  { key: 'postgresUrl', env: 'SVC_POSTGRES_URL', kind: 'string', default: '', secret: true, doc: 'With `SVC_DATABASE=postgres`: the connection, `postgres://user:password@host:port/database` (libpq parameters such as `?sslmode=require` are honoured); never logged or shown. The database must exist; `svc migrate` (or the first `svc serve`) creates the schema.' },
  { key: 'postgresPoolSize', env: 'SVC_POSTGRES_POOL', kind: 'int', default: '10', min: 1, max: 1000, doc: 'With `SVC_DATABASE=postgres`: connections each process (and its worker thread) keeps open at most.' },
  { key: 'role', env: 'SVC_ROLE', flag: 'role', kind: 'enum', values: ['all', 'api', 'worker'], default: 'all', doc: 'What `svc serve` runs: `all` the HTTP API, the job worker and the notification deliveries; `api` only the HTTP API (jobs wait for a worker process on the same database); `worker` the job worker and the deliveries, answering HTTP only on `GET /api/health`.' },
  { key: 'allowDevContext', env: 'SVC_ALLOW_DEV_CONTEXT', kind: 'bool', default: '0', doc: 'Development bypass: `1` honours the `x-user-id`, `x-organization-id`, `x-workspace-id`, `x-project-id` headers for every caller, API clients included. Never in production (the per-request scope is the `Svc-Scope` header).' },
  { key: 'frontendOrigin', env: 'SVC_FRONTEND_ORIGIN', kind: 'string', default: '', doc: 'Origin of the web front end allowed to use cookie sessions (besides the service\'s own origin).' },
  { key: 'publicUrl', env: 'SVC_PUBLIC_URL', kind: 'string', default: '', doc: 'Public base URL of the service ({base_url}); default `http://HOST:PORT` as listened on.' },
  { key: 'trustProxy', env: 'SVC_TRUST_PROXY', kind: 'bool', default: '0', doc: '`1` takes the client address from the first `X-Forwarded-For` entry (only behind a trusted reverse proxy).' },
  { key: 'maxBodyBytes', env: 'SVC_MAX_BODY_BYTES', kind: 'int', default: '1048576', min: 1024, max: 1073741824, doc: 'Largest JSON request body; larger bodies get 413 `payload_too_large`.' },
  { key: 'sessionIdleMinutes', env: 'SVC_SESSION_IDLE_MINUTES', kind: 'int', default: '720', min: 1, max: 525600, doc: 'A session unused for this long expires (12 hours).' },
  { key: 'sessionAbsoluteHours', env: 'SVC_SESSION_ABSOLUTE_HOURS', kind: 'int', default: '168', min: 1, max: 8760, doc: 'A session expires this long after login whatever its use (7 days).' },
  { key: 'mfaEncryptionKey', env: 'SVC_MFA_ENCRYPTION_KEY', kind: 'string', default: '', secret: true, doc: 'Key of the AES-256-GCM encryption of TOTP secrets: 32 bytes as 64 hex or base64 characters, or a passphrase of at least 16 characters (stretched with scrypt). Unset: a built-in development key, warned about at start. Never unset in production.' },
  { key: 'oidcStorageKey', env: 'SVC_OIDC_STORAGE_KEY', kind: 'string', default: '', secret: true, doc: 'Key of the AES-256-GCM encryption of single sign-on flow states (OIDC state, nonce and PKCE verifier; SAML request ids and relay state): 32 bytes as 64 hex or base64 characters, or a passphrase of at least 16 characters. Unset: a built-in development key, warned about at start. Never unset in production.' },
  { key: 'oidcRedirectUri', env: 'SVC_OIDC_REDIRECT_URI', kind: 'string', default: '', doc: 'Redirect URI registered at OpenID providers; default `{base_url}/api/auth/sso/callback`.' },
  { key: 'sessionSecret', env: 'SVC_SESSION_SECRET', kind: 'string', default: '', secret: true, doc: 'Key of the HMAC-SHA-256 under which session tokens and API-client access tokens are stored: 32 bytes as 64 hex or base64 characters, or a passphrase of at least 16 characters. Changing it signs everyone out and invalidates every access token (API clients obtain new ones with their unchanged secret). Unset: a built-in development key, warned about at start. Never unset in production.' },
  { key: 'connectorSecretPrefix', env: 'SVC_CONNECTOR_SECRET_PREFIX', kind: 'string', default: 'SVC_CONNECTOR_SECRET_', doc: 'Environment variables whose name starts with this prefix may be named as a model connector\'s `authEnv` (besides `SVC_CONNECTOR_SECRET_NAMES`); upper-case letters, digits and underscores ending with `_`. The service\'s own settings and `PLATFORM_*` are never allowed.' },
  { key: 'connectorSecretNames', env: 'SVC_CONNECTOR_SECRET_NAMES', kind: 'string', default: '', doc: 'Comma-separated list of further environment variable names that may be named as a model connector\'s `authEnv` (e.g. `OPENAI_API_KEY`); the service\'s own settings and `PLATFORM_*` are refused at start.' },
  { key: 'scryptLogN', env: 'SVC_SCRYPT_LOG_N', kind: 'int', default: '17', min: 4, max: 20, doc: 'log2 of the scrypt cost N for new password hashes (OWASP: 17, i.e. N=2^17, r=8, p=1). Lower only for tests.' },
  { key: 'loginMaxFailuresPerEmail', env: 'SVC_LOGIN_MAX_FAILURES_PER_EMAIL', kind: 'int', default: '10', min: 1, max: 100000, doc: 'Failed logins (and password changes, MFA disables, token exchanges per client id) allowed per e-mail address within the window before 429 `rate_limited`; counted in the database, shared by every process.' },
  { key: 'loginMaxFailuresPerAddress', env: 'SVC_LOGIN_MAX_FAILURES_PER_ADDRESS', kind: 'int', default: '30', min: 1, max: 100000, doc: 'Failed attempts at a secret (logins, MFA challenge tokens, token exchanges, SSO tickets, invitation tokens, SCIM tokens) allowed per client address within the window before 429 `rate_limited`; counted in the database, shared by every process.' },
  { key: 'loginWindowSeconds', env: 'SVC_LOGIN_WINDOW_SECONDS', kind: 'int', default: '900', min: 1, max: 86400, doc: 'Window of the failed-login limits (15 minutes).' },
  { key: 'logLevel', env: 'SVC_LOG_LEVEL', kind: 'enum', values: ['debug', 'info', 'warn', 'error', 'silent'], default: 'info', doc: 'Lowest level written to the JSON log on stderr.' },
  { key: 'webhookRetryBaseMs', env: 'SVC_WEBHOOK_RETRY_BASE_MS', kind: 'int', default: '1000', min: 1, max: 3600000, doc: 'First retry delay of a failed notification delivery; each later one doubles, capped at one hour (lower only for tests).' },
  { key: 'maxUploadBytes', env: 'SVC_MAX_UPLOAD_BYTES', kind: 'int', default: '2147483648', min: 1, max: 1099511627776, doc: 'Largest file accepted by an asset upload (2 GiB); larger uploads get 413 `payload_too_large`.' },
  { key: 'ffmpegPath', env: 'SVC_FFMPEG_PATH', kind: 'string', default: '', doc: 'ffmpeg binary to use; default the first `ffmpeg` on `PATH`, else the one of the optional npm dependency `@ffmpeg-installer/ffmpeg`.' },
  { key: 'ffprobePath', env: 'SVC_FFPROBE_PATH', kind: 'string', default: '', doc: 'ffprobe binary to use; default the first `ffprobe` on `PATH`, else the one of the optional npm dependency `@ffprobe-installer/ffprobe`.' },
  { key: 'workerEnabled', env: 'SVC_WORKER_ENABLED', kind: 'bool', default: '1', doc: '`0` stops automatic job execution: the worker shows as paused and runs a job only on `POST /api/system/worker/dispatch`.' },
  { key: 'workerId', env: 'SVC_WORKER_ID', kind: 'string', default: '', doc: 'Name of this process\'s worker in leases and status; default `HOSTNAME-PID`.' },
  { key: 'workerConcurrency', env: 'SVC_WORKER_CONCURRENCY', kind: 'int', default: '2', min: 1, max: 8, clamp: true, doc: 'Jobs the worker runs at once (clamped to 1..8).' },
  { key: 'workerPollMs', env: 'SVC_WORKER_POLL_MS', kind: 'int', default: '1200', min: 10, max: 3600000, doc: 'Backstop poll interval of the worker (it is woken by a message on enqueue and dispatch) and its heartbeat.' },
  { key: 'workerLeaseMs', env: 'SVC_WORKER_LEASE_MS', kind: 'int', default: '300000', min: 300, max: 86400000, doc: 'A running job whose lease was not renewed for this long is reclaimed (retried, or failed when its attempts are exhausted). Leases are renewed every third of it.' },
  { key: 'workerStaleMs', env: 'SVC_WORKER_STALE_MS', kind: 'int', default: '30000', min: 100, max: 86400000, doc: 'A worker whose heartbeat is older than this shows as stale.' },
  { key: 'workerRetryBaseMs', env: 'SVC_WORKER_RETRY_BASE_MS', kind: 'int', default: '5000', min: 1, max: 3600000, doc: 'First retry delay of a failed job attempt; doubles per failed attempt (with jitter), capped at one hour.' },
  { key: 'connectorTimeoutMs', env: 'SVC_CONNECTOR_TIMEOUT_MS', kind: 'int', default: '120000', min: 100, max: 3600000, doc: 'Time-out of each HTTP call to a model connector.' },
  { key: 'jobTimeoutMs', env: 'SVC_JOB_TIMEOUT_MS', kind: 'int', default: '1800000', min: 100, max: 86400000, doc: 'Longest attempt of a job (including polling a video or ComfyUI prompt); a longer attempt is aborted and retried.' },
  { key: 'maxOutputBytes', env: 'SVC_MAX_OUTPUT_BYTES', kind: 'int', default: '2147483648', min: 1, max: 1099511627776, doc: 'Largest file a connector may return (2 GiB); a larger one fails the attempt.' },
  { key: 'connectorOutputOrigins', env: 'SVC_CONNECTOR_OUTPUT_ORIGINS', kind: 'string', default: '', doc: 'Origins (`https://host[:port]`, comma-separated) from which files a model answers by URL may be downloaded besides the connector endpoint\'s own origin (e.g. a cloud provider\'s file host). Empty: only the endpoint\'s origin.' },
  { key: 'storageRetentionDays', env: 'SVC_STORAGE_RETENTION_DAYS', kind: 'int', default: '30', min: 1, max: 36500, doc: 'Retention of unreferenced files in `outputs/`, `frames/`, `tmp/`, `cache/` (the reference\'s `storage.retention_days`): older ones are storage cleanup candidates; `tmp/` files younger than this are never removed.' },
  { key: 'backupRetention', env: 'SVC_BACKUP_RETENTION', kind: 'int', default: '7', min: 1, max: 10000, doc: 'Database snapshots kept in `DATA_DIR/backups/`: after each successful snapshot, older files and their rows beyond the newest N are removed.' },
  { key: 'storageDriver', env: 'SVC_STORAGE_DRIVER', kind: 'enum', values: ['local', 's3'], default: 'local', doc: 'Where media objects live: `local` (files under `SVC_STORAGE_DIR`) or `s3` (an S3-compatible bucket, `SVC_S3_*`). S3 is active only when this says `s3`, never because a `PLATFORM_*` variable is set.' },
  { key: 's3Endpoint', env: 'SVC_S3_ENDPOINT', kind: 'string', default: '', doc: 'S3 driver: the service\'s endpoint (`http(s)://host[:port]`, e.g. Ceph RGW, MinIO, R2); empty: AWS S3 of `SVC_S3_REGION`. Calls to it are the operator\'s storage, not tenant egress.' },
  { key: 's3Bucket', env: 'SVC_S3_BUCKET', kind: 'string', default: '', doc: 'S3 driver: the bucket (required with `SVC_STORAGE_DRIVER=s3`; it must exist).' },
  { key: 's3Region', env: 'SVC_S3_REGION', kind: 'string', default: 'us-east-1', doc: 'S3 driver: the region requests are signed for.' },
  { key: 's3ForcePathStyle', env: 'SVC_S3_FORCE_PATH_STYLE', kind: 'bool', default: '0', doc: 'S3 driver: `1` addresses the bucket in the path (`ENDPOINT/BUCKET/KEY`) instead of a host name (most self-hosted services need it).' },
  { key: 's3Prefix', env: 'SVC_S3_PREFIX', kind: 'string', default: '', doc: 'S3 driver: a key prefix inside the bucket (segments of letters, digits, `.`, `_`, `-` separated by `/`), so several stores can share one bucket.' },
  { key: 's3AccessKeyId', env: 'SVC_S3_ACCESS_KEY_ID', kind: 'string', default: '', secret: true, doc: 'S3 driver: the access key id (required with `SVC_STORAGE_DRIVER=s3`). Credentials are passed to the client explicitly: no `~/.aws` file or instance metadata is consulted.' },
  { key: 's3SecretAccessKey', env: 'SVC_S3_SECRET_ACCESS_KEY', kind: 'string', default: '', secret: true, doc: 'S3 driver: the secret access key (required with `SVC_STORAGE_DRIVER=s3`); never logged, shown or returned.' },
  { key: 's3SessionToken', env: 'SVC_S3_SESSION_TOKEN', kind: 'string', default: '', secret: true, doc: 'S3 driver: a session token for temporary credentials (optional).' },
  { key: 'storageUrlTtlSeconds', env: 'SVC_STORAGE_URL_TTL_SECONDS', kind: 'int', default: '300', min: 1, max: 604800, doc: 'Lifetime of the signed URLs the S3 driver hands out (downloads, ffmpeg inputs); at most 7 days.' },
];

/** Names of the service's own settings (every SVC_* variable above): never handed to a tenant's connector or provider. */
export const SETTING_NAMES: ReadonlySet<string> = new Set(SETTINGS.map((s) => s.env));

export type Config = Readonly<ConfigValues & {
  dbPath: string;
  backupsDir: string;
  /** Where each setting came from: default, env or flag. */
  sources: Readonly<Record<keyof ConfigValues, 'default' | 'env' | 'flag'>>;
}>;

export class ConfigError extends Error {}

function parseValue(s: Setting, raw: string, origin: string): string | number | boolean {
  const where = `${origin} ${s.flag && origin === 'flag' ? `--${s.flag}` : s.env}`;
  switch (s.kind) {
    case 'string':
      return raw;
    case 'int': {
      if (!/^-?\d+$/.test(raw.trim())) throw new ConfigError(`${where} must be an integer, got "${raw}"`);
      const n = Number(raw);
      if (s.clamp) return Math.min(s.max!, Math.max(s.min!, n));
      if ((s.min !== undefined && n < s.min) || (s.max !== undefined && n > s.max)) {
        throw new ConfigError(`${where} must be between ${s.min} and ${s.max}, got ${n}`);
      }
      return n;
    }
    case 'bool':
      if (['1', 'true', 'yes', 'on'].includes(raw.toLowerCase())) return true;
      if (['0', 'false', 'no', 'off', ''].includes(raw.toLowerCase())) return false;
      throw new ConfigError(`${where} must be 0 or 1, got "${raw}"`);
    case 'enum': {
      const v = raw.toLowerCase();
      if (!s.values!.includes(v)) throw new ConfigError(`${where} must be one of ${s.values!.join(', ')}, got "${raw}"`);
      return v;
    }
  }
}

/** The S3 driver's settings hold together (checked only when it is the active driver); messages never carry a credential. */
function checkStorage(v: ConfigValues): void {
  const prefixOk = /^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*\/?$/.test(v.s3Prefix) && !v.s3Prefix.split('/').some((seg) => seg === '.' || seg === '..');
  if (v.s3Prefix && !prefixOk) {
    throw new ConfigError('SVC_S3_PREFIX must be segments of letters, digits, ".", "_" or "-" separated by "/"');
  }
  if (v.storageDriver !== 's3') return;
  if (!v.s3Bucket) throw new ConfigError('SVC_STORAGE_DRIVER=s3 needs SVC_S3_BUCKET');
  if (!v.s3AccessKeyId || !v.s3SecretAccessKey) throw new ConfigError('SVC_STORAGE_DRIVER=s3 needs SVC_S3_ACCESS_KEY_ID and SVC_S3_SECRET_ACCESS_KEY');
  if (v.s3Endpoint) {
    let url: URL | null = null;
    try {
      url = new URL(v.s3Endpoint);
    } catch { /* refused below */ }
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.username || url.password || url.search || url.hash) {
      throw new ConfigError('SVC_S3_ENDPOINT must be an http:// or https:// URL without credentials, query or fragment');
    }
    v.s3Endpoint = v.s3Endpoint.replace(/\/+$/, '');
  }
}

/** SVC_DATABASE=postgres has a connection URL; messages never carry it (it holds a password). */
function checkDatabase(v: ConfigValues): void {
  if (v.database !== 'postgres') return;
  if (!v.postgresUrl) throw new ConfigError('SVC_DATABASE=postgres needs SVC_POSTGRES_URL');
  let url: URL | null = null;
  try {
    url = new URL(v.postgresUrl);
  } catch { /* refused below */ }
  if (!url || (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:')) {
    throw new ConfigError('SVC_POSTGRES_URL must be a postgres:// or postgresql:// URL');
  }
}

/**
 * Builds the configuration. `flags` holds command-line values keyed by setting key (undefined = not
 * given); `env` is usually process.env. Relative directories resolve against `cwd`.
 */
export function loadConfig(
  flags: Partial<Record<keyof ConfigValues, string | number | boolean | undefined>> = {},
  env: NodeJS.ProcessEnv = process.env,
  cwd = process.cwd(),
): Config {
  const values: Record<string, unknown> = {};
  const sources: Record<string, 'default' | 'env' | 'flag'> = {};
  for (const s of SETTINGS) {
    const flag = flags[s.key];
    if (flag !== undefined && flag !== null) {
      values[s.key] = parseValue(s, String(flag), 'flag');
      sources[s.key] = 'flag';
    } else if (env[s.env] !== undefined && env[s.env] !== '') {
      values[s.key] = parseValue(s, env[s.env]!, 'environment variable');
      sources[s.key] = 'env';
    } else {
      values[s.key] = parseValue(s, s.default, 'default');
      sources[s.key] = 'default';
    }
  }
  const v = values as unknown as ConfigValues;
  v.dataDir = path.resolve(cwd, v.dataDir);
  v.storageDir = path.resolve(cwd, v.storageDir);
  v.frontendOrigin = v.frontendOrigin.replace(/\/+$/, '');
  v.publicUrl = v.publicUrl.replace(/\/+$/, '');
  v.workerId ||= `${os.hostname()}-${process.pid}`;
  try {
    v.connectorOutputOrigins = parseOriginList(v.connectorOutputOrigins).join(',');
  } catch (err) {
    throw new ConfigError(`SVC_CONNECTOR_OUTPUT_ORIGINS: ${(err as Error).message}`);
  }
  checkStorage(v);
  checkDatabase(v);
  return Object.freeze({
    ...v,
    dbPath: path.join(v.dataDir, 'svc.db'),
    backupsDir: path.join(v.dataDir, 'backups'),
    sources: Object.freeze(sources),
  });
}
