// Current scope (context), organizations, workspaces and projects.
import { withScope } from '../context.ts';
import { json, type Router } from '../http/router.ts';
import { PageQuery, paging } from '../http/validate.ts';
import { ContextPatchBody, OrganizationBody, ProjectBody, WorkspaceBody } from './schema.ts';
import { presentContext, presentOrganization, presentProject, presentWorkspace } from './present.ts';
import { changeScope, createOrganization, createProject, createWorkspace, listOrganizations, listProjects, listWorkspaces } from './service.ts';

/** Pages an already visibility-filtered list: { items, pagination }. */
function page<T, U>(searchParams: URLSearchParams, rows: T[], present: (row: T) => U) {
  const { page, pageSize, offset } = paging(searchParams);
  return { items: rows.slice(offset, offset + pageSize).map(present), pagination: { page, pageSize, total: rows.length } };
}

export function bindTenancyRoutes(r: Router): void {
  const tags = ['tenancy'];
  r.get('/api/context', { summary: 'Current user, organization, workspace, project, permissions and memberships.', tags: ['context'] },
    ({ ctx }) => json(200, presentContext(ctx, ctx.scope, ctx.permissions)));

  r.patch('/api/context', {
    summary: 'Move the session\'s current scope; each id is checked (403 scope_forbidden). Missing lower levels are filled with the first visible one.',
    tags: ['context'], body: ContextPatchBody,
  }, ({ ctx, body }) => {
    const scope = changeScope(ctx, body);
    const moved = withScope(ctx, scope);
    return json(200, presentContext(moved, scope, moved.permissions));
  });

  r.get('/api/organizations', { summary: 'Organizations the caller may see.', tags, query: PageQuery },
    ({ ctx, searchParams }) => json(200, page(searchParams, listOrganizations(ctx), presentOrganization)));

  r.post('/api/organizations', { summary: 'Create an organization; ownerUserId becomes org_owner.', tags, systemAdmin: true, body: OrganizationBody, response: { status: 201, description: 'the organization' } },
    ({ ctx, body }) => json(201, presentOrganization(createOrganization(ctx, body))));

  r.get('/api/organizations/:organizationId/workspaces', { summary: 'Workspaces of the organization the caller may see.', tags, scope: 'organization', query: PageQuery },
    ({ ctx, searchParams, params }) => json(200, page(searchParams, listWorkspaces(ctx, params.organizationId), presentWorkspace)));

  r.post('/api/organizations/:organizationId/workspaces', {
    summary: 'Create a workspace.', tags, scope: 'organization', orgRoles: ['org_owner', 'org_admin'], body: WorkspaceBody,
    response: { status: 201, description: 'the workspace' },
  }, ({ ctx, body, params }) => json(201, presentWorkspace(createWorkspace(ctx, params.organizationId, body))));

  r.get('/api/workspaces/:workspaceId/projects', { summary: 'Projects of the workspace the caller may see.', tags, scope: 'workspace', query: PageQuery },
    ({ ctx, searchParams, params }) => json(200, page(searchParams, listProjects(ctx, params.workspaceId), presentProject)));

  r.post('/api/workspaces/:workspaceId/projects', {
    summary: 'Create a project (status draft).', tags, scope: 'workspace', permission: 'project:create', body: ProjectBody,
    response: { status: 201, description: 'the project' },
  }, ({ ctx, body, params }) => json(201, presentProject(createProject(ctx, params.workspaceId, body))));
}
