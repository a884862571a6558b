// Who sees which audit records. The reach comes from the session alone, never from input:
// the system administrator sees everything; a holder of audit:view through an organization role
// (org_owner, org_admin) sees every record of the current organization; one who holds it through a
// workspace role (producer) sees the current workspace's records plus the organization-level
// records (workspace_id IS NULL) of its organization; through a project role, the current project's
// plus the organization-level ones. Filters only narrow that reach: an organizationId, workspaceId
// or projectId filter outside it is 403 scope_forbidden (unknown ids alike), and so is a
// targetType/targetId naming an organization, workspace, project or user outside it, and an
// actorUserId naming a user outside it.
import type { Ctx } from '../../directory/context.ts';
import type { Db } from '../../db/db.ts';
import type { Dialect } from '../../db/dialect.ts';
import { likePattern } from '../../db/like.ts';
import { permissionDenied, scopeForbidden } from '../../kernel/errors.ts';
import { ROLE_PERMISSIONS, type MembershipRow } from '../../directory/roles.ts';
import { organizationById, projectById, workspaceById } from '../../directory/tenancy/store.ts';
import { userById } from '../../directory/users/store.ts';
import type { AuditFilters } from './schema.ts';
import { and, userAppearsIn, type Where } from './store.ts';

export type ReachKind = 'system' | 'organization' | 'workspace' | 'project';

export interface AuditReach {
  kind: ReachKind;
  organizationId: string | null;
  workspaceId: string | null;
  projectId: string | null;
}

const grantsAudit = (m: MembershipRow) => ROLE_PERMISSIONS[m.role].includes('audit:view');

/** The caller's audit reach in the session's current scope; 403 permission_denied without audit:view there. */
export function auditReach(ctx: Ctx): AuditReach {
  if (ctx.actor.isSystemAdmin) return { kind: 'system', organizationId: null, workspaceId: null, projectId: null };
  const { organizationId, workspaceId, projectId } = ctx.scope;
  if (!organizationId) throw permissionDenied('audit:view');
  const mine = ctx.memberships.filter((m) => m.organization_id === organizationId && grantsAudit(m));
  if (mine.some((m) => m.level === 'organization')) return { kind: 'organization', organizationId, workspaceId: null, projectId: null };
  if (workspaceId && mine.some((m) => m.level === 'workspace' && m.workspace_id === workspaceId)) {
    return { kind: 'workspace', organizationId, workspaceId, projectId: null };
  }
  if (workspaceId && projectId && mine.some((m) => m.level === 'project' && m.project_id === projectId)) {
    return { kind: 'project', organizationId, workspaceId, projectId };
  }
  throw permissionDenied('audit:view');
}

/** The reach as SQL over audit_log, built from the session's ids only. */
export function reachWhere(r: AuditReach): Where {
  switch (r.kind) {
    case 'system': return { sql: '1 = 1', params: [] };
    case 'organization': return { sql: 'organization_id = ?', params: [r.organizationId] };
    case 'workspace': return { sql: 'organization_id = ? AND (workspace_id = ? OR workspace_id IS NULL)', params: [r.organizationId, r.workspaceId] };
    case 'project': return { sql: 'organization_id = ? AND (project_id = ? OR workspace_id IS NULL)', params: [r.organizationId, r.projectId] };
  }
}

/** The kinds of object an audit filter may name that the reach is judged against. */
type Reached = 'organization' | 'workspace' | 'project' | 'user';
const REACHED: readonly string[] = ['organization', 'workspace', 'project', 'user'] satisfies Reached[];

/**
 * True when an organization, workspace, project or user lies inside the reach (unknown ids never
 * do). A workspace or organization that contains the caller's own workspace or project is inside.
 * A user is inside when it holds a membership (any status) of the reach's organization, or appears
 * in a record inside the reach as actor or target (a former member's records stay searchable).
 */
export async function inReach(db: Db, r: AuditReach, kind: Reached, id: string): Promise<boolean> {
  if (r.kind === 'system') return true;
  switch (kind) {
    case 'organization': return id === r.organizationId;
    case 'workspace': {
      const w = await workspaceById(db, id);
      return !!w && w.organization_id === r.organizationId && (r.kind === 'organization' || w.id === r.workspaceId);
    }
    case 'project': {
      const p = await projectById(db, id);
      return !!p && p.organization_id === r.organizationId
        && (r.kind !== 'workspace' || p.workspace_id === r.workspaceId)
        && (r.kind !== 'project' || p.id === r.projectId);
    }
    case 'user': {
      const member = await db.get('SELECT 1 AS x FROM memberships WHERE user_id = ? AND organization_id = ? LIMIT 1', id, r.organizationId);
      return !!member || await userAppearsIn(db, id, reachWhere(r));
    }
  }
}

/** What a bare targetId (no targetType) names among the kinds the reach is judged against, if anything. */
async function kindOf(db: Db, id: string): Promise<Reached | null> {
  if (await organizationById(db, id)) return 'organization';
  if (await workspaceById(db, id)) return 'workspace';
  if (await projectById(db, id)) return 'project';
  if (await userById(db, id)) return 'user';
  return null;
}

/**
 * Checks the scope-narrowing filters against the reach: 403 scope_forbidden for an organization,
 * workspace or project outside it (or unknown), for a targetId naming an organization, workspace,
 * project or user outside it (with that targetType, unknown ids too; without one, an id that names
 * one of them), and for an actorUserId naming a user outside it (or unknown).
 */
export async function checkNarrowing(db: Db, r: AuditReach, f: AuditFilters): Promise<void> {
  if (r.kind === 'system') return;
  const refuse = (what: string) => scopeForbidden(`the ${what} filter is outside the audit records you may see`);
  if (f.organizationId && !await inReach(db, r, 'organization', f.organizationId)) throw refuse('organizationId');
  if (f.workspaceId && !await inReach(db, r, 'workspace', f.workspaceId)) throw refuse('workspaceId');
  if (f.projectId && !await inReach(db, r, 'project', f.projectId)) throw refuse('projectId');
  if (f.targetId) {
    const kind = f.targetType ? (REACHED.includes(f.targetType) ? f.targetType as Reached : null) : await kindOf(db, f.targetId);
    if (kind && !await inReach(db, r, kind, f.targetId)) throw refuse('targetId');
  }
  if (f.actorUserId && !await inReach(db, r, 'user', f.actorUserId)) throw refuse('actorUserId');
}

const DAY_MS = 86_400_000;

/** The filters as SQL (each one narrows); the query ignores the case of ASCII letters on both engines (Dialect.likeAnyCase). */
export function filterWhere(d: Dialect, f: AuditFilters): Where {
  const eq = (column: string, value: string | undefined): Where | null => (value ? { sql: `${column} = ?`, params: [value] } : null);
  const like = f.query ? likePattern(f.query) : null;
  return and(
    eq('action', f.action), eq('target_type', f.targetType), eq('target_id', f.targetId), eq('result', f.result),
    eq('actor_user_id', f.actorUserId), eq('organization_id', f.organizationId), eq('workspace_id', f.workspaceId),
    eq('project_id', f.projectId),
    f.from ? { sql: 'created_at >= ?', params: [`${f.from}T00:00:00.000Z`] } : null,
    f.to ? { sql: 'created_at < ?', params: [new Date(Date.parse(`${f.to}T00:00:00.000Z`) + DAY_MS).toISOString()] } : null,
    like ? {
      sql: ['action', 'target_type', 'target_id', 'actor_name', 'metadata'].map((c) => `${c} ${d.likeAnyCase} ? ESCAPE '\\'`).join(' OR '),
      params: [like, like, like, like, like],
    } : null,
  );
}
