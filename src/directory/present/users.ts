// User rows as the API shows them: never a password hash.
import * as o from '../../kernel/view.ts';
import { ORG_ROLES, PROJECT_ROLES, WORKSPACE_ROLES, type Level, type Role } from '../roles.ts';
import type { FullMembershipRow, NamedMembership } from '../tenancy/store.ts';
import type { UserRow } from '../users/store.ts';

export const LEVELS = ['organization', 'workspace', 'project'] as const satisfies readonly Level[];
export const ROLES = [...ORG_ROLES, ...WORKSPACE_ROLES, ...PROJECT_ROLES] as const satisfies readonly Role[];
export const ACCESS_MODES = ['full', 'project-only'] as const;
export const USER_STATUSES = ['active', 'suspended'] as const;

export const UserView = o.named('User', o.object({
  id: o.text(), email: o.text(), name: o.text(), status: o.oneOf(USER_STATUSES, 'suspended accounts cannot sign in'),
  isSystemAdmin: o.bool(),
  passwordChangeRequired: o.bool('the password must be changed at the next sign-in (an initial or reset password)'),
  lastLoginAt: o.nullable(o.time()), createdAt: o.time(),
}));

export function presentUser(u: UserRow): o.Out<typeof UserView> {
  return {
    id: u.id,
    email: u.email,
    name: u.name,
    status: u.status,
    isSystemAdmin: u.is_system_admin === 1,
    passwordChangeRequired: u.password_must_change === 1,
    lastLoginAt: u.last_login_at,
    createdAt: u.created_at,
  };
}

export const NamedMembershipView = o.named('NamedMembership', o.object({
  level: o.oneOf(LEVELS), role: o.oneOf(ROLES),
  accessMode: o.oneOf(ACCESS_MODES, 'project-only: a guest that sees only the projects it holds a role in'),
  organizationId: o.text(), organizationName: o.text(),
  workspaceId: o.nullable(o.text()), workspaceName: o.nullable(o.text()),
  projectId: o.nullable(o.text()), projectName: o.nullable(o.text()),
}, 'a role at an organization, workspace or project, with the names of its scopes'));

export const presentNamedMembership = (m: NamedMembership): o.Out<typeof NamedMembershipView> => ({
  level: m.level, role: m.role, accessMode: m.access_mode as (typeof ACCESS_MODES)[number],
  organizationId: m.organization_id, organizationName: m.organization_name,
  workspaceId: m.workspace_id, workspaceName: m.workspace_name,
  projectId: m.project_id, projectName: m.project_name,
});

/** A user as the system administrator sees it (GET /api/system/users and the CLI). */
export interface GovernedUser { user: UserRow; activeSessions: number; memberships: readonly NamedMembership[] }

export const GovernedUserView = o.named('GovernedUser', o.extend(UserView, {
  mfaEnabled: o.bool(),
  activeSessions: o.int('live sessions of the account'),
  memberships: o.array(NamedMembershipView),
}, 'a user as the system administrator sees it'));

export function presentGovernedUser(g: GovernedUser): o.Out<typeof GovernedUserView> {
  return {
    ...presentUser(g.user),
    mfaEnabled: g.user.mfa_enabled === 1,
    activeSessions: g.activeSessions,
    memberships: g.memberships.map(presentNamedMembership),
  };
}

/** A membership with the names of its organization, workspace and project. */
export interface NamedFullMembership extends FullMembershipRow {
  organization_name: string; workspace_name: string | null; project_name: string | null;
}

export const MembershipView = o.named('Membership', o.extend(NamedMembershipView, {
  id: o.text(), userId: o.text(), status: o.oneOf(['active', 'inactive']), createdAt: o.time(),
}));

export const presentMembership = (m: NamedFullMembership): o.Out<typeof MembershipView> => ({
  id: m.id, userId: m.user_id, status: m.status, createdAt: m.created_at,
  ...presentNamedMembership(m),
});
