// Members of organizations, workspaces and projects: lists, role changes and removals by the
// organization's owners and admins. An organization always keeps an active owner.
import type { Ctx } from '../../directory/context.ts';
import { forbidden, notFound, validationFailed } from '../../kernel/errors.ts';
import { record } from '../../platform/audit/service.ts';
import { assertKeepsAnOwner, grantRole } from '../../tenancy/service.ts';
import { isOrgAdmin, orgRoleOf } from '../../directory/tenancy/scope.ts';
import { membershipAt, projectById } from '../../directory/tenancy/store.ts';
import type { Level, Role } from '../../directory/roles.ts';
import { LOCKS } from '../../directory/locks.ts';
import { deleteMemberships, membershipsAtScope, membershipsInOrganization, type MemberRow } from './store.ts';

export interface OrganizationMember {
  user: Pick<MemberRow, 'user_id' | 'email' | 'name' | 'user_status' | 'last_login_at'>;
  organization: MemberRow | null;
  below: MemberRow[];
}

/**
 * Whom a caller may see in an organization's member lists, and how much. The system administrator,
 * owners and admins see every member with the last login. Other full members (an organization
 * member, with or without workspace roles) see every member, without others' last login. A
 * project-only guest (its only roles below the organization are project roles and the project_guest
 * rows they imply) sees the members of its own projects only (holders of a project role there), and
 * of their memberships only those projects' roles. Everyone sees itself in full.
 */
export interface PeopleReach {
  /** null: every member; else the projects whose members (and roles) are visible. */
  projects: ReadonlySet<string> | null;
  /** Others' last login (account activity) is shown to administrators only. */
  activity: boolean;
}

export function peopleReach(ctx: Ctx, organizationId: string): PeopleReach {
  if (isOrgAdmin(ctx.actor, ctx.memberships, organizationId)) return { projects: null, activity: true };
  const below = ctx.memberships.filter((m) => m.organization_id === organizationId && m.level !== 'organization');
  const guestOnly = below.length > 0 && below.every((m) => m.level === 'project' || m.role === 'project_guest');
  if (!guestOnly) return { projects: null, activity: false };
  return { projects: new Set(below.filter((m) => m.level === 'project').map((m) => m.project_id!)), activity: false };
}

/** A member row as the reach shows it: others' last login hidden without the activity right. */
function shown<T extends Pick<MemberRow, 'user_id' | 'last_login_at'>>(ctx: Ctx, reach: PeopleReach, m: T): T {
  return reach.activity || m.user_id === ctx.actor.userId ? m : { ...m, last_login_at: null };
}

/** True when a member row lies in the reach: any row, or the rows of the reach's projects. */
const inProjects = (reach: PeopleReach, m: MemberRow) => reach.projects === null || (m.level === 'project' && reach.projects.has(m.project_id!));

/** One entry per user the caller may see: the organization role and the workspace and project roles below it (as far as the reach shows them). */
export async function organizationMembers(ctx: Ctx, organizationId: string): Promise<OrganizationMember[]> {
  const reach = peopleReach(ctx, organizationId);
  const byUser = new Map<string, OrganizationMember>();
  const rows = await membershipsInOrganization(ctx.db, organizationId);
  const visible = new Set(rows.filter((m) => m.user_id === ctx.actor.userId || inProjects(reach, m)).map((m) => m.user_id));
  for (const m of rows) {
    if (!visible.has(m.user_id)) continue;
    let e = byUser.get(m.user_id);
    if (!e) byUser.set(m.user_id, (e = { user: shown(ctx, reach, m), organization: null, below: [] }));
    if (m.level === 'organization') e.organization = m;
    else if (m.user_id === ctx.actor.userId || inProjects(reach, m)) e.below.push(m);
  }
  return [...byUser.values()];
}

/** The role holders of a workspace or project the caller may see (a project-only guest: the members of its own projects only). */
export async function scopeMembers(ctx: Ctx, level: 'workspace' | 'project', scopeId: string): Promise<MemberRow[]> {
  const organizationId = ctx.scope.organizationId!;
  const reach = peopleReach(ctx, organizationId);
  const rows = await membershipsAtScope(ctx.db, organizationId, level, scopeId);
  if (reach.projects === null) return rows.map((m) => shown(ctx, reach, m));
  const coMembers = new Set((await membershipsInOrganization(ctx.db, organizationId)).filter((m) => inProjects(reach, m)).map((m) => m.user_id));
  return rows.filter((m) => m.user_id === ctx.actor.userId || coMembers.has(m.user_id)).map((m) => shown(ctx, reach, m));
}

const ASSIGNABLE: Record<Level, readonly Role[]> = {
  organization: ['org_owner', 'org_admin', 'org_member'],
  workspace: ['producer', 'writer', 'art_director', 'voice_editor', 'reviewer'],
  project: ['project_editor', 'project_viewer'],
};

/** Owners alone grant or take away ownership (the last active owner is kept by grantRole and removal). */
function checkOwnership(ctx: Ctx, organizationId: string, current: Role | null, next: Role | null): void {
  if (current !== 'org_owner' && next !== 'org_owner') return;
  if (!ctx.actor.isSystemAdmin && orgRoleOf(ctx.memberships, organizationId) !== 'org_owner') {
    throw forbidden('permission_denied', 'only an organization owner can grant or remove ownership');
  }
}

/**
 * Sets a member's role at one level. The user must already belong to the organization; at
 * workspace and project level the role is created or changed.
 */
export async function setMemberRole(ctx: Ctx, level: Level, scopeId: string, userId: string, role: Role): Promise<MemberRow> {
  if (!ASSIGNABLE[level].includes(role)) {
    throw validationFailed({ role: `must be one of ${ASSIGNABLE[level].join(', ')} at ${level} level` });
  }
  const organizationId = ctx.scope.organizationId!;
  return await ctx.db.tx(async () => {
    // An organization role may take an owner away: the owners key before the reads (src/directory/locks.ts).
    if (level === 'organization') await ctx.db.lock(LOCKS.owners);
    const orgMembership = await membershipAt(ctx.db, userId, 'organization', organizationId);
    if (!orgMembership || orgMembership.status !== 'active') throw notFound('no such member of this organization');
    const current = await membershipAt(ctx.db, userId, level, scopeId);
    if (level === 'organization') checkOwnership(ctx, organizationId, orgMembership.role, role);
    if (current?.role !== role || current.status !== 'active') await grantRole(ctx, { userId, level, scopeId, role });
    return (await membershipsAtScope(ctx.db, organizationId, level, scopeId)).find((m) => m.user_id === userId)!;
  });
}

/**
 * Removes a member: from the organization (every role in it), a workspace (with the user's project
 * roles there) or a project (and the project_guest workspace row it implied, when it was the last).
 */
export async function removeMember(ctx: Ctx, level: Level, scopeId: string, userId: string): Promise<void> {
  const organizationId = ctx.scope.organizationId!;
  await ctx.db.tx(async () => {
    if (level === 'organization') await ctx.db.lock(LOCKS.owners); // before the reads (src/directory/locks.ts)
    const current = await membershipAt(ctx.db, userId, level, scopeId);
    if (!current) throw notFound('no such member here');
    let removed: number;
    if (level === 'organization') {
      checkOwnership(ctx, organizationId, current.role, null);
      await assertKeepsAnOwner(ctx.db, organizationId, userId);
      removed = await deleteMemberships(ctx.db, organizationId, userId, {});
    } else if (level === 'workspace') {
      removed = await deleteMemberships(ctx.db, organizationId, userId, { workspaceId: scopeId });
    } else {
      removed = await deleteMemberships(ctx.db, organizationId, userId, { projectId: scopeId });
      const p = (await projectById(ctx.db, scopeId))!;
      const guest = await membershipAt(ctx.db, userId, 'workspace', p.workspace_id);
      const stillThere = (await membershipsInOrganization(ctx.db, organizationId)).some((m) => m.user_id === userId && m.level === 'project' && m.workspace_id === p.workspace_id);
      if (guest?.role === 'project_guest' && !stillThere) removed += await deleteMemberships(ctx.db, organizationId, userId, { workspaceId: p.workspace_id });
    }
    await record(ctx, {
      action: 'membership.removed', targetType: 'user', targetId: userId,
      workspaceId: level === 'workspace' ? scopeId : level === 'project' ? (await projectById(ctx.db, scopeId))!.workspace_id : null,
      projectId: level === 'project' ? scopeId : null,
      metadata: { level, scopeId, role: current.role, membershipsRemoved: removed },
    });
  });
}

/** The level and id a member route acts on, from its path parameters. */
export function memberScope(params: Record<string, string>): { level: Level; scopeId: string } {
  if (params.projectId) return { level: 'project', scopeId: params.projectId };
  if (params.workspaceId) return { level: 'workspace', scopeId: params.workspaceId };
  return { level: 'organization', scopeId: params.organizationId };
}
