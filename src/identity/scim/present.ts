// SCIM shapes (RFC 7643 User, RFC 7644 ListResponse) and the administrator's directory record, each
// with its view (src/kernel/view.ts). Neither ever carries a token or its hash: a directory shows the
// token's hint alone.
import * as o from '../../kernel/view.ts';
import { CORE_USER_SCHEMA } from './filter.ts';
import { DIRECTORY_ROLES } from './schema.ts';
import { stateOf } from './resource.ts';
import type { DirectoryRow, ScimUserRow } from './store.ts';

export const LIST_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';

/** `{origin}/scim/v2.0/{directoryId}`: the base URL a directory's identity provider is given. */
export const scimBase = (origin: string, directoryId: string) => `${origin}/scim/v2.0/${encodeURIComponent(directoryId)}`;

export const userLocation = (base: string, userId: string) => `${base}/Users/${encodeURIComponent(userId)}`;

const opt = o.optional;

/**
 * A SCIM User. Only `schemas` and `id` are always there: an attribute without a value is left out,
 * and `attributes` / `excludedAttributes` (src/identity/scim/attributes.ts) leave out what the client asks.
 */
export const ScimUserView = o.named('ScimUser', o.object({
  schemas: o.array(o.text(), `[${CORE_USER_SCHEMA}]`),
  id: o.text({ description: 'the account\u2019s id (usr_...)' }),
  externalId: opt(o.text({ description: 'the identity provider\u2019s id of the user' })),
  userName: opt(o.text({ description: 'unique in the directory, regardless of case' })),
  name: opt(o.object({ givenName: opt(o.text()), familyName: opt(o.text()), formatted: opt(o.text()) })),
  displayName: opt(o.text()),
  emails: opt(o.array(o.object({ value: opt(o.text()), type: opt(o.text()), primary: opt(o.bool()) }))),
  active: opt(o.bool('false: the user\u2019s memberships in the organization are inactive')),
  meta: opt(o.object({
    resourceType: opt(o.constant('User')), created: opt(o.time()), lastModified: opt(o.time()), location: opt(o.text({ format: 'uri' })),
  })),
}, 'A SCIM 2.0 User (RFC 7643 section 4.1), application/scim+json'));

export type ScimUser = o.Out<typeof ScimUserView>;

/** A ListResponse of `item` (RFC 7644 section 3.4.2). */
export const listView = <T>(item: o.View<T>, description: string) => o.object({
  schemas: o.array(o.text(), `[${LIST_SCHEMA}]`),
  totalResults: o.int('how many match in all'),
  startIndex: o.int('the index of the first resource, from 1'),
  itemsPerPage: o.int('how many are in Resources'),
  Resources: o.array(item),
}, description);

export function presentScimUser(row: ScimUserRow, base: string): ScimUser {
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
      resourceType: 'User' as const,
      created: row.created_at,
      lastModified: row.updated_at,
      location: userLocation(base, row.user_id),
    },
  };
}

export function listResponse<T>(resources: T[], total: number, startIndex: number) {
  return { schemas: [LIST_SCHEMA], totalResults: total, startIndex, itemsPerPage: resources.length, Resources: resources };
}

export const DirectoryView = o.named('ScimDirectory', o.object({
  id: o.text(), organizationId: o.text({ description: 'the organization it provisions into (fixed)' }), name: o.text(),
  defaultRole: o.oneOf(DIRECTORY_ROLES), defaultWorkspaceId: o.nullable(o.text()),
  status: o.oneOf(['active', 'disabled'] as const, 'disabled: every SCIM request with its token is 403'),
  scimBaseUrl: o.text({ format: 'uri', description: 'the base URL the identity provider is given: {origin}/scim/v2.0/{directoryId}' }),
  tokenHint: o.text({ description: 'the last characters of the bearer token (never the token)' }),
  tokenRotatedAt: o.nullable(o.time()),
  users: o.object({ total: o.int(), active: o.int() }),
  createdBy: o.nullable(o.text()), createdAt: o.time(), updatedAt: o.time(),
}));

/** Create and rotate-token: the directory and its bearer token, answered this once. */
export const DirectoryWithTokenView = o.object({
  directory: DirectoryView,
  token: o.text({ description: 'the bearer token (scim_...), answered only here; the service keeps its SHA-256' }),
});

export function presentDirectory(d: DirectoryRow, users: { total: number; active: number }, origin: string): o.Out<typeof DirectoryView> {
  return {
    id: d.id,
    organizationId: d.organization_id,
    name: d.name,
    defaultRole: d.default_role as o.Out<typeof DirectoryView>['defaultRole'],
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
