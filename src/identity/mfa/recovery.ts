// One-time recovery codes: ten per enablement, 80 random bits each, written "xxxx-xxxx-xxxx-xxxx" in
// Crockford base32 (no i, l, o, u; input is forgiving about case, dashes, spaces and i/l/o). Shown once;
// stored as SHA-256 of user id and normalized code.
import crypto from 'node:crypto';
import { newId, sha256Hex } from '../../kernel/ids.ts';

export const RECOVERY_CODE_COUNT = 10;
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
const LENGTH = 16;

export function newRecoveryCode(): string {
  let s = '';
  for (let i = 0; i < LENGTH; i++) s += ALPHABET[crypto.randomInt(ALPHABET.length)];
  return s.match(/.{4}/g)!.join('-');
}

/** The canonical form of a typed code, or null when it cannot be one. */
export function normalizeRecoveryCode(input: string): string | null {
  const s = input.toLowerCase().replace(/[\s-]+/g, '').replace(/[il]/g, '1').replace(/o/g, '0');
  return s.length === LENGTH && [...s].every((c) => ALPHABET.includes(c)) ? s : null;
}

export const recoveryCodeHash = (userId: string, normalized: string): string => sha256Hex(`${userId}:${normalized}`);

/** Ten new codes (to show once) and their rows (to store). */
export function newRecoveryCodes(userId: string): { codes: string[]; rows: Array<{ id: string; hash: string }> } {
  const codes = Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode);
  return { codes, rows: codes.map((c) => ({ id: newId('mrc'), hash: recoveryCodeHash(userId, normalizeRecoveryCode(c)!) })) };
}
