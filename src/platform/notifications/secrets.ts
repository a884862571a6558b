// Webhook secrets and signatures (Standard Webhooks). A secret is "whsec_" + base64 of 32 random
// bytes, shown once. It must stay usable for signing, so it is stored encrypted (the kernel's sealer,
// src/kernel/seal.ts, text layout) with a key kept in DATA_DIR/notifications/secrets.key (created at
// first use, mode 0600): the database, and so its snapshots, hold only ciphertext and a hint. Without
// the key file the channel cannot sign (rotate its secret).
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../../kernel/config.ts';
import { sealText, unsealText, type SealKey } from '../../kernel/seal.ts';

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

const keys = new Map<string, SealKey>();

export const secretsKeyFile = (config: Config) => path.join(config.dataDir, 'notifications', 'secrets.key');

function encryptionKey(config: Config): SealKey {
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
  const sealKey = { key };
  keys.set(file, sealKey);
  return sealKey;
}

/** The secret sealed under the key file, as text ("v1:" + base64(nonce | tag | ciphertext)). */
export const encryptSecret = (config: Config, secret: string): string => sealText(encryptionKey(config), secret);

/** The secret of encryptSecret(); throws SecretUnreadableError when the key file changed or a byte was changed. */
export const decryptSecret = (config: Config, stored: string): string => unsealText(encryptionKey(config), stored);
