// Projects as the API shows them.
import type { ProjectRow } from '../tenancy/store.ts';
import { allowedActions, type ProjectStatus } from './lifecycle.ts';

export const presentProject = (p: ProjectRow) => ({
  id: p.id, organizationId: p.organization_id, workspaceId: p.workspace_id, name: p.name, status: p.status,
  templateId: p.template_id, createdAt: p.created_at, updatedAt: p.updated_at,
  archivedAt: p.archived_at, archivedBy: p.archived_by, archivedFromStatus: p.archived_from_status,
  allowedActions: allowedActions(p.status as ProjectStatus),
});
