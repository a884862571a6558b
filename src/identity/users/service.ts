// Creating user accounts (CLI `svc users create`, and the administrator's routes later).
import type { Ctx } from '../../directory/context.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { conflict, notFound, validationFailed } from '../../kernel/errors.ts';
import { revokeUserSessions } from '../../directory/sessions/store.ts';
import { newId } from '../../kernel/ids.ts';
import { generatePassword, hashPassword, passwordProblem } from '../../kernel/password.ts';
import { record } from '../../platform/audit/service.ts';
import { passwordRules } from '../../directory/policy/store.ts';
import type { Infer } from '../../kernel/validate.ts';
import type { NewUserBody } from './schema.ts';
import { insertUser, normalizeEmail, updateUserStatus, userByEmail, userById, type UserRow } from '../../directory/users/store.ts';

/** Parsed with NewUserBody. Without a password a one-time initial password is generated and must be changed at first login. */
/** `passwordless`: no password at all (directory-provisioned accounts sign in by SSO or after a reset). */
export type NewUser = Infer<typeof NewUserBody> & { passwordless?: boolean };

/**
 * Creates an account. `within`, when given, runs in the same transaction as the insert (e.g. the
 * memberships of an accepted invitation), and its result is returned as `extra`.
 */
export async function createUser<T = undefined>(ctx: Ctx, input: NewUser, within?: (user: UserRow) => Promise<T> | T): Promise<{ user: UserRow; initialPassword: string | null; extra?: T }> {
  const { email, name } = input;
  const rules = await passwordRules(ctx.db);
  const problem = input.password === undefined ? null : passwordProblem(input.password, email, rules);
  if (problem) throw validationFailed({ password: problem });
  if (await userByEmail(ctx.db, email)) throw conflict('email_already_registered', 'an account with this e-mail address exists');

  const initialPassword = input.password === undefined && !input.passwordless ? generatePassword(rules.minLength) : null;
  const given = input.password ?? initialPassword;
  const hash = given === null ? null : await hashPassword(given, ctx.config.scryptLogN);
  const now = ctx.now().toISOString();
  const user: UserRow = {
    id: newId('usr'), email, email_normalized: normalizeEmail(email), name, status: 'active',
    is_system_admin: input.isSystemAdmin ? 1 : 0, password_hash: hash, password_must_change: initialPassword ? 1 : 0,
    password_changed_at: now, mfa_enabled: 0, last_login_at: null, created_at: now, updated_at: now,
  };
  const extra = await ctx.db.tx(async () => {
    // Checked again inside the transaction: the hash above took time.
    if (await userByEmail(ctx.db, email)) throw conflict('email_already_registered', 'an account with this e-mail address exists');
    try {
      await insertUser(ctx.db, user);
    } catch (err) {
      // Another transaction registered the address after the check (PostgreSQL: it commits in between).
      if (isUniqueViolation(err)) throw conflict('email_already_registered', 'an account with this e-mail address exists');
      throw err;
    }
    await record(ctx, {
      action: 'user.created', targetType: 'user', targetId: user.id,
      organizationId: null, workspaceId: null, projectId: null,
      metadata: { email, systemAdmin: user.is_system_admin === 1, initialPassword: initialPassword ? 'generated' : hash ? 'provided' : 'none' },
    });
    return await within?.(user);
  });
  return { user, initialPassword, extra };
}

/**
 * Suspends or reactivates an account. Suspension revokes every session of the user in the same
 * transaction, so their tokens are 401 from the next request on.
 */
export async function setUserStatus(ctx: Ctx, userId: string, status: 'active' | 'suspended'): Promise<UserRow> {
  const user = await userById(ctx.db, userId);
  if (!user) throw notFound('no such user');
  if (user.status === status) return user;
  return await ctx.db.tx(async () => {
    const now = ctx.now().toISOString();
    await updateUserStatus(ctx.db, userId, status, now);
    const revoked = status === 'suspended' ? await revokeUserSessions(ctx.db, userId, now, 'account_suspended') : 0;
    await record(ctx, {
      action: status === 'suspended' ? 'user.suspended' : 'user.activated', targetType: 'user', targetId: userId,
      organizationId: null, workspaceId: null, projectId: null, metadata: { previousStatus: user.status, sessionsRevoked: revoked },
    });
    return (await userById(ctx.db, userId))!;
  });
}
