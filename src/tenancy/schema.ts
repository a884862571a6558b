// Input of the tenancy routes.
import * as v from '../kernel/validate.ts';

const name = v.string({ min: 1, max: 200 });
const id = v.string({ min: 1, max: 64 });

export const OrganizationBody = v.object({
  name,
  ownerUserId: v.optional(v.string({
    min: 1, max: 64,
    description: 'id of the user who becomes org_owner; omitted, the calling system administrator becomes org_owner (the organization never starts without an owner)',
  })),
});
export const WorkspaceBody = v.object({ name });
export const ContextPatchBody = v.object({
  organizationId: v.optional(id),
  workspaceId: v.optional(id),
  projectId: v.optional(id),
});
