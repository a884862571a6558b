// Password login, sessions, logout and password change. Tokens are 32 random bytes returned once;
// only their keyed hash is stored (HMAC-SHA-256 under SVC_SESSION_SECRET, src/directory/sessions/token-hash.ts). A session expires when idle for the idle lifetime or the absolute
// lifetime after login, whichever comes first (the identity policy's values, else
// SVC_SESSION_IDLE_MINUTES / SVC_SESSION_ABSOLUTE_HOURS). After the first factor (password, SSO,
// registration) signIn() decides: a session, a TOTP challenge, or an MFA enrollment challenge.
import type { Config } from '../../kernel/config.ts';
import type { Ctx } from '../../directory/context.ts';
import { AppError, notFound, validationFailed } from '../../kernel/errors.ts';
import { newId, newToken } from '../../kernel/ids.ts';
import { tokenHash } from '../../directory/sessions/token-hash.ts';
import { clientNetwork } from '../../kernel/addresses.ts';
import { record } from '../../platform/audit/service.ts';
import { normalizeEmail, setLastLogin, setPassword, userByEmail, userById, type UserRow } from '../../directory/users/store.ts';
import { firstScope } from '../../directory/tenancy/scope.ts';
import { membershipsOfUser } from '../../directory/tenancy/store.ts';
import { factorOf } from '../../directory/mfa/store.ts';
import { startEnrollmentChallenge, startLoginChallenge, type IssuedChallenge } from './challenges.ts';
import { mfaRequiredFor, passwordRules, sessionLifetimes } from '../../directory/policy/store.ts';
import { hashPassword, needsRehash, passwordProblem, verifyAgainstDummy, verifyPassword } from '../../kernel/password.ts';
import { checkAttempt, reserveAttempt, type AttemptLimit, type CheckOptions } from '../../gate/ratelimit.ts';
import {
  insertSession, liveSessionsOfUser, revokeSessionById, revokeUserSessions, type SessionRow,
} from '../../directory/sessions/store.ts';

/**
 * The failed-attempt limits of sign-in and of every other guess at a secret (src/gate/ratelimit.ts):
 * per account (an e-mail address, an API client id; SVC_LOGIN_MAX_FAILURES_PER_EMAIL) and per client
 * address (SVC_LOGIN_MAX_FAILURES_PER_ADDRESS), both within SVC_LOGIN_WINDOW_SECONDS. The address
 * limit is one budget shared by logins, MFA challenge tokens, token exchanges, SSO tickets, invitation
 * registrations and SCIM tokens: failing at one leaves fewer guesses at the others. Wrong MFA codes
 * are counted per user (mfaCodes, the per-e-mail number) over all of the user's login challenges.
 */
export interface LoginLimits { byEmail: AttemptLimit; byAddress: AttemptLimit; mfaCodes: AttemptLimit }

export function createLoginLimits(config: Config): LoginLimits {
  const windowMs = config.loginWindowSeconds * 1000;
  return {
    byEmail: { bucket: 'account', max: config.loginMaxFailuresPerEmail, windowMs },
    byAddress: { bucket: 'address', max: config.loginMaxFailuresPerAddress, windowMs },
    // Wrong codes per user over all of the user's login challenges (a new challenge buys no new guesses).
    mfaCodes: { bucket: 'mfa_code', max: config.loginMaxFailuresPerEmail, windowMs },
  };
}

/** The client network a per-address limit counts: the IPv4 address, an IPv6 address's /64 (one key for requests without one). */
export const addressKey = (ctx: Ctx): string => (ctx.ip ? clientNetwork(ctx.ip) : 'unknown');

/**
 * An anonymous guess at a token (an MFA challenge, an SSO ticket, an invitation, a SCIM token) under
 * the client address's failed-attempt limit (SVC_LOGIN_MAX_FAILURES_PER_ADDRESS, shared with logins):
 * `check` runs in the limit's write transaction and a throw from it counts; over the limit, 429
 * rate_limited with Retry-After and the token is not looked at.
 */
export function addressLimited<T>(ctx: Ctx, check: () => T | Promise<T>, opts: CheckOptions = {}): Promise<T> {
  return checkAttempt(ctx.db, [{ limit: createLoginLimits(ctx.config).byAddress, key: addressKey(ctx) }], ctx.now().getTime(), check, opts);
}

export const invalidCredentials = () => new AppError(401, 'invalid_credentials', 'e-mail address or password is wrong');
export const accountSuspended = () => new AppError(403, 'account_suspended', 'this account is suspended; contact your administrator');

export interface StartedSession { token: string; session: SessionRow }

export async function idleCutoff(ctx: Ctx): Promise<string> {
  return new Date(ctx.now().getTime() - (await sessionLifetimes(ctx.db, ctx.config)).idleMinutes * 60_000).toISOString();
}

/** Sessions created before this are past the absolute lifetime in force (it may have been shortened since). */
export async function absoluteCutoff(ctx: Ctx): Promise<string> {
  return new Date(ctx.now().getTime() - (await sessionLifetimes(ctx.db, ctx.config)).absoluteHours * 3_600_000).toISOString();
}

/** Creates a session for a user; the caller runs it inside its transaction (it writes a row). */
export async function startSession(ctx: Ctx, user: UserRow, kind: 'bearer' | 'browser', scope?: Pick<SessionRow, 'organization_id' | 'workspace_id' | 'project_id'>): Promise<StartedSession> {
  const now = ctx.now();
  const token = newToken();
  const actor = { ...ctx.actor, type: 'user' as const, userId: user.id, isSystemAdmin: user.is_system_admin === 1 };
  const s = scope ?? await (async () => {
    const first = await firstScope(ctx.db, actor, await membershipsOfUser(ctx.db, user.id));
    return { organization_id: first.organizationId, workspace_id: first.workspaceId, project_id: first.projectId };
  })();
  const session: SessionRow = {
    id: newId('ses'), token_hash: tokenHash(ctx.config, token), user_id: user.id, kind,
    created_at: now.toISOString(), last_seen_at: now.toISOString(),
    expires_at: new Date(now.getTime() + (await sessionLifetimes(ctx.db, ctx.config)).absoluteHours * 3_600_000).toISOString(),
    revoked_at: null, revoked_reason: null, ip: ctx.ip, user_agent: ctx.userAgent?.slice(0, 400) ?? null,
    ...s,
  };
  await insertSession(ctx.db, session);
  return { token, session };
}

/** How the first factor was passed (audit metadata and the challenge's record). */
export type FirstFactor = 'password' | 'registration' | 'oidc' | 'saml';

/**
 * The outcome of a sign-in after the first factor: a session; or, for a user with TOTP enabled, a
 * login challenge (no session until POST /api/auth/login/mfa); or, when the identity policy requires
 * MFA of a user without it, an enrollment challenge (/api/auth/mfa/enroll/*).
 */
export type SignInResult =
  | { step: 'session'; user: UserRow; started: StartedSession }
  | { step: 'mfa' | 'enrollment'; user: UserRow; challenge: IssuedChallenge };

/**
 * Decides what follows a passed first factor (password login, registration, SSO redeem). Runs in
 * one transaction (nested in the caller's, when there is one).
 */
export async function signIn(ctx: Ctx, user: UserRow, kind: 'bearer' | 'browser', method: FirstFactor, metadata: Record<string, unknown> = {}): Promise<SignInResult> {
  return await ctx.db.tx(async () => {
    if ((await factorOf(ctx.db, user.id))?.status === 'enabled') return { step: 'mfa', user, challenge: await startLoginChallenge(ctx, user, kind, method) };
    if (await mfaRequiredFor(ctx.db, user.id)) return { step: 'enrollment', user, challenge: await startEnrollmentChallenge(ctx, user, kind, method) };
    const started = await completeSignIn(ctx, user, kind, method, metadata);
    return { step: 'session', user: (await userById(ctx.db, user.id))!, started };
  });
}

/** The end of every sign-in (after the second factor when there is one): last login, a session, audit auth.login. */
export async function completeSignIn(ctx: Ctx, user: UserRow, kind: 'bearer' | 'browser', method: FirstFactor, metadata: Record<string, unknown> = {}): Promise<StartedSession> {
  return await ctx.db.tx(async () => {
    await setLastLogin(ctx.db, user.id, ctx.now().toISOString());
    const started = await startSession(ctx, user, kind);
    await record(ctx, {
      action: 'auth.login', targetType: 'session', targetId: started.session.id, actorUserId: user.id, actorName: user.name,
      organizationId: null, workspaceId: null, projectId: null, metadata: { kind, method, ...metadata },
    });
    return started;
  });
}

/**
 * Checks e-mail and password. Unknown e-mail and wrong password take the same path and time and
 * give the same 401; a suspended account is told only to whoever knows its password.
 */
export async function login(ctx: Ctx, limits: LoginLimits, email: string, password: string, kind: 'bearer' | 'browser'): Promise<SignInResult> {
  const emailKey = normalizeEmail(email);
  // The slots are taken before scrypt runs: a concurrent burst gets no more evaluations than the limits.
  const attempt = await reserveAttempt(ctx.db, [{ limit: limits.byEmail, key: emailKey }, { limit: limits.byAddress, key: addressKey(ctx) }], ctx.now().getTime(),
    async () => { await record(ctx, { action: 'auth.login', targetType: 'user', result: 'denied', metadata: { email: emailKey, reason: 'rate_limited' } }); });
  const user = await userByEmail(ctx.db, emailKey);
  const ok = user?.password_hash
    ? await verifyPassword(password, user.password_hash)
    : await verifyAgainstDummy(password, ctx.config.scryptLogN);
  if (!user || !ok) {
    attempt.fail();
    await record(ctx, {
      action: 'auth.login', targetType: 'user', targetId: user?.id ?? null, result: 'failure',
      actorUserId: null, metadata: { email: emailKey, reason: user ? 'wrong_password' : 'unknown_email' },
    });
    throw invalidCredentials();
  }
  if (user.status !== 'active') {
    await attempt.release();
    await record(ctx, { action: 'auth.login', targetType: 'user', targetId: user.id, result: 'denied', actorUserId: user.id, actorName: user.name, metadata: { reason: 'account_suspended' } });
    throw accountSuspended();
  }
  // The right password: the e-mail's failures are forgiven and the address's slot is freed.
  await attempt.clear(limits.byEmail);
  const rehash = needsRehash(user.password_hash!, ctx.config.scryptLogN) ? await hashPassword(password, ctx.config.scryptLogN) : null;
  return await ctx.db.tx(async () => {
    // Read again inside the transaction: the hashing above awaited, and meanwhile the password may
    // have been changed or reset (then this login's password is no longer the account's) or the
    // account suspended.
    const now = await userById(ctx.db, user.id);
    if (!now || now.password_hash !== user.password_hash) throw invalidCredentials();
    if (now.status !== 'active') throw accountSuspended();
    if (rehash) await setPassword(ctx.db, now.id, rehash, now.password_must_change === 1, now.password_changed_at ?? ctx.now().toISOString());
    return await signIn(ctx, now, kind, 'password', { rehashed: !!rehash });
  });
}

async function requireUser(ctx: Ctx): Promise<UserRow> {
  const user = ctx.actor.userId ? await userById(ctx.db, ctx.actor.userId) : undefined;
  if (!user) throw new AppError(401, 'unauthenticated', 'a user session is required');
  return user;
}

export async function logout(ctx: Ctx): Promise<void> {
  const user = await requireUser(ctx);
  if (!ctx.actor.sessionId) return;
  await ctx.db.tx(async () => {
    await revokeSessionById(ctx.db, user.id, ctx.actor.sessionId!, ctx.now().toISOString(), 'logout');
    await record(ctx, { action: 'auth.logout', targetType: 'session', targetId: ctx.actor.sessionId });
  });
}

/**
 * Changes the password after checking the current one. Every session of the user is revoked,
 * the one used included, and a fresh session of the same kind and scope is returned.
 */
export async function changePassword(ctx: Ctx, limits: LoginLimits, currentPassword: string, newPassword: string): Promise<StartedSession> {
  const user = await requireUser(ctx);
  const attempt = await reserveAttempt(ctx.db, [{ limit: limits.byEmail, key: user.email_normalized }], ctx.now().getTime());
  if (!(await verifyPassword(currentPassword, user.password_hash))) {
    attempt.fail();
    await record(ctx, { action: 'auth.password.change', targetType: 'user', targetId: user.id, result: 'failure', metadata: { reason: 'wrong_current_password' } });
    throw validationFailed({ currentPassword: 'is not the current password' });
  }
  await attempt.release();
  const problem = passwordProblem(newPassword, user.email, await passwordRules(ctx.db)) ?? (newPassword === currentPassword ? 'must differ from the current password' : null);
  if (problem) throw validationFailed({ newPassword: problem });
  const hash = await hashPassword(newPassword, ctx.config.scryptLogN);
  return await ctx.db.tx(async () => {
    const now = ctx.now().toISOString();
    await setPassword(ctx.db, user.id, hash, false, now);
    const revoked = await revokeUserSessions(ctx.db, user.id, now, 'password_changed');
    const kind = ctx.actor.sessionKind ?? 'bearer';
    const s = ctx.scope;
    const started = await startSession(ctx, user, kind, { organization_id: s.organizationId, workspace_id: s.workspaceId, project_id: s.projectId });
    await record(ctx, { action: 'auth.password.changed', targetType: 'user', targetId: user.id, metadata: { sessionsRevoked: revoked } });
    return started;
  });
}

export async function listSessions(ctx: Ctx): Promise<SessionRow[]> {
  const user = await requireUser(ctx);
  return await liveSessionsOfUser(ctx.db, user.id, ctx.now().toISOString(), await idleCutoff(ctx), await absoluteCutoff(ctx));
}

export async function revokeSession(ctx: Ctx, sessionId: string): Promise<void> {
  const user = await requireUser(ctx);
  await ctx.db.tx(async () => {
    if (await revokeSessionById(ctx.db, user.id, sessionId, ctx.now().toISOString(), 'revoked_by_user') === 0) {
      throw notFound('no live session with that id');
    }
    await record(ctx, { action: 'auth.session.revoked', targetType: 'session', targetId: sessionId });
  });
}

export async function revokeOtherSessions(ctx: Ctx): Promise<number> {
  const user = await requireUser(ctx);
  return await ctx.db.tx(async () => {
    const n = await revokeUserSessions(ctx.db, user.id, ctx.now().toISOString(), 'revoked_by_user', ctx.actor.sessionId);
    await record(ctx, { action: 'auth.sessions.revoked', targetType: 'user', targetId: user.id, metadata: { count: n, scope: 'others' } });
    return n;
  });
}
