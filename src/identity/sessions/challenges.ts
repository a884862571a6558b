// MFA challenges: what a user holds between the first factor and the session. A login challenge is
// exchanged with a TOTP or recovery code at POST /api/auth/login/mfa; an enrollment challenge (the
// identity policy requires MFA of a user without it) at /api/auth/mfa/enroll/*. The token is 32
// random bytes shown once and stored as SHA-256; valid 5 minutes, single use, bound to the user and
// to the kind of session (bearer or browser) the first factor asked for, locked after 5 consecutive
// wrong codes. SSO redeem calls signIn() (src/identity/sessions/service.ts), which calls these.
import type { Ctx } from '../../directory/context.ts';
import { record } from '../../platform/audit/service.ts';
import { newId, newToken, sha256Hex } from '../../kernel/ids.ts';
import type { UserRow } from '../../directory/users/store.ts';
import { deleteOldChallenges, insertChallenge, type ChallengeRow } from '../../directory/mfa/store.ts';

export const CHALLENGE_TTL_MS = 5 * 60_000;
/** Consecutive wrong codes after which a challenge is locked (even the right code then fails). */
export const CHALLENGE_MAX_FAILURES = 5;
/** Used and expired challenges are deleted this long after expiry (at least the failed-login window). */
const KEEP_MS = 24 * 3_600_000;

export interface IssuedChallenge {
  purpose: ChallengeRow['purpose'];
  challengeId: string;
  /** The bearer value of the challenge: shown once, in this answer only. */
  challengeToken: string;
  expiresAt: string;
}

async function issue(ctx: Ctx, user: UserRow, purpose: ChallengeRow['purpose'], kind: 'bearer' | 'browser', method: string): Promise<IssuedChallenge> {
  return await ctx.db.tx(async () => {
    const now = ctx.now();
    await deleteOldChallenges(ctx.db, new Date(now.getTime() - Math.max(KEEP_MS, ctx.config.loginWindowSeconds * 1000)).toISOString());
    const token = newToken();
    const row: ChallengeRow = {
      id: newId('mfc'), token_hash: sha256Hex(token), user_id: user.id, purpose, session_kind: kind, method,
      failed_attempts: 0, created_at: now.toISOString(), expires_at: new Date(now.getTime() + CHALLENGE_TTL_MS).toISOString(),
      locked_at: null, consumed_at: null, ip: ctx.ip,
    };
    await insertChallenge(ctx.db, row);
    await record(ctx, {
      action: purpose === 'login' ? 'auth.mfa.challenge_issued' : 'auth.mfa.enrollment_required', targetType: 'user', targetId: user.id,
      actorUserId: user.id, actorName: user.name, organizationId: null, workspaceId: null, projectId: null,
      metadata: { challengeId: row.id, kind, method, expiresAt: row.expires_at },
    });
    return { purpose, challengeId: row.id, challengeToken: token, expiresAt: row.expires_at };
  });
}

/** A login challenge for a user with TOTP enabled, after the first factor (`method`: password, oidc, saml). */
export function startLoginChallenge(ctx: Ctx, user: UserRow, kind: 'bearer' | 'browser', method = 'password'): Promise<IssuedChallenge> {
  return issue(ctx, user, 'login', kind, method);
}

/**
 * An enrollment challenge for a user the identity policy requires to use MFA and who has none: its
 * holder sets up TOTP (/api/auth/mfa/enroll/setup) and confirms a code (/api/auth/mfa/enroll/confirm),
 * which enables it and answers the recovery codes and the session.
 */
export function startEnrollmentChallenge(ctx: Ctx, user: UserRow, kind: 'bearer' | 'browser', method = 'password'): Promise<IssuedChallenge> {
  return issue(ctx, user, 'enrollment', kind, method);
}
