// Members at three levels, invitations, and accepting them (POST /api/auth/register among them).
import type { IncomingMessage } from 'node:http';
import type { Config } from '../../kernel/config.ts';
import { defineRoute as def, json, type Router, type RouteMeta } from '../../http/router.ts';
import { frontendBase } from '../../http/request.ts';
import { pageOf } from '../../kernel/validate.ts';
import { organizationById, projectById, workspaceById } from '../../directory/tenancy/store.ts';
import { tokenAnswer } from '../sessions/routes.ts';
import { addressLimited } from '../sessions/service.ts';
import { fromBrowser, sessionCookie } from '../sessions/cookies.ts';
import { presentUser } from '../../directory/present/users.ts';
import { userById } from '../../directory/users/store.ts';
import { memberScope, organizationMembers, removeMember, scopeMembers, setMemberRole } from './service.ts';
import {
  acceptInvitation, createInvitation, invitationForToken, registerWithInvitation, resendInvitation, revokeInvitation, type IssuedInvitation,
} from './invitations.ts';
import { invitationsOf } from './store.ts';
import { InvitationBody, InvitationListQuery, RegisterBody, RoleBody, TokenBody, TokenQuery } from './schema.ts';
import * as o from '../../kernel/view.ts';
import {
  InvitationPreviewView, InvitationView, IssuedInvitationView, OrganizationMemberView, RegisteredView, ScopeMemberView,
  presentInvitation, presentOrganizationMember, presentScopeMember,
} from './present.ts';
import { invitationPath } from '../../kernel/links.ts';

const ADMINS: RouteMeta['orgRoles'] = ['org_owner', 'org_admin'];

function issued(req: IncomingMessage, config: Config, i: IssuedInvitation): o.Out<typeof IssuedInvitationView> {
  const acceptUrl = `${frontendBase(req, config)}${invitationPath(i.inviteToken)}`;
  return { invitation: presentInvitation(i.invitation), inviteToken: i.inviteToken, acceptUrl };
}

export function bindMemberRoutes(router: Router): void {
  const r = router.module(import.meta.url);
  const tags = ['members'];
  r.get('/api/organizations/:organizationId/members', { summary: 'Members with their organization role, status, last login and roles below. A project-only guest sees the members of its own projects only (and only those projects\u2019 roles); others\u2019 lastLoginAt is null unless the caller is an owner, admin or system administrator.', tags, scope: 'organization', response: { description: 'a page of members', schema: o.page(OrganizationMemberView) } },
    async ({ ctx, params, searchParams }) => json(200, pageOf(searchParams, await organizationMembers(ctx, params.organizationId), presentOrganizationMember)));
  r.get('/api/workspaces/:workspaceId/members', { summary: 'Members of the workspace (a project-only guest: those who hold a role in one of its projects; others\u2019 lastLoginAt for administrators only).', tags, scope: 'workspace', response: { description: 'a page of members', schema: o.page(ScopeMemberView) } },
    async ({ ctx, params, searchParams }) => json(200, pageOf(searchParams, await scopeMembers(ctx, 'workspace', params.workspaceId), presentScopeMember)));
  r.get('/api/projects/:projectId/members', { summary: 'Members holding a project role (others\u2019 lastLoginAt for administrators only).', tags, scope: 'project', response: { description: 'a page of members', schema: o.page(ScopeMemberView) } },
    async ({ ctx, params, searchParams }) => json(200, pageOf(searchParams, await scopeMembers(ctx, 'project', params.projectId), presentScopeMember)));

  const roles = (scope: 'organization' | 'workspace' | 'project') => ({
    put: def({
      summary: `Set a member's ${scope} role (owners and admins; only owners grant or remove ownership; the last owner stays).`,
      tags, scope, orgRoles: ADMINS, archivedOk: true, body: RoleBody, response: { description: 'the member with its role here', schema: ScopeMemberView },
    }, async ({ ctx, params, body }) => {
      const { level, scopeId } = memberScope(params);
      return json(200, presentScopeMember(await setMemberRole(ctx, level, scopeId, params.userId, body.role)));
    }),
    delete: def({
      summary: `Remove a member from the ${scope}${scope === 'organization' ? ' (every role in it)' : ''}.`, tags, scope, orgRoles: ADMINS, archivedOk: true,
      response: { status: 204, description: 'removed' },
    }, async ({ ctx, params }) => {
      const { level, scopeId } = memberScope(params);
      await removeMember(ctx, level, scopeId, params.userId);
      return { status: 204 };
    }),
  });
  const org = roles('organization');
  r.put('/api/organizations/:organizationId/members/:userId', ...org.put);
  r.delete('/api/organizations/:organizationId/members/:userId', ...org.delete);
  const workspace = roles('workspace');
  r.put('/api/workspaces/:workspaceId/members/:userId', ...workspace.put);
  r.delete('/api/workspaces/:workspaceId/members/:userId', ...workspace.delete);
  const project = roles('project');
  r.put('/api/projects/:projectId/members/:userId', ...project.put);
  r.delete('/api/projects/:projectId/members/:userId', ...project.delete);

  const invite = { tags: ['invitations'], scope: 'organization' as const, permission: 'organization:members:invite' as const };
  r.post('/api/organizations/:organizationId/invitations', {
    summary: 'Invite by e-mail; answers inviteToken and acceptUrl once.', ...invite, body: InvitationBody, response: { status: 201, description: 'the invitation, inviteToken and acceptUrl', schema: IssuedInvitationView },
  }, async ({ ctx, req, params, body }) => json(201, issued(req, ctx.config, await createInvitation(ctx, params.organizationId, body))));
  r.get('/api/organizations/:organizationId/invitations', { summary: 'Invitations of the organization (status filter).', ...invite, query: InvitationListQuery, response: { description: 'a page of invitations', schema: o.page(InvitationView) } },
    async ({ ctx, params, query, searchParams }) => json(200, pageOf(searchParams, await invitationsOf(ctx.db, params.organizationId, query.status ?? null), presentInvitation)));
  r.post('/api/organizations/:organizationId/invitations/:invitationId/resend', { summary: 'New token and expiry; the old link stops working.', ...invite, response: { description: 'the invitation, the new inviteToken and acceptUrl', schema: IssuedInvitationView } },
    async ({ ctx, req, params }) => json(200, issued(req, ctx.config, await resendInvitation(ctx, params.organizationId, params.invitationId))));
  r.post('/api/organizations/:organizationId/invitations/:invitationId/revoke', { summary: 'Revoke; the seat is released.', ...invite, response: { description: 'the revoked invitation', schema: InvitationView } },
    async ({ ctx, params }) => json(200, presentInvitation(await revokeInvitation(ctx, params.organizationId, params.invitationId))));

  r.get('/api/invitations/preview', { summary: 'What an invitation token grants: { email, role, expiresAt, organization, workspace, project, invitedBy: { name } | null } (the console\'s /invitations/accept page shows it; 404 invitation_not_found, 410 invitation_expired; those count against the client address\'s failed-attempt limit, then 429 rate_limited).', tags: ['invitations'], auth: 'none', query: TokenQuery,
    response: { description: 'what the invitation grants', schema: InvitationPreviewView },
  }, async ({ ctx, query }) => {
    const inv = await addressLimited(ctx, () => invitationForToken(ctx, query.token));
    const org = (await organizationById(ctx.db, inv.organization_id))!;
    const ws = inv.workspace_id ? await workspaceById(ctx.db, inv.workspace_id) : undefined;
    const project = inv.project_id ? await projectById(ctx.db, inv.project_id) : undefined;
    const inviter = inv.invited_by ? await userById(ctx.db, inv.invited_by) : undefined;
    return json(200, {
      email: inv.email, role: inv.role, expiresAt: inv.expires_at,
      organization: { id: org.id, name: org.name },
      workspace: ws ? { id: ws.id, name: ws.name } : null,
      project: project ? { id: project.id, name: project.name } : null,
      invitedBy: inviter ? { name: inviter.name } : null,
    });
  });

  r.post('/api/auth/register', {
    summary: 'Create an account from an invitation (token, e-mail and expiry checked again) and log in (an unknown, expired or other-address token counts against the client address\'s failed-attempt limit, then 429 rate_limited); when the identity policy requires MFA: { mfaEnrollmentRequired, challengeToken, expiresAt, user } instead of a session.', tags: ['auth'], auth: 'none',
    body: RegisterBody, response: { status: 201, description: 'session token, expiry and user; or an MFA enrollment challenge and the user', schema: RegisteredView },
  }, async ({ ctx, req, body }) => {
    const kind = fromBrowser(req, ctx.config) ? 'browser' : 'bearer';
    const { user, result } = await registerWithInvitation(ctx, body, kind);
    if (result.step !== 'session') {
      return json(201, { mfaEnrollmentRequired: true as const, challengeToken: result.challenge.challengeToken, expiresAt: result.challenge.expiresAt, user: presentUser(user) });
    }
    const session = result.started;
    return json(201, { ...tokenAnswer(session), user: presentUser(user) }, kind === 'browser' ? { 'set-cookie': sessionCookie(session) } : undefined);
  });

  r.post('/api/invitations/accept', { summary: 'Accept an invitation with the current account (same e-mail).', tags: ['invitations'], body: TokenBody, response: { description: 'the accepted invitation', schema: InvitationView } },
    async ({ ctx, body }) => json(200, presentInvitation(await acceptInvitation(ctx, body.token))));
}
