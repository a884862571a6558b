// Input of account creation (CLI `svc users create`) and of the system administrator's governance routes.
import * as v from '../../kernel/validate.ts';
import { ORG_ROLES, PROJECT_ROLES, WORKSPACE_ROLES } from '../../directory/roles.ts';

const email = v.string({ min: 3, max: 320, format: 'email' });
const name = v.string({ min: 1, max: 200 });

export const NewUserBody = v.object({
  email,
  name,
  password: v.optional(v.string({ min: 1, max: 1024, trim: false })),
  isSystemAdmin: v.optional(v.boolean()),
});

/** POST /api/system/users: the password is always a generated one-time password. */
export const AdminNewUserBody = v.object({
  email,
  name,
  isSystemAdmin: v.optional(v.boolean({ description: 'grant the system administrator identity' })),
});

export const USER_STATUSES = ['active', 'suspended'] as const;

export const UserListQuery = v.object({
  query: v.optional(v.string({ max: 200, description: 'case-insensitive substring of the e-mail address or the name' })),
  status: v.optional(v.oneOf(USER_STATUSES)),
  limit: v.optional(v.int({ description: 'users per page, default 50, clamped to 1..200' })),
  page: v.optional(v.int({ description: 'page number from 1 (pages of `limit` users)' })),
}, { allowUnknown: true });

export const UserPatchBody = v.object({
  status: v.optional(v.oneOf(USER_STATUSES, { description: 'suspended revokes every session of the user at once' })),
  isSystemAdmin: v.optional(v.boolean({ description: 'grant or remove the system administrator identity; removal revokes the sessions' })),
});

export const MembershipGrantBody = v.object({
  level: v.oneOf(['organization', 'workspace', 'project'] as const),
  scopeId: v.string({ min: 1, max: 64, description: 'id of the organization, workspace or project named by level' }),
  role: v.oneOf([...ORG_ROLES, ...WORKSPACE_ROLES, ...PROJECT_ROLES] as const, { description: 'a role of that level' }),
});
