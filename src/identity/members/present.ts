// Members and invitations as the API shows them: never a token or its hash.
import * as o from '../../kernel/view.ts';
import type { OrgRole, Role } from '../../directory/roles.ts';
import { ORG_ROLES } from '../../directory/roles.ts';
import { ACCESS_MODES, LEVELS, ROLES, USER_STATUSES, UserView } from '../../directory/present/users.ts';
import { SessionTokenView, MfaEnrollmentChallengeView } from '../sessions/present.ts';
import type { OrganizationMember } from './service.ts';
import type { InvitationRow, MemberRow } from './store.ts';

type AccessMode = (typeof ACCESS_MODES)[number];
type UserStatus = (typeof USER_STATUSES)[number];
export const MEMBERSHIP_STATUSES = ['active', 'inactive'] as const;
type MembershipStatus = (typeof MEMBERSHIP_STATUSES)[number];
export const INVITATION_STATUSES = ['pending', 'accepted', 'revoked', 'expired'] as const;

const lastLoginAt = o.nullable(o.time('null when never, or when the caller may not see others\' activity (administrators only)'));

const roleFields = {
  level: o.oneOf(LEVELS), role: o.oneOf(ROLES), accessMode: o.oneOf(ACCESS_MODES), status: o.oneOf(MEMBERSHIP_STATUSES),
  workspaceId: o.nullable(o.text()), projectId: o.nullable(o.text()), since: o.time('when the role was given'),
};

export const MemberRoleView = o.named('MemberRole', o.object(roleFields, 'a role of a member below the organization'));

const roleOf = (m: MemberRow): o.Out<typeof MemberRoleView> => ({
  level: m.level, role: m.role as Role, accessMode: m.access_mode as AccessMode, status: m.status as MembershipStatus,
  workspaceId: m.workspace_id, projectId: m.project_id, since: m.created_at,
});

const personFields = { userId: o.text(), email: o.text(), name: o.text(), userStatus: o.oneOf(USER_STATUSES), lastLoginAt };

export const ScopeMemberView = o.named('ScopeMember', o.object({ ...personFields, ...roleFields }, 'a member with its role at one organization, workspace or project'));

export const presentScopeMember = (m: MemberRow): o.Out<typeof ScopeMemberView> => ({
  userId: m.user_id, email: m.email, name: m.name, userStatus: m.user_status as UserStatus, lastLoginAt: m.last_login_at, ...roleOf(m),
});

export const OrganizationMemberView = o.named('OrganizationMember', o.object({
  ...personFields,
  level: o.constant('organization'),
  role: o.nullable(o.oneOf(ORG_ROLES, 'the organization role (null: roles below the organization only)')),
  status: o.oneOf([...MEMBERSHIP_STATUSES, 'none'], 'of the organization membership; none: no organization membership'),
  since: o.nullable(o.time('when the organization role was given')),
  roles: o.array(MemberRoleView, 'the roles below the organization'),
}));

export const presentOrganizationMember = (e: OrganizationMember): o.Out<typeof OrganizationMemberView> => ({
  userId: e.user.user_id, email: e.user.email, name: e.user.name, userStatus: e.user.user_status as UserStatus, lastLoginAt: e.user.last_login_at,
  level: 'organization' as const,
  role: (e.organization?.role ?? null) as OrgRole | null,
  status: (e.organization?.status ?? 'none') as MembershipStatus | 'none',
  since: e.organization?.created_at ?? null,
  roles: e.below.map(roleOf),
});

export const InvitationView = o.named('Invitation', o.object({
  id: o.text(), organizationId: o.text(), workspaceId: o.nullable(o.text()), projectId: o.nullable(o.text()),
  email: o.text(), role: o.oneOf(ROLES), status: o.oneOf(INVITATION_STATUSES),
  tokenHint: o.nullable(o.text({ description: 'a few characters of the token, to tell invitations apart (never the token)' })),
  expiresAt: o.time(), invitedBy: o.nullable(o.text()), createdAt: o.time(), acceptedAt: o.nullable(o.time()), revokedAt: o.nullable(o.time()),
}));

export const presentInvitation = (i: InvitationRow): o.Out<typeof InvitationView> => ({
  id: i.id, organizationId: i.organization_id, workspaceId: i.workspace_id, projectId: i.project_id,
  email: i.email, role: i.role as Role, status: i.status, tokenHint: i.token_hint, expiresAt: i.expires_at,
  invitedBy: i.invited_by, createdAt: i.created_at, acceptedAt: i.accepted_at, revokedAt: i.revoked_at,
});

/** A new or re-sent invitation: the token and link in this answer only. */
export const IssuedInvitationView = o.named('IssuedInvitation', o.object({
  invitation: InvitationView,
  inviteToken: o.text({ description: 'the invitation token; in this answer only' }),
  acceptUrl: o.text({ format: 'uri', description: 'the console page that accepts the invitation (to send to the invitee)' }),
}));

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

/** POST /api/auth/register: the session with the new user, or (identity policy requires MFA) an enrollment challenge with the user. */
export const RegisteredView = o.anyOf([
  o.named('Registered', o.extend(SessionTokenView, { user: UserView })),
  o.named('RegisteredMfaEnrollment', o.extend(MfaEnrollmentChallengeView, { user: UserView })),
]);
