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

async function currentUser(ctx: Ctx): Promise<UserRow> {
  const user = ctx.actor.userId ? await userById(ctx.db, ctx.actor.userId) : undefined;
  if (!user) throw new AppError(401, 'unauthenticated', 'a user session is required');
  return user;
}

export async function mfaStatus(ctx: Ctx, forUser?: string): Promise<MfaStatus> {
  const userId = forUser ?? (await currentUser(ctx)).id;
  const factor = await factorOf(ctx.db, userId);
  const enabled = factor?.status === 'enabled';
  return {
    enabled,
    pendingSetup: factor?.status === 'pending',
    recoveryCodesLeft: enabled ? await recoveryCodesLeft(ctx.db, userId) : 0,
    enabledAt: enabled ? factor.enabled_at : null,
    requiredByPolicy: await mfaRequiredFor(ctx.db, userId),
  };
}

/** POST /api/auth/mfa/setup: a new secret and otpauth:// URI, pending until a code enables it (409 when enabled). */
export async function setupMfa(ctx: Ctx): Promise<TotpSetup> {
  return await beginSetup(ctx, await currentUser(ctx), 'settings');
}

/** POST /api/auth/mfa/enable: a current code of the pending secret enables TOTP; answers the ten recovery codes once. */
export async function enableMfa(ctx: Ctx, code: string): Promise<{ recoveryCodes: string[] }> {
  const user = await currentUser(ctx);
  const outcome = await ctx.db.tx(async (): Promise<{ recoveryCodes: string[] } | { error: AppError }> => {
    const factor = await factorOf(ctx.db, user.id);
    if (factor?.status === 'enabled') return { error: conflict('mfa_already_enabled', 'TOTP is already enabled') };
    if (!factor) return { error: conflict('mfa_setup_required', 'set up the authenticator first: POST /api/auth/mfa/setup') };
    const used = await useCode(ctx, factor, code, false);
    if (!used.ok) {
      await record(ctx, { action: 'auth.mfa.enable', targetType: 'user', targetId: user.id, result: 'failure', ...NO_TENANT, metadata: { reason: used.reason } });
      return { error: validationFailed({ code: 'is not a current code of the authenticator being set up' }) };
    }
    return { recoveryCodes: await enable(ctx, user, used.step!, 'settings') };
  });
  if ('error' in outcome) throw outcome.error;
  return outcome;
}

/** POST /api/auth/mfa/setup/cancel: forgets a pending secret (an enabled factor stays). */
export async function cancelSetup(ctx: Ctx): Promise<MfaStatus> {
  const user = await currentUser(ctx);
  await ctx.db.tx(async () => {
    if (await deletePendingFactor(ctx.db, user.id) > 0) {
      await record(ctx, { action: 'auth.mfa.setup_cancelled', targetType: 'user', targetId: user.id, ...NO_TENANT });
    }
  });
  return await mfaStatus(ctx, user.id);
}

/**
 * POST /api/auth/mfa/disable: with the account's password or a current code (TOTP or recovery), turns
 * TOTP off and deletes the recovery codes. Refused with 409 while the identity policy requires MFA of
 * the user. Wrong passwords and codes count against the e-mail's failed-login limit.
 */
export async function disableMfa(ctx: Ctx, limits: LoginLimits, proof: { password?: string; code?: string }): Promise<MfaStatus> {
  const user = await currentUser(ctx);
  const factor = await factorOf(ctx.db, user.id);
  if (factor?.status !== 'enabled') throw conflict('mfa_not_enabled', 'TOTP is not enabled');
  if (await mfaRequiredFor(ctx.db, user.id)) throw conflict('mfa_required_by_policy', 'the identity policy requires MFA for this account; it cannot be turned off');
  if (proof.password === undefined && proof.code === undefined) {
    throw validationFailed({ password: 'give the account password or a code', code: 'give a current code or a recovery code' });
  }
  // The slot is taken before the password or code is checked (a concurrent burst gets no more guesses).
  const attempt = await reserveAttempt(ctx.db, [{ limit: limits.byEmail, key: user.email_normalized }], ctx.now().getTime());
  const fail = async (reason: string, fields: Record<string, string>): Promise<AppError> => {
    attempt.fail();
    await record(ctx, { action: 'auth.mfa.disable', targetType: 'user', targetId: user.id, result: 'failure', ...NO_TENANT, metadata: { reason } });
    return validationFailed(fields);
  };
  let via: string;
  if (proof.password !== undefined) {
    if (!(await verifyPassword(proof.password, user.password_hash))) throw await fail('wrong_password', { password: 'is not the current password' });
    via = 'password';
  } else {
    const used = await ctx.db.tx(async () => {
      const f = await factorOf(ctx.db, user.id);
      return f?.status === 'enabled' ? await useCode(ctx, f, proof.code!, true) : { ok: false as const, reason: 'not_enabled' };
    });
    if (!used.ok) throw await fail(used.reason, { code: 'is wrong, expired or already used' });
    via = used.via;
  }
  await attempt.release();
  await ctx.db.tx(async () => {
    // Checked again inside the transaction: the password check awaited, and a policy requiring MFA
    // (or another disable) may have come meanwhile.
    if ((await factorOf(ctx.db, user.id))?.status !== 'enabled') throw conflict('mfa_not_enabled', 'TOTP is not enabled');
    if (await mfaRequiredFor(ctx.db, user.id)) throw conflict('mfa_required_by_policy', 'the identity policy requires MFA for this account; it cannot be turned off');
    const now = ctx.now().toISOString();
    const removed = await deleteMfa(ctx.db, user.id, now);
    await voidChallengesOf(ctx.db, user.id, now);
    await record(ctx, { action: 'auth.mfa.disabled', targetType: 'user', targetId: user.id, ...NO_TENANT, metadata: { via, recoveryCodesDeleted: removed.recoveryCodes } });
  });
  return await mfaStatus(ctx, user.id);
}
