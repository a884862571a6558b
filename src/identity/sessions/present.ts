// Sessions as the API shows them: never the token or its hash (the token only in the answer that starts a session).
import * as o from '../../kernel/view.ts';
import type { SessionLifetimes } from '../../directory/policy/store.ts';
import { UserView } from '../../directory/present/users.ts';
import type { SessionRow } from '../../directory/sessions/store.ts';

export const SESSION_KINDS = ['bearer', 'browser'] as const;

export const SessionView = o.named('Session', o.object({
  id: o.text(),
  kind: o.oneOf(SESSION_KINDS, 'bearer: a token the client sends; browser: the HttpOnly cookie of the console'),
  current: o.bool('the session of this request'),
  createdAt: o.time(), lastSeenAt: o.time(),
  expiresAt: o.time('when the session ends if unused from now on (idle lifetime), at the latest absoluteExpiresAt'),
  absoluteExpiresAt: o.time('when the session ends however it is used'),
  ip: o.nullable(o.text()), userAgent: o.nullable(o.text()),
}));

/** expiresAt: when the session ends if unused from now on (idle), absoluteExpiresAt: whatever its use. */
export function presentSession(s: SessionRow, lifetimes: SessionLifetimes, currentId: string | null): o.Out<typeof SessionView> {
  const idle = new Date(Date.parse(s.last_seen_at) + lifetimes.idleMinutes * 60_000).toISOString();
  const policyEnd = new Date(Date.parse(s.created_at) + lifetimes.absoluteHours * 3_600_000).toISOString();
  const absolute = policyEnd < s.expires_at ? policyEnd : s.expires_at;
  return {
    id: s.id,
    kind: s.kind,
    current: s.id === currentId,
    createdAt: s.created_at,
    lastSeenAt: s.last_seen_at,
    expiresAt: absolute < idle ? absolute : idle,
    absoluteExpiresAt: absolute,
    ip: s.ip,
    userAgent: s.user_agent,
  };
}

/** GET /api/auth/session. */
export const CurrentSessionView = o.named('CurrentSession', o.object({
  user: UserView,
  session: o.nullable(SessionView),
  via: o.nullable(o.oneOf(SESSION_KINDS, 'how this request was authenticated: bearer token or browser cookie')),
}));

/** A new session's bearer value: shown once, in this answer only. */
export const SessionTokenView = o.named('SessionToken', o.object({
  token: o.text({ description: 'the session token (send as Authorization: Bearer); in this answer only' }),
  expiresAt: o.time(),
  sessionId: o.text(),
}));

/** A finished sign-in (login, MFA, SSO redeem). */
export const SignedInView = o.named('SignedIn', o.extend(SessionTokenView, {
  user: o.object({ id: o.text(), email: o.text(), name: o.text() }),
  passwordChangeRequired: o.bool('change the password (POST /api/auth/password) before anything else'),
}, 'a session: its token, expiry and user'));

const challengeFields = {
  challengeToken: o.text({ description: 'the one-time challenge (no session yet); in this answer only' }),
  expiresAt: o.time(),
};

/** The password was right; a TOTP code is needed (POST /api/auth/login/mfa). */
export const MfaChallengeView = o.named('MfaChallenge', o.object({ mfaRequired: o.constant(true), ...challengeFields }));

/** The password was right; the identity policy requires MFA and the user has none (/api/auth/mfa/enroll/*). */
export const MfaEnrollmentChallengeView = o.named('MfaEnrollmentChallenge', o.object({ mfaEnrollmentRequired: o.constant(true), ...challengeFields }));

/** What a passed first factor gives: the session, or an MFA challenge. */
export const SignInView = o.anyOf([SignedInView, MfaChallengeView, MfaEnrollmentChallengeView]);

/** { revoked }: how many sessions a revocation ended. */
export const RevokedSessionsView = o.named('RevokedSessions', o.object({ revoked: o.int('sessions revoked') }));
