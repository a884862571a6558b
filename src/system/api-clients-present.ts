// API client row -> API shape: never the secret or its hash, only its hint.
import type { Permission } from '../tenancy/roles.ts';
import type { ApiClientRow } from './api-clients-store.ts';

export const TOKEN_PATH = '/api/oauth/token';

export const permissionsOfRow = (c: Pick<ApiClientRow, 'permissions'>): Permission[] => JSON.parse(c.permissions) as Permission[];

export function presentApiClient(c: ApiClientRow) {
  return {
    id: c.id,
    name: c.name,
    organizationId: c.organization_id,
    workspaceId: c.workspace_id,
    projectId: c.project_id,
    permissions: permissionsOfRow(c),
    status: c.status,
    secretHint: c.secret_hint,
    tokenUrl: TOKEN_PATH,
    createdBy: c.created_by,
    createdAt: c.created_at,
    rotatedAt: c.rotated_at,
    revokedAt: c.revoked_at,
    revokedBy: c.revoked_by,
    lastUsedAt: c.last_used_at,
  };
}
