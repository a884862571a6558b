// Global user governance: the system administrator (HTTP) or the local operator (CLI) lists and
// creates accounts, suspends and reactivates them, grants or removes the system administrator
// identity, resets passwords and MFA, revokes sessions and grants memberships. Every change is
// audited, never with a secret. Suspension, removal of the administrator identity and the security
// resets revoke every session of the user in the same transaction as the change.
import { mapSeq } from '../../kernel/seq.ts';
import type { Ctx } from '../../directory/context.ts';
import { conflict, notFound, requireSystemAdmin, validationFailed } from '../../kernel/errors.ts';
import { record } from '../../platform/audit/service.ts';
import { generatePassword, hashPassword } from '../../kernel/password.ts';
import { absoluteCutoff, idleCutoff } from '../sessions/service.ts';
import { liveSessionsOfUser, revokeUserSessions } from '../../directory/sessions/store.ts';
import { assertSeatsAvailable } from '../../directory/plan/seats.ts';
import { LOCKS } from '../../directory/locks.ts';
import type { Db } from '../../db/db.ts';
import type { RowRead } from '../../db/dialect.ts';
import { passwordRules } from '../../directory/policy/store.ts';
import { ROLE_LEVEL, type Level, type Role } from '../../directory/roles.ts';
import { grantRole } from '../../tenancy/service.ts';
import { membershipAt, membershipsOfUser, namedMembershipsOfUser, organizationById, projectById, workspaceById } from '../../directory/tenancy/store.ts';
import type { GovernedUser, NamedFullMembership } from '../../directory/present/users.ts';
import { createUser, setUserStatus } from './service.ts';
import { pageWindow } from '../../kernel/validate.ts';
import {
  clearMfa, countActiveSystemAdmins, listUsers, organizationsOwnedOnlyBy, setPassword, setSystemAdmin,
  userByEmail, userById, type UserRow,
} from '../../directory/users/store.ts';

const NO_TENANT = { organizationId: null, workspaceId: null, projectId: null } as const;

async function existingUser(ctx: Ctx, userId: string, read?: RowRead): Promise<UserRow> {
  const user = await userById(ctx.db, userId, read);
  if (!user) throw notFound('no such user');
  return user;
}

/** A user named by id or e-mail address (the CLI's argument); 404 not_found otherwise. */
export async function findUser(ctx: Ctx, idOrEmail: string): Promise<UserRow> {
  const user = await userById(ctx.db, idOrEmail) ?? await userByEmail(ctx.db, idOrEmail);
  if (!user) throw notFound(`no user with id or e-mail address ${idOrEmail}`);
  return user;
}

async function governed(ctx: Ctx, user: UserRow): Promise<GovernedUser> {
  return {
    user,
    activeSessions: (await liveSessionsOfUser(ctx.db, user.id, ctx.now().toISOString(), await idleCutoff(ctx), await absoluteCutoff(ctx))).length,
    memberships: await namedMembershipsOfUser(ctx.db, user.id),
  };
}

export async function governedUser(ctx: Ctx, userId: string): Promise<GovernedUser> {
  requireSystemAdmin(ctx);
  return await governed(ctx, await existingUser(ctx, userId));
}

export interface UserListRequest { query?: string; status?: 'active' | 'suspended'; limit?: number; page?: number }

/** Users matching the filter, `limit` (default 50, clamped to 1..200) a page. */
export async function listGovernedUsers(ctx: Ctx, q: UserListRequest) {
  requireSystemAdmin(ctx);
  const { page, pageSize, offset } = pageWindow(q.page, q.limit);
  const query = q.query === undefined || q.query === '' ? undefined : q.query;
  const { rows, total } = await listUsers(ctx.db, { query, status: q.status, limit: pageSize, offset });
  return { items: await mapSeq(rows, (u) => governed(ctx, u)), pagination: { page, pageSize, total } };
}

/** Creates an active account with a one-time initial password (must be changed at first login). */
export async function createGovernedUser(ctx: Ctx, input: { email: string; name: string; isSystemAdmin?: boolean }) {
  requireSystemAdmin(ctx);
  const { user, initialPassword } = await createUser(ctx, { email: input.email, name: input.name, isSystemAdmin: input.isSystemAdmin });
  return { user: await governed(ctx, user), initialPassword: initialPassword! };
}

export interface UserPatch { status?: 'active' | 'suspended'; isSystemAdmin?: boolean }

/**
 * Changes an account's status and/or system administrator identity. Refused (409, nothing changed):
 * suspending oneself (cannot_suspend_self); leaving no active system administrator
 * (last_system_admin); suspending the only active owner of an organization
 * (only_organization_owner). Reactivation takes a seat again in each of the user's organizations
 * (409 seat_limit_reached when one is full).
 */
export async function updateUser(ctx: Ctx, userId: string, patch: UserPatch): Promise<GovernedUser> {
  requireSystemAdmin(ctx);
  if (patch.status === undefined && patch.isSystemAdmin === undefined) {
    throw validationFailed({ body: 'name status or isSystemAdmin' });
  }
  await ctx.db.tx(async () => {
    // The keys the checks below need, in their order and before the reads (src/directory/locks.ts).
    if (patch.status === 'suspended' || patch.isSystemAdmin === false) await ctx.db.lock(LOCKS.systemAdmins);
    const seatsOf = patch.status === 'active'
      ? (await membershipsOfUser(ctx.db, userId)).filter((m) => m.level === 'organization').map((m) => m.organization_id) : [];
    for (const organizationId of [...new Set(seatsOf)].sort()) await ctx.db.lock(LOCKS.seats(organizationId));
    if (patch.status === 'suspended') await ctx.db.lock(LOCKS.owners);
    // Then the account's row: the status and identity the changes start from are the ones it has.
    const user = await existingUser(ctx, userId, { forUpdate: true });
    const now = ctx.now().toISOString();
    const suspending = patch.status === 'suspended' && user.status === 'active';
    const activating = patch.status === 'active' && user.status === 'suspended';
    const wasAdmin = user.is_system_admin === 1;
    const isAdmin = patch.isSystemAdmin ?? wasAdmin;
    if (suspending && userId === ctx.actor.userId) {
      throw conflict('cannot_suspend_self', 'you cannot suspend your own account');
    }
    if (user.status === 'active' && wasAdmin && (suspending || !isAdmin)) await assertKeepsASystemAdmin(ctx.db, userId);
    if (suspending) await assertOwnsNoOrganizationAlone(ctx.db, userId);
    if (activating) {
      for (const organizationId of seatsOf) await assertSeatsAvailable(ctx.db, organizationId, now);
    }
    if (isAdmin !== wasAdmin) {
      await setSystemAdmin(ctx.db, userId, isAdmin, now);
      const revoked = isAdmin ? 0 : await revokeUserSessions(ctx.db, userId, now, 'system_admin_removed');
      await record(ctx, {
        action: isAdmin ? 'user.system_admin_granted' : 'user.system_admin_removed', targetType: 'user', targetId: userId,
        ...NO_TENANT, metadata: { sessionsRevoked: revoked },
      });
    }
    if (patch.status !== undefined) await setUserStatus(ctx, userId, patch.status);
  });
  return await governed(ctx, await existingUser(ctx, userId));
}

/**
 * 409 last_system_admin when no active account but `userId` holds the system administrator identity.
 * Inside the transaction that then suspends the user or removes the identity: the system-admins key
 * first (src/directory/locks.ts), so two such changes cannot both count the other account as staying.
 */
export async function assertKeepsASystemAdmin(db: Db, userId: string): Promise<void> {
  await db.lock(LOCKS.systemAdmins);
  if (await countActiveSystemAdmins(db, userId) === 0) {
    throw conflict('last_system_admin', 'this is the last active system administrator; grant the identity to another account first', { userId });
  }
}

/**
 * 409 only_organization_owner when the user is the only active owner of an organization. Inside the
 * transaction that then suspends the user: the owners key first (src/directory/locks.ts; the same as
 * a demotion's, assertKeepsAnOwner), so a suspension and a demotion cannot leave an organization
 * without an active owner between them.
 */
export async function assertOwnsNoOrganizationAlone(db: Db, userId: string): Promise<void> {
  await db.lock(LOCKS.owners);
  const organizationIds = await organizationsOwnedOnlyBy(db, userId);
  if (organizationIds.length > 0) {
    throw conflict('only_organization_owner', `the user is the only active owner of ${organizationIds.join(', ')}; make someone else org_owner first`, { organizationIds });
  }
}

/** Sets a new one-time password (must be changed at the next login) and revokes every session. */
export async function resetPassword(ctx: Ctx, userId: string): Promise<{ initialPassword: string }> {
  requireSystemAdmin(ctx);
  await existingUser(ctx, userId);
  const initialPassword = generatePassword((await passwordRules(ctx.db)).minLength);
  const hash = await hashPassword(initialPassword, ctx.config.scryptLogN);
  await ctx.db.tx(async () => {
    await existingUser(ctx, userId);
    const now = ctx.now().toISOString();
    await setPassword(ctx.db, userId, hash, true, now);
    const revoked = await revokeUserSessions(ctx.db, userId, now, 'password_reset');
    await record(ctx, { action: 'user.password_reset', targetType: 'user', targetId: userId, ...NO_TENANT, metadata: { sessionsRevoked: revoked } });
  });
  return { initialPassword };
}

/** Turns MFA off for the account (it enrolls again) and revokes every session. */
export async function resetMfa(ctx: Ctx, userId: string): Promise<GovernedUser> {
  requireSystemAdmin(ctx);
  await ctx.db.tx(async () => {
    const user = await existingUser(ctx, userId);
    const now = ctx.now().toISOString();
    await clearMfa(ctx.db, userId, now);
    const revoked = await revokeUserSessions(ctx.db, userId, now, 'mfa_reset');
    await record(ctx, {
      action: 'user.mfa_reset', targetType: 'user', targetId: userId, ...NO_TENANT,
      metadata: { wasEnabled: user.mfa_enabled === 1, sessionsRevoked: revoked },
    });
  });
  return await governed(ctx, await existingUser(ctx, userId));
}

/** Revokes every session of the user; returns how many were revoked. */
export async function revokeSessions(ctx: Ctx, userId: string): Promise<number> {
  requireSystemAdmin(ctx);
  return await ctx.db.tx(async () => {
    await existingUser(ctx, userId);
    const revoked = await revokeUserSessions(ctx.db, userId, ctx.now().toISOString(), 'revoked_by_administrator');
    await record(ctx, { action: 'user.sessions_revoked', targetType: 'user', targetId: userId, ...NO_TENANT, metadata: { count: revoked } });
    return revoked;
  });
}

export interface MembershipGrant { level: Level; scopeId: string; role: Role }

/**
 * Gives the user a role at an organization, workspace or project (with the memberships the
 * hierarchy implies), checked against role level, scope and seats. Changing the role of an
 * organization's only active owner is refused by grantRole (409 last_owner).
 */
export async function grantMembership(ctx: Ctx, userId: string, g: MembershipGrant): Promise<NamedFullMembership> {
  requireSystemAdmin(ctx);
  return await ctx.db.tx(async () => {
    await existingUser(ctx, userId);
    if (ROLE_LEVEL[g.role] !== g.level) throw validationFailed({ role: `is not a ${g.level} role` });
    if (g.role === 'project_guest') throw validationFailed({ role: 'is given automatically with a project role; grant project_editor or project_viewer' });
    const organizationId = await organizationOfScope(ctx, g.level, g.scopeId);
    const orgMembership = await membershipAt(ctx.db, userId, 'organization', organizationId);
    if (orgMembership?.status !== 'active') await assertSeatsAvailable(ctx.db, organizationId, ctx.now().toISOString());
    const m = await grantRole(ctx, { userId, level: g.level, scopeId: g.scopeId, role: g.role });
    return {
      ...m,
      organization_name: (await organizationById(ctx.db, m.organization_id))!.name,
      workspace_name: m.workspace_id ? (await workspaceById(ctx.db, m.workspace_id))!.name : null,
      project_name: m.project_id ? (await projectById(ctx.db, m.project_id))!.name : null,
    };
  });
}

async function organizationOfScope(ctx: Ctx, level: Level, scopeId: string): Promise<string> {
  const found = level === 'organization' ? (await organizationById(ctx.db, scopeId))?.id
    : level === 'workspace' ? (await workspaceById(ctx.db, scopeId))?.organization_id
    : (await projectById(ctx.db, scopeId))?.organization_id;
  if (!found) throw validationFailed({ scopeId: `names no ${level}` });
  return found;
}
