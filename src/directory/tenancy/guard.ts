// The archived-project guard: the one check every production write goes through. The HTTP layer
// calls it for every writing route that acts in a project scope; services that write to a project
// named by another object (a job, an asset) call it with that project.
import type { Db } from '../../db/db.ts';
import { conflict } from '../../kernel/errors.ts';
import { projectById } from './store.ts';

export async function assertProjectWritable(db: Db, projectId: string): Promise<void> {
  const p = await projectById(db, projectId);
  if (p?.status === 'archived') {
    throw conflict('project_archived', 'the project is archived and read-only; restore it to change it', { projectId, archivedAt: p.archived_at });
  }
}
