// AES-256-GCM encryption at rest under a configured key. Two keys use it: SVC_MFA_ENCRYPTION_KEY
// (TOTP secrets, with the user id as additional data: a ciphertext moved to another user's row does
// not decrypt) and SVC_OIDC_STORAGE_KEY (single sign-on flow states, src/identity/sso/state.ts).
// A fresh 96-bit nonce per ciphertext. Stored layout: version byte (1) | nonce (12) | ciphertext |
// tag (16). Any failure to decrypt throws: callers refuse (fail closed), they never fall back.
//
// A key setting: 64 hex characters or base64/base64url of exactly 32 bytes are used as they are; any
// other value of at least 16 characters is a passphrase stretched with scrypt (N=2^15, r=8, p=1,
// a fixed salt per setting, once per process). Unset: the setting's built-in development key
// (public, so the server warns at start).
import crypto from 'node:crypto';
import { ConfigError, type Config } from './config.ts';

const VERSION = 1;
const NONCE = 12;
const TAG = 16;
const PASSPHRASE_MIN = 16;

export interface EncryptionKey {
  key: Buffer;
  /** Short fingerprint stored beside each ciphertext: tells a changed key from a damaged row. */
  id: string;
  source: 'development' | 'hex' | 'base64' | 'passphrase';
}
export type MfaKey = EncryptionKey;

/** What tells one key setting from another: its variable (for messages), scrypt salt, development key and fingerprint label. */
export interface KeySetting { variable: string; salt: string; developmentKey: Buffer; idLabel: string }

export const MFA_KEY_SETTING: KeySetting = Object.freeze({
  variable: 'SVC_MFA_ENCRYPTION_KEY',
  salt: 'svc/mfa-encryption-key/v1',
  developmentKey: crypto.hash('sha256', 'svc built-in development MFA key: public, never use it in production', 'buffer'),
  idLabel: 'svc/mfa-key-id',
});

export const SSO_KEY_SETTING: KeySetting = Object.freeze({
  variable: 'SVC_OIDC_STORAGE_KEY',
  salt: 'svc/oidc-storage-key/v1',
  developmentKey: crypto.hash('sha256', 'svc built-in development SSO storage key: public, never use it in production', 'buffer'),
  idLabel: 'svc/sso-key-id',
});

/** Interprets a key setting's value; throws ConfigError for a value that is neither a key nor a long enough passphrase. */
export function parseEncryptionKey(raw: string, setting: KeySetting): EncryptionKey {
  const value = raw.trim();
  let key: Buffer;
  let source: EncryptionKey['source'];
  if (value === '') {
    key = setting.developmentKey;
    source = 'development';
  } else if (/^[0-9a-fA-F]{64}$/.test(value)) {
    key = Buffer.from(value, 'hex');
    source = 'hex';
  } else if (/^[A-Za-z0-9+/_-]{43}=?$/.test(value) && Buffer.from(value, 'base64').length === 32) {
    key = Buffer.from(value, 'base64');
    source = 'base64';
  } else if (value.length >= PASSPHRASE_MIN) {
    key = crypto.scryptSync(value.normalize('NFC'), setting.salt, 32, { N: 2 ** 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 });
    source = 'passphrase';
  } else {
    throw new ConfigError(`${setting.variable} must be 32 bytes as 64 hex or base64 characters, or a passphrase of at least ${PASSPHRASE_MIN} characters`);
  }
  return { key, id: crypto.createHmac('sha256', key).update(setting.idLabel).digest('hex').slice(0, 16), source };
}

/** Interprets SVC_MFA_ENCRYPTION_KEY. */
export const parseMfaKey = (raw: string): MfaKey => parseEncryptionKey(raw, MFA_KEY_SETTING);

const keys = new Map<string, EncryptionKey>();

/** The key of a setting's value (derived once per process). */
export function cachedKey(raw: string, setting: KeySetting): EncryptionKey {
  const cacheKey = `${setting.variable}\u0000${raw}`;
  let k = keys.get(cacheKey);
  if (!k) keys.set(cacheKey, (k = parseEncryptionKey(raw, setting)));
  return k;
}

/** The MFA key of this configuration. */
export const mfaKey = (config: Config): MfaKey => cachedKey(config.mfaEncryptionKey, MFA_KEY_SETTING);

/** The SSO flow-state key of this configuration (SVC_OIDC_STORAGE_KEY). */
export const ssoStorageKey = (config: Config): EncryptionKey => cachedKey(config.oidcStorageKey, SSO_KEY_SETTING);

export class SecretUnreadableError extends Error {}

/** AES-256-GCM of `plaintext` bound to `aad`, in the stored layout. */
export function seal(k: EncryptionKey, aad: Buffer, plaintext: string): Buffer {
  const nonce = crypto.randomBytes(NONCE);
  const cipher = crypto.createCipheriv('aes-256-gcm', k.key, nonce, { authTagLength: TAG });
  cipher.setAAD(aad);
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return Buffer.concat([Buffer.from([VERSION]), nonce, body, cipher.getAuthTag()]);
}

/** The plaintext of seal(); throws SecretUnreadableError when the key or the additional data differ or a byte was changed. */
export function unseal(k: EncryptionKey, aad: Buffer, blob: Uint8Array): string {
  const buf = Buffer.from(blob);
  if (buf.length < 1 + NONCE + TAG + 1 || buf[0] !== VERSION) throw new SecretUnreadableError('unknown ciphertext layout');
  try {
    const decipher = crypto.createDecipheriv('aes-256-gcm', k.key, buf.subarray(1, 1 + NONCE), { authTagLength: TAG });
    decipher.setAAD(aad);
    decipher.setAuthTag(buf.subarray(buf.length - TAG));
    return Buffer.concat([decipher.update(buf.subarray(1 + NONCE, buf.length - TAG)), decipher.final()]).toString('utf8');
  } catch {
    throw new SecretUnreadableError('the secret does not decrypt with this key (changed key or damaged row)');
  }
}

const totpAad = (userId: string) => Buffer.from(`svc:mfa:totp:${userId}`, 'utf8');

export const encryptSecret = (k: MfaKey, userId: string, secret: string): Buffer => seal(k, totpAad(userId), secret);

/** The plaintext secret; throws SecretUnreadableError when the key differs or a byte was changed. */
export const decryptSecret = (k: MfaKey, userId: string, blob: Uint8Array): string => unseal(k, totpAad(userId), blob);
