// Tenancy rows as the API shows them.
import type { Ctx } from '../context.ts';
import * as o from '../../kernel/view.ts';
import { NamedMembershipView, ROLES, UserView, presentNamedMembership, presentUser } from './users.ts';
import { userById } from '../users/store.ts';
import type { ScopeIds } from '../roles.ts';
import { namedMembershipsOfUser, organizationById, projectById, workspaceById, type OrganizationRow, type ProjectRow, type WorkspaceRow } from '../tenancy/store.ts';
import { LIFECYCLE_ACTIONS, PROJECT_STATUSES, allowedActions, type ProjectStatus } from '../tenancy/lifecycle.ts';

export const OrganizationView = o.named('Organization', o.object({
  id: o.text(), name: o.text(), timeZone: o.text({ description: 'IANA time zone name (default UTC)' }), createdAt: o.time(),
}));

export const presentOrganization = (org: OrganizationRow): o.Out<typeof OrganizationView> => ({ id: org.id, name: org.name, timeZone: org.time_zone, createdAt: org.created_at });

export const WorkspaceView = o.named('Workspace', o.object({ id: o.text(), organizationId: o.text(), name: o.text(), createdAt: o.time() }));

export const presentWorkspace = (w: WorkspaceRow): o.Out<typeof WorkspaceView> => ({ id: w.id, organizationId: w.organization_id, name: w.name, createdAt: w.created_at });

export const ProjectView = o.named('Project', o.object({
  id: o.text(), organizationId: o.text(), workspaceId: o.text(), name: o.text(), status: o.oneOf(PROJECT_STATUSES),
  templateId: o.nullable(o.text({ description: 'the workflow template new generation work uses by default' })),
  createdAt: o.time(), updatedAt: o.time(),
  archivedAt: o.nullable(o.time()), archivedBy: o.nullable(o.text()), archivedFromStatus: o.nullable(o.oneOf(PROJECT_STATUSES)),
  allowedActions: o.array(o.oneOf(LIFECYCLE_ACTIONS), 'the lifecycle actions allowed from this status'),
}));

export const presentProject = (p: ProjectRow): o.Out<typeof ProjectView> => ({
  id: p.id, organizationId: p.organization_id, workspaceId: p.workspace_id, name: p.name, status: p.status as ProjectStatus,
  templateId: p.template_id, createdAt: p.created_at, updatedAt: p.updated_at,
  archivedAt: p.archived_at, archivedBy: p.archived_by, archivedFromStatus: p.archived_from_status as ProjectStatus | null,
  allowedActions: allowedActions(p.status as ProjectStatus),
});

const roleAtLevel = o.nullable(o.oneOf(ROLES));

export const ContextView = o.named('Context', o.object({
  user: UserView,
  organization: o.nullable(OrganizationView), workspace: o.nullable(WorkspaceView), project: o.nullable(ProjectView),
  roles: o.object({ organization: roleAtLevel, workspace: roleAtLevel, project: roleAtLevel }, 'the caller\'s own role at each level of the scope (null: none there)'),
  permissions: o.array(o.text(), 'the effective permissions in this scope (system:settings:* for a system administrator)'),
  memberships: o.array(NamedMembershipView, 'every membership of the caller, to switch scope to'),
}, 'who the caller is, in which scope, with which permissions'));

/** GET /api/context: who, where, with which permissions, and every membership to switch to. */
export async function presentContext(ctx: Ctx, scope: ScopeIds, permissions: readonly string[]): Promise<o.Out<typeof ContextView>> {
  const user = (await userById(ctx.db, ctx.actor.userId!))!;
  const org = scope.organizationId ? await organizationById(ctx.db, scope.organizationId) : undefined;
  const ws = scope.workspaceId ? await workspaceById(ctx.db, scope.workspaceId) : undefined;
  const project = scope.projectId ? await projectById(ctx.db, scope.projectId) : undefined;
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
    permissions: [...permissions],
    memberships: (await namedMembershipsOfUser(ctx.db, user.id)).map(presentNamedMembership),
  };
}
