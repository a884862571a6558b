// SAML 2.0 service-provider endpoints: the SP metadata of a provider and its HTTP-POST assertion consumer.
import { notFound } from '../../../kernel/errors.ts';
import { readForm, requestOrigin } from '../../../http/request.ts';
import type { Router } from '../../../http/router.ts';
import { consumeSamlResponse, spMetadataXml } from './flow.ts';
import { activeOfKind, providerById } from '../store.ts';

export function bindSamlRoutes(router: Router): void {
  const r = router.module(import.meta.url);
  const tags = ['auth'];
  r.get('/api/auth/sso/saml/:providerId/metadata', {
    summary: 'SAML 2.0 service-provider metadata of a SAML provider (application/samlmetadata+xml): SP entity id and the HTTP-POST assertion consumer URL to register at the IdP. Unknown, disabled or non-SAML provider: 404.',
    tags, auth: 'none', response: { type: 'application/samlmetadata+xml', description: 'the SP metadata (an EntityDescriptor)' },
  }, async ({ ctx, req, params }) => {
    const p = await providerById(ctx.db, params.providerId);
    if (!activeOfKind(p, 'saml')) throw notFound('no active SAML provider has that id');
    return { status: 200, raw: spMetadataXml(ctx.config, p, requestOrigin(req, ctx.config)), headers: { 'content-type': 'application/samlmetadata+xml; charset=utf-8' } };
  });
  r.post('/api/auth/sso/saml/:providerId/acs', {
    summary: 'SAML assertion consumer (HTTP-POST binding; form-encoded SAMLResponse and RelayState, sent by the browser from the IdP): '
      + 'the signed assertion is verified with the pinned certificate, then 302 to the front end `/sso/complete#ticket=...` (redeem at POST /api/auth/sso/redeem). '
      + 'A malformed response (DOCTYPE, not XML, not base64) is 400 saml_response_invalid; an unacceptable one (signature, audience, recipient, destination, time window, AuthnStatement, InResponseTo, relay state, status) 401 saml_response_rejected; '
      + 'a post without the flow cookie svc_sso_flow of the browser that started the sign-in 401 sso_browser_mismatch; each audited as auth.sso.failed.',
    tags, auth: 'none', response: { status: 302, description: 'redirect to the front end with a one-time ticket in the fragment' },
  }, async ({ ctx, req, params }) => {
    const form = await readForm(req, ctx.config.maxBodyBytes);
    return { status: 302, headers: { location: await consumeSamlResponse(ctx, req, params.providerId, form), 'cache-control': 'no-store' } };
  });
}
