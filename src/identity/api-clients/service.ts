// API clients: service accounts for integrations, managed by the system administrator. A client is
// bound to an organization (optionally one workspace or project of it) and holds a chosen set of
// base permissions, each held by its creator in that scope. Its secret is answered once (at creation
// and at each rotation) and stored as SHA-256 with a hint. The secret buys short-lived access tokens
// (OAuth 2.0 client credentials, RFC 6749 section 4.4: POST /api/oauth/token) that act with exactly
// the client's permissions inside its binding (src/gate/auth.ts, src/gate/access.ts). Rotation and
// revocation delete every token, so both take effect on the next request. Audited as api_client.*,
// never with a secret or token.
import crypto from 'node:crypto';
import type { Ctx } from '../../directory/context.ts';
import { AppError, forbidden, notFound, validationFailed } from '../../kernel/errors.ts';
import { addressKey, type LoginLimits } from '../sessions/service.ts';
import { checkAttempt } from '../../gate/ratelimit.ts';
import { issueSecret, newId, sha256Hex } from '../../kernel/ids.ts';
import { tokenHash } from '../../directory/sessions/token-hash.ts';
import { record } from '../../platform/audit/service.ts';
import { effectivePermissions, hasPermission, PERMISSIONS, type BasePermission, type ScopeIds } from '../../directory/roles.ts';
import { organizationById, projectById, workspaceById } from '../../directory/tenancy/store.ts';
import { apiClientActor, permissionsOfRow } from '../../directory/api-clients/actor.ts';
import {
  apiClientById, deleteApiClientTokens, deleteExpiredApiClientTokens, insertApiClient, insertApiClientToken, listApiClients,
  revokeApiClientRow, setApiClientSecret, touchApiClient, type ApiClientRow,
} from '../../directory/api-clients/store.ts';

export const SECRET_PREFIX = 'svccs_';
export const TOKEN_PREFIX = 'svcat_';
export const TOKEN_TTL_SECONDS = 3600;
/** Base permissions a client could hold but never use: audit reach comes from a person's memberships. */
export const NOT_FOR_CLIENTS: readonly BasePermission[] = ['audit:view'];


/**
 * System administrators and holders of system:settings:* manage API clients. Over HTTP the routes are
 * the system administrator's (the only holder of system:settings:* in the role model); the service
 * keeps the wider rule so that the "no wider than the creator's" check stays meaningful for any caller.
 */
function requireSystemSettings(ctx: Ctx): void {
  if (ctx.actor.isSystemAdmin || hasPermission(ctx.permissions, 'system:settings:api-clients')) return;
  throw forbidden('permission_denied', 'only a system administrator may manage API clients');
}

export interface ApiClientInput {
  name: string; organizationId: string; workspaceId?: string | null; projectId?: string | null; permissions: string[];
}

/** The binding named by the input: a workspace of the organization, a project of it (and of the workspace); else 422. */
async function bindingOf(ctx: Ctx, input: ApiClientInput): Promise<ScopeIds> {
  const org = await organizationById(ctx.db, input.organizationId);
  if (!org) throw validationFailed({ organizationId: 'names no organization' });
  let workspaceId: string | null = null;
  if (input.workspaceId) {
    if ((await workspaceById(ctx.db, input.workspaceId))?.organization_id !== org.id) {
      throw validationFailed({ workspaceId: 'names no workspace of the organization' });
    }
    workspaceId = input.workspaceId;
  }
  if (input.projectId) {
    const p = await projectById(ctx.db, input.projectId);
    if (!p || p.organization_id !== org.id) throw validationFailed({ projectId: 'names no project of the organization' });
    if (workspaceId && p.workspace_id !== workspaceId) throw validationFailed({ projectId: 'names no project of the workspace' });
    return { organizationId: org.id, workspaceId: p.workspace_id, projectId: p.id };
  }
  return { organizationId: org.id, workspaceId, projectId: null };
}

/**
 * Only base permissions (never system:settings:*), each held by the creator in the bound scope (a
 * system administrator holds all); 422 naming every one not allowed. Answers them in canonical order.
 */
function checkPermissions(ctx: Ctx, wanted: string[], binding: ScopeIds): BasePermission[] {
  const base = PERMISSIONS as readonly string[];
  const held = effectivePermissions(ctx.actor.isSystemAdmin, ctx.memberships, binding) as readonly string[];
  const unique = [...new Set(wanted)];
  // System permissions, and audit:view (the audit reach of a person's memberships; a client has none).
  const system = unique.filter((p) => p.startsWith('system:') || (NOT_FOR_CLIENTS as readonly string[]).includes(p));
  const unknown = unique.filter((p) => !base.includes(p) && !p.startsWith('system:'));
  const notHeld = unique.filter((p) => base.includes(p) && !held.includes(p));
  const notAllowed = [...unknown, ...system, ...notHeld];
  if (notAllowed.length > 0) {
    const reasons = [
      unknown.length ? `unknown: ${unknown.join(', ')}` : '',
      system.length ? `not grantable to an API client: ${system.join(', ')}` : '',
      notHeld.length ? `not held by you in the bound scope: ${notHeld.join(', ')}` : '',
    ].filter(Boolean).join('; ');
    throw new AppError(422, 'validation_failed', `permissions not allowed: ${notAllowed.join(', ')} (${reasons})`, {
      fields: { permissions: `not allowed: ${notAllowed.join(', ')}` }, notAllowed,
    });
  }
  return PERMISSIONS.filter((p) => unique.includes(p));
}

const clientScope = (c: ApiClientRow) => ({ organizationId: c.organization_id, workspaceId: c.workspace_id, projectId: c.project_id });

export async function createApiClient(ctx: Ctx, input: ApiClientInput): Promise<{ client: ApiClientRow; clientSecret: string }> {
  requireSystemSettings(ctx);
  const binding = await bindingOf(ctx, input);
  const permissions = checkPermissions(ctx, input.permissions, binding);
  const s = issueSecret(SECRET_PREFIX);
  const client: ApiClientRow = {
    id: newId('apc'), organization_id: binding.organizationId!, workspace_id: binding.workspaceId, project_id: binding.projectId,
    name: input.name, permissions: JSON.stringify(permissions), secret_hash: s.hash, secret_hint: s.hint, status: 'active',
    created_by: ctx.actor.userId, created_at: ctx.now().toISOString(), rotated_at: null, revoked_at: null, revoked_by: null,
    last_used_at: null,
  };
  await ctx.db.tx(async () => {
    await insertApiClient(ctx.db, client);
    await record(ctx, {
      action: 'api_client.created', targetType: 'api_client', targetId: client.id, ...clientScope(client),
      metadata: { name: client.name, permissions, secretHint: s.hint },
    });
  });
  return { client, clientSecret: s.token };
}

export async function listApiClientsOf(ctx: Ctx, f: { organizationId?: string; status?: 'active' | 'revoked' }): Promise<ApiClientRow[]> {
  requireSystemSettings(ctx);
  return await listApiClients(ctx.db, f.organizationId ?? null, f.status ?? null);
}

export async function apiClientOrFail(ctx: Ctx, clientId: string): Promise<ApiClientRow> {
  requireSystemSettings(ctx);
  const c = await apiClientById(ctx.db, clientId);
  if (!c) throw notFound('no such API client');
  return c;
}

/** A new secret, answered once; the old secret and every issued token are refused from now on. */
export async function rotateApiClient(ctx: Ctx, clientId: string): Promise<{ client: ApiClientRow; clientSecret: string }> {
  const s = issueSecret(SECRET_PREFIX);
  const client = await ctx.db.tx(async () => {
    const c = await apiClientOrFail(ctx, clientId);
    if (c.status !== 'active') throw new AppError(409, 'api_client_revoked', 'a revoked API client cannot be rotated');
    const now = ctx.now().toISOString();
    await setApiClientSecret(ctx.db, c, s.hash, s.hint, now);
    const tokensDeleted = await deleteApiClientTokens(ctx.db, c.id);
    await record(ctx, {
      action: 'api_client.rotated', targetType: 'api_client', targetId: c.id, ...clientScope(c),
      metadata: { previousSecretHint: c.secret_hint, secretHint: s.hint, tokensDeleted },
    });
    return (await apiClientById(ctx.db, c.id))!;
  });
  return { client, clientSecret: s.token };
}

/** Revokes for good: every token deleted, the secret refused. Revoking a revoked client changes nothing. */
export async function revokeApiClient(ctx: Ctx, clientId: string): Promise<ApiClientRow> {
  return await ctx.db.tx(async () => {
    const c = await apiClientOrFail(ctx, clientId);
    if (c.status === 'revoked') return c;
    await revokeApiClientRow(ctx.db, c, ctx.now().toISOString(), ctx.actor.userId);
    const tokensDeleted = await deleteApiClientTokens(ctx.db, c.id);
    await record(ctx, {
      action: 'api_client.revoked', targetType: 'api_client', targetId: c.id, ...clientScope(c),
      metadata: { name: c.name, secretHint: c.secret_hint, tokensDeleted },
    });
    return (await apiClientById(ctx.db, c.id))!;
  });
}

export interface TokenAnswer { access_token: string; token_type: 'Bearer'; expires_in: number; scope: string }

/** RFC 6749 section 5.2 invalid_client, in the contract's error body; WWW-Authenticate when Basic was used. */
export const invalidClient = (basic: boolean) => new AppError(401, 'invalid_client',
  'client authentication failed: unknown client, wrong secret or revoked client', undefined,
  basic ? { 'www-authenticate': 'Basic realm="svc", charset="UTF-8"' } : undefined);

function secretMatches(secret: string, hash: string): boolean {
  const a = Buffer.from(sha256Hex(secret), 'hex');
  const b = Buffer.from(hash, 'hex');
  return a.length === b.length && crypto.timingSafeEqual(a, b);
}

/**
 * Client credentials -> a new access token (stored as its keyed hash, src/directory/sessions/token-hash.ts; TOKEN_TTL_SECONDS). A known client with a
 * wrong secret, or a revoked one, is audited as api_client.token_refused; every failure is 401 invalid_client.
 * Failed exchanges are limited like logins (counted and checked in one transaction): per client
 * id (SVC_LOGIN_MAX_FAILURES_PER_EMAIL) and per address (SVC_LOGIN_MAX_FAILURES_PER_ADDRESS) within
 * SVC_LOGIN_WINDOW_SECONDS, then 429 rate_limited (so the audit log cannot be flooded either).
 */
export async function issueAccessToken(ctx: Ctx, limits: LoginLimits, clientId: string, secret: string, basic: boolean): Promise<TokenAnswer> {
  const slots = [{ limit: limits.byEmail, key: `api_client:${clientId}` }, { limit: limits.byAddress, key: addressKey(ctx) }];
  const c = await checkAttempt(ctx.db, slots, ctx.now().getTime(), async () => {
    const c = await apiClientById(ctx.db, clientId);
    if (c && c.status === 'active' && secretMatches(secret, c.secret_hash)) return c;
    if (c) {
      await record({ ...ctx, actor: apiClientActor(c) }, {
        action: 'api_client.token_refused', targetType: 'api_client', targetId: c.id, result: 'failure', ...clientScope(c),
        metadata: { reason: c.status !== 'active' ? 'revoked' : 'wrong_secret' },
      });
    }
    throw invalidClient(basic);
  }, { clears: [limits.byEmail] });
  const t = issueSecret(TOKEN_PREFIX);
  const now = ctx.now();
  const expiresAt = new Date(now.getTime() + TOKEN_TTL_SECONDS * 1000).toISOString();
  await ctx.db.tx(async () => {
    await deleteExpiredApiClientTokens(ctx.db, c.id, now.toISOString());
    await insertApiClientToken(ctx.db, { token_hash: tokenHash(ctx.config, t.token), client_id: c.id, expires_at: expiresAt, created_at: now.toISOString() });
    await touchApiClient(ctx.db, c.id, now.toISOString());
    await record({ ...ctx, actor: apiClientActor(c) }, {
      action: 'api_client.token_issued', targetType: 'api_client', targetId: c.id, ...clientScope(c),
      metadata: { expiresAt },
    });
  });
  return { access_token: t.token, token_type: 'Bearer', expires_in: TOKEN_TTL_SECONDS, scope: permissionsOfRow(c).join(' ') };
}
