// Tasks as the API shows them.
import * as o from '../../kernel/view.ts';
import { TASK_PRIORITIES, TASK_STATUSES, TASK_TYPES } from './schema.ts';
import type { TaskEventRow, TaskRow } from './store.ts';

export const TaskView = o.named('Task', o.object({
  id: o.text(), organizationId: o.text(), workspaceId: o.text(), projectId: o.text(),
  title: o.text(), description: o.text(), type: o.oneOf(TASK_TYPES), priority: o.oneOf(TASK_PRIORITIES), status: o.oneOf(TASK_STATUSES),
  assigneeUserId: o.nullable(o.text()), dueAt: o.nullable(o.time()),
  linkedPage: o.nullable(o.text({ description: 'a console page the task is about (relative link)' })),
  createdBy: o.nullable(o.text()), createdAt: o.time(), updatedAt: o.time(), completedAt: o.nullable(o.time()),
}));

export const presentTask = (t: TaskRow): o.Out<typeof TaskView> => ({
  id: t.id, organizationId: t.organization_id, workspaceId: t.workspace_id, projectId: t.project_id,
  title: t.title, description: t.description, type: t.type as (typeof TASK_TYPES)[number], priority: t.priority as (typeof TASK_PRIORITIES)[number],
  status: t.status as (typeof TASK_STATUSES)[number],
  assigneeUserId: t.assignee_user_id, dueAt: t.due_at, linkedPage: t.linked_page,
  createdBy: t.created_by, createdAt: t.created_at, updatedAt: t.updated_at, completedAt: t.completed_at,
});

export const TaskEventView = o.named('TaskEvent', o.object({
  auditId: o.text(), at: o.time(), action: o.text({ description: 'the audit action, e.g. task.created, task.updated' }),
  actorUserId: o.nullable(o.text()), actorName: o.nullable(o.text()),
  details: o.record(o.anything(), 'the audit record\'s details (the changed fields)'),
}));

export const presentTaskEvent = (e: TaskEventRow): o.Out<typeof TaskEventView> => ({
  auditId: e.id, at: e.created_at, action: e.action, actorUserId: e.actor_user_id, actorName: e.actor_name, details: JSON.parse(e.metadata) as Record<string, unknown>,
});

export const TaskDetailView = o.named('TaskDetail', o.extend(TaskView, { history: o.array(TaskEventView, 'the task\'s audit trail, oldest first') }));
