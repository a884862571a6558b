// Projects: list and create in a workspace, read, change, lifecycle.
import { json, type Router } from '../../http/router.ts';
import { PageQuery, pageOf } from '../../kernel/validate.ts';
import { listProjects } from '../../tenancy/service.ts';
import { projectById } from '../../directory/tenancy/store.ts';
import { LifecycleBody, ProjectBody, ProjectPatchBody } from './schema.ts';
import * as o from '../../kernel/view.ts';
import { ProjectView, presentProject } from '../../directory/present/tenancy.ts';
import { changeLifecycle, createProject, updateProject } from './service.ts';

export function bindProjectRoutes(router: Router): void {
  const r = router.module(import.meta.url);
  const tags = ['projects'];
  r.get('/api/workspaces/:workspaceId/projects', { summary: 'Projects of the workspace the caller may see.', tags, scope: 'workspace', query: PageQuery, response: { description: 'a page of projects', schema: o.page(ProjectView) } },
    async ({ ctx, searchParams, params }) => json(200, pageOf(searchParams, await listProjects(ctx, params.workspaceId), presentProject)));

  r.post('/api/workspaces/:workspaceId/projects', {
    summary: 'Create a project (status draft) with one series, a first season, a pilot episode and a starter shot.',
    tags, scope: 'workspace', permission: 'project:create', body: ProjectBody, response: { status: 201, description: 'the project', schema: ProjectView },
  }, async ({ ctx, body, params }) => json(201, presentProject(await createProject(ctx, params.workspaceId, body))));

  r.get('/api/projects/:projectId', { summary: 'The project.', tags, scope: 'project', response: { description: 'the project', schema: ProjectView } },
    async ({ ctx, params }) => json(200, presentProject((await projectById(ctx.db, params.projectId))!)));

  r.patch('/api/projects/:projectId', {
    summary: "Change the project's name or template (project:create, or the project role project_editor in this project).",
    tags, scope: 'project', permission: 'project:create', projectRoles: ['project_editor'], body: ProjectPatchBody,
    response: { description: 'the changed project', schema: ProjectView },
  }, async ({ ctx, body, params }) => json(200, presentProject(await updateProject(ctx, params.projectId, body))));

  r.post('/api/projects/:projectId/lifecycle', {
    summary: 'Apply one lifecycle action: pause, resume, activate, submit-review, archive, restore (the state machine: docs/tenancy.md#project-lifecycle); project:create, or the project role project_editor in this project.',
    tags, scope: 'project', permission: 'project:create', projectRoles: ['project_editor'], archivedOk: true, body: LifecycleBody,
    response: { description: 'the project in its new status', schema: ProjectView },
  }, async ({ ctx, body, params }) => json(200, presentProject(await changeLifecycle(ctx, params.projectId, body.action))));
}
