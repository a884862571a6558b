// Identity providers as the API shows them: the configuration with *Ref variable NAMES only (the
// stored config never holds a secret or certificate), the last probe, and the addresses to register
// at the provider.
import type { IncomingMessage } from 'node:http';
import type { Config } from '../../config.ts';
import { requestOrigin } from '../../http/request.ts';
import type { ProviderRow } from './store.ts';

/** {base_url}: SVC_PUBLIC_URL, else the origin the client used. */
export const serviceBase = (req: IncomingMessage, config: Config): string => config.publicUrl || requestOrigin(req, config) || '';

/** What to register at the provider: the OIDC redirect URI, or the SAML metadata and assertion consumer URLs. */
export function providerEndpoints(p: Pick<ProviderRow, 'id' | 'kind'>, base: string, config: Config) {
  if (p.kind === 'oidc') return { redirectUri: config.oidcRedirectUri || `${base}/api/auth/sso/callback` };
  const saml = `${base}/api/auth/sso/saml/${encodeURIComponent(p.id)}`;
  return { metadataUrl: `${saml}/metadata`, acsUrl: `${saml}/acs` };
}

function probeDetail(raw: string | null): unknown {
  if (raw === null) return null;
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

export function presentProvider(p: ProviderRow, base: string, config: Config, identities?: number) {
  return {
    id: p.id,
    kind: p.kind,
    name: p.name,
    organizationId: p.organization_id,
    workspaceId: p.workspace_id,
    defaultRole: p.default_role,
    status: p.status,
    config: JSON.parse(p.config) as Record<string, unknown>,
    endpoints: providerEndpoints(p, base, config),
    probe: { probedAt: p.probed_at, status: p.probe_status, detail: probeDetail(p.probe_detail) },
    ...(identities === undefined ? {} : { identities }),
    createdBy: p.created_by,
    createdAt: p.created_at,
    updatedAt: p.updated_at,
  };
}

/** What anyone may see before signing in. */
export const presentPublicProvider = (p: ProviderRow) => ({ id: p.id, name: p.name, kind: p.kind });
