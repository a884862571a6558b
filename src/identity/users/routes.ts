// Global user governance (system administrator only): accounts, their status and administrator
// identity, security resets, sessions and memberships.
import { json, type Router } from '../../http/router.ts';
import { RevokedSessionsView } from '../sessions/present.ts';
import { AdminNewUserBody, MembershipGrantBody, UserListQuery, UserPatchBody } from './schema.ts';
import * as o from '../../kernel/view.ts';
import { GovernedUserView, MembershipView, presentGovernedUser, presentMembership } from '../../directory/present/users.ts';
import {
  createGovernedUser, governedUser, grantMembership, listGovernedUsers, resetMfa, resetPassword, revokeSessions, updateUser,
} from './governance.ts';

const initialPassword = o.text({ description: 'shown in this answer only; the user must change it at the first sign-in' });
const NewUserAnswer = o.object({ user: GovernedUserView, initialPassword });
const InitialPasswordAnswer = o.object({ initialPassword });


export function bindUserRoutes(router: Router): void {
  const r = router.module(import.meta.url);
  const meta = { tags: ['system'], systemAdmin: true, scope: 'none' as const };
  r.get('/api/system/users', { ...meta, summary: 'Users with memberships, MFA state, last login and active sessions; filters query (e-mail or name), status; limit default 50, clamped to 1..200.', query: UserListQuery, response: { description: 'a page of users', schema: o.page(GovernedUserView) } },
    async ({ ctx, query }) => {
      const { items, pagination } = await listGovernedUsers(ctx, query);
      return json(200, { items: items.map(presentGovernedUser), pagination });
    });

  r.post('/api/system/users', { ...meta, summary: 'Create an active account; answers a one-time initial password (shown once, changed at first login).', body: AdminNewUserBody, response: { status: 201, description: 'the user and its one-time initial password', schema: NewUserAnswer } },
    async ({ ctx, body }) => {
      const { user, initialPassword } = await createGovernedUser(ctx, body);
      return json(201, { user: presentGovernedUser(user), initialPassword });
    });

  r.get('/api/system/users/:userId', { ...meta, summary: 'One user with memberships, MFA state, last login and active sessions.', response: { description: 'the user', schema: GovernedUserView } },
    async ({ ctx, params }) => json(200, presentGovernedUser(await governedUser(ctx, params.userId))));

  r.patch('/api/system/users/:userId', { ...meta, summary: 'Suspend (revokes every session) or reactivate; grant or remove the system administrator identity. 409 cannot_suspend_self, last_system_admin, only_organization_owner, seat_limit_reached.', body: UserPatchBody, response: { description: 'the changed user', schema: GovernedUserView } },
    async ({ ctx, params, body }) => json(200, presentGovernedUser(await updateUser(ctx, params.userId, body))));

  r.post('/api/system/users/:userId/reset-password', { ...meta, summary: 'Set a one-time password (shown once, changed at the next login); every session is revoked.', response: { description: 'the one-time password', schema: InitialPasswordAnswer } },
    async ({ ctx, params }) => json(200, await resetPassword(ctx, params.userId)));

  r.post('/api/system/users/:userId/reset-mfa', { ...meta, summary: 'Turn MFA off for the account (it enrolls again); every session is revoked.', response: { description: 'the user', schema: GovernedUserView } },
    async ({ ctx, params }) => json(200, presentGovernedUser(await resetMfa(ctx, params.userId))));

  r.post('/api/system/users/:userId/revoke-sessions', { ...meta, summary: 'Revoke every session of the user: { revoked }.', response: { description: 'how many sessions were revoked', schema: RevokedSessionsView } },
    async ({ ctx, params }) => json(200, { revoked: await revokeSessions(ctx, params.userId) }));

  r.post('/api/system/users/:userId/memberships', { ...meta, summary: 'Give the user a role at an organization, workspace or project (implied parent memberships created); checked against role level, scope and seats.', body: MembershipGrantBody, response: { status: 201, description: 'the membership', schema: MembershipView } },
    async ({ ctx, params, body }) => json(201, presentMembership(await grantMembership(ctx, params.userId, body))));
}
