// SQL of the production hierarchy made with a project, and of project changes.
import type { Db } from '../../db/db.ts';
import type { ProjectRow } from '../../directory/tenancy/store.ts';

interface Tenant { organization_id: string; workspace_id: string; project_id: string }

export async function insertSeries(db: Db, r: Tenant & { id: string; title: string; created_at: string }): Promise<void> {
  await db.run('INSERT INTO series (id, organization_id, workspace_id, project_id, title, created_at) VALUES (?, ?, ?, ?, ?, ?)',
    r.id, r.organization_id, r.workspace_id, r.project_id, r.title, r.created_at);
}

export async function hierarchyCounts(db: Db, projectId: string): Promise<{ series: number; seasons: number; episodes: number; shots: number }> {
  return (await db.get(
    `SELECT (SELECT count(*) FROM series WHERE project_id = ?1) AS series, (SELECT count(*) FROM seasons WHERE project_id = ?1) AS seasons,
            (SELECT count(*) FROM episodes WHERE project_id = ?1) AS episodes, (SELECT count(*) FROM shots WHERE project_id = ?1) AS shots`,
    projectId))!;
}

export async function activeJobCount(db: Db, projectId: string): Promise<number> {
  return (await db.get<{ n: number }>(
    "SELECT count(*) AS n FROM generation_jobs WHERE project_id = ? AND status IN ('queued', 'running', 'blocked')", projectId))!.n;
}

export async function updateProjectFields(db: Db, p: Pick<ProjectRow, 'id' | 'name' | 'template_id' | 'updated_at'>): Promise<void> {
  await db.run('UPDATE projects SET name = ?, template_id = ?, updated_at = ? WHERE id = ?', p.name, p.template_id, p.updated_at, p.id);
}

export async function updateProjectStatus(db: Db, p: Pick<ProjectRow, 'id' | 'status' | 'updated_at' | 'archived_at' | 'archived_by' | 'archived_from_status'>): Promise<void> {
  await db.run('UPDATE projects SET status = ?, updated_at = ?, archived_at = ?, archived_by = ?, archived_from_status = ? WHERE id = ?',
    p.status, p.updated_at, p.archived_at, p.archived_by, p.archived_from_status, p.id);
}
