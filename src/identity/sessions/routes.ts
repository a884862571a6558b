// Password login, logout, the current session, password change and own-session management.
import { json, type Reply, type Router } from '../../http/router.ts';
import { presentUser } from '../../directory/present/users.ts';
import { userById, type UserRow } from '../../directory/users/store.ts';
import { sessionLifetimes } from '../../directory/policy/store.ts';
import { sessionOfUser } from '../../directory/sessions/store.ts';
import { LoginBody, PasswordChangeBody } from './schema.ts';
import { CLEAR_COOKIE, fromBrowser, sessionCookie } from './cookies.ts';
import * as o from '../../kernel/view.ts';
import {
  CurrentSessionView, RevokedSessionsView, SessionTokenView, SessionView, SignInView, SignedInView, presentSession,
} from './present.ts';
import {
  changePassword, listSessions, login, logout, revokeOtherSessions, revokeSession, type LoginLimits, type SignInResult, type StartedSession,
} from './service.ts';

export const tokenAnswer = (started: StartedSession): o.Out<typeof SessionTokenView> => ({ token: started.token, expiresAt: started.session.expires_at, sessionId: started.session.id });

/** A finished sign-in: token, expiry, session id, user (and the HttpOnly cookie for a browser session). */
export function sessionReply<E extends object = object>(status: number, user: UserRow, started: StartedSession, extra: E = {} as E): Reply<o.Out<typeof SignedInView> & E> {
  return json(status, {
    ...tokenAnswer(started),
    user: { id: user.id, email: user.email, name: user.name },
    passwordChangeRequired: user.password_must_change === 1,
    ...extra,
  }, started.session.kind === 'browser' ? { 'set-cookie': sessionCookie(started) } : undefined);
}

/**
 * The answer of signIn(): the session; or { mfaRequired: true, challengeToken, expiresAt } (TOTP on);
 * or { mfaEnrollmentRequired: true, challengeToken, expiresAt } (policy requires MFA, none set up).
 * A challenge answer carries no token and sets no cookie.
 */
export function signInReply(status: number, r: SignInResult): Reply<o.Out<typeof SignInView>> {
  if (r.step === 'session') return sessionReply(status, r.user, r.started);
  const challenge = { challengeToken: r.challenge.challengeToken, expiresAt: r.challenge.expiresAt };
  return json(status, r.step === 'mfa' ? { mfaRequired: true as const, ...challenge } : { mfaEnrollmentRequired: true as const, ...challenge });
}

export function bindAuthRoutes(router: Router, limits: LoginLimits): void {
  const r = router.module(import.meta.url);
  const tags = ['auth'];
  r.post('/api/auth/login', {
    summary: 'Log in with e-mail and password: { token, expiresAt, sessionId, user, passwordChangeRequired }; from a browser (allowed Origin) also the HttpOnly session cookie. '
      + 'With TOTP enabled: { mfaRequired: true, challengeToken, expiresAt } and no session (POST /api/auth/login/mfa); when the identity policy requires MFA and the user has none: '
      + '{ mfaEnrollmentRequired: true, challengeToken, expiresAt } (/api/auth/mfa/enroll/*). '
      + 'Failed logins are limited per e-mail (SVC_LOGIN_MAX_FAILURES_PER_EMAIL) and per client address (SVC_LOGIN_MAX_FAILURES_PER_ADDRESS) within SVC_LOGIN_WINDOW_SECONDS; '
      + 'each attempt takes its slot before the password is checked, so concurrent requests get no more checks than the limit; over it, 429 rate_limited with Retry-After, even for the right password. '
      + 'The counts are kept in the database (shared by every process, kept across restarts); a successful login clears the e-mail\'s.',
    tags, auth: 'none', body: LoginBody, response: { description: 'the session, or an MFA challenge (no session yet)', schema: SignInView },
  }, async ({ req, body, ctx }) => {
    const kind = fromBrowser(req, ctx.config) ? 'browser' : 'bearer';
    return signInReply(200, await login(ctx, limits, body.email, body.password, kind));
  });

  r.post('/api/auth/logout', { summary: 'Revoke the current session (and clear the cookie).', tags, response: { status: 204, description: 'signed out' } }, async ({ ctx }) => {
    await logout(ctx);
    return { status: 204, headers: { 'set-cookie': CLEAR_COOKIE } };
  });

  r.get('/api/auth/session', { summary: 'The current session and its user.', tags, response: { description: 'the user, the session (null when the request carries none: the development x-user-id header) and how the request was authenticated', schema: CurrentSessionView } }, async ({ ctx }) => {
    const user = (await userById(ctx.db, ctx.actor.userId!))!;
    const s = ctx.actor.sessionId ? await sessionOfUser(ctx.db, user.id, ctx.actor.sessionId) : undefined;
    return json(200, { user: presentUser(user), session: s ? presentSession(s, await sessionLifetimes(ctx.db, ctx.config), s.id) : null, via: ctx.actor.sessionKind });
  });

  r.post('/api/auth/password', {
    summary: 'Change the password (current + new). Every session of the user is revoked, the one used included; a fresh session is returned. '
      + 'A wrong current password (422) counts against the e-mail\'s failed-login limit, reserved before the check: over it, 429 rate_limited with Retry-After.',
    tags, body: PasswordChangeBody, response: { description: 'the fresh session', schema: SessionTokenView },
  }, async ({ ctx, body }) => {
    const started = await changePassword(ctx, limits, body.currentPassword, body.newPassword);
    return json(200, tokenAnswer(started), started.session.kind === 'browser' && ctx.actor.sessionKind === 'browser' ? { 'set-cookie': sessionCookie(started) } : undefined);
  });

  r.get('/api/auth/sessions', { summary: 'List own live sessions.', tags, response: { description: 'every live session (one page)', schema: o.page(SessionView) } }, async ({ ctx }) => {
    const lifetimes = await sessionLifetimes(ctx.db, ctx.config);
    const items = (await listSessions(ctx)).map((s) => presentSession(s, lifetimes, ctx.actor.sessionId));
    return json(200, { items, pagination: { page: 1, pageSize: items.length, total: items.length } });
  });

  r.delete('/api/auth/sessions/:sessionId', { summary: 'Revoke one of own sessions.', tags, response: { status: 204, description: 'revoked' } }, async ({ ctx, params }) => {
    await revokeSession(ctx, params.sessionId);
    return { status: 204 };
  });

  r.post('/api/auth/sessions/revoke-others', { summary: 'Revoke every own session except the current one.', tags, response: { description: 'how many sessions were revoked', schema: RevokedSessionsView } }, async ({ ctx }) =>
    json(200, { revoked: await revokeOtherSessions(ctx) }));
}
