// The return path a sign-in may carry back to the front end: only a relative path of the front end,
// never an absolute or scheme-relative URL (no open redirect).
import { validationFailed } from '../../kernel/errors.ts';

const MAX = 2000;

/**
 * null for none; the path itself when it is a relative path of the front end: starts with exactly
 * one '/' (not '//' nor '/\'), has no scheme, no backslash, no control or whitespace characters, at
 * most 2000 characters. Anything else: 422 validation_failed on returnTo.
 */
export function safeReturnTo(raw: string | null | undefined): string | null {
  if (raw === null || raw === undefined || raw === '') return null;
  const refuse = (why: string) => validationFailed({ returnTo: why });
  if (typeof raw !== 'string') throw refuse('must be a string');
  if (raw.length > MAX) throw refuse(`must be at most ${MAX} characters`);
  // Control characters (C0, DEL, C1) and any whitespace: browsers strip some of them, which can turn
  // "/\t/evil.example" into "//evil.example".
  // eslint-disable-next-line no-control-regex -- it refuses control characters on purpose
  if (/[\u0000-\u001f\u007f-\u009f\s]/u.test(raw)) throw refuse('must not contain control or whitespace characters');
  if (raw.includes('\\')) throw refuse('must not contain a backslash');
  if (!raw.startsWith('/') || raw.startsWith('//')) throw refuse('must be a relative path of the front end starting with one /');
  // Percent-encoded slashes or backslashes right after the first one could be decoded into "//" by a front-end router.
  if (/^\/(%2f|%5c)/i.test(raw)) throw refuse('must be a relative path of the front end starting with one /');
  // A path has no scheme; parsing against a fixed origin must keep that origin.
  let parsed: URL;
  try {
    parsed = new URL(raw, 'https://front.invalid');
  } catch {
    throw refuse('is not a valid path');
  }
  if (parsed.origin !== 'https://front.invalid') throw refuse('must stay on the front end');
  return raw;
}
