// Scope resolution and the route's access rule, before any handler runs:
// user -> organization -> workspace -> project -> permission. An API client acts inside its binding
// with exactly its permissions, and only on routes guarded by a permission.
import type { IncomingMessage } from 'node:http';
import type { Config } from '../config.ts';
import type { Db } from '../db/db.ts';
import { withinBinding, type Actor, type ApiClientBinding, type Ctx } from '../context.ts';
import { setSessionScope } from '../auth/store.ts';
import { hasPermission, type MembershipRow, type ScopeIds } from '../tenancy/roles.ts';
import { fillScope, firstScope, orgRoleOf, resolveScope, scopeStillVisible, type ScopeRequest } from '../tenancy/scope.ts';
import { membershipsOfUser, organizationById, projectById, workspaceById } from '../tenancy/store.ts';
import type { Authenticated } from './auth.ts';
import { forbidden, permissionDenied, scopeForbidden } from './errors.ts';
import type { RouteMeta } from './router.ts';

const header = (req: IncomingMessage, name: string): string | null => {
  const v = req.headers[name];
  return typeof v === 'string' && v !== '' ? v : null;
};

/**
 * The scope a request acts in: ids in the path win; then development headers (when enabled);
 * then the session's current scope. Explicit ids are checked strictly (403 scope_forbidden); the
 * stored session scope falls back to the first visible one when access to it was lost.
 */
export function resolveRequestScope(
  db: Db, config: Config, req: IncomingMessage, auth: Authenticated, params: Record<string, string>,
): { scope: ScopeIds; memberships: MembershipRow[] } {
  const actor = auth.actor;
  if (actor.apiClient) return { scope: clientScope(db, req, actor.apiClient, params), memberships: [] };
  const memberships = actor.userId ? membershipsOfUser(db, actor.userId) : [];
  const fromPath: ScopeRequest = { organizationId: params.organizationId, workspaceId: params.workspaceId, projectId: params.projectId };
  if (fromPath.organizationId || fromPath.workspaceId || fromPath.projectId) {
    return { scope: resolveScope(db, actor, memberships, fromPath), memberships };
  }
  if (config.allowDevContext) {
    const dev: ScopeRequest = {
      organizationId: header(req, 'x-organization-id'), workspaceId: header(req, 'x-workspace-id'), projectId: header(req, 'x-project-id'),
    };
    if (dev.organizationId || dev.workspaceId || dev.projectId) {
      return { scope: fillScope(db, actor, memberships, resolveScope(db, actor, memberships, dev)), memberships };
    }
  }
  return { scope: sessionScope(db, actor, memberships, auth), memberships };
}

/**
 * An API client's scope: ids in the path win, then the x-organization-id / x-workspace-id /
 * x-project-id headers (always honoured for clients), else its binding. Named ids are resolved down
 * the hierarchy and must lie at or below the binding; anything else (unknown, inconsistent, another
 * project, or wider than the binding) is 403 scope_forbidden.
 */
function clientScope(db: Db, req: IncomingMessage, b: ApiClientBinding, params: Record<string, string>): ScopeIds {
  const fromPath: ScopeRequest = { organizationId: params.organizationId, workspaceId: params.workspaceId, projectId: params.projectId };
  const asked: ScopeRequest = fromPath.organizationId || fromPath.workspaceId || fromPath.projectId ? fromPath
    : { organizationId: header(req, 'x-organization-id'), workspaceId: header(req, 'x-workspace-id'), projectId: header(req, 'x-project-id') };
  if (!asked.organizationId && !asked.workspaceId && !asked.projectId) {
    return { organizationId: b.organizationId, workspaceId: b.workspaceId, projectId: b.projectId };
  }
  let scope: ScopeIds | null = null;
  if (asked.projectId) {
    const p = projectById(db, asked.projectId);
    if (p && (!asked.workspaceId || asked.workspaceId === p.workspace_id) && (!asked.organizationId || asked.organizationId === p.organization_id)) {
      scope = { organizationId: p.organization_id, workspaceId: p.workspace_id, projectId: p.id };
    }
  } else if (asked.workspaceId) {
    const w = workspaceById(db, asked.workspaceId);
    if (w && (!asked.organizationId || asked.organizationId === w.organization_id)) {
      scope = { organizationId: w.organization_id, workspaceId: w.id, projectId: null };
    }
  } else if (organizationById(db, asked.organizationId!)) {
    scope = { organizationId: asked.organizationId!, workspaceId: null, projectId: null };
  }
  if (!scope || !withinBinding(b, scope)) throw scopeForbidden('that scope is outside this API client\u2019s binding');
  return scope;
}

function sessionScope(db: Db, actor: Actor, ms: MembershipRow[], auth: Authenticated): ScopeIds {
  const s = auth.session;
  const stored: ScopeIds = s
    ? { organizationId: s.organization_id, workspaceId: s.workspace_id, projectId: s.project_id }
    : { organizationId: null, workspaceId: null, projectId: null };
  let scope = stored;
  if (!scopeStillVisible(actor, ms, stored)) scope = firstScope(db, actor, ms);
  else if (!stored.projectId) scope = fillScope(db, actor, ms, stored.organizationId ? stored : firstScope(db, actor, ms));
  if (s && (scope.organizationId !== stored.organizationId || scope.workspaceId !== stored.workspaceId || scope.projectId !== stored.projectId)) {
    setSessionScope(db, s.id, scope.organizationId, scope.workspaceId, scope.projectId);
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
        ? `this route needs ${LEVEL_NAME[level]} in scope; name it with the x-${level}-id header (inside the client's binding)`
        : `this route needs ${LEVEL_NAME[level]} in scope; choose one with PATCH /api/context`);
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
    if (!wanted.some((p) => hasPermission(permissions, p))) throw permissionDenied(wanted.join(' or '));
  }
}
