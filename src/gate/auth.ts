// Request -> actor. A Bearer token (or the browser session cookie) is looked up by its keyed hash
// (HMAC-SHA-256 under SVC_SESSION_SECRET, src/directory/sessions/token-hash.ts);
// revoked, expired, idle or suspended sessions are no credential at all. The lifetimes are the
// identity policy's when set (a shortened one applies to existing sessions too), else SVC_SESSION_*. With SVC_ALLOW_DEV_CONTEXT=1
// the x-user-id header stands in for a session (development only). A Bearer token that is no session
// may be an API client's access token: its actor is the client (type 'api_client', no user).
import type { IncomingMessage } from 'node:http';
import type { Config } from '../kernel/config.ts';
import type { Db } from '../db/db.ts';
import type { Actor } from '../directory/context.ts';
import { tokenHash as storedTokenHash } from '../directory/sessions/token-hash.ts';
import { sessionByTokenHash, touchSession, type SessionWithUser } from '../directory/sessions/store.ts';
import { userById } from '../directory/users/store.ts';
import { sessionLifetimes, type SessionLifetimes } from '../directory/policy/store.ts';
import { apiClientActorByToken } from './api-clients.ts';
import { AppError, unauthenticated } from '../kernel/errors.ts';
import { requestOrigin } from '../http/request.ts';

export const SESSION_COOKIE = 'svc_session';
/** last_seen_at is written at most this often per session (idle expiry has this granularity). */
const TOUCH_INTERVAL_MS = 60_000;

export interface Authenticated {
  actor: Actor;
  session: SessionWithUser | null;
  passwordChangeRequired: boolean;
}

function cookieValue(header: string | undefined, name: string): string | null {
  if (!header) return null;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}

const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** The service's own origin as the client addressed it, and the configured front end. */
export function isAllowedOrigin(req: IncomingMessage, config: Config, origin: string): boolean {
  if (config.frontendOrigin && origin === config.frontendOrigin) return true;
  if (config.publicUrl && origin === new URL(config.publicUrl).origin) return true;
  return origin === requestOrigin(req, config);
}

interface SessionFound { session: SessionWithUser | undefined; lifetimes: SessionLifetimes | null }

/**
 * The session a token hash names and the lifetimes that apply to it: read through the read cache
 * only, so kept with it (emptied by any write) and found with one await on a hit. Whether the
 * session is still valid is decided per request (it depends on the time).
 */
function sessionOfToken(db: Db, config: Config, tokenHash: string): Promise<SessionFound> {
  return db.cachedDerived(`session:${tokenHash}`, async () => {
    const session = await sessionByTokenHash(db, tokenHash);
    return Object.freeze({ session, lifetimes: session ? await sessionLifetimes(db, config) : null });
  });
}

/** Returns the authenticated actor, null when the request carries no credential, or throws 401/403. */
export async function authenticate(req: IncomingMessage, db: Db, config: Config, now: Date): Promise<Authenticated | null> {
  const authz = req.headers.authorization;
  let token: string | null;
  let viaCookie = false;
  if (authz !== undefined) {
    const m = /^Bearer\s+([A-Za-z0-9_\-.~+/=]{20,200})\s*$/i.exec(authz);
    if (!m) throw unauthenticated('Authorization must be "Bearer <token>"');
    token = m[1];
  } else {
    token = cookieValue(req.headers.cookie, SESSION_COOKIE);
    viaCookie = token !== null;
  }
  const tokenHash = token ? storedTokenHash(config, token) : null;
  const found = tokenHash && !(config.allowDevContext && req.headers['x-user-id'] !== undefined) ? await sessionOfToken(db, config, tokenHash) : null;
  const s = found?.session;
  if (config.allowDevContext && typeof req.headers['x-user-id'] === 'string') {
    const user = await userById(db, req.headers['x-user-id']);
    if (!user || user.status !== 'active') throw unauthenticated('x-user-id names no active user');
    return {
      actor: { type: 'user', userId: user.id, name: user.name, email: user.email, isSystemAdmin: user.is_system_admin === 1, sessionId: null, sessionKind: null },
      session: null,
      passwordChangeRequired: false,
    };
  }
  if (!tokenHash) return null;
  if (!s && !viaCookie) {
    // Not a session: an API client's access token (src/gate/api-clients.ts), never from a cookie.
    const client = await apiClientActorByToken(db, tokenHash, now);
    if (client) return { actor: client, session: null, passwordChangeRequired: false };
  }
  const nowIso = now.toISOString();
  const lifetimes = found?.lifetimes;
  const idleCutoff = now.getTime() - (lifetimes?.idleMinutes ?? 0) * 60_000;
  const absoluteCutoff = now.getTime() - (lifetimes?.absoluteHours ?? 0) * 3_600_000;
  if (!s || s.revoked_at || s.expires_at <= nowIso || Date.parse(s.last_seen_at) <= idleCutoff || Date.parse(s.created_at) <= absoluteCutoff
    || s.user_status !== 'active') {
    throw unauthenticated('the session is invalid, expired or revoked');
  }
  if (viaCookie) {
    if (s.kind !== 'browser') throw unauthenticated('the session is invalid, expired or revoked');
    if (UNSAFE.has(req.method ?? '')) {
      const origin = req.headers.origin;
      if (typeof origin !== 'string' || !isAllowedOrigin(req, config, origin)) {
        throw new AppError(403, 'origin_forbidden', 'a cookie session needs an Origin header of the service or its front end on state-changing requests');
      }
    }
  }
  if (now.getTime() - Date.parse(s.last_seen_at) >= TOUCH_INTERVAL_MS) await touchSession(db, s.id, nowIso);
  return {
    actor: {
      type: 'user', userId: s.user_id, name: s.user_name, email: s.user_email, isSystemAdmin: s.user_is_system_admin === 1,
      sessionId: s.id, sessionKind: viaCookie ? 'browser' : 'bearer',
    },
    session: s,
    passwordChangeRequired: s.user_password_must_change === 1,
  };
}
