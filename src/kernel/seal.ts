// The one AES-256-GCM sealer of the service, and the key settings of the configured keys.
//
// Sealing: a fresh 96-bit nonce per ciphertext, a 128-bit tag, optional additional data (a
// ciphertext bound to it does not decrypt elsewhere). Two stored layouts, both written and read here:
//   - binary (BLOB columns): version byte (1) | nonce (12) | ciphertext | tag (16): seal/unseal.
//     TOTP secrets (SVC_MFA_ENCRYPTION_KEY, the user id as additional data: a ciphertext moved to
//     another user's row does not decrypt) and single sign-on flow states (SVC_OIDC_STORAGE_KEY,
//     src/identity/sso/state.ts).
//   - text (TEXT columns): "v1:" + base64(nonce (12) | tag (16) | ciphertext): sealText/unsealText.
//     Webhook signing secrets, under the key file of src/platform/notifications/secrets.ts.
// Any failure to decrypt throws SecretUnreadableError: callers refuse (fail closed), they never fall back.
//
// A key setting: 64 hex characters or base64/base64url of exactly 32 bytes are used as they are; any
// other value of at least 16 characters is a passphrase stretched with scrypt (N=2^15, r=8, p=1,
// a fixed salt per setting, once per process). Unset: the setting's built-in development key
// (public, so the server warns at start).
import crypto from 'node:crypto';
import { ConfigError, type Config } from './config.ts';

/** The first byte of the binary layout. */
const BINARY_VERSION = 1;
/** The prefix of the text layout. */
const TEXT_VERSION = 'v1:';
const NONCE = 12;
const TAG = 16;
const PASSPHRASE_MIN = 16;

/** What seals: a 32-byte AES-256 key. */
export interface SealKey { readonly key: Buffer }

export interface EncryptionKey extends SealKey {
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

const UNREADABLE = 'the secret does not decrypt with this key (changed key or damaged row)';

interface Sealed { nonce: Buffer; body: Buffer; tag: Buffer }

function encrypt(k: SealKey, aad: Buffer | null, plaintext: string): Sealed {
  const nonce = crypto.randomBytes(NONCE);
  const cipher = crypto.createCipheriv('aes-256-gcm', k.key, nonce, { authTagLength: TAG });
  if (aad) cipher.setAAD(aad);
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return { nonce, body, tag: cipher.getAuthTag() };
}

function decrypt(k: SealKey, aad: Buffer | null, { nonce, body, tag }: Sealed): string {
  try {
    const decipher = crypto.createDecipheriv('aes-256-gcm', k.key, nonce, { authTagLength: TAG });
    if (aad) decipher.setAAD(aad);
    decipher.setAuthTag(tag);
    return Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8');
  } catch {
    throw new SecretUnreadableError(UNREADABLE);
  }
}

/** AES-256-GCM of `plaintext` bound to `aad`, in the binary layout. */
export function seal(k: SealKey, aad: Buffer, plaintext: string): Buffer {
  const { nonce, body, tag } = encrypt(k, aad, plaintext);
  return Buffer.concat([Buffer.from([BINARY_VERSION]), nonce, body, tag]);
}

/** The plaintext of seal(); throws SecretUnreadableError when the key or the additional data differ or a byte was changed. */
export function unseal(k: SealKey, aad: Buffer, blob: Uint8Array): string {
  const buf = Buffer.from(blob);
  if (buf.length < 1 + NONCE + TAG + 1 || buf[0] !== BINARY_VERSION) throw new SecretUnreadableError('unknown ciphertext layout');
  return decrypt(k, aad, { nonce: buf.subarray(1, 1 + NONCE), body: buf.subarray(1 + NONCE, buf.length - TAG), tag: buf.subarray(buf.length - TAG) });
}

/** AES-256-GCM of `plaintext` (no additional data) in the text layout: "v1:" + base64(nonce | tag | ciphertext). */
export function sealText(k: SealKey, plaintext: string): string {
  const { nonce, body, tag } = encrypt(k, null, plaintext);
  return TEXT_VERSION + Buffer.concat([nonce, tag, body]).toString('base64');
}

/** The plaintext of sealText(); throws SecretUnreadableError when the key differs or a byte was changed. */
export function unsealText(k: SealKey, stored: string): string {
  if (!stored.startsWith(TEXT_VERSION)) throw new SecretUnreadableError('unknown secret format');
  const raw = Buffer.from(stored.slice(TEXT_VERSION.length), 'base64');
  if (raw.length < NONCE + TAG) throw new SecretUnreadableError(UNREADABLE);
  return decrypt(k, null, { nonce: raw.subarray(0, NONCE), tag: raw.subarray(NONCE, NONCE + TAG), body: raw.subarray(NONCE + TAG) });
}

const totpAad = (userId: string) => Buffer.from(`svc:mfa:totp:${userId}`, 'utf8');

export const encryptSecret = (k: MfaKey, userId: string, secret: string): Buffer => seal(k, totpAad(userId), secret);

/** The plaintext secret; throws SecretUnreadableError when the key differs or a byte was changed. */
export const decryptSecret = (k: MfaKey, userId: string, blob: Uint8Array): string => unseal(k, totpAad(userId), blob);
