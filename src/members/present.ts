// Members and invitations as the API shows them: never a token or its hash.
import type { OrganizationMember } from './service.ts';
import type { InvitationRow, MemberRow } from './store.ts';

const roleOf = (m: MemberRow) => ({
  level: m.level, role: m.role, accessMode: m.access_mode, status: m.status,
  workspaceId: m.workspace_id, projectId: m.project_id, since: m.created_at,
});

export const presentScopeMember = (m: MemberRow) => ({
  userId: m.user_id, email: m.email, name: m.name, userStatus: m.user_status, lastLoginAt: m.last_login_at, ...roleOf(m),
});

export const presentOrganizationMember = (e: OrganizationMember) => ({
  userId: e.user.user_id, email: e.user.email, name: e.user.name, userStatus: e.user.user_status, lastLoginAt: e.user.last_login_at,
  level: 'organization' as const,
  role: e.organization?.role ?? null,
  status: e.organization?.status ?? 'none',
  since: e.organization?.created_at ?? null,
  roles: e.below.map(roleOf),
});

export const presentInvitation = (i: InvitationRow) => ({
  id: i.id, organizationId: i.organization_id, workspaceId: i.workspace_id, projectId: i.project_id,
  email: i.email, role: i.role, status: i.status, tokenHint: i.token_hint, expiresAt: i.expires_at,
  invitedBy: i.invited_by, createdAt: i.created_at, acceptedAt: i.accepted_at, revokedAt: i.revoked_at,
});
