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

type Fill = (buf: Buffer, offset: number, length: number) => void;

/**
 * A source of ids: 48-bit millisecond time + 80 random bits, monotonic within the source (ULID-style).
 * When the clock has not advanced past the previous id's millisecond (or went back), the next id keeps
 * that millisecond and adds 1 + a fresh 32-bit random amount to the previous random part, so it sorts
 * strictly after the previous id and is still not guessable from it. If that addition carries out of
 * the 80 bits, the time part is bumped by 1 ms and the random part drawn afresh. `clock` and `random`
 * are for tests; the process uses one source, `newId`.
 */
export function idSource(clock: () => number = Date.now, random: Fill = randomInto): (prefix: string) => string {
  const last = Buffer.alloc(16); // the previous id's bytes: time (0-5), random part (6-15)
  let lastMs = -1;
  const step = Buffer.allocUnsafe(4);
  return (prefix) => {
    const now = clock();
    if (now > lastMs) {
      lastMs = now;
      last.writeUIntBE(now, 0, 6);
      random(last, 6, 10);
    } else {
      random(step, 0, 4);
      let carry = step.readUInt32BE(0) + 1; // 1 .. 2^32
      for (let i = 15; i >= 6 && carry > 0; i--) {
        const sum = last[i] + (carry % 256);
        last[i] = sum & 255;
        carry = Math.floor(carry / 256) + (sum >> 8);
      }
      if (carry > 0) {
        lastMs += 1;
        last.writeUIntBE(lastMs, 0, 6);
        random(last, 6, 10);
      }
    }
    return `${prefix}_${base32(last)}`;
  };
}

/** prefix + 48-bit millisecond time + 80 random bits: sortable by creation (strictly, within a process), unguessable. */
export const newId: (prefix: string) => string = idSource();

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
