// Webhook secrets at rest (src/platform/notifications/secrets.ts): the key file is made once with
// mode 0600 and a secret stored before the sealer moved to the kernel still decrypts under it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Config } from '../../src/kernel/config.ts';
import { decryptSecret, encryptSecret, secretsKeyFile } from '../../src/platform/notifications/secrets.ts';

const temp = (t: { after(fn: () => void): void }) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-secrets-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return { dataDir: dir } as Config;
};

test('a webhook secret stored by the former code decrypts under its key file', (t) => {
  const config = temp(t);
  fs.mkdirSync(path.dirname(secretsKeyFile(config)), { recursive: true });
  fs.writeFileSync(secretsKeyFile(config), Buffer.alloc(32, 7).toString('base64') + '\n');
  const stored = 'v1:oEjzGURY/eW8CnOUYkxeN9Z7/JRZz3sGlYhh7KUztr684PaWix386bMZGUUS36KVrAGzx4R7Co5eJlqKkEnbjsNfLtORZUk92tbTfI71';
  assert.equal(decryptSecret(config, stored), 'whsec_MfKQ9r8GKYqrTFXP8rAs8XtRk0ZxwH9Ep8y8b9xVQvQ=');
});

test('the key file is made at first use (mode 0600) and kept; secrets round-trip under it', (t) => {
  const config = temp(t);
  const stored = encryptSecret(config, 'whsec_abc');
  assert.ok(stored.startsWith('v1:'));
  const file = secretsKeyFile(config);
  assert.equal(fs.statSync(file).mode & 0o777, 0o600);
  assert.equal(Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'base64').length, 32);
  assert.equal(decryptSecret(config, stored), 'whsec_abc');
  assert.throws(() => decryptSecret(config, 'v0:abc'), /unknown secret format/);
});
