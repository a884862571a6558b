// Scope resolution and the route's access rule, before any handler runs:
// user -> organization -> workspace -> project -> permission. A request names its scope by ids in its
// path or, for that request only, with the Svc-Scope header (any caller); else a person acts in the
// session's current scope. An API client acts inside its binding with exactly its permissions, and
// only on routes guarded by a permission.
import type { IncomingMessage } from 'node:http';
import type { Config } from '../kernel/config.ts';
import type { Db } from '../db/db.ts';
import { withinBinding, type Actor, type ApiClientBinding, type Ctx } from '../directory/context.ts';
import { setSessionScope } from '../directory/sessions/store.ts';
import { record } from '../platform/audit/service.ts';
import { hasPermission, type MembershipRow, type ScopeIds } from '../directory/roles.ts';
import { fillScope, firstScope, orgRoleOf, resolveScope, scopeStillVisible, selectScope, type ScopeRequest } from '../directory/tenancy/scope.ts';
import { membershipsOfUser, organizationById, projectById, workspaceById } from '../directory/tenancy/store.ts';
import type { Authenticated } from './auth.ts';
import { forbidden, permissionDenied, scopeForbidden, validationFailed } from '../kernel/errors.ts';
import type { RouteMeta } from '../http/router.ts';
import { SCOPE_HEADER, SCOPE_PAIR_SOURCE, SCOPE_SELECTOR_MAX } from '../http/scope-header.ts';

const header = (req: IncomingMessage, name: string): string | null => {
  const v = req.headers[name];
  return typeof v === 'string' && v !== '' ? v : null;
};

const SELECTOR_KEYS = { organization: 'organizationId', workspace: 'workspaceId', project: 'projectId' } as const;
const SELECTOR_PAIR = new RegExp(`^${SCOPE_PAIR_SOURCE}$`);
const SELECTOR_RULE = 'must be organization=<id>, workspace=<id> and/or project=<id>, each at most once, separated by ";"';

/** Where a request named its scope: ids in the route's path, the Svc-Scope header, or the development headers. */
export type ScopeSource = 'path' | 'Svc-Scope' | 'x-*-id' | 'PATCH /api/context';
export interface AskedScope extends ScopeRequest { via: ScopeSource }

/**
 * The scope a request names explicitly, or null when it names none: ids in the path win; then the
 * Svc-Scope header (any caller); then, only with SVC_ALLOW_DEV_CONTEXT=1, the x-organization-id /
 * x-workspace-id / x-project-id development headers. A malformed Svc-Scope is 422 validation_failed.
 */
export function requestedScope(config: Config, req: IncomingMessage, params: Record<string, string>): AskedScope | null {
  if (params.organizationId || params.workspaceId || params.projectId) {
    return { organizationId: params.organizationId, workspaceId: params.workspaceId, projectId: params.projectId, via: 'path' };
  }
  const selector = req.headers[SCOPE_HEADER];
  if (selector !== undefined) return { ...parseSelector(String(selector)), via: 'Svc-Scope' };
  if (config.allowDevContext) {
    const dev: AskedScope = {
      organizationId: header(req, 'x-organization-id'), workspaceId: header(req, 'x-workspace-id'), projectId: header(req, 'x-project-id'), via: 'x-*-id',
    };
    if (dev.organizationId || dev.workspaceId || dev.projectId) return dev;
  }
  return null;
}

/** `project=prj_1` or `organization=org_1; workspace=wsp_2` (a repeated header arrives joined by ", ": a comma separates too). */
function parseSelector(value: string): ScopeRequest {
  const refused = () => validationFailed({ 'Svc-Scope': SELECTOR_RULE });
  if (value.length > SCOPE_SELECTOR_MAX) throw refused();
  const out: ScopeRequest = {};
  for (const part of value.split(/[;,]/)) {
    const m = SELECTOR_PAIR.exec(part);
    if (!m) throw refused();
    const key = SELECTOR_KEYS[m[1] as keyof typeof SELECTOR_KEYS];
    if (out[key] !== undefined) throw refused();
    out[key] = m[2];
  }
  return out;
}

/**
 * The scope a request acts in (`asked` from requestedScope). Ids in the path are checked strictly
 * (403 scope_forbidden); a selector (Svc-Scope or the development headers) exactly like PATCH
 * /api/context, for this request only: the session's stored scope is never changed by it. Without
 * either, the session's current scope, which falls back to the first visible one when access to it
 * was lost. An API client acts inside its binding (clientScope).
 */
export async function resolveRequestScope(db: Db, auth: Authenticated, asked: AskedScope | null): Promise<ResolvedScope> {
  const actor = auth.actor;
  if (actor.apiClient) return { scope: await clientScope(db, actor.apiClient, asked), memberships: [] };
  // A person's scope follows from the key below and reads behind the read cache only, so it is kept
  // with them (any write empties it) and a request in a known scope resolves it with one await. The
  // session's stored scope is in the key: the row it came from may be older than the cache.
  const s = auth.session;
  const key = JSON.stringify(asked
    ? [actor.userId, actor.isSystemAdmin, asked.via, asked.organizationId ?? null, asked.workspaceId ?? null, asked.projectId ?? null]
    : [actor.userId, actor.isSystemAdmin, s?.id ?? null, s?.organization_id ?? null, s?.workspace_id ?? null, s?.project_id ?? null]);
  return await db.cachedDerived(`scope:${key}`, async (): Promise<ResolvedScope> => {
    const memberships = actor.userId ? await membershipsOfUser(db, actor.userId) : [];
    if (!asked) return Object.freeze({ scope: Object.freeze(await sessionScope(db, actor, memberships, auth)), memberships });
    const scope = asked.via === 'path' ? await resolveScope(db, actor, memberships, asked) : await selectScope(db, actor, memberships, asked);
    return Object.freeze({ scope: Object.freeze(scope), memberships });
  });
}

/** A request's resolved scope and the person's memberships (frozen: shared by the requests that resolve it alike). */
export interface ResolvedScope { readonly scope: ScopeIds; readonly memberships: MembershipRow[] }

/**
 * An API client's scope: the one the request names (path, Svc-Scope, or the development headers when
 * enabled), else its binding. Named ids are resolved down the hierarchy and must lie at or below the
 * binding; anything else (unknown, inconsistent, another project, or wider than the binding) is 403
 * scope_forbidden. Nothing is filled in below a named level.
 */
async function clientScope(db: Db, b: ApiClientBinding, asked: ScopeRequest | null): Promise<ScopeIds> {
  if (!asked || (!asked.organizationId && !asked.workspaceId && !asked.projectId)) {
    return { organizationId: b.organizationId, workspaceId: b.workspaceId, projectId: b.projectId };
  }
  let scope: ScopeIds | null = null;
  if (asked.projectId) {
    const p = await projectById(db, asked.projectId);
    if (p && (!asked.workspaceId || asked.workspaceId === p.workspace_id) && (!asked.organizationId || asked.organizationId === p.organization_id)) {
      scope = { organizationId: p.organization_id, workspaceId: p.workspace_id, projectId: p.id };
    }
  } else if (asked.workspaceId) {
    const w = await workspaceById(db, asked.workspaceId);
    if (w && (!asked.organizationId || asked.organizationId === w.organization_id)) {
      scope = { organizationId: w.organization_id, workspaceId: w.id, projectId: null };
    }
  } else if (await organizationById(db, asked.organizationId!)) {
    scope = { organizationId: asked.organizationId!, workspaceId: null, projectId: null };
  }
  if (!scope || !withinBinding(b, scope)) throw scopeForbidden('that scope is outside this API client\u2019s binding');
  return scope;
}

/**
 * A refused attempt to reach an organization, workspace or project the caller may not act in (named
 * in the path, by a scope selector or in PATCH /api/context): audited as access.denied.
 */
export async function auditScopeDenied(ctx: Ctx, route: string, asked: AskedScope, reason: string): Promise<void> {
  const [targetType, targetId] = asked.projectId ? ['project', asked.projectId]
    : asked.workspaceId ? ['workspace', asked.workspaceId] : ['organization', asked.organizationId];
  await record(ctx, {
    action: 'access.denied', targetType, targetId, result: 'denied',
    organizationId: asked.organizationId ?? null, workspaceId: asked.workspaceId ?? null, projectId: asked.projectId ?? null,
    metadata: { route, reason, via: asked.via },
  });
}

async function sessionScope(db: Db, actor: Actor, ms: MembershipRow[], auth: Authenticated): Promise<ScopeIds> {
  const s = auth.session;
  const stored: ScopeIds = s
    ? { organizationId: s.organization_id, workspaceId: s.workspace_id, projectId: s.project_id }
    : { organizationId: null, workspaceId: null, projectId: null };
  let scope = stored;
  if (!scopeStillVisible(actor, ms, stored)) scope = await firstScope(db, actor, ms);
  else if (!stored.projectId) scope = await fillScope(db, actor, ms, stored.organizationId ? stored : await firstScope(db, actor, ms));
  if (s && (scope.organizationId !== stored.organizationId || scope.workspaceId !== stored.workspaceId || scope.projectId !== stored.projectId)) {
    await setSessionScope(db, s.id, scope.organizationId, scope.workspaceId, scope.projectId);
  }
  return scope;
}

const LEVEL_NAME = { organization: 'an organization', workspace: 'a workspace', project: 'a project' } as const;

/** Checks the route's declared rule against the actor in the resolved scope; throws 403 when it fails. */
export function checkAccess(meta: RouteMeta, ctx: Ctx): void {
  const { actor, scope, memberships, permissions } = ctx;
  const level = meta.scope ?? 'none';
  if (level !== 'none') {
    const have = level === 'organization' ? scope.organizationId : level === 'workspace' ? scope.workspaceId : scope.projectId;
    if (!have) {
      throw scopeForbidden(actor.apiClient
        ? `this route needs ${LEVEL_NAME[level]} in scope; name it with the Svc-Scope header, e.g. "Svc-Scope: ${level}=<id>" (inside the client's binding)`
        : `this route needs ${LEVEL_NAME[level]} in scope; choose one with PATCH /api/context, or for one request with the Svc-Scope header`);
    }
  }
  if (meta.systemAdmin && !actor.isSystemAdmin) {
    throw forbidden('permission_denied', 'only a system administrator may do this');
  }
  if (meta.orgRoles && !actor.isSystemAdmin) {
    const role = scope.organizationId ? orgRoleOf(memberships, scope.organizationId) : null;
    if (!role || !meta.orgRoles.includes(role)) {
      throw forbidden('permission_denied', `one of the organization roles ${meta.orgRoles.join(', ')} is required`);
    }
  }
  if (actor.apiClient && !meta.permission) {
    // API clients act only through permission-guarded routes; the others are a person's (me, sessions, context, ...).
    throw forbidden('permission_denied', 'an API client may call only routes that require a permission; this one needs a user session');
  }
  if (meta.permission) {
    const wanted = Array.isArray(meta.permission) ? meta.permission : [meta.permission];
    if (!wanted.some((p) => hasPermission(permissions, p)) && !holdsProjectRole(ctx, meta.projectRoles)) {
      throw permissionDenied([...wanted, ...(meta.projectRoles ?? []).map((r) => `project role ${r}`)].join(' or '));
    }
  }
}

/** True when a person holds one of the roles in the project in scope (never an API client: it has permissions only). */
function holdsProjectRole(ctx: Ctx, roles: RouteMeta['projectRoles']): boolean {
  const projectId = ctx.scope.projectId;
  if (!roles || !projectId || ctx.actor.apiClient) return false;
  return ctx.memberships.some((m) => m.level === 'project' && m.project_id === projectId && (roles as readonly string[]).includes(m.role));
}
