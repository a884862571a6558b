// audit.record(ctx, entry): one append-only, hash-chained row with who (actor id and name at the
// time), where (organization, workspace, project), what (action, target, result, metadata) and how
// (ip, user agent, request id). Metadata must never hold secrets: only hashes, hints and variable
// names. The reads (list with facets, detail, export) are limited to the caller's audit reach
// (scope.ts).
import type { Readable } from 'node:stream';
import type { Ctx } from '../../directory/context.ts';
import { notFound, validationFailed } from '../../kernel/errors.ts';
import { newId } from '../../kernel/ids.ts';
import { exportStamp, type ExportFormat } from '../../kernel/export-stream.ts';
import { exportStream } from './export.ts';
import { FILTER_NAMES, type AuditFilters } from './schema.ts';
import { auditReach, checkNarrowing, filterWhere, reachWhere, type AuditReach } from './scope.ts';
import {
  and, auditById, facetsOf, insertAudit, openAuditCursor, pageAudit, relatedAudit, securityEventsOf,
  type AuditRow, type Facets, type Where,
} from './store.ts';

export interface AuditEntry {
  action: string;
  targetType?: string | null;
  targetId?: string | null;
  result?: 'success' | 'failure' | 'denied';
  metadata?: Record<string, unknown>;
  /** Defaults to the context's scope. */
  organizationId?: string | null;
  workspaceId?: string | null;
  projectId?: string | null;
  /** Who acted, when the context has no user yet (e.g. a login). */
  actorUserId?: string | null;
  actorName?: string | null;
}

export async function record(ctx: Ctx, e: AuditEntry): Promise<string> {
  const id = newId('aud');
  const pick = <K extends 'organizationId' | 'workspaceId' | 'projectId'>(k: K) => (e[k] !== undefined ? e[k] : ctx.scope[k]);
  await insertAudit(ctx.db, {
    id,
    created_at: ctx.now().toISOString(),
    actor_type: e.actorUserId ? 'user' : ctx.actor.type,
    actor_user_id: e.actorUserId !== undefined ? e.actorUserId : ctx.actor.userId,
    actor_name: e.actorName !== undefined ? e.actorName : ctx.actor.name,
    organization_id: pick('organizationId'),
    workspace_id: pick('workspaceId'),
    project_id: pick('projectId'),
    action: e.action,
    target_type: e.targetType ?? null,
    target_id: e.targetId ?? null,
    result: e.result ?? 'success',
    metadata: JSON.stringify(e.metadata ?? {}),
    ip: ctx.ip,
    user_agent: ctx.userAgent,
    request_id: ctx.requestId,
  });
  return id;
}

/** The caller's reach and the filtered scope as SQL; a filter crossing the reach is 403 (and audited). */
async function scoped(ctx: Ctx, f: AuditFilters, route: string): Promise<{ reach: AuditReach; where: Where }> {
  if (f.from && f.to && f.from > f.to) throw validationFailed({ to: 'must not be before from' });
  const reach = auditReach(ctx);
  try {
    await checkNarrowing(ctx.db, reach, f);
  } catch (err) {
    await record(ctx, {
      action: 'access.denied', targetType: 'audit_log', result: 'denied',
      metadata: { route, reason: 'scope_forbidden', filters: definedFilters(f) },
    });
    throw err;
  }
  return { reach, where: and(reachWhere(reach), filterWhere(ctx.db.dialect, f)) };
}

function definedFilters(f: AuditFilters): Partial<AuditFilters> {
  return Object.fromEntries(FILTER_NAMES.filter((k) => f[k] !== undefined && f[k] !== '').map((k) => [k, f[k]]));
}

export interface AuditPage {
  rows: AuditRow[];
  total: number;
  facets: Facets;
  reach: AuditReach;
}

export async function listAudit(ctx: Ctx, f: AuditFilters, page: { limit: number; offset: number }): Promise<AuditPage> {
  const { reach, where } = await scoped(ctx, f, 'GET /api/audit');
  const { total, facets } = await facetsOf(ctx.db, where);
  return { rows: await pageAudit(ctx.db, where, page.limit, page.offset), total, facets, reach };
}

export interface AuditDetail { row: AuditRow; related: AuditRow[]; securityEvents: AuditRow[] }

/**
 * One record in the caller's reach (404 otherwise), with the other records of its target and the
 * account-security events (auth.*, user.*) of its user: the actor, or else the target user.
 */
export async function auditDetail(ctx: Ctx, auditId: string): Promise<AuditDetail> {
  const scope = reachWhere(auditReach(ctx));
  const row = await auditById(ctx.db, auditId, scope);
  if (!row) throw notFound('no such audit record in your audit scope');
  const userId = row.actor_user_id ?? (row.target_type === 'user' ? row.target_id : null);
  return {
    row,
    related: await relatedAudit(ctx.db, row, scope),
    securityEvents: userId ? await securityEventsOf(ctx.db, userId, row.id, scope) : [],
  };
}

export interface AuditExport { stream: Readable; format: ExportFormat; filename: string }

/**
 * Records `audit.exported`, then streams the matching records (newest first, as the list; with a
 * page, exactly the list's page) from one snapshot taken after that record, which it includes.
 */
export async function exportAudit(ctx: Ctx, f: AuditFilters, format: ExportFormat, page?: { limit: number; offset: number }): Promise<AuditExport> {
  const { reach, where } = await scoped(ctx, f, 'GET /api/audit/export');
  await record(ctx, {
    action: 'audit.exported', targetType: 'audit_log', targetId: null,
    metadata: { format, filters: definedFilters(f), scope: reach.kind, ...(page ? { page: page.offset / page.limit + 1, pageSize: page.limit } : {}) },
  });
  return { stream: exportStream(openAuditCursor(ctx.db, where, page), format), format, filename: `audit-log-${exportStamp(ctx.now())}.${format}` };
}
