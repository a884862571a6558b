// audit.record(ctx, entry): one append-only row with who (actor id and name at the time), where
// (organization, workspace, project), what (action, target, result, metadata) and how (ip, user
// agent, request id). Metadata must never hold secrets: only hashes, hints and variable names.
import type { Ctx } from '../context.ts';
import { newId } from '../lib/ids.ts';
import { insertAudit } from './store.ts';

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

export function record(ctx: Ctx, e: AuditEntry): string {
  const id = newId('aud');
  const pick = <K extends 'organizationId' | 'workspaceId' | 'projectId'>(k: K) => (e[k] !== undefined ? e[k]! : ctx.scope[k]);
  insertAudit(ctx.db, {
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
