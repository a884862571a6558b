// Current scope (context), organizations (with the caller's role and seat use), workspaces.
import { withScope } from '../directory/context.ts';
import { auditScopeDenied } from '../gate/access.ts';
import { AppError } from '../kernel/errors.ts';
import { json, type Router } from '../http/router.ts';
import { PageQuery, pageOf } from '../kernel/validate.ts';
import { ContextPatchBody, OrganizationBody, WorkspaceBody } from './schema.ts';
import * as o from '../kernel/view.ts';
import { ContextView, OrganizationView, WorkspaceView, presentContext, presentOrganization, presentWorkspace } from '../directory/present/tenancy.ts';
import { changeScope, createOrganization, createWorkspace, listOrganizations, listWorkspaces } from './service.ts';
import { OrganizationDetailView } from './present.ts';
import { organizationById } from '../directory/tenancy/store.ts';
import { orgRoleOf } from '../directory/tenancy/scope.ts';
import { seatUsage } from '../directory/plan/seats.ts';

export function bindTenancyRoutes(router: Router): void {
  const r = router.module(import.meta.url);
  const tags = ['tenancy'];
  r.get('/api/context', { summary: 'Current user, organization, workspace, project, permissions and memberships (in the Svc-Scope header\'s scope when one is sent).', tags: ['context'], response: { description: 'the context', schema: ContextView } },
    async ({ ctx }) => {
      // The body depends only on rows behind the read cache, so it is kept with them (emptied by any write).
      const { organizationId, workspaceId, projectId } = ctx.scope;
      const body = await ctx.db.cachedDerived(`context:${ctx.actor.userId}:${ctx.actor.isSystemAdmin}:${organizationId}:${workspaceId}:${projectId}`,
        async () => JSON.stringify(await presentContext(ctx, ctx.scope, ctx.permissions)));
      return { status: 200, raw: body, headers: { 'content-type': 'application/json; charset=utf-8' } };
    });

  r.patch('/api/context', {
    summary: 'Move the session\'s current scope; each id is checked (403 scope_forbidden, audited as access.denied). Missing lower levels are filled with the first visible one. '
      + 'To act in another scope for one request only, send the Svc-Scope header instead.',
    tags: ['context'], body: ContextPatchBody, response: { description: 'the context in the new scope', schema: ContextView },
  }, async ({ ctx, body }) => {
    let scope;
    try {
      scope = await changeScope(ctx, body);
    } catch (err) {
      // refused like a selector or an id in a path: audited as access.denied
      if (err instanceof AppError && err.code === 'scope_forbidden') await auditScopeDenied(ctx, '/api/context', { ...body, via: 'PATCH /api/context' }, err.code);
      throw err;
    }
    const moved = withScope(ctx, scope);
    return json(200, await presentContext(moved, scope, moved.permissions));
  });

  r.get('/api/organizations', { summary: 'Organizations the caller may see.', tags, query: PageQuery, response: { description: 'a page of organizations', schema: o.page(OrganizationView) } },
    async ({ ctx, searchParams }) => json(200, pageOf(searchParams, await listOrganizations(ctx), presentOrganization)));

  r.post('/api/organizations', { summary: 'Create an organization with its billing account and its first org_owner: ownerUserId, or the calling system administrator when it is omitted.', tags, systemAdmin: true, body: OrganizationBody, response: { status: 201, description: 'the organization (its owner is listed by GET /api/organizations/:organizationId/members)', schema: OrganizationView } },
    async ({ ctx, body }) => json(201, presentOrganization(await createOrganization(ctx, body))));

  r.get('/api/organizations/:organizationId', { summary: 'The organization, the caller\u2019s role in it and its seat use.', tags: ['tenancy'], scope: 'organization', response: { description: 'the organization with the caller\u2019s role and its seat use', schema: OrganizationDetailView } }, async ({ ctx, params }) => {
    const org = (await organizationById(ctx.db, params.organizationId))!;
    return json(200, { ...presentOrganization(org), role: orgRoleOf(ctx.memberships, org.id), seats: await seatUsage(ctx.db, org.id, ctx.now().toISOString()) });
  });

  r.get('/api/organizations/:organizationId/workspaces', { summary: 'Workspaces of the organization the caller may see.', tags, scope: 'organization', query: PageQuery, response: { description: 'a page of workspaces', schema: o.page(WorkspaceView) } },
    async ({ ctx, searchParams, params }) => json(200, pageOf(searchParams, await listWorkspaces(ctx, params.organizationId), presentWorkspace)));

  r.post('/api/organizations/:organizationId/workspaces', {
    summary: 'Create a workspace.', tags, scope: 'organization', orgRoles: ['org_owner', 'org_admin'], body: WorkspaceBody,
    response: { status: 201, description: 'the workspace', schema: WorkspaceView },
  }, async ({ ctx, body, params }) => json(201, presentWorkspace(await createWorkspace(ctx, params.organizationId, body))));
}
