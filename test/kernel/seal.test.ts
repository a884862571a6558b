// The kernel's AES-256-GCM sealer (src/kernel/seal.ts): both stored layouts round-trip, fail
// closed, and read values sealed by the code before the two sealers became one (fixed vectors).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  decryptSecret, parseEncryptionKey, parseMfaKey, seal, sealText, SecretUnreadableError, SSO_KEY_SETTING, unseal, unsealText,
} from '../../src/kernel/seal.ts';

const MFA_HEX = '00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff';
const SSO_HEX = 'ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100';
/** The key of a webhook key file holding base64 of 32 bytes of 7. */
const WEBHOOK_KEY = { key: Buffer.alloc(32, 7) };

// Produced by identity/mfa/crypto.ts, the SSO flow-state sealer and notifications/secrets.ts as they
// were before this module sealed for all of them.
const OLD_TOTP = 'ATHypHBWcQQ4JzRRJbqDFtOHSgrw2mULFzPM2UjTBII5NbarxEFJRPWAMNpt4+FZ8dVXrxLfpkS5VXOTzQ==';
const OLD_SSO = 'AYFhFASkx8x3Q6+swDotrMoU9ZzXr/iFfTJ+9M+6H/iQ0orbm8hoS2JaY6c=';
const OLD_WEBHOOK = 'v1:oEjzGURY/eW8CnOUYkxeN9Z7/JRZz3sGlYhh7KUztr684PaWix386bMZGUUS36KVrAGzx4R7Co5eJlqKkEnbjsNfLtORZUk92tbTfI71';

test('values stored before the sealers were one still decrypt: TOTP secret, SSO flow state, webhook secret', () => {
  assert.equal(decryptSecret(parseMfaKey(MFA_HEX), 'usr_vector', Buffer.from(OLD_TOTP, 'base64')), 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP');
  const sso = parseEncryptionKey(SSO_HEX, SSO_KEY_SETTING);
  assert.equal(unseal(sso, Buffer.from('svc:test:aad'), Buffer.from(OLD_SSO, 'base64')), '{"state":"abc"}');
  assert.equal(unsealText(WEBHOOK_KEY, OLD_WEBHOOK), 'whsec_MfKQ9r8GKYqrTFXP8rAs8XtRk0ZxwH9Ep8y8b9xVQvQ=');
});

test('the binary layout: version byte, nonce, ciphertext, tag; bound to its key and additional data', () => {
  const k = parseMfaKey(MFA_HEX);
  const aad = Buffer.from('row 1');
  const blob = seal(k, aad, 'plain text é');
  assert.equal(blob[0], 1);
  assert.equal(blob.length, 1 + 12 + Buffer.byteLength('plain text é') + 16);
  assert.notDeepEqual(seal(k, aad, 'plain text é'), blob, 'a fresh nonce each time');
  assert.equal(unseal(k, aad, blob), 'plain text é');
  assert.throws(() => unseal(k, Buffer.from('row 2'), blob), SecretUnreadableError);
  assert.throws(() => unseal(parseMfaKey(SSO_HEX), aad, blob), /does not decrypt/);
  const damaged = Buffer.from(blob);
  damaged[20] ^= 1;
  assert.throws(() => unseal(k, aad, damaged), /does not decrypt/);
  assert.throws(() => unseal(k, aad, Buffer.concat([Buffer.from([2]), blob.subarray(1)])), /unknown ciphertext layout/);
  assert.throws(() => unseal(k, aad, blob.subarray(0, 29)), /unknown ciphertext layout/);
});

test('the text layout: "v1:" + base64(nonce | tag | ciphertext); fails closed', () => {
  const stored = sealText(WEBHOOK_KEY, 'whsec_secret');
  assert.match(stored, /^v1:[A-Za-z0-9+/]+=*$/);
  assert.equal(Buffer.from(stored.slice(3), 'base64').length, 12 + 16 + 'whsec_secret'.length);
  assert.notEqual(sealText(WEBHOOK_KEY, 'whsec_secret'), stored);
  assert.equal(unsealText(WEBHOOK_KEY, stored), 'whsec_secret');
  assert.throws(() => unsealText({ key: Buffer.alloc(32, 8) }, stored), SecretUnreadableError);
  assert.throws(() => unsealText(WEBHOOK_KEY, 'v2:' + stored.slice(3)), /unknown secret format/);
  assert.throws(() => unsealText(WEBHOOK_KEY, 'v1:AAAA'), /does not decrypt/);
  const raw = Buffer.from(stored.slice(3), 'base64');
  raw[raw.length - 1] ^= 1;
  assert.throws(() => unsealText(WEBHOOK_KEY, `v1:${raw.toString('base64')}`), /does not decrypt/);
});
