// Management of one's own TOTP factor from a browser session: status, set-up, enable (recovery codes
// shown once), cancel, disable (password or code). Audited as auth.mfa.*.
import type { Ctx } from '../../directory/context.ts';
import { record } from '../../platform/audit/service.ts';
import { AppError, conflict, validationFailed } from '../../kernel/errors.ts';
import { reserveAttempt } from '../../gate/ratelimit.ts';
import { userById, type UserRow } from '../../directory/users/store.ts';
import { verifyPassword } from '../../kernel/password.ts';
import type { LoginLimits } from '../sessions/service.ts';
import { mfaRequiredFor } from '../../directory/policy/store.ts';
import { beginSetup, enable, NO_TENANT, useCode, type TotpSetup } from './factor.ts';
import { deleteMfa, deletePendingFactor, factorOf, recoveryCodesLeft, voidChallengesOf } from '../../directory/mfa/store.ts';

export interface MfaStatus {
  enabled: boolean;
  pendingSetup: boolean;
  recoveryCodesLeft: number;
  enabledAt: string | null;
  requiredByPolicy: boolean;
}

function currentUser(ctx: Ctx): UserRow {
  const user = ctx.actor.userId ? userById(ctx.db, ctx.actor.userId) : undefined;
  if (!user) throw new AppError(401, 'unauthenticated', 'a user session is required');
  return user;
}

export function mfaStatus(ctx: Ctx, userId = currentUser(ctx).id): MfaStatus {
  const factor = factorOf(ctx.db, userId);
  const enabled = factor?.status === 'enabled';
  return {
    enabled,
    pendingSetup: factor?.status === 'pending',
    recoveryCodesLeft: enabled ? recoveryCodesLeft(ctx.db, userId) : 0,
    enabledAt: enabled ? factor.enabled_at : null,
    requiredByPolicy: mfaRequiredFor(ctx.db, userId),
  };
}

/** POST /api/auth/mfa/setup: a new secret and otpauth:// URI, pending until a code enables it (409 when enabled). */
export function setupMfa(ctx: Ctx): TotpSetup {
  return beginSetup(ctx, currentUser(ctx), 'settings');
}

/** POST /api/auth/mfa/enable: a current code of the pending secret enables TOTP; answers the ten recovery codes once. */
export function enableMfa(ctx: Ctx, code: string): { recoveryCodes: string[] } {
  const user = currentUser(ctx);
  const outcome = ctx.db.tx((): { recoveryCodes: string[] } | { error: AppError } => {
    const factor = factorOf(ctx.db, user.id);
    if (factor?.status === 'enabled') return { error: conflict('mfa_already_enabled', 'TOTP is already enabled') };
    if (!factor) return { error: conflict('mfa_setup_required', 'set up the authenticator first: POST /api/auth/mfa/setup') };
    const used = useCode(ctx, factor, code, false);
    if (!used.ok) {
      record(ctx, { action: 'auth.mfa.enable', targetType: 'user', targetId: user.id, result: 'failure', ...NO_TENANT, metadata: { reason: used.reason } });
      return { error: validationFailed({ code: 'is not a current code of the authenticator being set up' }) };
    }
    return { recoveryCodes: enable(ctx, user, used.step!, 'settings') };
  });
  if ('error' in outcome) throw outcome.error;
  return outcome;
}

/** POST /api/auth/mfa/setup/cancel: forgets a pending secret (an enabled factor stays). */
export function cancelSetup(ctx: Ctx): MfaStatus {
  const user = currentUser(ctx);
  ctx.db.tx(() => {
    if (deletePendingFactor(ctx.db, user.id) > 0) {
      record(ctx, { action: 'auth.mfa.setup_cancelled', targetType: 'user', targetId: user.id, ...NO_TENANT });
    }
  });
  return mfaStatus(ctx, user.id);
}

/**
 * POST /api/auth/mfa/disable: with the account's password or a current code (TOTP or recovery), turns
 * TOTP off and deletes the recovery codes. Refused with 409 while the identity policy requires MFA of
 * the user. Wrong passwords and codes count against the e-mail's failed-login limit.
 */
export async function disableMfa(ctx: Ctx, limits: LoginLimits, proof: { password?: string; code?: string }): Promise<MfaStatus> {
  const user = currentUser(ctx);
  const factor = factorOf(ctx.db, user.id);
  if (factor?.status !== 'enabled') throw conflict('mfa_not_enabled', 'TOTP is not enabled');
  if (mfaRequiredFor(ctx.db, user.id)) throw conflict('mfa_required_by_policy', 'the identity policy requires MFA for this account; it cannot be turned off');
  if (proof.password === undefined && proof.code === undefined) {
    throw validationFailed({ password: 'give the account password or a code', code: 'give a current code or a recovery code' });
  }
  // The slot is taken before the password or code is checked (a concurrent burst gets no more guesses).
  const attempt = reserveAttempt(ctx.db, [{ limit: limits.byEmail, key: user.email_normalized }], ctx.now().getTime());
  const fail = (reason: string, fields: Record<string, string>): AppError => {
    attempt.fail();
    record(ctx, { action: 'auth.mfa.disable', targetType: 'user', targetId: user.id, result: 'failure', ...NO_TENANT, metadata: { reason } });
    return validationFailed(fields);
  };
  let via: string;
  if (proof.password !== undefined) {
    if (!(await verifyPassword(proof.password, user.password_hash))) throw fail('wrong_password', { password: 'is not the current password' });
    via = 'password';
  } else {
    const used = ctx.db.tx(() => {
      const f = factorOf(ctx.db, user.id);
      return f?.status === 'enabled' ? useCode(ctx, f, proof.code!, true) : { ok: false as const, reason: 'not_enabled' };
    });
    if (!used.ok) throw fail(used.reason, { code: 'is wrong, expired or already used' });
    via = used.via;
  }
  attempt.release();
  ctx.db.tx(() => {
    // Checked again inside the transaction: the password check awaited, and a policy requiring MFA
    // (or another disable) may have come meanwhile.
    if (factorOf(ctx.db, user.id)?.status !== 'enabled') throw conflict('mfa_not_enabled', 'TOTP is not enabled');
    if (mfaRequiredFor(ctx.db, user.id)) throw conflict('mfa_required_by_policy', 'the identity policy requires MFA for this account; it cannot be turned off');
    const now = ctx.now().toISOString();
    const removed = deleteMfa(ctx.db, user.id, now);
    voidChallengesOf(ctx.db, user.id, now);
    record(ctx, { action: 'auth.mfa.disabled', targetType: 'user', targetId: user.id, ...NO_TENANT, metadata: { via, recoveryCodesDeleted: removed.recoveryCodes } });
  });
  return mfaStatus(ctx, user.id);
}
