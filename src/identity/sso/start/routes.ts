// Single sign-on routes: the system administrator's identity providers (/api/system/identity/providers)
// and the public sign-in entry points (provider list, start, the OIDC provider's redirect back, ticket
// redemption). The SAML endpoints (/api/auth/sso/saml/...) are bound by ../saml/routes.ts.
import type { IncomingMessage } from 'node:http';
import type { Ctx } from '../../../directory/context.ts';
import { fromBrowser } from '../../sessions/cookies.ts';
import { reserveAttempt, type AttemptLimit } from '../../../gate/ratelimit.ts';
import { signInReply } from '../../sessions/routes.ts';
import { addressKey } from '../../sessions/service.ts';
import { notFound, validationFailed } from '../../../kernel/errors.ts';
import { json, type Router } from '../../../http/router.ts';
import { pageOf } from '../../../kernel/validate.ts';
import { redeemTicket } from '../finish.ts';
import { newFlowCookie } from '../flow-cookie.ts';
import { completeOidc, startOidc } from '../oidc/flow.ts';
import * as o from '../../../kernel/view.ts';
import { MfaChallengeView, MfaEnrollmentChallengeView, SignedInView } from '../../sessions/present.ts';
import {
  IdentityProviderView, ProbeDetailView, SignInProviderView, presentProvider, presentPublicProvider, serviceBase, type ProbeDetail,
} from '../present.ts';
import { probeProvider } from '../probe.ts';
import { ProviderCreateBody, ProviderListQuery, ProviderPatchBody, RedeemBody, StartQuery } from '../provider-schema.ts';
import { createProvider, listProvidersOf, providerOrFail, updateProviderFields } from '../providers.ts';
import { safeReturnTo } from '../return-to.ts';
import { startSaml } from '../saml/flow.ts';
import { identityCounts, listProviders, providerById, type ProviderRow } from '../store.ts';

/**
 * Sign-in starts allowed per client address (ctx.ip) in any 60 seconds. A start is anonymous and stores
 * a flow state: over the limit it is 429 rate_limited with Retry-After, and nothing is stored.
 */
export const SSO_STARTS_PER_MINUTE = 30;
/** Every start counts (in the database, shared by every process): the attempt limit used as a counter. */
const SSO_STARTS: AttemptLimit = { bucket: 'sso_start', max: SSO_STARTS_PER_MINUTE, windowMs: 60_000 };

const SHAPE = '{ id, kind, name, organizationId, workspaceId, defaultRole, status, config (secrets only as *Ref variable names), endpoints, probe: { probedAt, status, detail }, identities?, createdBy, createdAt, updatedAt }';

const ProbeAnswerView = o.object({
  status: o.oneOf(['ok', 'failed']), probedAt: o.time(), detail: ProbeDetailView, provider: IdentityProviderView,
});

const returnTo = o.nullable(o.text({ description: 'the path given at start, or null' }));
/** The sign-in answer of POST /api/auth/sso/redeem: the session or an MFA challenge, each with returnTo. */
const RedeemedView = o.anyOf([
  o.extend(SignedInView, { returnTo }), o.extend(MfaChallengeView, { returnTo }), o.extend(MfaEnrollmentChallengeView, { returnTo }),
]);

export function bindSsoRoutes(router: Router): void {
  const r = router.module(import.meta.url);
  const sys = { tags: ['system', 'identity', 'sso'], systemAdmin: true, scope: 'none' as const };
  const show = (ctx: Ctx, req: IncomingMessage) => (p: ProviderRow) => presentProvider(p, serviceBase(req, ctx.config), ctx.config);

  r.get('/api/system/identity/providers', { ...sys, summary: `Identity providers (filter organizationId, kind, status), paged: items ${SHAPE}.`, query: ProviderListQuery, response: { description: 'a page of identity providers', schema: o.page(IdentityProviderView) } },
    async ({ ctx, req, query, searchParams }) => {
      const counts = await identityCounts(ctx.db);
      const b = serviceBase(req, ctx.config);
      return json(200, pageOf(searchParams, await listProvidersOf(ctx, query), (p) => presentProvider(p, b, ctx.config, counts.get(p.id) ?? 0)));
    });

  r.post('/api/system/identity/providers', {
    ...sys, body: ProviderCreateBody, response: { status: 201, description: 'the identity provider', schema: IdentityProviderView },
    summary: 'Create an OIDC provider (config { issuer, clientId, clientSecretRef, scopes?, claimMapping? }) or a SAML 2.0 provider (config { idpEntityId, ssoUrl, idpCertRef, spEntityId, attributeMapping? }) '
      + 'bound to an organization (and optionally a workspace with a workspace defaultRole). clientSecretRef and idpCertRef NAME environment variables; no secret or certificate is stored. Audited as identity_provider.created.',
  }, async ({ ctx, req, body }) => json(201, show(ctx, req)(await createProvider(ctx, body))));

  r.get('/api/system/identity/providers/:providerId', { ...sys, summary: `One identity provider: ${SHAPE}.`, response: { description: 'the identity provider', schema: IdentityProviderView } },
    async ({ ctx, req, params }) => json(200, presentProvider(await providerOrFail(ctx, params.providerId), serviceBase(req, ctx.config), ctx.config,
      (await identityCounts(ctx.db)).get(params.providerId) ?? 0)));

  r.patch('/api/system/identity/providers/:providerId', {
    ...sys, body: ProviderPatchBody, response: { description: 'the changed identity provider', schema: IdentityProviderView },
    summary: 'Rename, rebind the workspace and default role (for members created from now on), set status active or disabled, or change config fields (merged and checked as a whole; clears the last probe). Kind and organization are fixed. Audited as identity_provider.updated.',
  }, async ({ ctx, req, params, body }) => json(200, show(ctx, req)(await updateProviderFields(ctx, params.providerId, body))));

  r.post('/api/system/identity/providers/:providerId/probe', {
    ...sys, response: { description: 'the probe result and the provider', schema: ProbeAnswerView },
    summary: 'Probe the configuration: OIDC discovery ({issuer}/.well-known/openid-configuration, issuer must match) and JWKS (keys counted) and whether the client-secret variable is set; SAML: the certificate idpCertRef names (subject, issuer, validity, SHA-256 fingerprint, key; never the PEM). '
      + 'Answers { status: ok|failed, probedAt, detail: { ..., problems }, provider }; stored on the provider and audited as identity_provider.probed.',
  }, async ({ ctx, req, params }) => {
    const { provider, result } = await probeProvider(ctx, params.providerId);
    return json(200, { ...result, detail: result.detail as ProbeDetail, provider: show(ctx, req)(provider) });
  });

  const pub = { tags: ['auth', 'sso'], auth: 'none' as const };
  r.get('/api/auth/sso/providers', { ...pub, summary: 'The active sign-in providers, paged: items { id, name, kind }.', response: { description: 'a page of sign-in providers', schema: o.page(SignInProviderView) } },
    async ({ ctx, searchParams }) => json(200, pageOf(searchParams, await listProviders(ctx.db, { status: 'active' }), presentPublicProvider)));

  r.get('/api/auth/sso/start', {
    ...pub, query: StartQuery, response: { status: 302, description: 'redirect to the provider' },
    summary: 'Start a sign-in at an active provider: 302 to its authorization URL (OIDC, code flow with PKCE) or SSO URL (SAML HTTP-Redirect), setting the flow cookie svc_sso_flow '
      + '(HttpOnly, Path=/api/auth/sso, 10 minutes) that the callback or assertion consumer requires. returnTo: only a relative path of the front end (422 otherwise); it comes back at redeem. '
      + `At most ${SSO_STARTS_PER_MINUTE} starts per client address per minute (429 rate_limited with Retry-After).`,
  }, async ({ ctx, req, query }) => {
    (await reserveAttempt(ctx.db, [{ limit: SSO_STARTS, key: addressKey(ctx) }], ctx.now().getTime())).fail(); // every start counts
    const provider = await providerById(ctx.db, query.providerId);
    if (!provider || provider.status !== 'active') throw notFound('no such sign-in provider');
    const returnTo = safeReturnTo(query.returnTo);
    const origin = serviceBase(req, ctx.config);
    const cookie = newFlowCookie(req, ctx.config, provider.kind);
    const location = provider.kind === 'oidc'
      ? await startOidc(ctx, provider, returnTo, cookie.hash, origin)
      : await startSaml(ctx, provider, returnTo, cookie.hash, origin);
    return { status: 302, headers: { location, 'referrer-policy': 'no-referrer', 'set-cookie': cookie.setCookie } };
  });

  // The OpenID provider's redirect back (public; the one-time state is the credential, and the flow
  // cookie binds it to the browser that started the sign-in).
  r.get('/api/auth/sso/callback', {
    summary: 'OIDC redirect URI: checks the one-time state and the flow cookie svc_sso_flow of the browser that started the sign-in (missing or different: 401 sso_browser_mismatch), exchanges the code (PKCE), verifies the ID token (JWKS, algorithm allow-list, iss, aud, exp, nonce, azp), '
      + 'maps the claims and redirects (302) to `{SVC_FRONTEND_ORIGIN}/sso/complete#ticket=...` (a one-time ticket for POST /api/auth/sso/redeem; never a session token). '
      + 'Refusals are 400/401 and audited as auth.sso.failed.',
    ...pub,
    response: { status: 302, description: 'redirect to the front end with a one-time ticket in the fragment' },
  }, async ({ req, ctx, searchParams }) => {
    const one = (k: string) => searchParams.get(k);
    const location = await completeOidc(ctx, req, { state: one('state'), code: one('code'), error: one('error'), iss: one('iss') });
    return { status: 302, headers: { location, 'referrer-policy': 'no-referrer' } };
  });

  r.post('/api/auth/sso/redeem', {
    ...pub, body: RedeemBody, response: { description: 'the session or an MFA challenge, with returnTo', schema: RedeemedView },
    summary: 'Redeem the one-time ticket of a finished single sign-on (valid 60 s, single use; unknown, used or expired: 401 invalid_ticket): the session { token, expiresAt, sessionId, user, passwordChangeRequired }, '
      + 'or { mfaRequired: true, challengeToken, expiresAt } (TOTP on), or { mfaEnrollmentRequired: true, challengeToken, expiresAt } (policy requires MFA); each with returnTo (the path given at start, or null). '
      + 'The request must carry the flow cookie svc_sso_flow of the browser that started the sign-in (the front end must be same-site with the service); missing or different: 401 sso_browser_mismatch, audited, '
      + 'and the ticket is used up. The answer clears the flow cookie. Failed redemptions (invalid_ticket, sso_browser_mismatch) count against the client address\'s failed-attempt limit '
      + '(SVC_LOGIN_MAX_FAILURES_PER_ADDRESS within SVC_LOGIN_WINDOW_SECONDS, shared with logins): over it, 429 rate_limited with Retry-After and the ticket is not looked at.',
  }, async ({ ctx, req, body }) => {
    const browser = fromBrowser(req, ctx.config);
    if (body.kind === 'browser' && !browser) throw validationFailed({ kind: 'browser sessions are only given to the front end or the service\'s own page (Origin)' });
    const { result, returnTo, clearCookie } = await redeemTicket(ctx, req, body.ticket, body.kind ?? (browser ? 'browser' : 'bearer'));
    const reply = signInReply(200, result);
    const headers = { ...reply.headers };
    if (clearCookie) headers['set-cookie'] = [...[headers['set-cookie'] ?? []].flat(), clearCookie];
    return { ...reply, headers, body: { ...reply.body!, returnTo } };
  });
}
