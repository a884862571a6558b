// How bearer credentials the service issues for a limited time are stored: the HMAC-SHA-256 of the
// token under the key of SVC_SESSION_SECRET, hex. Used for session tokens (cookie and Bearer) and
// API-client access tokens, by the code that stores them and by request authentication that looks
// them up. A database copy alone therefore neither reveals a live token nor lets anyone forge a row
// that authenticates; a token stored under another secret (or as a plain SHA-256) authenticates no
// more, so changing the secret signs everyone out and invalidates every access token (clients
// exchange their secret again). Long-lived secrets an administrator hands out (API-client secrets,
// SCIM tokens) stay SHA-256, so that a secret change does not break integrations.
//
// The setting is read like the encryption keys (src/kernel/seal.ts): 64 hex or base64 of 32
// bytes as they are, a passphrase of at least 16 characters stretched once with scrypt. Unset: a
// built-in development key (public), warned about at start.
import crypto from 'node:crypto';
import type { Config } from '../../kernel/config.ts';
import { cachedKey, type EncryptionKey, type KeySetting } from '../../kernel/seal.ts';

export const SESSION_KEY_SETTING: KeySetting = Object.freeze({
  variable: 'SVC_SESSION_SECRET',
  salt: 'svc/session-secret/v1',
  developmentKey: crypto.hash('sha256', 'svc built-in development session secret: public, never use it in production', 'buffer'),
  idLabel: 'svc/session-key-id',
});

/** The token-hashing key of this configuration (derived once per process; a malformed value throws ConfigError). */
export const sessionKey = (config: Pick<Config, 'sessionSecret'>): EncryptionKey => cachedKey(config.sessionSecret, SESSION_KEY_SETTING);

/** The key as a KeyObject per configuration: HMAC with a KeyObject costs a sixth of HMAC with a Buffer key. */
const hmacKeys = new WeakMap<object, crypto.KeyObject>();

/** What is stored for (and looked up by) a session token or an API-client access token. */
export function tokenHash(config: Pick<Config, 'sessionSecret'>, token: string): string {
  let key = hmacKeys.get(config);
  if (!key) hmacKeys.set(config, (key = crypto.createSecretKey(sessionKey(config).key)));
  return crypto.createHmac('sha256', key).update(token, 'utf8').digest('hex');
}
