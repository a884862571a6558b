// The browser a single sign-on flow belongs to (against login CSRF: someone else's provider answer
// completed in a victim's browser). GET /api/auth/sso/start sets a random HttpOnly cookie and the flow
// payload keeps only its SHA-256; the OIDC callback and the SAML assertion consumer require that cookie
// (compared in constant time) and store its hash with the ticket they issue; POST /api/auth/sso/redeem
// requires it again (a ticket copied to another browser is refused) and clears it. A callback or
// consumer that ends the flow without a ticket clears it at once. The path /api/auth/sso covers redeem:
// the front end must be same-site with the service for the SameSite=Lax cookie to reach it.
import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Config } from '../../kernel/config.ts';
import { AppError } from '../../kernel/errors.ts';
import { newToken, sha256Hex } from '../../kernel/ids.ts';
import { serviceBase } from './present.ts';
import { FLOW_TTL_MS } from './state.ts';

export const FLOW_COOKIE = 'svc_sso_flow';
const FLOW_COOKIE_PATH = '/api/auth/sso';

/**
 * HttpOnly, only under /api/auth/sso, Secure when the service's base URL is https. SameSite=Lax for
 * OIDC (the callback is a top-level GET); SameSite=None for SAML (the IdP's form POST to the assertion
 * consumer is cross-site), which browsers accept only with Secure: over plain http a SAML flow cookie is
 * Lax too, and then reaches the consumer only when the IdP's page is same-site with the service.
 */
function attributes(req: IncomingMessage, config: Config, kind: 'oidc' | 'saml'): string {
  const secure = serviceBase(req, config).startsWith('https:');
  const sameSite = kind === 'saml' && secure ? 'None' : 'Lax';
  return `Path=${FLOW_COOKIE_PATH}; HttpOnly; SameSite=${sameSite}${secure ? '; Secure' : ''}`;
}

/** A new flow cookie: the Set-Cookie header for the start answer and the hash the flow keeps. */
export function newFlowCookie(req: IncomingMessage, config: Config, kind: 'oidc' | 'saml'): { hash: string; setCookie: string } {
  const value = newToken();
  return { hash: sha256Hex(value), setCookie: `${FLOW_COOKIE}=${value}; ${attributes(req, config, kind)}; Max-Age=${Math.floor(FLOW_TTL_MS / 1000)}` };
}

/** The Set-Cookie header that removes the flow cookie. */
export function clearFlowCookie(req: IncomingMessage, config: Config, kind: 'oidc' | 'saml'): string {
  return `${FLOW_COOKIE}=; ${attributes(req, config, kind)}; Max-Age=0`;
}

/** Whether the request carries a flow cookie whose SHA-256 is `expectedHash` (the one stored with the flow). */
export function fromFlowBrowser(req: IncomingMessage, expectedHash: unknown): boolean {
  if (typeof expectedHash !== 'string' || expectedHash === '') return false;
  const expected = Buffer.from(expectedHash, 'utf8');
  let found = false;
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq <= 0 || part.slice(0, eq).trim() !== FLOW_COOKIE) continue;
    const value = part.slice(eq + 1).trim();
    if (value === '') continue;
    const got = Buffer.from(sha256Hex(value), 'utf8');
    // Every copy is compared (a browser may send a more specific path's cookie first).
    if (got.length === expected.length && timingSafeEqual(got, expected)) found = true;
  }
  return found;
}

/** The same error with the flow cookie cleared (an answer ending the flow the cookie was bound to). */
export function clearingFlowCookie(err: unknown, setCookie: string): unknown {
  if (!(err instanceof AppError)) return err;
  return new AppError(err.status, err.code, err.message, err.details, { ...err.headers, 'set-cookie': setCookie });
}
