// Input of the identity provider routes. A provider's config is checked against its kind's schema
// (checkProviderConfig) once the kind is known; field errors are named config.<field>.
import * as v from '../../kernel/validate.ts';
import { validationFailed } from '../../kernel/errors.ts';
import { REF_NAME } from './provider-config.ts';

const id = v.string({ min: 1, max: 64 });
const name = v.string({ min: 1, max: 200 });
const ref = (what: string) => v.string({
  min: 1, max: 128, pattern: REF_NAME,
  description: `NAME of the environment variable holding ${what} (A-Z, 0-9, _; not one of the service's own SVC_* settings), never the value`,
});
const text = (description: string, max = 1000) => v.string({ min: 1, max, description });
const claim = v.string({ min: 1, max: 200 });
const attribute = v.string({ min: 1, max: 500 });

export const OidcConfigBody = v.object({
  issuer: text('the issuer URL exactly as the provider states it (https; http only on loopback; no link-local, metadata or reserved address: every request to the provider goes through the egress policy); discovery is {issuer}/.well-known/openid-configuration', 2000),
  clientId: text('the client id registered at the provider', 500),
  clientSecretRef: ref('the client secret'),
  scopes: v.optional(v.array(v.string({ min: 1, max: 100, pattern: /^[\x21\x23-\x5b\x5d-\x7e]+$/ }), { min: 1, max: 30 })),
  claimMapping: v.optional(v.object({ email: v.optional(claim), name: v.optional(claim), subject: v.optional(claim) },
    { description: 'ID-token claims holding the e-mail address (default email), the name (default name) and the subject (default sub)' })),
}, { description: 'OIDC: scopes default to openid email profile and must include openid' });

export const SamlConfigBody = v.object({
  idpEntityId: text('the IdP entity id (Issuer of its responses)'),
  ssoUrl: text('the IdP single sign-on URL (HTTP-Redirect binding), an absolute http(s) URL', 2000),
  idpCertRef: ref('the IdP signing certificate (PEM)'),
  spEntityId: text('this service\'s entity id at the IdP (the Audience of assertions)'),
  attributeMapping: v.optional(v.object({ email: v.optional(attribute), name: v.optional(attribute) },
    { description: 'assertion attributes holding the e-mail address (default email) and the name (default name)' })),
}, { description: 'SAML 2.0' });

const KINDS = ['oidc', 'saml'] as const;
const STATUSES = ['active', 'disabled'] as const;
const defaultRole = v.string({
  min: 1, max: 64,
  description: 'role of members created at first sign-in: org_member (default) or org_admin without workspaceId; a workspace role (producer, writer, art_director, voice_editor, reviewer) with workspaceId, given with org_member',
});
const workspaceId = v.nullable(v.string({ min: 1, max: 64, description: 'a workspace of the organization; needs a workspace defaultRole' }));

export const ProviderCreateBody = v.object({
  kind: v.oneOf(KINDS),
  name,
  organizationId: v.string({ min: 1, max: 64, description: 'the organization the provider signs people into (fixed)' }),
  workspaceId: v.optional(workspaceId),
  defaultRole: v.optional(defaultRole),
  status: v.optional(v.oneOf(STATUSES)),
  config: v.anyObject({ maxKeys: 20, description: 'the kind\'s configuration (OIDC or SAML fields); secrets only as environment-variable names' }),
});

export const ProviderPatchBody = v.object({
  name: v.optional(name),
  workspaceId: v.optional(workspaceId),
  defaultRole: v.optional(defaultRole),
  status: v.optional(v.oneOf(STATUSES, { description: 'disabled: not listed at sign-in, flows and tickets refused' })),
  config: v.optional(v.anyObject({ maxKeys: 20, description: 'fields to change in the kind\'s configuration (merged, then checked as a whole); clears the last probe' })),
});

export const ProviderListQuery = v.object({
  organizationId: v.optional(id),
  kind: v.optional(v.oneOf(KINDS)),
  status: v.optional(v.oneOf(STATUSES)),
}, { allowUnknown: true });

export const StartQuery = v.object({
  providerId: id,
  returnTo: v.optional(v.string({ max: 4000, trim: false, description: 'a relative path of the front end to come back to' })),
}, { allowUnknown: true });

export const RedeemBody = v.object({
  ticket: v.string({ min: 1, max: 200, description: 'the one-time ticket from the front-end URL fragment' }),
  kind: v.optional(v.oneOf(['bearer', 'browser'] as const, { description: 'browser: an HttpOnly cookie session (only from the front end or the service\'s own page); default bearer, or browser when the request comes from there' })),
});

/** Checks a kind's config like a body (errors named config.<field>); 422 validation_failed when invalid. */
export function checkConfigShape(kind: 'oidc' | 'saml', config: unknown): v.Infer<typeof OidcConfigBody> | v.Infer<typeof SamlConfigBody> {
  const st = { errors: {} as Record<string, string>, coerce: false };
  const schema = kind === 'oidc' ? OidcConfigBody : SamlConfigBody;
  const value = schema.check(config, 'config', st);
  if (Object.keys(st.errors).length > 0) throw validationFailed(st.errors);
  return value;
}
