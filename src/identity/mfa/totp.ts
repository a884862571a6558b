// TOTP (RFC 6238) with otplib: HMAC-SHA-1, 6 digits, 30-second steps, 160-bit secrets in base32 (what
// every authenticator app reads from an otpauth:// URI). A code is accepted one step early or late
// (clock drift) and never twice: the step of the last accepted code is stored per user and a code of
// that step or an earlier one is refused (replay).
import { generateSecret, generateSync, generateURI, verifySync } from 'otplib';

/** The one TOTP configuration of the service (the RFC 6238 test in test/identity/mfa.test.ts uses it too). */
export const TOTP_CONFIG = Object.freeze({ algorithm: 'sha1', digits: 6, period: 30 } as const);
/** Steps of clock drift tolerated either way. */
export const DRIFT_STEPS = 1;
export const TOTP_ISSUER = 'svc';
const SECRET_BYTES = 20;

export const newTotpSecret = (): string => generateSecret({ length: SECRET_BYTES });

export function otpauthUri(secret: string, accountName: string): string {
  return generateURI({ issuer: TOTP_ISSUER, label: accountName, secret, ...TOTP_CONFIG });
}

export const stepOf = (epochSeconds: number): number => Math.floor(epochSeconds / TOTP_CONFIG.period);

export const looksLikeTotp = (code: string): boolean => new RegExp(`^\\d{${TOTP_CONFIG.digits}}$`).test(code);

/** The code of `secret` at a time (tests and the CLI-less set-up of fixtures). */
export function totpAt(secret: string, epochSeconds: number): string {
  return generateSync({ secret, epoch: epochSeconds, ...TOTP_CONFIG });
}

export type TotpCheck = { ok: true; step: number } | { ok: false; reason: 'wrong_code' | 'replayed' };

/**
 * Checks a code against the secret at `epochSeconds`, tolerating DRIFT_STEPS either way; a code whose
 * step is not after `lastStep` (the last accepted one) is a replay. Constant-time comparison is otplib's.
 */
export function checkTotp(secret: string, code: string, epochSeconds: number, lastStep: number | null): TotpCheck {
  if (!looksLikeTotp(code)) return { ok: false, reason: 'wrong_code' };
  let r;
  try {
    r = verifySync({ secret, token: code, epoch: epochSeconds, epochTolerance: TOTP_CONFIG.period * DRIFT_STEPS, ...TOTP_CONFIG });
  } catch {
    return { ok: false, reason: 'wrong_code' };
  }
  if (!r.valid || !('timeStep' in r)) return { ok: false, reason: 'wrong_code' };
  if (lastStep !== null && r.timeStep <= lastStep) return { ok: false, reason: 'replayed' };
  return { ok: true, step: r.timeStep };
}
