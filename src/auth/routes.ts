// Password login, logout, the current session, password change and own-session management.
import { json, type Router } from '../http/router.ts';
import { presentUser } from '../users/present.ts';
import { userById } from '../users/store.ts';
import { sessionOfUser } from './store.ts';
import { LoginBody, PasswordChangeBody } from './schema.ts';
import { CLEAR_COOKIE, fromBrowser, sessionCookie } from './cookies.ts';
import { presentSession } from './present.ts';
import {
  changePassword, listSessions, login, logout, revokeOtherSessions, revokeSession, type LoginLimits, type StartedSession,
} from './service.ts';

export const tokenAnswer = (started: StartedSession) => ({ token: started.token, expiresAt: started.session.expires_at, sessionId: started.session.id });

export function bindAuthRoutes(r: Router, limits: LoginLimits): void {
  const tags = ['auth'];
  r.post('/api/auth/login', {
    summary: 'Log in with e-mail and password. From a browser (allowed Origin) it also sets the HttpOnly session cookie.',
    tags, auth: 'none', body: LoginBody,
  }, async ({ req, body, ctx }) => {
    const kind = fromBrowser(req, ctx.config) ? 'browser' : 'bearer';
    const result = await login(ctx, limits, body.email, body.password, kind);
    return json(200, {
      ...tokenAnswer(result),
      user: { id: result.user.id, email: result.user.email, name: result.user.name },
      passwordChangeRequired: result.user.password_must_change === 1,
    }, kind === 'browser' ? { 'set-cookie': sessionCookie(result) } : undefined);
  });

  r.post('/api/auth/logout', { summary: 'Revoke the current session (and clear the cookie).', tags }, ({ ctx }) => {
    logout(ctx);
    return { status: 204, headers: { 'set-cookie': CLEAR_COOKIE } };
  });

  r.get('/api/auth/session', { summary: 'The current session and its user.', tags }, ({ ctx }) => {
    const user = userById(ctx.db, ctx.actor.userId!)!;
    const s = ctx.actor.sessionId ? sessionOfUser(ctx.db, user.id, ctx.actor.sessionId) : undefined;
    return json(200, { user: presentUser(user), session: s ? presentSession(s, ctx.config, s.id) : null, via: ctx.actor.sessionKind });
  });

  r.post('/api/auth/password', {
    summary: 'Change the password (current + new). Every session of the user is revoked, the one used included; a fresh session is returned.',
    tags, body: PasswordChangeBody,
  }, async ({ ctx, body }) => {
    const started = await changePassword(ctx, limits, body.currentPassword, body.newPassword);
    return json(200, tokenAnswer(started), started.session.kind === 'browser' && ctx.actor.sessionKind === 'browser' ? { 'set-cookie': sessionCookie(started) } : undefined);
  });

  r.get('/api/auth/sessions', { summary: 'List own live sessions.', tags }, ({ ctx }) => {
    const items = listSessions(ctx).map((s) => presentSession(s, ctx.config, ctx.actor.sessionId));
    return json(200, { items, pagination: { page: 1, pageSize: items.length, total: items.length } });
  });

  r.delete('/api/auth/sessions/:sessionId', { summary: 'Revoke one of own sessions.', tags }, ({ ctx, params }) => {
    revokeSession(ctx, params.sessionId);
    return { status: 204 };
  });

  r.post('/api/auth/sessions/revoke-others', { summary: 'Revoke every own session except the current one.', tags }, ({ ctx }) =>
    json(200, { revoked: revokeOtherSessions(ctx) }));
}
