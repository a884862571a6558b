// Projects as the API shows them.
import * as o from '../../kernel/view.ts';
import type { ProjectRow } from '../../directory/tenancy/store.ts';
import { LIFECYCLE_ACTIONS, PROJECT_STATUSES, allowedActions, type ProjectStatus } from './lifecycle.ts';

export const ProjectView = o.named('Project', o.object({
  id: o.text(), organizationId: o.text(), workspaceId: o.text(), name: o.text(), status: o.oneOf(PROJECT_STATUSES),
  templateId: o.nullable(o.text({ description: 'the workflow template new generation work uses by default' })),
  createdAt: o.time(), updatedAt: o.time(),
  archivedAt: o.nullable(o.time()), archivedBy: o.nullable(o.text()), archivedFromStatus: o.nullable(o.oneOf(PROJECT_STATUSES)),
  allowedActions: o.array(o.oneOf(LIFECYCLE_ACTIONS), 'the lifecycle actions allowed from this status'),
}));

export const presentProject = (p: ProjectRow): o.Out<typeof ProjectView> => ({
  id: p.id, organizationId: p.organization_id, workspaceId: p.workspace_id, name: p.name, status: p.status as ProjectStatus,
  templateId: p.template_id, createdAt: p.created_at, updatedAt: p.updated_at,
  archivedAt: p.archived_at, archivedBy: p.archived_by, archivedFromStatus: p.archived_from_status as ProjectStatus | null,
  allowedActions: allowedActions(p.status as ProjectStatus),
});
