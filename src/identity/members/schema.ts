// Input of member and invitation routes.
import * as v from '../../kernel/validate.ts';
import { ORG_ROLES, PROJECT_ROLES, WORKSPACE_ROLES } from '../../directory/roles.ts';

const id = v.string({ min: 1, max: 64 });
export const RoleBody = v.object({ role: v.oneOf([...ORG_ROLES, ...WORKSPACE_ROLES, ...PROJECT_ROLES]) });
export const InvitationBody = v.object({
  email: v.string({ min: 3, max: 320, format: 'email' }),
  role: v.string({ min: 1, max: 40, description: 'org_member or org_admin; a workspace role with workspaceId; project_editor or project_viewer with workspaceId and projectId' }),
  workspaceId: v.optional(id),
  projectId: v.optional(id),
});
export const InvitationListQuery = v.object({
  status: v.optional(v.oneOf(['pending', 'accepted', 'revoked', 'expired'] as const)),
  page: v.optional(v.int()),
  pageSize: v.optional(v.int()),
}, { allowUnknown: true });
export const TokenQuery = v.object({ token: v.string({ min: 1, max: 200 }) }, { allowUnknown: true });
export const TokenBody = v.object({ token: v.string({ min: 1, max: 200 }) });
export const RegisterBody = v.object({
  token: v.string({ min: 1, max: 200 }),
  email: v.string({ min: 3, max: 320, format: 'email' }),
  name: v.string({ min: 1, max: 200 }),
  password: v.string({ min: 1, max: 1024, trim: false }),
});
