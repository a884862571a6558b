// The holder of an MFA challenge (no session yet): the login exchange (POST /api/auth/login/mfa) and
// enrollment (/api/auth/mfa/enroll/*). Refusals that must be remembered (wrong codes, locks) are
// written by a transaction that returns the error instead of throwing it, so that they commit.
// Audited as auth.mfa.* (never a secret, code or token).
import type { Ctx } from '../../directory/context.ts';
import { record } from '../../platform/audit/service.ts';
import { AppError, conflict, rateLimited, type ErrorCodeWithStatus } from '../../kernel/errors.ts';
import { sha256Hex } from '../../kernel/ids.ts';
import { userById, type UserRow } from '../../directory/users/store.ts';
import { checkAttempt, clearAttempts } from '../../gate/ratelimit.ts';
import { accountSuspended, addressLimited, completeSignIn, type FirstFactor, type LoginLimits, type StartedSession } from '../sessions/service.ts';
import { CHALLENGE_MAX_FAILURES } from '../sessions/challenges.ts';
import { beginSetup, enable, NO_TENANT, useCode, type TotpSetup } from './factor.ts';
import {
  challengeByTokenHash, challengeOpen, consumeChallenge, factorOf, failChallenge, recoveryCodesLeft, type ChallengeRow,
} from '../../directory/mfa/store.ts';

export interface SignedIn { user: UserRow; started: StartedSession }

const challengeError = <S extends number>(status: S, code: ErrorCodeWithStatus<S>, message: string, details?: Record<string, unknown>) => new AppError(status, code, message, details);

/** Audits a refused challenge and returns the error to answer. */
async function refusal(ctx: Ctx, ch: ChallengeRow | undefined, reason: string, error: AppError): Promise<AppError> {
  await record(ctx, {
    action: 'auth.mfa.challenge_refused', targetType: 'user', targetId: ch?.user_id ?? null, result: 'denied',
    actorUserId: ch?.user_id ?? null, ...NO_TENANT, metadata: { challengeId: ch?.id ?? null, purpose: ch?.purpose ?? null, reason },
  });
  return error;
}

async function refuse(ctx: Ctx, ch: ChallengeRow | undefined, reason: string, error: AppError): Promise<never> {
  throw await refusal(ctx, ch, reason, error);
}

/** The live challenge of a token and its user, or the refusal: 401 invalid, locked or expired; 403 suspended. */
async function openChallenge(ctx: Ctx, token: string, purpose: ChallengeRow['purpose']): Promise<{ ch: ChallengeRow; user: UserRow }> {
  // An unknown token counts against the address's failed-attempt limit; a real one is judged by the
  // challenge's own limits below.
  const ch = await addressLimited(ctx, async () => {
    const found = await challengeByTokenHash(ctx.db, sha256Hex(token));
    if (!found || found.purpose !== purpose) {
      throw await refusal(ctx, undefined, found ? 'wrong_purpose' : 'unknown_token', challengeError(401, 'mfa_challenge_invalid', 'the challenge token is unknown or already used; log in again'));
    }
    return found;
  }, { onRefused: (wait) => refuse(ctx, undefined, 'rate_limited', rateLimited(wait)) });
  if (ch.locked_at) throw await refusal(ctx, ch, 'locked', challengeError(401, 'mfa_challenge_locked', `the challenge is locked after ${CHALLENGE_MAX_FAILURES} wrong codes; log in again`));
  if (ch.consumed_at) throw await refusal(ctx, ch, 'used', challengeError(401, 'mfa_challenge_invalid', 'the challenge token is unknown or already used; log in again'));
  if (ch.expires_at <= ctx.now().toISOString()) throw await refusal(ctx, ch, 'expired', challengeError(401, 'mfa_challenge_expired', 'the challenge has expired (5 minutes); log in again'));
  const user = await userById(ctx.db, ch.user_id);
  if (!user || user.status !== 'active') throw await refusal(ctx, ch, 'account_suspended', accountSuspended());
  return { ch, user };
}

/** A wrong code on a challenge: counted, audited, locked at the fifth; returns the answer to give. */
async function wrongCode(ctx: Ctx, ch: ChallengeRow, user: UserRow, reason: string): Promise<AppError> {
  const failures = await failChallenge(ctx.db, ch.id, CHALLENGE_MAX_FAILURES, ctx.now().toISOString());
  const locked = failures >= CHALLENGE_MAX_FAILURES;
  await record(ctx, {
    action: 'auth.mfa.code_rejected', targetType: 'user', targetId: user.id, result: 'failure', actorUserId: user.id, actorName: user.name,
    ...NO_TENANT, metadata: { challengeId: ch.id, purpose: ch.purpose, reason, failedAttempts: failures },
  });
  if (locked) {
    await record(ctx, {
      action: 'auth.mfa.challenge_locked', targetType: 'user', targetId: user.id, result: 'denied', actorUserId: user.id, actorName: user.name,
      ...NO_TENANT, metadata: { challengeId: ch.id, purpose: ch.purpose, failedAttempts: failures },
    });
    return challengeError(401, 'mfa_challenge_locked', `${CHALLENGE_MAX_FAILURES} wrong codes: the challenge is locked; log in again`);
  }
  return challengeError(401, 'mfa_code_invalid', 'the code is wrong, expired or already used', { attemptsLeft: CHALLENGE_MAX_FAILURES - failures });
}

const sessionKind = (ch: ChallengeRow, browserRequest: boolean): 'bearer' | 'browser' =>
  ch.session_kind === 'browser' && browserRequest ? 'browser' : 'bearer';

/**
 * POST /api/auth/login/mfa: a TOTP code (or a recovery code) for the login challenge gives the
 * session the password login would have given. A browser login's challenge redeemed from the browser
 * gets a browser session (cookie), otherwise a Bearer session.
 */
export async function redeemLoginChallenge(ctx: Ctx, limits: LoginLimits, token: string, code: string, browserRequest: boolean): Promise<SignedIn> {
  const { ch, user } = await openChallenge(ctx, token, 'login');
  // Wrong codes count per user over all of the user's challenges (limits.mfaCodes): the count, the code's
  // check and the failure's row are one transaction; over the limit the code is not checked (429).
  const slot = { limit: limits.mfaCodes, key: user.id };
  const outcome = await checkAttempt(ctx.db, [slot], ctx.now().getTime(), async () => {
    const r = await redeemStep(ctx, ch, user, code, browserRequest, () => clearAttempts(ctx.db, slot.limit, slot.key));
    if ('wrong' in r) throw r.wrong; // counted; the challenge's failure and its audit records are kept
    return r;
  }, { onRefused: (wait) => refuse(ctx, ch, 'rate_limited', rateLimited(wait)) });
  if ('error' in outcome) throw outcome.error;
  return outcome;
}

/**
 * One code against a login challenge, in a transaction of its own (a savepoint inside checkAttempt's):
 * the session, a refusal that is not a wrong code (`error`), or a wrong code (`wrong`).
 */
async function redeemStep(ctx: Ctx, ch: ChallengeRow, user: UserRow, code: string, browserRequest: boolean, accepted: () => Promise<void>): Promise<SignedIn | { error: AppError } | { wrong: AppError }> {
  return await ctx.db.tx(async (): Promise<SignedIn | { error: AppError } | { wrong: AppError }> => {
    const factor = await factorOf(ctx.db, user.id);
    if (factor?.status !== 'enabled') {
      await consumeChallenge(ctx.db, ch.id, ctx.now().toISOString());
      return { error: challengeError(401, 'mfa_challenge_invalid', 'MFA is no longer enabled for this account; log in again') };
    }
    // Still open? (Checked before a code is spent: a recovery code must not be used up for nothing.)
    if (!await challengeOpen(ctx.db, ch.id)) {
      return { error: challengeError(401, 'mfa_challenge_invalid', 'the challenge token is unknown or already used; log in again') };
    }
    const used = await useCode(ctx, factor, code, true);
    if (!used.ok) return { wrong: await wrongCode(ctx, ch, user, used.reason) };
    await accepted();
    await consumeChallenge(ctx.db, ch.id, ctx.now().toISOString());
    const left = await recoveryCodesLeft(ctx.db, user.id);
    await record(ctx, {
      action: used.via === 'totp' ? 'auth.mfa.verified' : 'auth.mfa.recovery_code_used', targetType: 'user', targetId: user.id,
      actorUserId: user.id, actorName: user.name, ...NO_TENANT, metadata: { challengeId: ch.id, via: used.via, recoveryCodesLeft: left },
    });
    const started = await completeSignIn(ctx, user, sessionKind(ch, browserRequest), ch.method as FirstFactor, { mfa: used.via });
    return { user: (await userById(ctx.db, user.id))!, started };
  });
}

/** POST /api/auth/mfa/enroll/setup: a new secret for the enrollment challenge's user (pending until confirmed). */
export async function enrollmentSetup(ctx: Ctx, token: string): Promise<TotpSetup & { expiresAt: string }> {
  const { ch, user } = await openChallenge(ctx, token, 'enrollment');
  return { ...await beginSetup(ctx, user, 'enrollment'), expiresAt: ch.expires_at };
}

/**
 * POST /api/auth/mfa/enroll/confirm: the first code of the new authenticator enables TOTP and ends
 * the sign-in: the ten recovery codes (shown once) and the session.
 */
export async function enrollmentConfirm(ctx: Ctx, token: string, code: string, browserRequest: boolean): Promise<SignedIn & { recoveryCodes: string[] }> {
  const { ch, user } = await openChallenge(ctx, token, 'enrollment');
  const outcome = await ctx.db.tx(async (): Promise<(SignedIn & { recoveryCodes: string[] }) | { error: AppError }> => {
    const factor = await factorOf(ctx.db, user.id);
    if (factor?.status === 'enabled') return { error: conflict('mfa_already_enabled', 'TOTP is already enabled for this account; log in with a code') };
    if (!factor) return { error: conflict('mfa_setup_required', 'set up the authenticator first: POST /api/auth/mfa/enroll/setup') };
    const used = await useCode(ctx, factor, code, false);
    if (!used.ok) return { error: await wrongCode(ctx, ch, user, used.reason) };
    if (!await consumeChallenge(ctx.db, ch.id, ctx.now().toISOString())) {
      return { error: challengeError(401, 'mfa_challenge_invalid', 'the challenge token is unknown or already used; log in again') };
    }
    const recoveryCodes = await enable(ctx, user, used.step!, 'enrollment');
    const started = await completeSignIn(ctx, user, sessionKind(ch, browserRequest), ch.method as FirstFactor, { mfa: 'enrollment' });
    return { user: (await userById(ctx.db, user.id))!, started, recoveryCodes };
  });
  if ('error' in outcome) throw outcome.error;
  return outcome;
}

