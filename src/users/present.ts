// User rows as the API shows them: never a password hash.
import type { FullMembershipRow, NamedMembership } from '../tenancy/store.ts';
import type { UserRow } from './store.ts';

export function presentUser(u: UserRow) {
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

export const presentNamedMembership = (m: NamedMembership) => ({
  level: m.level, role: m.role, accessMode: m.access_mode,
  organizationId: m.organization_id, organizationName: m.organization_name,
  workspaceId: m.workspace_id, workspaceName: m.workspace_name,
  projectId: m.project_id, projectName: m.project_name,
});

/** A user as the system administrator sees it (GET /api/system/users and the CLI). */
export interface GovernedUser { user: UserRow; activeSessions: number; memberships: readonly NamedMembership[] }

export function presentGovernedUser(g: GovernedUser) {
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

export const presentMembership = (m: NamedFullMembership) => ({
  id: m.id, userId: m.user_id, status: m.status, createdAt: m.created_at,
  ...presentNamedMembership(m),
});
