// Tenancy rows as the API shows them.
import type { Ctx } from '../context.ts';
import { presentNamedMembership, presentUser } from '../users/present.ts';
import { userById } from '../users/store.ts';
import type { ScopeIds } from './roles.ts';
import { namedMembershipsOfUser, organizationById, projectById, workspaceById, type OrganizationRow, type WorkspaceRow } from './store.ts';
import { presentProject } from '../projects/present.ts';

export const presentOrganization = (o: OrganizationRow) => ({ id: o.id, name: o.name, timeZone: o.time_zone, createdAt: o.created_at });

export const presentWorkspace = (w: WorkspaceRow) => ({ id: w.id, organizationId: w.organization_id, name: w.name, createdAt: w.created_at });

/** GET /api/context: who, where, with which permissions, and every membership to switch to. */
export function presentContext(ctx: Ctx, scope: ScopeIds, permissions: readonly string[]) {
  const user = userById(ctx.db, ctx.actor.userId!)!;
  const org = scope.organizationId ? organizationById(ctx.db, scope.organizationId) : undefined;
  const ws = scope.workspaceId ? workspaceById(ctx.db, scope.workspaceId) : undefined;
  const project = scope.projectId ? projectById(ctx.db, scope.projectId) : undefined;
  const roleAt = (level: string, id: string | null) =>
    id ? ctx.memberships.find((m) => m.level === level && (m.project_id ?? m.workspace_id ?? m.organization_id) === id)?.role ?? null : null;
  return {
    user: presentUser(user),
    organization: org ? presentOrganization(org) : null,
    workspace: ws ? presentWorkspace(ws) : null,
    project: project ? presentProject(project) : null,
    roles: {
      organization: roleAt('organization', scope.organizationId),
      workspace: roleAt('workspace', scope.workspaceId),
      project: roleAt('project', scope.projectId),
    },
    permissions,
    memberships: namedMembershipsOfUser(ctx.db, user.id).map(presentNamedMembership),
  };
}
