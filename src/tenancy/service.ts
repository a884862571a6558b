// Organizations, workspaces, projects, role grants and the session's current scope.
import type { Ctx } from '../directory/context.ts';
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
export function createOrganization(ctx: Ctx, input: { name: string; ownerUserId?: string }): OrganizationRow {
  const owner = input.ownerUserId ? userById(ctx.db, input.ownerUserId) : undefined;
  if (input.ownerUserId && !owner) throw validationFailed({ ownerUserId: 'names no user' });
  const ownerId = owner?.id ?? (ctx.actor.type === 'user' ? ctx.actor.userId : null);
  const now = ctx.now().toISOString();
  const org: OrganizationRow = { id: newId('org'), name: input.name, time_zone: 'UTC', created_at: now, created_by: ctx.actor.userId };
  ctx.db.tx(() => {
    insertOrganization(ctx.db, org);
    insertDefaultBillingAccount(ctx.db, org.id, now);
    record(ctx, {
      action: 'organization.created', targetType: 'organization', targetId: org.id, organizationId: org.id, workspaceId: null, projectId: null,
      metadata: { name: org.name, ownerUserId: ownerId, ownerFrom: owner ? 'ownerUserId' : ownerId ? 'caller' : null },
    });
    if (ownerId) grantRole(ctx, { userId: ownerId, level: 'organization', scopeId: org.id, role: 'org_owner' });
  });
  return org;
}

export function createWorkspace(ctx: Ctx, organizationId: string, input: { name: string }): WorkspaceRow {
  if (!organizationById(ctx.db, organizationId)) throw notFound('no such organization');
  const ws: WorkspaceRow = { id: newId('wsp'), organization_id: organizationId, name: input.name, created_at: ctx.now().toISOString(), created_by: ctx.actor.userId };
  ctx.db.tx(() => {
    insertWorkspace(ctx.db, ws);
    insertWorkspaceCommercial(ctx.db, ws, ws.created_at);
    record(ctx, { action: 'workspace.created', targetType: 'workspace', targetId: ws.id, organizationId, workspaceId: ws.id, projectId: null, metadata: { name: ws.name } });
  });
  return ws;
}

export interface Grant { userId: string; level: Level; scopeId: string; role: Role; accessMode?: 'full' | 'project-only' }

/**
 * Gives a user a role at one level, creating the memberships the hierarchy implies: an
 * organization member row for every user inside an organization, and a project_guest workspace
 * row (access mode project-only) for a project-only member. Idempotent for the same role.
 */
export function grantRole(ctx: Ctx, g: Grant): FullMembershipRow {
  if (ROLE_LEVEL[g.role] !== g.level) throw validationFailed({ role: `is not a ${g.level} role` });
  if (!userById(ctx.db, g.userId)) throw validationFailed({ userId: 'names no user' });
  let org: string, ws: string | null = null, project: string | null = null;
  if (g.level === 'organization') {
    if (!organizationById(ctx.db, g.scopeId)) throw validationFailed({ scopeId: 'names no organization' });
    org = g.scopeId;
  } else if (g.level === 'workspace') {
    const w = workspaceById(ctx.db, g.scopeId);
    if (!w) throw validationFailed({ scopeId: 'names no workspace' });
    org = w.organization_id; ws = w.id;
  } else {
    const p = projectById(ctx.db, g.scopeId);
    if (!p) throw validationFailed({ scopeId: 'names no project' });
    org = p.organization_id; ws = p.workspace_id; project = p.id;
  }
  return ctx.db.tx(() => {
    if (g.level !== 'organization') ensureParent(ctx, g.userId, 'organization', org, 'org_member');
    if (g.level === 'project') ensureParent(ctx, g.userId, 'workspace', ws!, 'project_guest');
    const accessMode = g.accessMode ?? (g.role === 'project_guest' ? 'project-only' : 'full');
    const existing = membershipAt(ctx.db, g.userId, g.level, g.scopeId);
    if (existing) {
      if (existing.role === g.role && existing.status === 'active') return existing;
      if (existing.role === 'org_owner' && existing.status === 'active') assertKeepsAnOwner(ctx, org, g.userId);
      setMembershipRole(ctx.db, existing.id, g.role, accessMode);
    } else {
      insertMembership(ctx.db, {
        id: newId('mem'), user_id: g.userId, level: g.level, scope_id: g.scopeId, organization_id: org, workspace_id: ws,
        project_id: project, role: g.role, access_mode: accessMode, status: 'active', created_at: ctx.now().toISOString(), created_by: ctx.actor.userId,
      });
    }
    record(ctx, {
      action: existing ? 'membership.role_changed' : 'membership.created', targetType: 'user', targetId: g.userId,
      organizationId: org, workspaceId: ws, projectId: project,
      metadata: { level: g.level, role: g.role, previousRole: existing?.role ?? null, accessMode },
    });
    return membershipAt(ctx.db, g.userId, g.level, g.scopeId)!;
  });
}

/** A parent membership the hierarchy needs: made when missing, reactivated (same role) when inactive. */
function ensureParent(ctx: Ctx, userId: string, level: 'organization' | 'workspace', scopeId: string, role: Role): void {
  const parent = membershipAt(ctx.db, userId, level, scopeId);
  if (!parent) grantRole(ctx, { userId, level, scopeId, role });
  else if (parent.status !== 'active') grantRole(ctx, { userId, level, scopeId, role: parent.role });
}

/** 409 last_owner when `userId` is the organization's only active owner. */
export function assertKeepsAnOwner(ctx: Ctx, organizationId: string, userId: string): void {
  const m = membershipAt(ctx.db, userId, 'organization', organizationId);
  if (m?.role === 'org_owner' && m.status === 'active' && activeOwnerCount(ctx.db, organizationId) <= 1) {
    throw conflict('last_owner', 'an organization must keep an active owner; make someone else org_owner first', { organizationId, userId });
  }
}

export function listOrganizations(ctx: Ctx): OrganizationRow[] {
  if (ctx.actor.isSystemAdmin) return allOrganizations(ctx.db);
  return organizationsByIds(ctx.db, [...new Set(ctx.memberships.map((m) => m.organization_id))]);
}

export function listWorkspaces(ctx: Ctx, organizationId: string): WorkspaceRow[] {
  return workspacesOfOrganization(ctx.db, organizationId).filter((w) => canSeeWorkspace(ctx.actor, ctx.memberships, w));
}

export function listProjects(ctx: Ctx, workspaceId: string): ProjectRow[] {
  const ws = workspaceById(ctx.db, workspaceId);
  if (!ws) return [];
  return projectsOfWorkspace(ctx.db, ws.organization_id, ws.id).filter((p) => canSeeProject(ctx.actor, ctx.memberships, p));
}

/** Moves the session's current scope after checking visibility (403 scope_forbidden otherwise). */
export function changeScope(ctx: Ctx, req: ScopeRequest): ScopeIds {
  if (!req.organizationId && !req.workspaceId && !req.projectId) throw validationFailed({ body: 'name an organizationId, workspaceId or projectId' });
  const scope = selectScope(ctx.db, ctx.actor, ctx.memberships, req);
  if (!ctx.actor.sessionId) throw conflict('no_session', 'only a session has a current scope to change');
  setSessionScope(ctx.db, ctx.actor.sessionId, scope.organizationId, scope.workspaceId, scope.projectId);
  return scope;
}
