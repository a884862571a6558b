// Webhook secrets and signatures (Standard Webhooks). A secret is "whsec_" + base64 of 32 random
// bytes, shown once. It must stay usable for signing, so it is stored encrypted (AES-256-GCM) with a
// key kept in DATA_DIR/notifications/secrets.key (created at first use, mode 0600): the database, and
// so its snapshots, hold only ciphertext and a hint. Without the key file the channel cannot sign
// (rotate its secret).
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../../kernel/config.ts';

const PREFIX = 'whsec_';

export function newWebhookSecret(): string {
  return PREFIX + crypto.randomBytes(32).toString('base64');
}

export const secretHint = (secret: string) => `${PREFIX}\u2026${secret.slice(-4)}`;

/** The webhook-signature header value: "v1," + base64 HMAC-SHA256 of "id.timestamp.body" keyed with the decoded secret. */
export function signatureHeader(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64');
  return `v1,${crypto.createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

const keys = new Map<string, Buffer>();

export const secretsKeyFile = (config: Config) => path.join(config.dataDir, 'notifications', 'secrets.key');

function encryptionKey(config: Config): Buffer {
  const file = secretsKeyFile(config);
  const known = keys.get(file);
  if (known) return known;
  fs.mkdirSync(path.dirname(file), { recursive: true });
  try {
    fs.writeFileSync(file, crypto.randomBytes(32).toString('base64') + '\n', { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const key = Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'base64');
  if (key.length !== 32) throw new Error(`${file} does not hold a 32-byte base64 key`);
  keys.set(file, key);
  return key;
}

/** "v1:" + base64(iv | tag | ciphertext). */
export function encryptSecret(config: Config, secret: string): string {
  const iv = crypto.randomBytes(12);
  const cipher = crypto.createCipheriv('aes-256-gcm', encryptionKey(config), iv);
  const ct = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return `v1:${Buffer.concat([iv, cipher.getAuthTag(), ct]).toString('base64')}`;
}

export function decryptSecret(config: Config, stored: string): string {
  if (!stored.startsWith('v1:')) throw new Error('unknown secret format');
  const raw = Buffer.from(stored.slice(3), 'base64');
  const decipher = crypto.createDecipheriv('aes-256-gcm', encryptionKey(config), raw.subarray(0, 12));
  decipher.setAuthTag(raw.subarray(12, 28));
  return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
}
