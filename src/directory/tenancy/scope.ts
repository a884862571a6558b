// Who may see which organization, workspace and project, and how a scope is resolved:
// user -> organization -> workspace -> project. One set of predicates serves HTTP access checks,
// lists and the session's current scope.
import type { Db } from '../../db/db.ts';
import type { Actor } from '../context.ts';
import { scopeForbidden } from '../../kernel/errors.ts';
import type { MembershipRow, OrgRole, ScopeIds } from '../roles.ts';
import {
  organizationById, projectById, projectsOfWorkspace, workspaceById, workspacesOfOrganization,
  type ProjectRow, type WorkspaceRow,
} from './store.ts';

type Ms = readonly MembershipRow[];

export function orgRoleOf(ms: Ms, organizationId: string): OrgRole | null {
  const m = ms.find((x) => x.level === 'organization' && x.organization_id === organizationId);
  return m ? (m.role as OrgRole) : null;
}

export function isOrgAdmin(actor: Actor, ms: Ms, organizationId: string): boolean {
  if (actor.isSystemAdmin) return true;
  const role = orgRoleOf(ms, organizationId);
  return role === 'org_owner' || role === 'org_admin';
}

export function canSeeOrganization(actor: Actor, ms: Ms, organizationId: string): boolean {
  return actor.isSystemAdmin || ms.some((m) => m.organization_id === organizationId);
}

export function canSeeWorkspace(actor: Actor, ms: Ms, ws: Pick<WorkspaceRow, 'id' | 'organization_id'>): boolean {
  return isOrgAdmin(actor, ms, ws.organization_id)
    || ms.some((m) => m.level === 'workspace' && m.workspace_id === ws.id);
}

/** A project is visible to org owners/admins, full members of its workspace, and its own project members. */
export function canSeeProject(actor: Actor, ms: Ms, p: Pick<ProjectRow, 'id' | 'workspace_id' | 'organization_id'>): boolean {
  return isOrgAdmin(actor, ms, p.organization_id)
    || ms.some((m) => (m.level === 'workspace' && m.workspace_id === p.workspace_id && m.access_mode === 'full' && m.role !== 'project_guest')
      || (m.level === 'project' && m.project_id === p.id));
}

export interface ScopeRequest { organizationId?: string | null; workspaceId?: string | null; projectId?: string | null }

/**
 * Resolves explicitly requested ids (from the path, a PATCH of the context or development headers)
 * down the hierarchy, checking consistency and visibility. Unknown and invisible ids get the same
 * 403 scope_forbidden, so ids of other tenants cannot be probed.
 */
export async function resolveScope(db: Db, actor: Actor, ms: Ms, req: ScopeRequest): Promise<ScopeIds> {
  if (req.projectId) {
    const p = await projectById(db, req.projectId);
    if (!p || !canSeeProject(actor, ms, p)
      || (req.workspaceId && req.workspaceId !== p.workspace_id)
      || (req.organizationId && req.organizationId !== p.organization_id)) {
      throw scopeForbidden('that project is not accessible to you');
    }
    return { organizationId: p.organization_id, workspaceId: p.workspace_id, projectId: p.id };
  }
  if (req.workspaceId) {
    const w = await workspaceById(db, req.workspaceId);
    if (!w || !canSeeWorkspace(actor, ms, w) || (req.organizationId && req.organizationId !== w.organization_id)) {
      throw scopeForbidden('that workspace is not accessible to you');
    }
    return { organizationId: w.organization_id, workspaceId: w.id, projectId: null };
  }
  if (req.organizationId) {
    if (!canSeeOrganization(actor, ms, req.organizationId) || !await organizationById(db, req.organizationId)) {
      throw scopeForbidden('that organization is not accessible to you');
    }
    return { organizationId: req.organizationId, workspaceId: null, projectId: null };
  }
  return { organizationId: null, workspaceId: null, projectId: null };
}

/** Fills an empty workspace or project below a resolved scope with the first one the user may see. */
export async function fillScope(db: Db, actor: Actor, ms: Ms, s: ScopeIds): Promise<ScopeIds> {
  const { organizationId } = s;
  let { workspaceId, projectId } = s;
  if (!organizationId) return s;
  if (!workspaceId) {
    workspaceId = (await workspacesOfOrganization(db, organizationId)).find((w) => canSeeWorkspace(actor, ms, w))?.id ?? null;
  }
  if (workspaceId && !projectId) {
    projectId = (await projectsOfWorkspace(db, organizationId, workspaceId)).find((p) => canSeeProject(actor, ms, p))?.id ?? null;
  }
  return { organizationId, workspaceId, projectId };
}

/**
 * A scope chosen by name, the one rule of PATCH /api/context and of the per-request selector
 * (Svc-Scope): each id checked by resolveScope (403 scope_forbidden), lower levels filled with the
 * first visible one.
 */
export async function selectScope(db: Db, actor: Actor, ms: Ms, req: ScopeRequest): Promise<ScopeIds> {
  return await fillScope(db, actor, ms, await resolveScope(db, actor, ms, req));
}

/** A new session's scope: the organization of the user's first membership, then the first visible workspace and project. */
export async function firstScope(db: Db, actor: Actor, ms: Ms): Promise<ScopeIds> {
  const first = ms[0];
  if (!first) return { organizationId: null, workspaceId: null, projectId: null };
  const ws = first.workspace_id && canSeeWorkspace(actor, ms, { id: first.workspace_id, organization_id: first.organization_id })
    ? first.workspace_id : null;
  return await fillScope(db, actor, ms, { organizationId: first.organization_id, workspaceId: ws, projectId: first.project_id });
}

/** True when a stored scope is still consistent with what the user may see now. */
export function scopeStillVisible(actor: Actor, ms: Ms, s: ScopeIds): boolean {
  if (!s.organizationId) return true;
  if (s.projectId) return !!s.workspaceId && canSeeProject(actor, ms, { id: s.projectId, workspace_id: s.workspaceId, organization_id: s.organizationId });
  if (s.workspaceId) return canSeeWorkspace(actor, ms, { id: s.workspaceId, organization_id: s.organizationId });
  return canSeeOrganization(actor, ms, s.organizationId);
}
