// SAML 2.0 single sign-on as a service provider: the HTTP-Redirect AuthnRequest (deflated, its ID
// stored one-time with the relay state, the return path and the hash of the browser's flow cookie),
// the SP metadata, and the HTTP-POST assertion consumer (verification in verify.ts; the browser
// binding, kept on the ticket until redeem, in ../sso/flow-cookie.ts; the account and the ticket in
// ../sso/finish.ts).
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { deflateRawSync } from 'node:zlib';
import type { IncomingMessage } from 'node:http';
import type { Config } from '../../../kernel/config.ts';
import type { Ctx } from '../../../directory/context.ts';
import { AppError } from '../../../kernel/errors.ts';
import { requestOrigin } from '../../../http/request.ts';
import { finishSso, ssoFailure } from '../finish.ts';
import { clearFlowCookie, clearingFlowCookie, fromFlowBrowser } from '../flow-cookie.ts';
import { readRef, samlConfigOf, type SamlConfig } from '../provider-config.ts';
import { FLOW_TTL_MS, saveFlowState, takeFlowState } from '../state.ts';
import { activeOfKind, providerById, type ProviderRow } from '../store.ts';
import { SamlRejected, decodeSamlResponse, verifySamlResponse } from './verify.ts';

/**
 * The assertion consumer URL: {base_url}/api/auth/sso/saml/:providerId/acs with base_url =
 * SVC_PUBLIC_URL, else the origin the caller used (of the start request, of the POST to the ACS,
 * of the metadata request: the same origin when the service is reached one way; set SVC_PUBLIC_URL
 * behind anything else).
 */
export function acsUrlOf(config: Config, providerId: string, serviceOrigin?: string | null): string {
  const base = config.publicUrl || serviceOrigin;
  if (!base) {
    throw new AppError(409, 'sso_not_configured', 'set SVC_PUBLIC_URL: the SAML assertion consumer URL cannot be derived', { variable: 'SVC_PUBLIC_URL' });
  }
  return `${base}/api/auth/sso/saml/${encodeURIComponent(providerId)}/acs`;
}

const xmlEscape = (s: string): string =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&apos;');

export function authnRequestXml(o: { id: string; issueInstant: string; destination: string; acsUrl: string; spEntityId: string }): string {
  return '<samlp:AuthnRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion"'
    + ` ID="${xmlEscape(o.id)}" Version="2.0" IssueInstant="${xmlEscape(o.issueInstant)}" Destination="${xmlEscape(o.destination)}"`
    + ` ProtocolBinding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" AssertionConsumerServiceURL="${xmlEscape(o.acsUrl)}">`
    + `<saml:Issuer>${xmlEscape(o.spEntityId)}</saml:Issuer>`
    + '<samlp:NameIDPolicy Format="urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified" AllowCreate="true"/>'
    + '</samlp:AuthnRequest>';
}

/** The SP metadata: entity id, the HTTP-POST assertion consumer, signed assertions wanted. */
export function spMetadataXml(config: Config, provider: ProviderRow, serviceOrigin: string | null): string {
  const c = samlConfigOf(provider);
  return '<?xml version="1.0" encoding="UTF-8"?>\n'
    + `<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="${xmlEscape(c.spEntityId)}">`
    + '<md:SPSSODescriptor AuthnRequestsSigned="false" WantAssertionsSigned="true" protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">'
    + '<md:NameIDFormat>urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified</md:NameIDFormat>'
    + '<md:NameIDFormat>urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress</md:NameIDFormat>'
    + `<md:AssertionConsumerService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${xmlEscape(acsUrlOf(config, provider.id, serviceOrigin))}" index="0" isDefault="true"/>`
    + '</md:SPSSODescriptor></md:EntityDescriptor>\n';
}

/**
 * The IdP's SSO URL carrying a deflated AuthnRequest (HTTP-Redirect binding) and the relay state.
 * The request ID is the one-time flow handle; the payload keeps the relay state (checked unchanged
 * at the ACS), the return path and `browserHash` (the SHA-256 of the flow cookie the start answer
 * sets). The certificate variable must be set before anyone is sent away. `serviceOrigin` (the
 * origin of the start request) is the base of the ACS URL without SVC_PUBLIC_URL.
 */
export async function startSaml(ctx: Ctx, provider: ProviderRow, returnTo: string | null, browserHash: string, serviceOrigin?: string | null): Promise<string> {
  const c = samlConfigOf(provider);
  readRef(c.idpCertRef);
  const id = `_${randomBytes(20).toString('hex')}`;
  const relayState = randomBytes(24).toString('base64url');
  const xml = authnRequestXml({
    id, issueInstant: ctx.now().toISOString().replace(/\.\d{3}Z$/, 'Z'), destination: c.ssoUrl,
    acsUrl: acsUrlOf(ctx.config, provider.id, serviceOrigin), spEntityId: c.spEntityId,
  });
  await saveFlowState(ctx, { providerId: provider.id, kind: 'saml', handle: id, payload: { relayState, returnTo, browser: browserHash }, ttlMs: FLOW_TTL_MS });
  const url = new URL(c.ssoUrl);
  url.searchParams.append('SAMLRequest', deflateRawSync(Buffer.from(xml, 'utf8')).toString('base64'));
  url.searchParams.append('RelayState', relayState);
  return url.toString();
}

const sameString = (a: string, b: string): boolean => {
  const x = Buffer.from(a, 'utf8'), y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
};

function firstValue(attributes: Record<string, string[]>, name: string): string | null {
  const v = attributes[name]?.find((s) => s !== '');
  return v ?? null;
}

/** SAML says nothing about whether the address was verified: emailVerified is null (finishSso's rule for SAML). */
function identityOf(c: SamlConfig, nameId: string, nameIdFormat: string | null, attributes: Record<string, string[]>) {
  const email = firstValue(attributes, c.attributeMapping.email)
    ?? (nameIdFormat === 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress' ? nameId : null);
  return { subject: nameId, email, name: firstValue(attributes, c.attributeMapping.name), emailVerified: null };
}

/**
 * The assertion consumer: verifies the posted SAMLResponse for the provider, takes the request it
 * answers (once; a request made for another provider is refused), checks that the browser posting is
 * the one that started it (the flow cookie) and that the relay state came back unchanged, then
 * finishes the sign-in with the flow cookie's hash (the ticket is bound to this browser). Answers the
 * front-end URL with the one-time ticket; the flow cookie is kept (POST /api/auth/sso/redeem requires
 * it and clears it). Every refusal is audited (auth.sso.failed) and thrown; once the browser is known to be the flow's, the
 * refusal clears the flow cookie.
 */
export async function consumeSamlResponse(ctx: Ctx, req: IncomingMessage, providerId: string, form: URLSearchParams): Promise<string> {
  const provider = await providerById(ctx.db, providerId) ?? null;
  if (!activeOfKind(provider, 'saml')) {
    throw await ssoFailure(ctx, provider, 400, 'sso_provider_unknown', 'no active SAML provider has that id');
  }
  const c = samlConfigOf(provider);
  const certificate = readRef(c.idpCertRef);
  const field = form.getAll('SAMLResponse');
  const relay = form.getAll('RelayState');
  if (field.length !== 1 || relay.length > 1) throw await ssoFailure(ctx, provider, 400, 'saml_response_invalid', 'exactly one SAMLResponse is required');
  let facts;
  try {
    facts = verifySamlResponse(decodeSamlResponse(field[0]), {
      certificate, idpEntityId: c.idpEntityId, spEntityId: c.spEntityId, acsUrl: acsUrlOf(ctx.config, provider.id, requestOrigin(req, ctx.config)), now: ctx.now(),
    });
  } catch (err) {
    if (!(err instanceof SamlRejected)) throw err;
    throw await ssoFailure(ctx, provider, err.status, err.status === 400 ? 'saml_response_invalid' : 'saml_response_rejected', err.reason);
  }
  const state = await takeFlowState(ctx, 'saml', facts.inResponseTo);
  if (!state || state.providerId !== provider.id) {
    throw await ssoFailure(ctx, provider, 401, 'saml_response_rejected', 'InResponseTo matches no pending, unused request of this provider');
  }
  // Login CSRF: the response must be posted by the browser that started the flow (the request is used up either way).
  if (!fromFlowBrowser(req, state.payload.browser)) {
    throw await ssoFailure(ctx, provider, 401, 'sso_browser_mismatch', 'the response was posted by a browser that did not start this sign-in (flow cookie missing or different)');
  }
  try {
    const expected = state.payload.relayState;
    if (typeof expected !== 'string' || relay.length !== 1 || !sameString(relay[0], expected)) {
      throw await ssoFailure(ctx, provider, 401, 'saml_response_rejected', 'the relay state did not come back unchanged');
    }
    const returnTo = typeof state.payload.returnTo === 'string' ? state.payload.returnTo : null;
    return await finishSso(ctx, req, provider, identityOf(c, facts.nameId, facts.nameIdFormat, facts.attributes), returnTo, state.payload.browser as string);
  } catch (err) {
    throw clearingFlowCookie(err, clearFlowCookie(req, ctx.config, 'saml'));
  }
}
