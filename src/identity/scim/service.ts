// SCIM provisioning decisions. A directory reaches only its own users (the ones it provisioned) and
// only its own organization:
// - create: a new account (with a random one-time password nobody is shown: the person signs in by
//   single sign-on or gets a reset from an administrator), or, when an account has that e-mail address already, a link to it; then
//   the organization membership with the directory's role (plus its default workspace role). A
//   userName or externalId the directory already has, or a user another directory of the same
//   organization provisioned, is 409 uniqueness.
// - deactivation (active false, or DELETE) makes every membership of the user in the organization
//   inactive and revokes the user's sessions; reactivation restores those memberships (the default
//   ones are granted again when the organization membership is gone). Seats count as elsewhere.
// - only an account the directory created follows the directory's name and e-mail address; a
//   linked account keeps its own (its other organizations are not the directory's to change).
import type { Ctx } from '../../directory/context.ts';
import { record } from '../../platform/audit/service.ts';
import { revokeUserSessions } from '../../directory/sessions/store.ts';
import { assertSeatsAvailable } from '../../directory/plan/seats.ts';
import { LOCKS } from '../../directory/locks.ts';
import type { RowRead } from '../../db/dialect.ts';
import { ORG_ROLES, type Role } from '../../directory/roles.ts';
import { assertKeepsAnOwner, grantRole } from '../../tenancy/service.ts';
import { membershipAt, membershipsOfUser } from '../../directory/tenancy/store.ts';
import { createUser } from '../users/service.ts';
import { normalizeEmail, userByEmail, userById, type UserRow } from '../../directory/users/store.ts';
import { scimNotFound, uniqueness } from './errors.ts';
import type { UserFilter } from './filter.ts';
import { accountEmail, accountName, stateOf, type ScimUserState } from './resource.ts';
import {
  deleteScimUser, insertScimUser, listScimUsers, scimLinkInOrganization, scimUser, scimUserByExternalId, scimUserByName,
  setAccountIdentity, switchMemberships, updateScimUser, type DirectoryRow, type ScimUserRow,
} from './store.ts';

export function listUsers(ctx: Ctx, dir: DirectoryRow, filter: UserFilter | null, startIndex: number, count: number) {
  return listScimUsers(ctx.db, dir.id, filter, startIndex - 1, count);
}

/**
 * One of the directory's users; anyone else's id (another directory's, or no SCIM user) is 404.
 * `read` { forUpdate } for the change computed from it (src/db/dialect.ts RowRead).
 */
export async function getUser(ctx: Ctx, dir: DirectoryRow, userId: string, read?: RowRead): Promise<ScimUserRow> {
  const row = await scimUser(ctx.db, dir.id, userId, read);
  if (!row) throw scimNotFound();
  return row;
}

async function checkUnique(ctx: Ctx, dir: DirectoryRow, s: ScimUserState, selfId: string | null): Promise<void> {
  const byName = await scimUserByName(ctx.db, dir.id, s.userName.toLowerCase());
  if (byName && byName.user_id !== selfId) throw uniqueness(`userName ${s.userName} is already provisioned by this directory`);
  const byExternal = s.externalId === null ? undefined : await scimUserByExternalId(ctx.db, dir.id, s.externalId);
  if (byExternal && byExternal.user_id !== selfId) throw uniqueness(`externalId ${s.externalId} is already provisioned by this directory`);
}

const fields = (s: ScimUserState) => ({
  user_name: s.userName, user_name_key: s.userName.toLowerCase(), external_id: s.externalId, given_name: s.givenName,
  family_name: s.familyName, formatted_name: s.formattedName, display_name: s.displayName, emails: JSON.stringify(s.emails),
  active: s.active ? 1 : 0,
});

export async function createScimUser(ctx: Ctx, dir: DirectoryRow, s: ScimUserState): Promise<ScimUserRow> {
  await checkUnique(ctx, dir, s, null);
  const email = accountEmail(s);
  const existing = await userByEmail(ctx.db, email);
  // A directory manages people of its organization, never the service's administrators.
  if (existing?.is_system_admin) throw uniqueness('this e-mail address belongs to a system administrator account, which a directory cannot provision');
  if (existing) return await ctx.db.tx(() => link(ctx, dir, existing, s, false));
  return await ctx.db.tx(async () => {
    // The key link() takes (activate: the seats; deactivate: the owners), before createUser's audit
    // record (src/directory/locks.ts).
    await ctx.db.lock(s.active ? LOCKS.seats(dir.organization_id) : LOCKS.owners);
    // No password: the person signs in by single sign-on, or after an administrator's password reset.
    const { extra } = await createUser(ctx, { email, name: accountName(s), passwordless: true }, (user) => link(ctx, dir, user, s, true));
    return extra!;
  });
}

/** Runs in the caller's transaction: the SCIM row, the memberships and the audit record. */
async function link(ctx: Ctx, dir: DirectoryRow, user: UserRow, s: ScimUserState, owns: boolean): Promise<ScimUserRow> {
  await checkUnique(ctx, dir, s, null);
  const other = await scimLinkInOrganization(ctx.db, dir.organization_id, user.id);
  if (other) {
    throw uniqueness(other.directory_id === dir.id
      ? `the account with this e-mail address is already provisioned by this directory (userName ${other.user_name})`
      : 'the account with this e-mail address is provisioned by another directory of this organization');
  }
  const now = ctx.now().toISOString();
  await insertScimUser(ctx.db, { directory_id: dir.id, user_id: user.id, organization_id: dir.organization_id, ...fields(s), owns_account: owns ? 1 : 0, created_at: now, updated_at: now });
  const effect = s.active ? await activate(ctx, dir, user.id, true) : await deactivate(ctx, dir, user.id);
  await record(ctx, {
    action: owns ? 'scim.user_created' : 'scim.user_linked', targetType: 'user', targetId: user.id,
    metadata: { directoryId: dir.id, userName: s.userName, externalId: s.externalId, active: s.active, ...effect },
  });
  return (await scimUser(ctx.db, dir.id, user.id))!;
}

const orgRoleOf = (dir: DirectoryRow): Role =>
  ((ORG_ROLES as readonly string[]).includes(dir.default_role) ? dir.default_role : 'org_member') as Role;

/**
 * Restores the user's inactive memberships in the organization; grants the directory's role when
 * there is no organization membership, and its default workspace role when the user is new to the
 * organization or is being provisioned (`initial`) and has none there. Takes a seat (409 when full).
 */
async function activate(ctx: Ctx, dir: DirectoryRow, userId: string, initial: boolean): Promise<{ membershipsRestored: number; rolesGranted: string[] }> {
  const org = dir.organization_id;
  if ((await membershipAt(ctx.db, userId, 'organization', org))?.status !== 'active') await assertSeatsAvailable(ctx.db, org, ctx.now().toISOString());
  const restored = await switchMemberships(ctx.db, org, userId, 'inactive', 'active');
  const granted: string[] = [];
  const fresh = !await membershipAt(ctx.db, userId, 'organization', org);
  if (fresh) {
    await grantRole(ctx, { userId, level: 'organization', scopeId: org, role: orgRoleOf(dir) });
    granted.push(orgRoleOf(dir));
  }
  const ws = dir.default_workspace_id;
  if (ws && (fresh || initial) && !await membershipAt(ctx.db, userId, 'workspace', ws)) {
    await grantRole(ctx, { userId, level: 'workspace', scopeId: ws, role: dir.default_role as Role });
    granted.push(dir.default_role);
  }
  return { membershipsRestored: restored, rolesGranted: granted };
}

/**
 * Every membership of the user in the organization inactive (409 last_owner for its only owner), and
 * the sessions revoked: all of them when this organization was the person's only one, otherwise only
 * the sessions working in this organization (a directory never signs a person out of other tenants;
 * its inactive memberships already refuse access here).
 */
async function deactivate(ctx: Ctx, dir: DirectoryRow, userId: string): Promise<{ membershipsDeactivated: number; sessionsRevoked: number }> {
  await assertKeepsAnOwner(ctx.db, dir.organization_id, userId);
  const n = await switchMemberships(ctx.db, dir.organization_id, userId, 'active', 'inactive');
  const now = ctx.now().toISOString();
  const elsewhere = (await membershipsOfUser(ctx.db, userId)).some((m) => m.organization_id !== dir.organization_id && m.status === 'active');
  const revoked = elsewhere
    ? (await ctx.db.run("UPDATE sessions SET revoked_at = ?, revoked_reason = 'scim_deprovisioned' WHERE user_id = ? AND organization_id = ? AND revoked_at IS NULL",
      now, userId, dir.organization_id)).changes
    : await revokeUserSessions(ctx.db, userId, now, 'scim_deprovisioned');
  return { membershipsDeactivated: n, sessionsRevoked: revoked };
}

/** An account the directory created follows its e-mail address (unique among accounts) and name. */
async function syncAccount(ctx: Ctx, userId: string, s: ScimUserState): Promise<void> {
  const user = (await userById(ctx.db, userId))!;
  const email = accountEmail(s);
  const name = accountName(s);
  if (normalizeEmail(email) !== user.email_normalized) {
    const other = await userByEmail(ctx.db, email);
    if (other && other.id !== userId) throw uniqueness('another account has this e-mail address');
  }
  if (email !== user.email || name !== user.name) await setAccountIdentity(ctx.db, userId, email, normalizeEmail(email), name, ctx.now().toISOString());
}

const ATTRIBUTES = ['userName', 'externalId', 'givenName', 'familyName', 'formattedName', 'displayName', 'emails'] as const;

/** PUT and PATCH: `change` turns the current state into the next; one transaction, audited. */
export async function changeUser(ctx: Ctx, dir: DirectoryRow, userId: string, change: (current: ScimUserState) => ScimUserState): Promise<ScimUserRow> {
  return await ctx.db.tx(async () => {
    // The row first, then the key its change needs (activation: the seats; deactivation: the owners),
    // which only the row tells: the exception src/directory/locks.ts allows, since every transaction
    // that locks a SCIM user's row (this one, deleteUser) locks it before any key.
    const row = await getUser(ctx, dir, userId, { forUpdate: true });
    const cur = stateOf(row);
    const next = change(cur);
    await checkUnique(ctx, dir, next, userId);
    accountEmail(next);
    const changed = ATTRIBUTES.filter((k) => JSON.stringify(cur[k]) !== JSON.stringify(next[k]));
    if (changed.length === 0 && cur.active === next.active) return row;
    if (row.owns_account === 1) await syncAccount(ctx, userId, next);
    const effect = cur.active === next.active ? {} : next.active ? await activate(ctx, dir, userId, false) : await deactivate(ctx, dir, userId);
    await updateScimUser(ctx.db, { ...row, ...fields(next), updated_at: ctx.now().toISOString() });
    const action = cur.active === next.active ? 'scim.user_updated' : next.active ? 'scim.user_reactivated' : 'scim.user_deactivated';
    await record(ctx, { action, targetType: 'user', targetId: userId, metadata: { directoryId: dir.id, userName: next.userName, changed, ...effect } });
    return (await scimUser(ctx.db, dir.id, userId))!;
  });
}

/** DELETE: deprovisions (as active false) and forgets the SCIM user; the account itself stays. */
export async function deleteUser(ctx: Ctx, dir: DirectoryRow, userId: string): Promise<void> {
  await ctx.db.tx(async () => {
    const row = await getUser(ctx, dir, userId, { forUpdate: true }); // before the owners key: see changeUser
    const effect = row.active === 1 ? await deactivate(ctx, dir, userId) : {};
    await deleteScimUser(ctx.db, dir.id, userId);
    await record(ctx, { action: 'scim.user_deleted', targetType: 'user', targetId: userId, metadata: { directoryId: dir.id, userName: row.user_name, ...effect } });
  });
}
