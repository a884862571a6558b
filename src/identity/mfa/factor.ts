// The TOTP factor's codes: decrypting the secret (fail closed), checking and spending a TOTP code or a
// recovery code, starting a set-up and enabling it. Used by the challenge exchange (redeem.ts) and the
// management of one's own factor (service.ts); runs inside their transactions.
import type { Ctx } from '../../directory/context.ts';
import { record } from '../../platform/audit/service.ts';
import { conflict } from '../../kernel/errors.ts';
import type { UserRow } from '../../directory/users/store.ts';
import { decryptSecret, encryptSecret, mfaKey, SecretUnreadableError } from '../../kernel/seal.ts';
import { newRecoveryCodes, normalizeRecoveryCode, recoveryCodeHash } from './recovery.ts';
import {
  enableFactor, factorOf, markStepUsed, putPendingFactor, replaceRecoveryCodes, touchFactorUse, useRecoveryCode, type FactorRow,
} from '../../directory/mfa/store.ts';
import { checkTotp, looksLikeTotp, newTotpSecret, otpauthUri, TOTP_CONFIG } from './totp.ts';

export const NO_TENANT = { organizationId: null, workspaceId: null, projectId: null } as const;

export interface TotpSetup { secret: string; otpauthUri: string; algorithm: 'SHA1'; digits: number; period: number }

export type CodeUse = { ok: true; via: 'totp' | 'recovery_code'; step: number | null } | { ok: false; reason: string };

/** The factor's secret, or null when it does not decrypt (changed key, damaged row): fail closed. */
function secretOf(ctx: Ctx, factor: FactorRow): string | null {
  const key = mfaKey(ctx.config);
  try {
    return decryptSecret(key, factor.user_id, factor.secret_enc);
  } catch (err) {
    if (!(err instanceof SecretUnreadableError)) throw err;
    ctx.log.error('TOTP secret does not decrypt; the code is refused', {
      userId: factor.user_id, storedKeyId: factor.key_id, currentKeyId: key.id, requestId: ctx.requestId,
    });
    return null;
  }
}

/**
 * Checks a TOTP code of the factor (or, with `allowRecovery`, a recovery code) and spends it when it
 * is right: the step of an enabled factor's code is recorded (no replay), a recovery code is used up.
 * Runs inside the caller's transaction.
 */
export async function useCode(ctx: Ctx, factor: FactorRow, code: string, allowRecovery: boolean): Promise<CodeUse> {
  const typed = code.trim().replace(/\s+/g, '');
  const now = ctx.now();
  if (looksLikeTotp(typed)) {
    const secret = secretOf(ctx, factor);
    if (secret === null) return { ok: false, reason: 'secret_unreadable' };
    const r = checkTotp(secret, typed, Math.floor(now.getTime() / 1000), factor.last_used_step);
    if (!r.ok) return r;
    if (factor.status === 'enabled' && await markStepUsed(ctx.db, factor.user_id, r.step, now.toISOString()) === 0) return { ok: false, reason: 'replayed' };
    return { ok: true, via: 'totp', step: r.step };
  }
  const normalized = allowRecovery ? normalizeRecoveryCode(typed) : null;
  if (normalized && await useRecoveryCode(ctx.db, factor.user_id, recoveryCodeHash(factor.user_id, normalized), now.toISOString())) {
    await touchFactorUse(ctx.db, factor.user_id, now.toISOString());
    return { ok: true, via: 'recovery_code', step: null };
  }
  return { ok: false, reason: allowRecovery ? 'wrong_code' : 'wrong_code_format' };
}

/** Enables the pending factor with the step of its first code and stores ten new recovery codes. */
export async function enable(ctx: Ctx, user: UserRow, step: number, via: string): Promise<string[]> {
  const now = ctx.now().toISOString();
  await enableFactor(ctx.db, user.id, step, now);
  const { codes, rows } = newRecoveryCodes(user.id);
  await replaceRecoveryCodes(ctx.db, user.id, rows, now);
  await record(ctx, {
    action: 'auth.mfa.enabled', targetType: 'user', targetId: user.id, actorUserId: user.id, actorName: user.name, ...NO_TENANT,
    metadata: { via, recoveryCodes: codes.length },
  });
  return codes;
}

export async function beginSetup(ctx: Ctx, user: UserRow, via: string): Promise<TotpSetup> {
  return await ctx.db.tx(async () => {
    const factor = await factorOf(ctx.db, user.id);
    if (factor?.status === 'enabled') throw conflict('mfa_already_enabled', 'TOTP is already enabled; disable it first to set up another authenticator');
    const key = mfaKey(ctx.config);
    const secret = newTotpSecret();
    await putPendingFactor(ctx.db, user.id, encryptSecret(key, user.id, secret), key.id, ctx.now().toISOString());
    await record(ctx, {
      action: 'auth.mfa.setup_started', targetType: 'user', targetId: user.id, actorUserId: user.id, actorName: user.name, ...NO_TENANT,
      metadata: { via, replacedPending: factor?.status === 'pending' },
    });
    return { secret, otpauthUri: otpauthUri(secret, user.email), algorithm: 'SHA1', digits: TOTP_CONFIG.digits, period: TOTP_CONFIG.period };
  });
}

