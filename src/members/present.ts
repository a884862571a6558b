// Members and invitations as the API shows them: never a token or its hash.
import * as o from '../http/view.ts';
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

const NamedScope = o.object({ id: o.text(), name: o.text() });

/** What an invitation token grants (GET /api/invitations/preview; the console's invitation page shows it). */
export const InvitationPreviewView = o.named('InvitationPreview', o.object({
  email: o.text({ format: 'email', description: 'the invited address' }),
  role: o.text({ description: 'the role the invitation grants at its level' }),
  expiresAt: o.time(),
  organization: NamedScope,
  workspace: o.nullable(NamedScope),
  project: o.nullable(NamedScope),
  invitedBy: o.nullable(o.object({ name: o.text() }, 'who invited (null when that account is gone)')),
}));
