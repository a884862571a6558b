// Password hashing with scrypt at OWASP parameters (N=2^17, r=8, p=1), computed on the libuv pool
// with the async API so the event loop keeps serving. Each hash carries its parameters
// ("$scrypt$ln=17,r=8,p=1$salt$hash", PHC style) so they can be raised later; verification
// compares in constant time.
import crypto from 'node:crypto';
import { COMMON_PASSWORDS } from './common-passwords.ts';

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

/** The lowest minimum length the identity policy may set, and the longest password accepted. */
export const PASSWORD_MIN_FLOOR = 8;
export const PASSWORD_MAX = 1024;

/** The password rules of the identity policy (src/identity/policy): minimum length and the weak-password check. */
export interface PasswordRules { minLength: number; breachedCheck: boolean }
export const DEFAULT_PASSWORD_RULES: Readonly<PasswordRules> = Object.freeze({ minLength: 12, breachedCheck: true });

/**
 * The password rules: at least `minLength` characters (never below 8), at most 1024, not blank, not
 * the e-mail address; with `breachedCheck` also not a common or breached password (weakness below).
 */
export function passwordProblem(password: string, email?: string, rules: Readonly<PasswordRules> = DEFAULT_PASSWORD_RULES): string | null {
  const min = Math.max(PASSWORD_MIN_FLOOR, rules.minLength);
  const length = [...password].length;
  if (length < min) return `must be at least ${min} characters`;
  if (length > PASSWORD_MAX) return `must be at most ${PASSWORD_MAX} characters`;
  if (password.trim() === '') return 'must not be blank';
  if (email && password.trim().toLowerCase() === email.trim().toLowerCase()) return 'must not be the e-mail address';
  return rules.breachedCheck ? weakness(password, email) : null;
}

const LEET: Record<string, string> = { 0: 'o', 1: 'i', 3: 'e', 4: 'a', 5: 's', 7: 't', 8: 'b', 9: 'g', '@': 'a', $: 's', '!': 'i', '+': 't', '|': 'l' };
const deleet = (s: string): string => s.replace(/[01345789@$!+|]/g, (c) => LEET[c] ?? c);

/** Rows of characters people type in order: alphabet, digits, keyboard rows and columns (each also backwards). */
const SEQUENCES = [
  'abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz', '0123456789012345678901234567890123456789',
  'qwertyuiopasdfghjklzxcvbnm', 'qwertzuiopasdfghjklyxcvbnm', 'azertyuiopqsdfghjklmwxcvbn',
  '1qaz2wsx3edc4rfv5tgb6yhn7ujm8ik9ol0p', 'qazwsxedcrfvtgbyhnujmikolp', '!@#$%^&*()_+',
].flatMap((s) => [s, [...s].reverse().join('')]);

/**
 * Why a password is too easy to guess, or null: one of the COMMON_PASSWORDS (also with digits or
 * symbols around it, in leetspeak, or repeated), fewer than 4 different characters, a short pattern
 * repeated, a run along the alphabet, the digits or the keyboard, or containing the e-mail's local part.
 */
export function weakness(password: string, email?: string): string | null {
  const l = password.toLowerCase().replace(/\s+/g, '');
  const trimmed = l.replace(/^[^a-z0-9]+|[^a-z0-9]+$/g, '');
  const core = l.replace(/^[^a-z@$]+|[^a-z]+$/g, '');
  const unit = /^(.+?)\1+$/.exec(l)?.[1];
  const candidates = [l, trimmed, core, deleet(trimmed), deleet(core), ...(unit ? [unit, deleet(unit)] : [])];
  if (candidates.some((c) => c.length > 0 && COMMON_PASSWORDS.has(c))) return 'is too common (it is on the list of common and breached passwords)';
  if (new Set(l).size < 4) return 'is too simple: it needs at least 4 different characters';
  if (unit && [...unit].length <= 4) return 'is too simple: a short pattern repeated';
  if (SEQUENCES.some((s) => s.includes(l))) return 'is too simple: a run of consecutive characters';
  const local = email?.split('@')[0]?.trim().toLowerCase().replace(/\s+/g, '') ?? '';
  if (local.length >= 4 && l.includes(local)) return 'must not contain the e-mail address';
  return null;
}

/** A one-time initial password: at least 120 random bits, 20 characters (more when the policy's minimum is higher). */
export function generatePassword(minLength = 20): string {
  return crypto.randomBytes(Math.ceil(Math.max(20, minLength) * 3 / 4)).toString('base64url');
}
