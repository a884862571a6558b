// Collaboration tasks of the current project.
import { READ_ACCESS } from '../../directory/tenancy/reads.ts';
import { json, type Router } from '../../http/router.ts';
import { TaskCreateBody, TaskListQuery, TaskPatchBody } from './schema.ts';
import * as o from '../../kernel/view.ts';
import { TaskDetailView, TaskView, presentTask, presentTaskEvent } from './present.ts';
import { changeTask, createTask, getTask, listTasks } from './service.ts';
import { taskEvents } from './store.ts';

export function bindTaskRoutes(router: Router): void {
  const r = router.module(import.meta.url);
  const tags = ['tasks'];
  r.get('/api/tasks', {
    summary: 'Tasks of the current project; status (all or one status), assignedTo (me or a user id), limit (default 50, clamped 1..200).',
    tags, scope: 'project', permission: READ_ACCESS.task, query: TaskListQuery,
    response: { description: 'a page of tasks, open ones first, by due date', schema: o.page(TaskView) },
  }, async ({ ctx, query }) => {
    const { rows, pagination } = await listTasks(ctx, query);
    return json(200, { items: rows.map(presentTask), pagination });
  });

  r.post('/api/tasks', { summary: 'Create a task in the current project.', tags, scope: 'project', permission: 'task:manage', body: TaskCreateBody, response: { status: 201, description: 'the task', schema: TaskView } },
    async ({ ctx, body }) => json(201, presentTask(await createTask(ctx, body))));

  r.get('/api/tasks/:taskId', { summary: 'A task with its trail (every change, from the audit log).', tags, scope: 'project', permission: READ_ACCESS.task, response: { description: 'the task with its trail', schema: TaskDetailView } }, async ({ ctx, params }) => {
    const task = await getTask(ctx, params.taskId);
    return json(200, { ...presentTask(task), history: (await taskEvents(ctx.db, task.project_id, task.id)).map(presentTaskEvent) });
  });

  r.patch('/api/tasks/:taskId', {
    summary: 'Change a task (task:manage); task:complete holders may change only the status of tasks assigned to them.',
    tags, scope: 'project', permission: ['task:manage', 'task:complete'], body: TaskPatchBody, response: { description: 'the changed task', schema: TaskView },
  }, async ({ ctx, params, body }) => json(200, presentTask(await changeTask(ctx, params.taskId, body))));
}
