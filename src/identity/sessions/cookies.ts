// Browser sessions: when a login counts as a browser login, and the cookie that carries it.
import type { IncomingMessage } from 'node:http';
import type { Config } from '../../kernel/config.ts';
import { SESSION_COOKIE, isAllowedOrigin } from '../../gate/auth.ts';
import type { StartedSession } from './service.ts';

/** A login is a browser login when it comes from the service's own page or the configured front end. */
export function fromBrowser(req: IncomingMessage, config: Config): boolean {
  const origin = req.headers.origin;
  if (typeof origin === 'string') return isAllowedOrigin(req, config, origin);
  return req.headers['sec-fetch-site'] === 'same-origin';
}

export function sessionCookie(started: StartedSession): string {
  const maxAge = Math.max(0, Math.floor((Date.parse(started.session.expires_at) - Date.now()) / 1000));
  return `${SESSION_COOKIE}=${started.token}; Path=/; HttpOnly; Secure; SameSite=Lax; Max-Age=${maxAge}`;
}

export const CLEAR_COOKIE = `${SESSION_COOKIE}=; Path=/; HttpOnly; Secure; SameSite=Lax; Max-Age=0`;

