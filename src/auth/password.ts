// Password hashing with scrypt at OWASP parameters (N=2^17, r=8, p=1), computed on the libuv pool
// with the async API so the event loop keeps serving. Each hash carries its parameters
// ("$scrypt$ln=17,r=8,p=1$salt$hash", PHC style) so they can be raised later; verification
// compares in constant time.
import crypto from 'node:crypto';

const KEY_LENGTH = 32;
const SALT_LENGTH = 16;
const R = 8;
const P = 1;

interface Parsed { logN: number; r: number; p: number; salt: Buffer; hash: Buffer }

// At most two hashes run at once (128 MiB each at N=2^17): the rest wait here instead of filling
// the libuv pool that file I/O shares.
const MAX_PARALLEL = 2;
let running = 0;
const waiting: Array<() => void> = [];

async function scrypt(password: string, salt: Buffer, logN: number, r: number, p: number, keylen: number): Promise<Buffer> {
  if (running >= MAX_PARALLEL) await new Promise<void>((resolve) => waiting.push(resolve));
  running++;
  const N = 2 ** logN;
  // scrypt needs 128 * N * r bytes; allow twice that so the default 32 MiB cap never refuses.
  const maxmem = 256 * N * r + 1024 * 1024;
  try {
    return await new Promise<Buffer>((resolve, reject) => {
      crypto.scrypt(password.normalize('NFC'), salt, keylen, { N, r, p, maxmem }, (err, key) => (err ? reject(err) : resolve(key)));
    });
  } finally {
    running--;
    waiting.shift()?.();
  }
}

export async function hashPassword(password: string, logN: number): Promise<string> {
  const salt = crypto.randomBytes(SALT_LENGTH);
  const hash = await scrypt(password, salt, logN, R, P, KEY_LENGTH);
  return `$scrypt$ln=${logN},r=${R},p=${P}$${salt.toString('base64url')}$${hash.toString('base64url')}`;
}

function parse(stored: string): Parsed | null {
  const m = /^\$scrypt\$ln=(\d+),r=(\d+),p=(\d+)\$([\w-]+)\$([\w-]+)$/.exec(stored);
  if (!m) return null;
  return { logN: Number(m[1]), r: Number(m[2]), p: Number(m[3]), salt: Buffer.from(m[4], 'base64url'), hash: Buffer.from(m[5], 'base64url') };
}

export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  const parsed = stored ? parse(stored) : null;
  if (!parsed) return false;
  const candidate = await scrypt(password, parsed.salt, parsed.logN, parsed.r, parsed.p, parsed.hash.length);
  return crypto.timingSafeEqual(candidate, parsed.hash);
}

/** True when the stored hash was made with weaker parameters than the current ones. */
export function needsRehash(stored: string, logN: number): boolean {
  const parsed = parse(stored);
  return !parsed || parsed.logN < logN || parsed.r < R;
}

const dummies = new Map<number, Promise<string>>();

/** The hash that unknown e-mail addresses are checked against; made at start so the first one is not slower. */
export function dummyHash(logN: number): Promise<string> {
  let dummy = dummies.get(logN);
  if (!dummy) dummies.set(logN, (dummy = hashPassword(crypto.randomBytes(16).toString('hex'), logN)));
  return dummy;
}

/** Spends the same work as a real verification, for unknown e-mail addresses (no timing oracle). */
export async function verifyAgainstDummy(password: string, logN: number): Promise<false> {
  await verifyPassword(password, await dummyHash(logN));
  return false;
}

export const PASSWORD_MIN = 10;
export const PASSWORD_MAX = 1024;

/** The password rules: 10 to 1024 characters, not blank, not the e-mail address. */
export function passwordProblem(password: string, email?: string): string | null {
  if (password.length < PASSWORD_MIN) return `must be at least ${PASSWORD_MIN} characters`;
  if (password.length > PASSWORD_MAX) return `must be at most ${PASSWORD_MAX} characters`;
  if (password.trim() === '') return 'must not be blank';
  if (email && password.trim().toLowerCase() === email.trim().toLowerCase()) return 'must not be the e-mail address';
  return null;
}

/** A one-time initial password: 120 random bits, 20 characters. */
export function generatePassword(): string {
  return crypto.randomBytes(15).toString('base64url');
}
