// Scope resolution and the route's access rule, before any handler runs:
// user -> organization -> workspace -> project -> permission.
import type { IncomingMessage } from 'node:http';
import type { Config } from '../config.ts';
import type { Db } from '../db/db.ts';
import type { Actor, Ctx } from '../context.ts';
import { setSessionScope } from '../auth/store.ts';
import { hasPermission, type MembershipRow, type ScopeIds } from '../tenancy/roles.ts';
import { fillScope, firstScope, orgRoleOf, resolveScope, scopeStillVisible, type ScopeRequest } from '../tenancy/scope.ts';
import { membershipsOfUser } from '../tenancy/store.ts';
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
    if (!have) throw scopeForbidden(`this route needs ${LEVEL_NAME[level]} in scope; choose one with PATCH /api/context`);
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
  if (meta.permission) {
    const wanted = Array.isArray(meta.permission) ? meta.permission : [meta.permission];
    if (!wanted.some((p) => hasPermission(permissions, p))) throw permissionDenied(wanted.join(' or '));
  }
}
