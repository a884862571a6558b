// Input of the system administrator's directory routes (/api/system/identity/directory-syncs).
// The SCIM protocol's own bodies are read by src/identity/scim/resource.ts and src/identity/scim/patch.ts.
import * as v from '../../kernel/validate.ts';

export const DIRECTORY_ROLES = ['org_member', 'org_admin', 'producer', 'writer', 'art_director', 'voice_editor', 'reviewer'] as const;
export type DirectoryRole = (typeof DIRECTORY_ROLES)[number];

const id = v.string({ min: 1, max: 64 });
const name = v.string({ min: 1, max: 200 });
const defaultRole = v.oneOf(DIRECTORY_ROLES, {
  description: 'org_member (default) or org_admin: the organization role of provisioned users; a workspace role (producer, writer, art_director, voice_editor, reviewer): org_member plus this role at defaultWorkspaceId',
});
const defaultWorkspaceId = v.nullable(v.string({ min: 1, max: 64, description: 'a workspace of the organization; needed by (and only with) a workspace defaultRole' }));

export const DirectoryCreateBody = v.object({
  name,
  organizationId: v.string({ min: 1, max: 64, description: 'the organization the directory provisions into (fixed)' }),
  defaultRole: v.optional(defaultRole),
  defaultWorkspaceId: v.optional(defaultWorkspaceId),
});

export const DirectoryPatchBody = v.object({
  name: v.optional(name),
  defaultRole: v.optional(defaultRole),
  defaultWorkspaceId: v.optional(defaultWorkspaceId),
  status: v.optional(v.oneOf(['active', 'disabled'] as const, { description: 'disabled: every SCIM request with its token is 403' })),
});

export const DirectoryListQuery = v.object({
  organizationId: v.optional(id),
  page: v.optional(v.int()),
  pageSize: v.optional(v.int()),
}, { allowUnknown: true });
