// Organizations, workspaces, projects, role grants and the session's current scope.
import type { Ctx } from '../directory/context.ts';
import type { Db } from '../db/db.ts';
import { LOCKS } from '../directory/locks.ts';
import { conflict, notFound, validationFailed } from '../kernel/errors.ts';
import { newId } from '../kernel/ids.ts';
import { record } from '../platform/audit/service.ts';
import { insertDefaultBillingAccount, insertWorkspaceCommercial } from '../directory/plan/account.ts';
import { setSessionScope } from '../directory/sessions/store.ts';
import { userById } from '../directory/users/store.ts';
import { ROLE_LEVEL, type Level, type Role, type ScopeIds } from '../directory/roles.ts';
import { canSeeProject, canSeeWorkspace, selectScope, type ScopeRequest } from '../directory/tenancy/scope.ts';
import {
  activeOwnerCount, allOrganizations, insertMembership, insertOrganization, insertWorkspace, membershipAt,
  organizationById, organizationsByIds, projectById, projectsOfWorkspace, workspaceById, workspacesOfOrganization,
  setMembershipRole, type FullMembershipRow, type OrganizationRow, type ProjectRow, type WorkspaceRow,
} from '../directory/tenancy/store.ts';

/**
 * A new organization, its billing account and its first owner, in one transaction. The owner is
 * `ownerUserId` when given, else the calling person (a system administrator signed in), so that the
 * creator's console opens in the organization instead of a blank one. The local operator is no person:
 * `svc orgs create` requires --owner; an organization without any member is left only to code that
 * calls this as the operator without one (test fixtures), and only system administrators see it.
 */
export async function createOrganization(ctx: Ctx, input: { name: string; ownerUserId?: string }): Promise<OrganizationRow> {
  const owner = input.ownerUserId ? await userById(ctx.db, input.ownerUserId) : undefined;
  if (input.ownerUserId && !owner) throw validationFailed({ ownerUserId: 'names no user' });
  const ownerId = owner?.id ?? (ctx.actor.type === 'user' ? ctx.actor.userId : null);
  const now = ctx.now().toISOString();
  const org: OrganizationRow = { id: newId('org'), name: input.name, time_zone: 'UTC', created_at: now, created_by: ctx.actor.userId };
  await ctx.db.tx(async () => {
    await insertOrganization(ctx.db, org);
    await insertDefaultBillingAccount(ctx.db, org.id, now);
    await record(ctx, {
      action: 'organization.created', targetType: 'organization', targetId: org.id, organizationId: org.id, workspaceId: null, projectId: null,
      metadata: { name: org.name, ownerUserId: ownerId, ownerFrom: owner ? 'ownerUserId' : ownerId ? 'caller' : null },
    });
    if (ownerId) await grantRole(ctx, { userId: ownerId, level: 'organization', scopeId: org.id, role: 'org_owner' });
  });
  return org;
}

export async function createWorkspace(ctx: Ctx, organizationId: string, input: { name: string }): Promise<WorkspaceRow> {
  if (!await organizationById(ctx.db, organizationId)) throw notFound('no such organization');
  const ws: WorkspaceRow = { id: newId('wsp'), organization_id: organizationId, name: input.name, created_at: ctx.now().toISOString(), created_by: ctx.actor.userId };
  await ctx.db.tx(async () => {
    await insertWorkspace(ctx.db, ws);
    await insertWorkspaceCommercial(ctx.db, ws, ws.created_at);
    await record(ctx, { action: 'workspace.created', targetType: 'workspace', targetId: ws.id, organizationId, workspaceId: ws.id, projectId: null, metadata: { name: ws.name } });
  });
  return ws;
}

export interface Grant { userId: string; level: Level; scopeId: string; role: Role; accessMode?: 'full' | 'project-only' }

/**
 * Gives a user a role at one level, creating the memberships the hierarchy implies: an
 * organization member row for every user inside an organization, and a project_guest workspace
 * row (access mode project-only) for a project-only member. Idempotent for the same role.
 */
export async function grantRole(ctx: Ctx, g: Grant): Promise<FullMembershipRow> {
  if (ROLE_LEVEL[g.role] !== g.level) throw validationFailed({ role: `is not a ${g.level} role` });
  if (!await userById(ctx.db, g.userId)) throw validationFailed({ userId: 'names no user' });
  let org: string, ws: string | null = null, project: string | null = null;
  if (g.level === 'organization') {
    if (!await organizationById(ctx.db, g.scopeId)) throw validationFailed({ scopeId: 'names no organization' });
    org = g.scopeId;
  } else if (g.level === 'workspace') {
    const w = await workspaceById(ctx.db, g.scopeId);
    if (!w) throw validationFailed({ scopeId: 'names no workspace' });
    org = w.organization_id; ws = w.id;
  } else {
    const p = await projectById(ctx.db, g.scopeId);
    if (!p) throw validationFailed({ scopeId: 'names no project' });
    org = p.organization_id; ws = p.workspace_id; project = p.id;
  }
  return await ctx.db.tx(async () => {
    if (g.level !== 'organization') await ensureParent(ctx, g.userId, 'organization', org, 'org_member');
    if (g.level === 'project') await ensureParent(ctx, g.userId, 'workspace', ws!, 'project_guest');
    const accessMode = g.accessMode ?? (g.role === 'project_guest' ? 'project-only' : 'full');
    let existing = await membershipAt(ctx.db, g.userId, g.level, g.scopeId);
    if (existing && g.level === 'organization') {
      // A change of an organization role may take an owner away: the owners key, then the role read
      // again as last committed (src/directory/locks.ts). A new membership takes nothing away.
      await ctx.db.lock(LOCKS.owners);
      existing = await membershipAt(ctx.db, g.userId, g.level, g.scopeId);
    }
    if (existing) {
      if (existing.role === g.role && existing.status === 'active') return existing;
      if (existing.role === 'org_owner' && existing.status === 'active') await assertKeepsAnOwner(ctx.db, org, g.userId);
      await setMembershipRole(ctx.db, existing.id, g.role, accessMode);
    } else {
      await insertMembership(ctx.db, {
        id: newId('mem'), user_id: g.userId, level: g.level, scope_id: g.scopeId, organization_id: org, workspace_id: ws,
        project_id: project, role: g.role, access_mode: accessMode, status: 'active', created_at: ctx.now().toISOString(), created_by: ctx.actor.userId,
      });
    }
    await record(ctx, {
      action: existing ? 'membership.role_changed' : 'membership.created', targetType: 'user', targetId: g.userId,
      organizationId: org, workspaceId: ws, projectId: project,
      metadata: { level: g.level, role: g.role, previousRole: existing?.role ?? null, accessMode },
    });
    return (await membershipAt(ctx.db, g.userId, g.level, g.scopeId))!;
  });
}

/** A parent membership the hierarchy needs: made when missing, reactivated (same role) when inactive. */
async function ensureParent(ctx: Ctx, userId: string, level: 'organization' | 'workspace', scopeId: string, role: Role): Promise<void> {
  const parent = await membershipAt(ctx.db, userId, level, scopeId);
  if (!parent) await grantRole(ctx, { userId, level, scopeId, role });
  else if (parent.status !== 'active') await grantRole(ctx, { userId, level, scopeId, role: parent.role });
}

/**
 * 409 last_owner when `userId` is the organization's only active owner. Inside the transaction that
 * then demotes, removes or deactivates the user: the owners key comes first (src/directory/locks.ts),
 * so two such changes of two owners cannot both count the other one as staying.
 */
export async function assertKeepsAnOwner(db: Db, organizationId: string, userId: string): Promise<void> {
  await db.lock(LOCKS.owners);
  const m = await membershipAt(db, userId, 'organization', organizationId);
  if (m?.role === 'org_owner' && m.status === 'active' && await activeOwnerCount(db, organizationId) <= 1) {
    throw conflict('last_owner', 'an organization must keep an active owner; make someone else org_owner first', { organizationId, userId });
  }
}

export async function listOrganizations(ctx: Ctx): Promise<OrganizationRow[]> {
  if (ctx.actor.isSystemAdmin) return await allOrganizations(ctx.db);
  return await organizationsByIds(ctx.db, [...new Set(ctx.memberships.map((m) => m.organization_id))]);
}

export async function listWorkspaces(ctx: Ctx, organizationId: string): Promise<WorkspaceRow[]> {
  return (await workspacesOfOrganization(ctx.db, organizationId)).filter((w) => canSeeWorkspace(ctx.actor, ctx.memberships, w));
}

export async function listProjects(ctx: Ctx, workspaceId: string): Promise<ProjectRow[]> {
  const ws = await workspaceById(ctx.db, workspaceId);
  if (!ws) return [];
  return (await projectsOfWorkspace(ctx.db, ws.organization_id, ws.id)).filter((p) => canSeeProject(ctx.actor, ctx.memberships, p));
}

/** Moves the session's current scope after checking visibility (403 scope_forbidden otherwise). */
export async function changeScope(ctx: Ctx, req: ScopeRequest): Promise<ScopeIds> {
  if (!req.organizationId && !req.workspaceId && !req.projectId) throw validationFailed({ body: 'name an organizationId, workspaceId or projectId' });
  const scope = await selectScope(ctx.db, ctx.actor, ctx.memberships, req);
  if (!ctx.actor.sessionId) throw conflict('no_session', 'only a session has a current scope to change');
  await setSessionScope(ctx.db, ctx.actor.sessionId, scope.organizationId, scope.workspaceId, scope.projectId);
  return scope;
}
