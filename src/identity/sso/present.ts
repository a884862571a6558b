// Identity providers as the API shows them: the configuration with *Ref variable NAMES only (the
// stored config never holds a secret or certificate), the last probe, and the addresses to register
// at the provider.
import type { IncomingMessage } from 'node:http';
import type { Config } from '../../kernel/config.ts';
import { requestOrigin } from '../../http/request.ts';
import * as o from '../../kernel/view.ts';
import { ROLES } from '../../directory/present/users.ts';
import type { Role } from '../../directory/roles.ts';
import type { ProviderRow } from './store.ts';

/** {base_url}: SVC_PUBLIC_URL, else the origin the client used. */
export const serviceBase = (req: IncomingMessage, config: Config): string => config.publicUrl || requestOrigin(req, config) || '';

const url = (description: string) => o.text({ description: `${description} ({base_url}: SVC_PUBLIC_URL, else the origin the request used)` });

export const ProviderEndpointsView = o.anyOf([
  o.object({ redirectUri: url('OIDC: the redirect URI to register (SVC_OIDC_REDIRECT_URI, else {base_url}/api/auth/sso/callback)') }),
  o.object({ metadataUrl: url('SAML: the service-provider metadata'), acsUrl: url('SAML: the assertion consumer URL (HTTP-POST)') }),
], 'what to register at the provider');

/** What to register at the provider: the OIDC redirect URI, or the SAML metadata and assertion consumer URLs. */
export function providerEndpoints(p: Pick<ProviderRow, 'id' | 'kind'>, base: string, config: Config): o.Out<typeof ProviderEndpointsView> {
  if (p.kind === 'oidc') return { redirectUri: config.oidcRedirectUri || `${base}/api/auth/sso/callback` };
  const saml = `${base}/api/auth/sso/saml/${encodeURIComponent(p.id)}`;
  return { metadataUrl: `${saml}/metadata`, acsUrl: `${saml}/acs` };
}

const mapping = (fields: string) => o.record(o.text(), fields);

export const OidcConfigView = o.named('OidcProviderConfig', o.object({
  issuer: o.text(), clientId: o.text(),
  clientSecretRef: o.text({ description: 'NAME of the environment variable holding the client secret (never the value)' }),
  scopes: o.array(o.text()),
  claimMapping: mapping('ID-token claims holding email, name and (optionally) subject'),
}));

export const SamlConfigView = o.named('SamlProviderConfig', o.object({
  idpEntityId: o.text(), ssoUrl: o.text(),
  idpCertRef: o.text({ description: 'NAME of the environment variable holding the IdP signing certificate (never the PEM)' }),
  spEntityId: o.text(),
  attributeMapping: mapping('assertion attributes holding email and name'),
}));

const problems = o.array(o.text(), 'what is wrong; empty when the probe passed');
const opt = <T>(v: o.View<T>) => o.optional(o.nullable(v));

/** What a probe found (OIDC: discovery and key set; SAML: the certificate). Fields after the first ones are there once that step was reached. */
export const ProbeDetailView = o.anyOf([
  o.named('OidcProbeDetail', o.object({
    discoveryUrl: o.text(), clientSecretRef: o.text(), clientSecretSet: o.bool(), problems,
    issuer: opt(o.text()), authorizationEndpoint: opt(o.text()), tokenEndpoint: opt(o.text()), jwksUri: opt(o.text()),
    pkceS256: opt(o.bool('null: the provider does not say')), idTokenSigningAlgorithms: opt(o.array(o.text())),
    keys: o.optional(o.int()), signingKeys: o.optional(o.array(o.object({ kid: o.nullable(o.text()), kty: o.nullable(o.text()), alg: o.nullable(o.text()) }))),
  })),
  o.named('SamlProbeDetail', o.object({
    idpCertRef: o.text(), idpEntityId: o.text(), ssoUrl: o.text(), problems,
    subject: o.optional(o.text()), issuer: o.optional(o.text()), serialNumber: o.optional(o.text()),
    validFrom: o.optional(o.time()), validTo: o.optional(o.time()), fingerprint256: o.optional(o.text()),
    keyType: opt(o.text()), keyBits: opt(o.int()),
  })),
]);
export type ProbeDetail = o.Out<typeof ProbeDetailView>;

export const IdentityProviderView = o.named('IdentityProvider', o.object({
  id: o.text(), kind: o.oneOf(['oidc', 'saml']), name: o.text(), organizationId: o.text(), workspaceId: o.nullable(o.text()),
  defaultRole: o.oneOf(ROLES, 'the role of members created at first sign-in'),
  status: o.oneOf(['active', 'disabled']),
  config: o.anyOf([OidcConfigView, SamlConfigView], 'the kind\'s configuration; secrets only as *Ref environment-variable names'),
  endpoints: ProviderEndpointsView,
  probe: o.object({
    probedAt: o.nullable(o.time()), status: o.nullable(o.oneOf(['ok', 'failed'])), detail: o.nullable(ProbeDetailView),
  }, 'the last probe (all null: never probed since the configuration changed)'),
  identities: o.optional(o.int('people linked to the provider (lists and single reads)')),
  createdBy: o.nullable(o.text()), createdAt: o.time(), updatedAt: o.time(),
}, 'a sign-in provider (OIDC or SAML 2.0)'));

function probeDetail(raw: string | null): unknown {
  if (raw === null) return null;
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

export function presentProvider(p: ProviderRow, base: string, config: Config, identities?: number): o.Out<typeof IdentityProviderView> {
  return {
    id: p.id,
    kind: p.kind,
    name: p.name,
    organizationId: p.organization_id,
    workspaceId: p.workspace_id,
    defaultRole: p.default_role as Role,
    status: p.status,
    config: JSON.parse(p.config) as o.Out<typeof IdentityProviderView>['config'],
    endpoints: providerEndpoints(p, base, config),
    probe: { probedAt: p.probed_at, status: p.probe_status, detail: probeDetail(p.probe_detail) as ProbeDetail | null },
    ...(identities === undefined ? {} : { identities }),
    createdBy: p.created_by,
    createdAt: p.created_at,
    updatedAt: p.updated_at,
  };
}

/** What anyone may see before signing in. */
export const SignInProviderView = o.named('SignInProvider', o.object({ id: o.text(), name: o.text(), kind: o.oneOf(['oidc', 'saml']) }));

export const presentPublicProvider = (p: ProviderRow): o.Out<typeof SignInProviderView> => ({ id: p.id, name: p.name, kind: p.kind });
