// SCIM shapes (RFC 7643 User, RFC 7644 ListResponse) and the administrator's directory record.
// Neither ever carries a token or its hash: a directory shows the token's hint alone.
import { CORE_USER_SCHEMA } from './filter.ts';
import { stateOf } from './resource.ts';
import type { DirectoryRow, ScimUserRow } from './store.ts';

export const LIST_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';

/** `{origin}/scim/v2.0/{directoryId}`: the base URL a directory's identity provider is given. */
export const scimBase = (origin: string, directoryId: string) => `${origin}/scim/v2.0/${encodeURIComponent(directoryId)}`;

export const userLocation = (base: string, userId: string) => `${base}/Users/${encodeURIComponent(userId)}`;

export function presentScimUser(row: ScimUserRow, base: string) {
  const s = stateOf(row);
  const name = {
    ...(s.givenName !== null ? { givenName: s.givenName } : {}),
    ...(s.familyName !== null ? { familyName: s.familyName } : {}),
    ...(s.formattedName !== null ? { formatted: s.formattedName } : {}),
  };
  return {
    schemas: [CORE_USER_SCHEMA],
    id: row.user_id,
    ...(s.externalId !== null ? { externalId: s.externalId } : {}),
    userName: s.userName,
    ...(Object.keys(name).length ? { name } : {}),
    ...(s.displayName !== null ? { displayName: s.displayName } : {}),
    emails: s.emails.map((e) => ({ value: e.value, ...(e.type ? { type: e.type } : {}), primary: e.primary })),
    active: s.active,
    meta: {
      resourceType: 'User',
      created: row.created_at,
      lastModified: row.updated_at,
      location: userLocation(base, row.user_id),
    },
  };
}

export function listResponse<T>(resources: T[], total: number, startIndex: number) {
  return { schemas: [LIST_SCHEMA], totalResults: total, startIndex, itemsPerPage: resources.length, Resources: resources };
}

export function presentDirectory(d: DirectoryRow, users: { total: number; active: number }, origin: string) {
  return {
    id: d.id,
    organizationId: d.organization_id,
    name: d.name,
    defaultRole: d.default_role,
    defaultWorkspaceId: d.default_workspace_id,
    status: d.status,
    scimBaseUrl: scimBase(origin, d.id),
    tokenHint: d.token_hint,
    tokenRotatedAt: d.token_rotated_at,
    users,
    createdBy: d.created_by,
    createdAt: d.created_at,
    updatedAt: d.updated_at,
  };
}
