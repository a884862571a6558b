// Identity providers, managed by the system administrator: bound to one organization for good
// (optionally a workspace, whose members they create with the default role), configured without
// secrets (clientSecretRef / idpCertRef name environment variables), audited as
// identity_provider.created / updated / probed.
import type { Ctx } from '../../directory/context.ts';
import { credentialNameProblem, credentialPolicy, isServiceVariable, type CredentialPolicy } from '../../kernel/credentials.ts';
import { record } from '../../platform/audit/service.ts';
import { notFound, requireSystemAdmin, validationFailed } from '../../kernel/errors.ts';
import { newId } from '../../kernel/ids.ts';
import type { RowRead } from '../../db/dialect.ts';
import { ORG_ROLES, WORKSPACE_ROLES } from '../../directory/roles.ts';
import { organizationById, workspaceById } from '../../directory/tenancy/store.ts';
import type { OidcConfig, SamlConfig } from './provider-config.ts';
import { checkConfigShape } from './provider-schema.ts';
import { insertProvider, listProviders, providerById, updateProvider, type ProviderRow } from './store.ts';
import { urlProblem as egressUrlProblem } from '../../kernel/egress.ts';

/** Roles a provider may give: never org_owner (sign-in must not make owners) nor project_guest (given by project roles). */
const PROVIDER_ORG_ROLES: readonly string[] = ORG_ROLES.filter((r) => r !== 'org_owner');
const PROVIDER_WORKSPACE_ROLES: readonly string[] = WORKSPACE_ROLES.filter((r) => r !== 'project_guest');

const LOOPBACK = new Set(['127.0.0.1', '[::1]', 'localhost']);

function isLoopback(host: string): boolean {
  return LOOPBACK.has(host) || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host) || host.endsWith('.localhost');
}

/**
 * What is wrong with a provider URL (null: nothing): the egress policy's URL checks (http or https,
 * no credentials, no link-local, metadata or reserved literal address); with httpsUnlessLoopback,
 * http only on a loopback host.
 */
export function urlProblem(raw: string, opts: { httpsUnlessLoopback: boolean }): string | null {
  const problem = egressUrlProblem(raw);
  if (problem) return problem;
  const u = new URL(raw);
  if (u.hash) return 'must not have a fragment';
  if (opts.httpsUnlessLoopback && u.protocol === 'http:' && !isLoopback(u.hostname)) return 'must use https (http only on a loopback address)';
  return null;
}

/**
 * Checks and completes a kind's configuration (defaults filled in); 422 naming config.<field>. A *Ref
 * never names one of the service's own settings (encryption keys, the session secret...) nor a
 * variable designated for connector credentials (`connectors`: a tenant's connector could send it).
 */
export function normalizeConfig(kind: 'oidc' | 'saml', input: unknown, connectors: CredentialPolicy): OidcConfig | SamlConfig {
  const errors: Record<string, string> = {};
  const refProblem = (field: string, value: string) => {
    if (isServiceVariable(value)) errors[`config.${field}`] = 'must not name one of the service\'s own settings';
    else if (credentialNameProblem(value, connectors) === null) errors[`config.${field}`] = 'must not name a variable designated for connector credentials (SVC_CONNECTOR_SECRET_PREFIX, SVC_CONNECTOR_SECRET_NAMES)';
  };
  if (kind === 'oidc') {
    const c = checkConfigShape('oidc', input) as OidcConfig & { scopes?: string[]; claimMapping?: Partial<OidcConfig['claimMapping']> };
    const issuer = urlProblem(c.issuer, { httpsUnlessLoopback: true });
    if (issuer) errors['config.issuer'] = issuer;
    else if (new URL(c.issuer).search) errors['config.issuer'] = 'must not have a query';
    refProblem('clientSecretRef', c.clientSecretRef);
    const scopes = [...new Set(c.scopes ?? ['openid', 'email', 'profile'])];
    if (!scopes.includes('openid')) errors['config.scopes'] = 'must include openid';
    if (Object.keys(errors).length) throw validationFailed(errors);
    const m = c.claimMapping ?? {};
    return {
      issuer: c.issuer, clientId: c.clientId, clientSecretRef: c.clientSecretRef, scopes,
      claimMapping: { email: m.email ?? 'email', name: m.name ?? 'name', ...(m.subject ? { subject: m.subject } : {}) },
    };
  }
  const c = checkConfigShape('saml', input) as SamlConfig & { attributeMapping?: Partial<SamlConfig['attributeMapping']> };
  const sso = urlProblem(c.ssoUrl, { httpsUnlessLoopback: false });
  if (sso) errors['config.ssoUrl'] = sso;
  refProblem('idpCertRef', c.idpCertRef);
  if (Object.keys(errors).length) throw validationFailed(errors);
  const m = c.attributeMapping ?? {};
  return {
    idpEntityId: c.idpEntityId, ssoUrl: c.ssoUrl, idpCertRef: c.idpCertRef, spEntityId: c.spEntityId,
    attributeMapping: { email: m.email ?? 'email', name: m.name ?? 'name' },
  };
}

/** An organization role stands alone; a workspace role needs a workspace of the provider's organization. */
async function checkBinding(ctx: Ctx, organizationId: string, workspaceId: string | null, role: string): Promise<void> {
  if (workspaceId === null) {
    if (!PROVIDER_ORG_ROLES.includes(role)) {
      throw validationFailed({ defaultRole: `without workspaceId must be one of ${PROVIDER_ORG_ROLES.join(', ')}` });
    }
    return;
  }
  if ((await workspaceById(ctx.db, workspaceId))?.organization_id !== organizationId) throw validationFailed({ workspaceId: 'names no workspace of the organization' });
  if (!PROVIDER_WORKSPACE_ROLES.includes(role)) {
    throw validationFailed({ defaultRole: `with workspaceId must be one of ${PROVIDER_WORKSPACE_ROLES.join(', ')}` });
  }
}

export interface ProviderInput {
  kind: 'oidc' | 'saml'; name: string; organizationId: string; workspaceId?: string | null; defaultRole?: string;
  status?: 'active' | 'disabled'; config: Record<string, unknown>;
}

export async function createProvider(ctx: Ctx, input: ProviderInput): Promise<ProviderRow> {
  requireSystemAdmin(ctx);
  if (!await organizationById(ctx.db, input.organizationId)) throw validationFailed({ organizationId: 'names no organization' });
  const workspaceId = input.workspaceId ?? null;
  const role = input.defaultRole ?? 'org_member';
  await checkBinding(ctx, input.organizationId, workspaceId, role);
  const config = normalizeConfig(input.kind, input.config, credentialPolicy(ctx.config));
  const now = ctx.now().toISOString();
  const p: ProviderRow = {
    id: newId('idp'), kind: input.kind, name: input.name, organization_id: input.organizationId, workspace_id: workspaceId,
    default_role: role, status: input.status ?? 'active', config: JSON.stringify(config), created_by: ctx.actor.userId,
    created_at: now, updated_at: now, probed_at: null, probe_status: null, probe_detail: null,
  };
  await ctx.db.tx(async () => {
    await insertProvider(ctx.db, p);
    await record(ctx, {
      action: 'identity_provider.created', targetType: 'identity_provider', targetId: p.id,
      organizationId: p.organization_id, workspaceId: null, projectId: null,
      metadata: { kind: p.kind, name: p.name, workspaceId, defaultRole: role, status: p.status, config },
    });
  });
  return p;
}

/** The provider (system administrators only); `read` { forUpdate } for the change computed from it (src/db/dialect.ts RowRead). */
export async function providerOrFail(ctx: Ctx, providerId: string, read?: RowRead): Promise<ProviderRow> {
  requireSystemAdmin(ctx);
  const p = await providerById(ctx.db, providerId, read);
  if (!p) throw notFound('no such identity provider');
  return p;
}

export async function listProvidersOf(ctx: Ctx, f: { organizationId?: string; kind?: 'oidc' | 'saml'; status?: 'active' | 'disabled' }): Promise<ProviderRow[]> {
  requireSystemAdmin(ctx);
  return (await listProviders(ctx.db, { organizationId: f.organizationId, status: f.status })).filter((p) => !f.kind || p.kind === f.kind);
}

export interface ProviderPatch {
  name?: string; workspaceId?: string | null; defaultRole?: string; status?: 'active' | 'disabled'; config?: Record<string, unknown>;
}

/**
 * Renames, rebinds the workspace and default role (for members created from now on), disables or
 * re-enables, or changes the configuration (given fields merged, then checked as a whole; the last
 * probe is cleared since it no longer describes the configuration).
 */
export async function updateProviderFields(ctx: Ctx, providerId: string, patch: ProviderPatch): Promise<ProviderRow> {
  if (Object.values(patch).every((x) => x === undefined)) throw validationFailed({ body: 'name name, workspaceId, defaultRole, status or config' });
  return await ctx.db.tx(async () => {
    const p = await providerOrFail(ctx, providerId, { forUpdate: true });
    const workspaceId = patch.workspaceId !== undefined ? patch.workspaceId
      // A new organization role without a workspace named drops the workspace.
      : patch.defaultRole !== undefined && (ORG_ROLES as readonly string[]).includes(patch.defaultRole) ? null : p.workspace_id;
    const role = patch.defaultRole ?? p.default_role;
    await checkBinding(ctx, p.organization_id, workspaceId, role);
    const config = patch.config === undefined ? p.config
      : JSON.stringify(normalizeConfig(p.kind, { ...(JSON.parse(p.config) as Record<string, unknown>), ...patch.config }, credentialPolicy(ctx.config)));
    const configChanged = config !== p.config;
    const next: ProviderRow = {
      ...p, name: patch.name ?? p.name, workspace_id: workspaceId, default_role: role, status: patch.status ?? p.status, config,
      updated_at: ctx.now().toISOString(),
      ...(configChanged ? { probed_at: null, probe_status: null, probe_detail: null } : {}),
    };
    const changes: Record<string, { from: unknown; to: unknown }> = {};
    for (const [key, col] of [['name', 'name'], ['workspaceId', 'workspace_id'], ['defaultRole', 'default_role'], ['status', 'status']] as const) {
      if (next[col] !== p[col]) changes[key] = { from: p[col], to: next[col] };
    }
    if (configChanged) changes.config = { from: JSON.parse(p.config), to: JSON.parse(config) };
    if (Object.keys(changes).length === 0) return p;
    await updateProvider(ctx.db, next);
    await record(ctx, {
      action: 'identity_provider.updated', targetType: 'identity_provider', targetId: p.id,
      organizationId: p.organization_id, workspaceId: null, projectId: null, metadata: { changes },
    });
    return next;
  });
}
