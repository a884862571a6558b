// Opaque, prefixed, roughly time-ordered identifiers ("usr_01jd...") and secret tokens.
import crypto from 'node:crypto';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'; // Crockford base32, lower case

function base32(bytes: Uint8Array): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const b of bytes) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += ALPHABET[(value << (5 - bits)) & 31];
  return out;
}

// Random bytes are drawn from the CSPRNG in blocks: one syscall per 409 ids instead of one each.
const POOL = Buffer.allocUnsafe(4096);
let poolOffset = POOL.length;

function randomInto(buf: Buffer, offset: number, length: number): void {
  if (poolOffset + length > POOL.length) {
    crypto.randomFillSync(POOL);
    poolOffset = 0;
  }
  POOL.copy(buf, offset, poolOffset, poolOffset + length);
  poolOffset += length;
}

/** prefix + 48-bit millisecond time + 80 random bits: sortable by creation, unguessable. */
export function newId(prefix: string): string {
  const buf = Buffer.allocUnsafe(16);
  buf.writeUIntBE(Date.now(), 0, 6);
  randomInto(buf, 6, 10);
  return `${prefix}_${base32(buf)}`;
}

/** A secret bearer value: 32 random bytes, base64url. */
export function newToken(bytes = 32): string {
  return crypto.randomBytes(bytes).toString('base64url');
}

export function sha256Hex(value: string | Buffer): string {
  return crypto.hash('sha256', value, 'hex');
}

/** A secret shown once: the token, its SHA-256 (what is stored) and a short hint (its last characters). */
export function issueSecret(prefix = ''): { token: string; hash: string; hint: string } {
  const token = `${prefix}${newToken()}`;
  return { token, hash: sha256Hex(token), hint: `\u2026${token.slice(-4)}` };
}
