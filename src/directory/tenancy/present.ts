// Tenancy rows as the API shows them.
import type { Ctx } from '../context.ts';
import * as o from '../../kernel/view.ts';
import { NamedMembershipView, ROLES, UserView, presentNamedMembership, presentUser } from '../users/present.ts';
import { userById } from '../users/store.ts';
import type { ScopeIds } from './roles.ts';
import { namedMembershipsOfUser, organizationById, projectById, workspaceById, type OrganizationRow, type WorkspaceRow } from './store.ts';
import { ProjectView, presentProject } from '../../production/projects/present.ts';

export const OrganizationView = o.named('Organization', o.object({
  id: o.text(), name: o.text(), timeZone: o.text({ description: 'IANA time zone name (default UTC)' }), createdAt: o.time(),
}));

export const presentOrganization = (org: OrganizationRow): o.Out<typeof OrganizationView> => ({ id: org.id, name: org.name, timeZone: org.time_zone, createdAt: org.created_at });

export const WorkspaceView = o.named('Workspace', o.object({ id: o.text(), organizationId: o.text(), name: o.text(), createdAt: o.time() }));

export const presentWorkspace = (w: WorkspaceRow): o.Out<typeof WorkspaceView> => ({ id: w.id, organizationId: w.organization_id, name: w.name, createdAt: w.created_at });

const roleAtLevel = o.nullable(o.oneOf(ROLES));

export const ContextView = o.named('Context', o.object({
  user: UserView,
  organization: o.nullable(OrganizationView), workspace: o.nullable(WorkspaceView), project: o.nullable(ProjectView),
  roles: o.object({ organization: roleAtLevel, workspace: roleAtLevel, project: roleAtLevel }, 'the caller\'s own role at each level of the scope (null: none there)'),
  permissions: o.array(o.text(), 'the effective permissions in this scope (system:settings:* for a system administrator)'),
  memberships: o.array(NamedMembershipView, 'every membership of the caller, to switch scope to'),
}, 'who the caller is, in which scope, with which permissions'));

/** GET /api/context: who, where, with which permissions, and every membership to switch to. */
export function presentContext(ctx: Ctx, scope: ScopeIds, permissions: readonly string[]): o.Out<typeof ContextView> {
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
    permissions: [...permissions],
    memberships: namedMembershipsOfUser(ctx.db, user.id).map(presentNamedMembership),
  };
}
