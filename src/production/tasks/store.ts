// SQL of collaboration tasks; every statement names the project.
import type { Db } from '../../db/db.ts';
import { lockClause, type RowRead } from '../../db/dialect.ts';

export interface TaskRow {
  id: string; organization_id: string; workspace_id: string; project_id: string;
  title: string; description: string; type: string; priority: string; status: string;
  assignee_user_id: string | null; due_at: string | null; linked_page: string | null;
  created_by: string | null; created_at: string; updated_at: string; completed_at: string | null;
}

export async function insertTask(db: Db, t: TaskRow): Promise<void> {
  await db.run(
    `INSERT INTO tasks (id, organization_id, workspace_id, project_id, title, description, type, priority, status, assignee_user_id,
       due_at, linked_page, created_by, created_at, updated_at, completed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    t.id, t.organization_id, t.workspace_id, t.project_id, t.title, t.description, t.type, t.priority, t.status, t.assignee_user_id,
    t.due_at, t.linked_page, t.created_by, t.created_at, t.updated_at, t.completed_at,
  );
}

export async function updateTask(db: Db, t: TaskRow): Promise<void> {
  await db.run(
    `UPDATE tasks SET title = ?, description = ?, type = ?, priority = ?, status = ?, assignee_user_id = ?, due_at = ?, linked_page = ?,
       updated_at = ?, completed_at = ? WHERE id = ? AND project_id = ?`,
    t.title, t.description, t.type, t.priority, t.status, t.assignee_user_id, t.due_at, t.linked_page, t.updated_at, t.completed_at,
    t.id, t.project_id,
  );
}

export function taskInProject(db: Db, projectId: string, id: string, read?: RowRead): Promise<TaskRow | undefined> {
  return db.get<TaskRow>(`SELECT * FROM tasks WHERE project_id = ? AND id = ?${lockClause(db, read)}`, projectId, id);
}

export interface TaskFilter { status: string | null; assignee: string | null; limit: number; offset: number }

export async function tasksOfProject(db: Db, projectId: string, f: TaskFilter): Promise<{ rows: TaskRow[]; total: number }> {
  const where = 'project_id = ?1 AND (status = ?2 OR ?2 IS NULL) AND (assignee_user_id = ?3 OR ?3 IS NULL)';
  const total = (await db.get<{ n: number }>(`SELECT count(*) AS n FROM tasks WHERE ${where}`, projectId, f.status, f.assignee))!.n;
  const rows = await db.all<TaskRow>(
    `SELECT * FROM tasks WHERE ${where} ORDER BY CASE status WHEN 'done' THEN 1 WHEN 'cancelled' THEN 1 ELSE 0 END, due_at IS NULL, due_at, created_at, id
      LIMIT ?4 OFFSET ?5`, projectId, f.status, f.assignee, f.limit, f.offset);
  return { rows, total };
}

export interface TaskEventRow { id: string; created_at: string; action: string; actor_user_id: string | null; actor_name: string | null; metadata: string }

/** The task's trail: its audit records, oldest first. */
export function taskEvents(db: Db, projectId: string, taskId: string): Promise<TaskEventRow[]> {
  return db.all<TaskEventRow>(
    `SELECT id, created_at, action, actor_user_id, actor_name, metadata FROM audit_log
      WHERE project_id = ? AND target_type = 'task' AND target_id = ? ORDER BY seq`, projectId, taskId);
}
