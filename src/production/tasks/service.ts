// Collaboration tasks of the current project. task:manage holders create and change anything;
// task:complete holders change only the status of tasks assigned to them. Assignment notifies the
// assignee (collaboration_tasks category, subject to their preference). Every change is audited
// against the task, which is its trail.
import type { Ctx } from '../../directory/context.ts';
import { forbidden, notFound, validationFailed } from '../../kernel/errors.ts';
import type { Infer } from '../../kernel/validate.ts';
import { newId } from '../../kernel/ids.ts';
import { record } from '../../platform/audit/service.ts';
import { indexDocument } from '../../platform/search/index.ts';
import { notify } from '../../platform/notifications/service.ts';
import { hasPermission } from '../../directory/roles.ts';
import { canSeeProject } from '../../directory/tenancy/scope.ts';
import { membershipsOfUser, projectById } from '../../directory/tenancy/store.ts';
import { userById } from '../../directory/users/store.ts';
import type { TaskCreateBody, TaskPatchBody } from './schema.ts';
import { insertTask, taskInProject, tasksOfProject, updateTask, type TaskRow } from './store.ts';
import { pageWindow } from '../../kernel/validate.ts';
import { consoleLinks } from '../../kernel/links.ts';

type Create = Infer<typeof TaskCreateBody>;
type Patch = Infer<typeof TaskPatchBody>;

function normalizeDue(dueAt: string | null | undefined): string | null | undefined {
  if (dueAt === undefined || dueAt === null) return dueAt;
  const t = Date.parse(dueAt);
  if (Number.isNaN(t)) throw validationFailed({ dueAt: 'must be an ISO 8601 date or date-time' });
  return new Date(t).toISOString();
}

/** The assignee must be an active account that can see the project. */
async function checkAssignee(ctx: Ctx, userId: string | null | undefined): Promise<void> {
  if (!userId) return;
  const user = await userById(ctx.db, userId);
  const p = (await projectById(ctx.db, ctx.scope.projectId!))!;
  if (!user || user.status !== 'active' || !canSeeProject({ ...ctx.actor, isSystemAdmin: user.is_system_admin === 1 }, await membershipsOfUser(ctx.db, userId), p)) {
    throw validationFailed({ assigneeUserId: 'names no active member who can see this project' });
  }
}

async function indexTask(ctx: Ctx, t: TaskRow): Promise<void> {
  await indexDocument(ctx.db, {
    type: 'task', id: t.id, organizationId: t.organization_id, workspaceId: t.workspace_id, projectId: t.project_id,
    title: t.title, subtitle: `${t.type} · ${t.priority}`, body: t.description, status: t.status, updatedAt: t.updated_at,
  });
}

async function notifyAssignee(ctx: Ctx, task: TaskRow): Promise<void> {
  if (!task.assignee_user_id || task.assignee_user_id === ctx.actor.userId) return;
  await notify(ctx, {
    category: 'collaboration_tasks', type: 'task.assigned',
    organizationId: task.organization_id, workspaceId: task.workspace_id, projectId: task.project_id,
    subject: `Task assigned to you: ${task.title}`, body: task.description.slice(0, 500) || undefined,
    link: consoleLinks.task({ id: task.id, projectId: task.project_id }), recipients: [task.assignee_user_id],
  });
}

export async function createTask(ctx: Ctx, input: Create): Promise<TaskRow> {
  await checkAssignee(ctx, input.assigneeUserId);
  const p = (await projectById(ctx.db, ctx.scope.projectId!))!;
  const now = ctx.now().toISOString();
  const status = input.status ?? 'todo';
  const task: TaskRow = {
    id: newId('tsk'), organization_id: p.organization_id, workspace_id: p.workspace_id, project_id: p.id,
    title: input.title, description: input.description ?? '', type: input.type ?? 'general', priority: input.priority ?? 'normal',
    status, assignee_user_id: input.assigneeUserId ?? null, due_at: normalizeDue(input.dueAt) ?? null, linked_page: input.linkedPage ?? null,
    created_by: ctx.actor.userId, created_at: now, updated_at: now, completed_at: status === 'done' ? now : null,
  };
  return await ctx.db.tx(async () => {
    await insertTask(ctx.db, task);
    await indexTask(ctx, task);
    await record(ctx, { action: 'task.created', targetType: 'task', targetId: task.id, metadata: { title: task.title, status, assigneeUserId: task.assignee_user_id } });
    await notifyAssignee(ctx, task);
    return task;
  });
}

const FIELD_COLUMNS = {
  title: 'title', description: 'description', type: 'type', priority: 'priority', status: 'status',
  assigneeUserId: 'assignee_user_id', dueAt: 'due_at', linkedPage: 'linked_page',
} as const satisfies Record<keyof Patch, keyof TaskRow>;

export async function changeTask(ctx: Ctx, taskId: string, patch: Patch): Promise<TaskRow> {
  const given = (Object.keys(patch) as Array<keyof Patch>).filter((k) => patch[k] !== undefined);
  if (given.length === 0) throw validationFailed({ body: 'name at least one field to change' });
  return await ctx.db.tx(async () => {
    const task = await taskInProject(ctx.db, ctx.scope.projectId!, taskId, { forUpdate: true });
    if (!task) throw notFound('no such task in this project');
    if (!hasPermission(ctx.permissions, 'task:manage')) {
      if (task.assignee_user_id !== ctx.actor.userId || given.some((k) => k !== 'status')) {
        throw forbidden('permission_denied', 'with task:complete you may change only the status of tasks assigned to you');
      }
    }
    if (patch.assigneeUserId !== undefined) await checkAssignee(ctx, patch.assigneeUserId);
    const now = ctx.now().toISOString();
    const next: TaskRow = { ...task, updated_at: now };
    const changes: Record<string, { from: unknown; to: unknown }> = {};
    for (const k of given) {
      const column = FIELD_COLUMNS[k];
      const value = k === 'dueAt' ? normalizeDue(patch.dueAt) : patch[k];
      if (next[column] === value) continue;
      changes[k] = { from: task[column], to: value };
      (next as unknown as Record<string, unknown>)[column] = value;
    }
    if (changes.status) next.completed_at = next.status === 'done' ? now : null;
    if (Object.keys(changes).length === 0) return task;
    await updateTask(ctx.db, next);
    await indexTask(ctx, next);
    await record(ctx, {
      action: changes.status ? 'task.status_changed' : 'task.updated', targetType: 'task', targetId: task.id,
      metadata: { changes: changes.description ? { ...changes, description: { from: '(text)', to: '(text)' } } : changes },
    });
    if (changes.assigneeUserId) await notifyAssignee(ctx, next);
    return next;
  });
}

export async function getTask(ctx: Ctx, taskId: string): Promise<TaskRow> {
  const task = await taskInProject(ctx.db, ctx.scope.projectId!, taskId);
  if (!task) throw notFound('no such task in this project');
  return task;
}

export async function listTasks(ctx: Ctx, q: { status?: string; assignedTo?: string; limit?: number; page?: number }) {
  const { page, pageSize, offset } = pageWindow(q.page, q.limit);
  const assignee = q.assignedTo === undefined ? null : q.assignedTo === 'me' ? ctx.actor.userId : q.assignedTo;
  const { rows, total } = await tasksOfProject(ctx.db, ctx.scope.projectId!, {
    status: !q.status || q.status === 'all' ? null : q.status, assignee, limit: pageSize, offset,
  });
  return { rows, pagination: { page, pageSize, total } };
}
