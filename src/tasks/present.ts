// Tasks as the API shows them.
import type { TaskEventRow, TaskRow } from './store.ts';

export const presentTask = (t: TaskRow) => ({
  id: t.id, organizationId: t.organization_id, workspaceId: t.workspace_id, projectId: t.project_id,
  title: t.title, description: t.description, type: t.type, priority: t.priority, status: t.status,
  assigneeUserId: t.assignee_user_id, dueAt: t.due_at, linkedPage: t.linked_page,
  createdBy: t.created_by, createdAt: t.created_at, updatedAt: t.updated_at, completedAt: t.completed_at,
});

export const presentTaskEvent = (e: TaskEventRow) => ({
  auditId: e.id, at: e.created_at, action: e.action, actorUserId: e.actor_user_id, actorName: e.actor_name, details: JSON.parse(e.metadata),
});
