// The actor of an API client's requests, from its record: what the gate authenticates a client token
// as, and what the client's own audit records name.
import type { Actor } from '../context.ts';
import type { Permission } from '../roles.ts';
import type { ApiClientRow } from './store.ts';

export const permissionsOfRow = (c: Pick<ApiClientRow, 'permissions'>): Permission[] => JSON.parse(c.permissions) as Permission[];

/** The actor of a client's requests: no user, no system administration, exactly its permissions inside its binding. */
export function apiClientActor(c: ApiClientRow): Actor {
  return {
    type: 'api_client', userId: null, name: `${c.name} (${c.id})`, email: null, isSystemAdmin: false, sessionId: null, sessionKind: null,
    apiClient: {
      id: c.id, organizationId: c.organization_id, workspaceId: c.workspace_id, projectId: c.project_id,
      permissions: Object.freeze(permissionsOfRow(c)),
    },
  };
}
