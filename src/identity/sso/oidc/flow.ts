// OpenID Connect sign-in: the authorization-code flow with PKCE (S256), a one-time state and nonce
// stored encrypted (state.ts) and bound to the browser that started it (flow-cookie.ts; the ticket too), the code
// exchanged at the token endpoint with client_secret_basic, and the ID token verified with jose
// against the provider's JWKS (algorithm allow-list, iss, aud, exp, nonce, azp). The provider vouches
// for an identity; finishSso turns it into a one-time ticket.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { createRemoteJWKSet, customFetch, errors as joseErrors, jwtVerify, type JWTPayload } from 'jose';
import type { Ctx } from '../../../directory/context.ts';
import { AppError } from '../../../kernel/errors.ts';
import { activeOfKind, providerById, type ProviderRow } from '../store.ts';
import { oidcConfigOf, readRef, type OidcConfig } from '../provider-config.ts';
import { FLOW_TTL_MS, saveFlowState, takeFlowState } from '../state.ts';
import { finishSso, ssoFailure } from '../finish.ts';
import { fetchJson, FetchJsonError, keySetFetch, providerRequest } from '../fetch-json.ts';
import { clearFlowCookie, clearingFlowCookie, fromFlowBrowser } from '../flow-cookie.ts';
import { urlProblem } from '../providers.ts';

/** Asymmetric signatures only: never `none`, never an HMAC (whose "secret" an attacker could take from the JWKS). */
export const ID_TOKEN_ALGORITHMS = ['RS256', 'PS256', 'ES256', 'EdDSA'];
/** Clock skew tolerated on exp/iat/nbf of ID tokens. */
export const CLOCK_TOLERANCE_S = 60;
/** How long a provider's discovery document (and its key set object) is reused. */
export const DISCOVERY_TTL_MS = 5 * 60_000;
const FETCH_TIMEOUT_MS = 10_000;
const MAX_ANSWER_CHARS = 1_000_000;

interface Discovery {
  issuer: string;
  authorizationEndpoint: string;
  tokenEndpoint: string;
  jwks: Awaited<ReturnType<typeof createRemoteJWKSet>>;
}

const discoveries = new Map<string, { expires: number; value: Promise<Discovery> }>();

/** Raised while talking to the provider; `reason` goes to the audit record (never token content). */
class ProviderTrouble extends Error {}

/** An endpoint of the discovery document: held to the issuer's rule (https; http only on a loopback host). */
function endpointUrl(v: unknown, what: string): string {
  if (typeof v !== 'string') throw new ProviderTrouble(`discovery document has no ${what}`);
  const problem = urlProblem(v, { httpsUnlessLoopback: true });
  if (problem) throw new ProviderTrouble(`discovery ${what} ${problem}`);
  return new URL(v).href;
}

async function fetchDiscovery(issuer: string): Promise<Discovery> {
  const url = `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
  let doc: Record<string, unknown>;
  try {
    doc = await fetchJson(url);
  } catch (err) {
    throw err instanceof FetchJsonError ? new ProviderTrouble(`discovery document: ${err.message}`) : err;
  }
  // OpenID Connect Discovery 1.0, 4.3: the issuer in the document is exactly the configured one.
  if (doc.issuer !== issuer) throw new ProviderTrouble('discovery issuer differs from the configured issuer');
  return {
    issuer,
    authorizationEndpoint: endpointUrl(doc.authorization_endpoint, 'authorization_endpoint'),
    tokenEndpoint: endpointUrl(doc.token_endpoint, 'token_endpoint'),
    // The key set is fetched through the egress policy too (jose's customFetch), not by the global fetch.
    jwks: createRemoteJWKSet(new URL(endpointUrl(doc.jwks_uri, 'jwks_uri')), { timeoutDuration: FETCH_TIMEOUT_MS, cooldownDuration: 30_000, [customFetch]: keySetFetch }),
  };
}

/** The provider's endpoints and key set, cached per issuer for DISCOVERY_TTL_MS (a failure is not cached). */
function discover(issuer: string): Promise<Discovery> {
  const now = Date.now();
  const hit = discoveries.get(issuer);
  if (hit && hit.expires > now) return hit.value;
  const value = fetchDiscovery(issuer);
  discoveries.set(issuer, { expires: now + DISCOVERY_TTL_MS, value });
  value.catch(() => { if (discoveries.get(issuer)?.value === value) discoveries.delete(issuer); });
  return value;
}

const random = () => randomBytes(32).toString('base64url');
const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

/**
 * The redirect URI registered at providers: SVC_OIDC_REDIRECT_URI, else `{base_url}/api/auth/sso/callback`
 * with base_url = SVC_PUBLIC_URL or the origin the caller used (serviceOrigin of the start request).
 */
export function oidcRedirectUri(ctx: Ctx, serviceOrigin?: string | null): string {
  if (ctx.config.oidcRedirectUri) return ctx.config.oidcRedirectUri;
  const base = ctx.config.publicUrl || serviceOrigin;
  if (!base) {
    throw new AppError(409, 'sso_not_configured', 'set SVC_OIDC_REDIRECT_URI or SVC_PUBLIC_URL: the OIDC redirect URI cannot be derived', { variable: 'SVC_OIDC_REDIRECT_URI' });
  }
  return `${base}/api/auth/sso/callback`;
}

/**
 * The provider's authorization URL for a new flow: state, nonce and PKCE verifier are random and
 * stored one-time (handle = state) with `browserHash`, the SHA-256 of the flow cookie the start answer
 * sets. `serviceOrigin` (the origin of the start request) is the base of the default redirect URI when
 * neither SVC_OIDC_REDIRECT_URI nor SVC_PUBLIC_URL is set.
 */
export async function startOidc(ctx: Ctx, provider: ProviderRow, returnTo: string | null, browserHash: string, serviceOrigin?: string | null): Promise<string> {
  const cfg = oidcConfigOf(provider);
  readRef(cfg.clientSecretRef); // a provider without its secret fails here (409), not after the user signed in
  const redirectUri = oidcRedirectUri(ctx, serviceOrigin);
  let d: Discovery;
  try {
    d = await discover(cfg.issuer);
  } catch (err) {
    if (!(err instanceof ProviderTrouble)) throw err;
    ctx.log.warn('oidc discovery failed', { providerId: provider.id, reason: err.message });
    throw new AppError(502, 'sso_provider_unavailable', 'the identity provider could not be reached; try again later', { providerId: provider.id });
  }
  const state = random();
  const nonce = random();
  const verifier = random();
  await saveFlowState(ctx, {
    providerId: provider.id, kind: 'oidc', handle: state, ttlMs: FLOW_TTL_MS,
    payload: { providerId: provider.id, nonce, verifier, returnTo, redirectUri, browser: browserHash },
  });
  const url = new URL(d.authorizationEndpoint);
  const params: Record<string, string> = {
    response_type: 'code', client_id: cfg.clientId, redirect_uri: redirectUri, scope: cfg.scopes.join(' '),
    state, nonce, code_challenge: s256(verifier), code_challenge_method: 'S256',
  };
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  return url.href;
}

/** The provider's answer at the redirect URI (query parameters), as the browser brought it. */
export interface OidcCallback { state: string | null; code: string | null; error: string | null; iss: string | null }

const sameString = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/** A provider's error code, fit for an audit record (anything else is summarized). */
const errorCode = (e: string) => (/^[A-Za-z0-9_.-]{1,64}$/.test(e) ? e : 'unrecognized');

/**
 * The callback: the state taken once, the browser checked (the flow cookie of the start), the code
 * exchanged, the ID token verified, the claims mapped, then finishSso with the flow cookie's hash (the
 * ticket is bound to this browser). Answers the front end's URL carrying the one-time ticket; the flow
 * cookie is kept (POST /api/auth/sso/redeem requires it and clears it). Every refusal is an audited ssoFailure (400 malformed, 401
 * refused): no ticket, no session; once the browser is known to be the flow's, the refusal clears the
 * flow cookie (a mismatch leaves that browser's cookie alone).
 */
export async function completeOidc(ctx: Ctx, req: IncomingMessage, cb: OidcCallback): Promise<string> {
  if (!cb.state) throw await ssoFailure(ctx, null, 400, 'invalid_callback', 'state parameter missing');
  const flow = await takeFlowState(ctx, 'oidc', cb.state);
  if (!flow) throw await ssoFailure(ctx, null, 401, 'invalid_state', 'unknown, used or expired state');
  const provider = await providerById(ctx.db, flow.providerId);
  if (!activeOfKind(provider, 'oidc')) {
    throw await ssoFailure(ctx, provider ?? null, 401, 'provider_unavailable', 'provider missing, disabled or not OIDC');
  }
  // Login CSRF: the answer must come back to the browser that started the flow (the state is used up either way).
  if (!fromFlowBrowser(req, flow.payload.browser)) {
    throw await ssoFailure(ctx, provider, 401, 'sso_browser_mismatch', 'the callback came from a browser that did not start this sign-in (flow cookie missing or different)');
  }
  try {
    return await completeBoundFlow(ctx, req, cb, provider, flow.payload);
  } catch (err) {
    throw clearingFlowCookie(err, clearFlowCookie(req, ctx.config, 'oidc'));
  }
}

/** The rest of the callback once the browser is known to be the flow's: its front-end URL with the ticket. */
async function completeBoundFlow(ctx: Ctx, req: IncomingMessage, cb: OidcCallback, provider: ProviderRow, payload: Record<string, unknown>): Promise<string> {
  const { nonce, verifier, redirectUri } = payload;
  const returnTo = typeof payload.returnTo === 'string' ? payload.returnTo : null;
  if (typeof nonce !== 'string' || typeof verifier !== 'string' || typeof redirectUri !== 'string') {
    throw await ssoFailure(ctx, provider, 401, 'invalid_state', 'flow state incomplete');
  }
  if (cb.error) throw await ssoFailure(ctx, provider, 401, 'provider_error', `provider answered error ${errorCode(cb.error)}`);
  if (!cb.code) throw await ssoFailure(ctx, provider, 400, 'invalid_callback', 'code parameter missing');
  const cfg = oidcConfigOf(provider);
  // RFC 9207: when the provider names itself in the answer it must be the one the flow went to.
  if (cb.iss !== null && cb.iss !== cfg.issuer) throw await ssoFailure(ctx, provider, 401, 'issuer_mismatch', 'iss parameter differs from the provider');
  const secret = readRef(cfg.clientSecretRef);
  let d: Discovery;
  let idToken: string;
  try {
    d = await discover(cfg.issuer);
    idToken = await exchangeCode(d, cfg, secret, cb.code, redirectUri, verifier);
  } catch (err) {
    if (err instanceof ProviderTrouble) throw await ssoFailure(ctx, provider, 401, 'token_exchange_failed', err.message);
    throw err;
  }
  const claims = await verifyIdToken(ctx, provider, d, cfg, idToken, nonce);
  return await finishSso(ctx, req, provider, await mapClaims(ctx, provider, cfg, claims), returnTo, payload.browser as string);
}

/** POST to the token endpoint (client_secret_basic, PKCE verifier); the ID token of the answer. */
async function exchangeCode(d: Discovery, cfg: OidcConfig, secret: string, code: string, redirectUri: string, verifier: string): Promise<string> {
  // RFC 6749 2.3.1: client id and secret are form-urlencoded before the Basic encoding.
  const basic = Buffer.from(`${formEncode(cfg.clientId)}:${formEncode(secret)}`).toString('base64');
  let res: { status: number; body: Buffer };
  try {
    // Through the egress policy: resolved once, judged, no redirect followed (a 3xx is a refusal below).
    res = await providerRequest({
      url: d.tokenEndpoint, method: 'POST', timeoutMs: FETCH_TIMEOUT_MS, maxBytes: MAX_ANSWER_CHARS,
      headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: verifier }).toString(),
    });
  } catch (err) {
    if (err instanceof FetchJsonError) throw new ProviderTrouble(`token endpoint unreachable (${err.message})`);
    throw err;
  }
  const text = res.body.toString('utf8');
  let answer: Record<string, unknown> | null = null;
  try {
    answer = JSON.parse(text) as Record<string, unknown>;
  } catch { /* not JSON */ }
  if (res.status < 200 || res.status >= 300) {
    const e = typeof answer?.error === 'string' ? errorCode(answer.error) : 'unreadable';
    throw new ProviderTrouble(`token endpoint answered HTTP ${res.status} (${e})`);
  }
  if (!answer || typeof answer.id_token !== 'string' || !answer.id_token) throw new ProviderTrouble('token answer has no id_token');
  return answer.id_token;
}

const formEncode = (s: string) => encodeURIComponent(s).replace(/%20/g, '+');

/** jose's verification (signature by the JWKS, algorithm allow-list, iss, aud, exp) plus nonce and azp. */
async function verifyIdToken(ctx: Ctx, provider: ProviderRow, d: Discovery, cfg: OidcConfig, idToken: string, nonce: string): Promise<JWTPayload> {
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(idToken, d.jwks, {
      algorithms: ID_TOKEN_ALGORITHMS, issuer: cfg.issuer, audience: cfg.clientId,
      clockTolerance: CLOCK_TOLERANCE_S, requiredClaims: ['sub', 'iat', 'exp'], currentDate: ctx.now(),
    }));
  } catch (err) {
    throw await ssoFailure(ctx, provider, 401, 'invalid_id_token', joseReason(err));
  }
  if (typeof payload.nonce !== 'string' || !sameString(payload.nonce, nonce)) {
    throw await ssoFailure(ctx, provider, 401, 'invalid_id_token', 'nonce differs from the flow');
  }
  const audiences = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
  if ((audiences.length > 1 || payload.azp !== undefined) && payload.azp !== cfg.clientId) {
    throw await ssoFailure(ctx, provider, 401, 'invalid_id_token', 'azp is not the client id');
  }
  return payload;
}

/** What failed, in jose's words (codes and claim names only: never token content). */
function joseReason(err: unknown): string {
  if (err instanceof joseErrors.JWTClaimValidationFailed) return `claim ${err.claim} ${err.reason}`;
  if (err instanceof joseErrors.JWTExpired) return 'token expired';
  if (err instanceof joseErrors.JOSEAlgNotAllowed) return 'algorithm not allowed';
  if (err instanceof joseErrors.JOSEError) return `${err.code}`;
  if (err instanceof FetchJsonError) return `key set (jwks_uri): ${err.message}`;
  return `verification failed (${(err as Error)?.name ?? 'error'})`;
}

/**
 * The identity the token vouches for, through the provider's claim mapping; `emailVerified` is the
 * `email_verified` claim (null when absent or not a boolean: finishSso then links no existing account).
 */
async function mapClaims(ctx: Ctx, provider: ProviderRow, cfg: OidcConfig, claims: JWTPayload): Promise<{ subject: string; email: string | null; name: string | null; emailVerified: boolean | null }> {
  const text = (v: unknown, max: number): string | null => {
    if (typeof v === 'number' && Number.isFinite(v)) v = String(v);
    if (typeof v !== 'string') return null;
    const t = v.trim();
    // eslint-disable-next-line no-control-regex -- it refuses control characters on purpose
    return t && t.length <= max && !/[\u0000-\u001f\u007f]/.test(t) ? t : null;
  };
  const subject = text(claims[cfg.claimMapping.subject || 'sub'], 255);
  if (!subject) throw await ssoFailure(ctx, provider, 401, 'invalid_id_token', 'subject claim missing or malformed');
  // A provider saying the address is unverified is refused outright (no link, and no new account either).
  if (claims.email_verified === false) throw await ssoFailure(ctx, provider, 401, 'email_not_verified', 'provider marks the e-mail address unverified');
  const email = text(claims[cfg.claimMapping.email || 'email'], 254);
  return {
    subject,
    email: email && /^[^@\s]+@[^@\s]+$/.test(email) ? email.toLowerCase() : null,
    name: text(claims[cfg.claimMapping.name || 'name'], 200),
    emailVerified: typeof claims.email_verified === 'boolean' ? claims.email_verified : null,
  };
}
