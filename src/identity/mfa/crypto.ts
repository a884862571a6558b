// Encryption of TOTP secrets at rest: AES-256-GCM under SVC_MFA_ENCRYPTION_KEY, a fresh 96-bit nonce
// per secret, the user id as additional data (a ciphertext moved to another user's row does not
// decrypt). Stored layout: version byte (1) | nonce (12) | ciphertext | tag (16). Any failure to
// decrypt throws: callers refuse the code (fail closed), they never fall back to accepting it.
//
// The key: 64 hex characters or base64/base64url of exactly 32 bytes are used as they are; any other
// value of at least 16 characters is a passphrase stretched with scrypt (N=2^15, r=8, p=1, fixed
// salt, once per process). Unset: a built-in development key (public, so the server warns at start).
import crypto from 'node:crypto';
import { ConfigError, type Config } from '../../config.ts';

const VERSION = 1;
const NONCE = 12;
const TAG = 16;
const PASSPHRASE_MIN = 16;
const SCRYPT_SALT = 'svc/mfa-encryption-key/v1';

export interface MfaKey {
  key: Buffer;
  /** Short fingerprint stored beside each ciphertext: tells a changed key from a damaged row. */
  id: string;
  source: 'development' | 'hex' | 'base64' | 'passphrase';
}

const DEVELOPMENT_KEY = crypto.hash('sha256', 'svc built-in development MFA key: public, never use it in production', 'buffer');

function fingerprint(key: Buffer): string {
  return crypto.createHmac('sha256', key).update('svc/mfa-key-id').digest('hex').slice(0, 16);
}

/** Interprets SVC_MFA_ENCRYPTION_KEY; throws ConfigError for a value that is neither a key nor a long enough passphrase. */
export function parseMfaKey(raw: string): MfaKey {
  const value = raw.trim();
  let key: Buffer;
  let source: MfaKey['source'];
  if (value === '') {
    key = DEVELOPMENT_KEY;
    source = 'development';
  } else if (/^[0-9a-fA-F]{64}$/.test(value)) {
    key = Buffer.from(value, 'hex');
    source = 'hex';
  } else if (/^[A-Za-z0-9+/_-]{43}=?$/.test(value) && Buffer.from(value, 'base64').length === 32) {
    key = Buffer.from(value, 'base64');
    source = 'base64';
  } else if (value.length >= PASSPHRASE_MIN) {
    key = crypto.scryptSync(value.normalize('NFC'), SCRYPT_SALT, 32, { N: 2 ** 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 });
    source = 'passphrase';
  } else {
    throw new ConfigError(`SVC_MFA_ENCRYPTION_KEY must be 32 bytes as 64 hex or base64 characters, or a passphrase of at least ${PASSPHRASE_MIN} characters`);
  }
  return { key, id: fingerprint(key), source };
}

const keys = new Map<string, MfaKey>();

/** The key of this configuration (derived once per process). */
export function mfaKey(config: Config): MfaKey {
  let k = keys.get(config.mfaEncryptionKey);
  if (!k) keys.set(config.mfaEncryptionKey, (k = parseMfaKey(config.mfaEncryptionKey)));
  return k;
}

const aad = (userId: string) => Buffer.from(`svc:mfa:totp:${userId}`, 'utf8');

export function encryptSecret(k: MfaKey, userId: string, secret: string): Buffer {
  const nonce = crypto.randomBytes(NONCE);
  const cipher = crypto.createCipheriv('aes-256-gcm', k.key, nonce, { authTagLength: TAG });
  cipher.setAAD(aad(userId));
  const body = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return Buffer.concat([Buffer.from([VERSION]), nonce, body, cipher.getAuthTag()]);
}

export class SecretUnreadableError extends Error {}

/** The plaintext secret; throws SecretUnreadableError when the key differs or a byte was changed. */
export function decryptSecret(k: MfaKey, userId: string, blob: Uint8Array): string {
  const buf = Buffer.from(blob);
  if (buf.length < 1 + NONCE + TAG + 1 || buf[0] !== VERSION) throw new SecretUnreadableError('unknown ciphertext layout');
  try {
    const decipher = crypto.createDecipheriv('aes-256-gcm', k.key, buf.subarray(1, 1 + NONCE), { authTagLength: TAG });
    decipher.setAAD(aad(userId));
    decipher.setAuthTag(buf.subarray(buf.length - TAG));
    return Buffer.concat([decipher.update(buf.subarray(1 + NONCE, buf.length - TAG)), decipher.final()]).toString('utf8');
  } catch {
    throw new SecretUnreadableError('the secret does not decrypt with this key (changed key or damaged row)');
  }
}
