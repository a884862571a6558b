// Audit rows as the API shows them (camelCase, metadata parsed; the log never holds secrets), and
// as CSV lines (the kernel's cells: RFC 4180 quoting, CRLF, formula-injection guard).
import type { AuditRow } from './store.ts';
import * as o from '../../kernel/view.ts';
import { csvCell } from '../../kernel/export-stream.ts';

export function parseMetadata(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export const ACTOR_TYPES = ['user', 'operator', 'system', 'anonymous', 'api_client'] as const;
export const AUDIT_RESULTS = ['success', 'failure', 'denied'] as const;

export const AuditRecordView = o.named('AuditRecord', o.object({
  id: o.text(), seq: o.int('position in the hash chain'), createdAt: o.time(),
  actorType: o.oneOf(ACTOR_TYPES), actorUserId: o.nullable(o.text()), actorName: o.nullable(o.text()),
  organizationId: o.nullable(o.text()), workspaceId: o.nullable(o.text()), projectId: o.nullable(o.text()),
  action: o.text({ description: 'what happened, e.g. auth.login.succeeded, project.created' }),
  targetType: o.nullable(o.text()), targetId: o.nullable(o.text()),
  result: o.oneOf(AUDIT_RESULTS),
  metadata: o.anything('details of the event (JSON; never a secret)'),
  ip: o.nullable(o.text()), userAgent: o.nullable(o.text()), requestId: o.nullable(o.text()),
  prevHash: o.nullable(o.text({ description: 'hash of the previous record (SHA-256, hex)' })), hash: o.nullable(o.text({ description: 'SHA-256 over this record and prevHash, hex' })),
}, 'one audit log record'));

export function presentAudit(r: AuditRow): o.Out<typeof AuditRecordView> {
  return {
    id: r.id,
    seq: r.seq,
    createdAt: r.created_at,
    actorType: r.actor_type as (typeof ACTOR_TYPES)[number],
    actorUserId: r.actor_user_id,
    actorName: r.actor_name,
    organizationId: r.organization_id,
    workspaceId: r.workspace_id,
    projectId: r.project_id,
    action: r.action,
    targetType: r.target_type,
    targetId: r.target_id,
    result: r.result,
    metadata: parseMetadata(r.metadata),
    ip: r.ip,
    userAgent: r.user_agent,
    requestId: r.request_id,
    prevHash: r.prev_hash,
    hash: r.hash,
  };
}

export type PresentedAudit = Awaited<ReturnType<typeof presentAudit>>;

/** CSV columns: the API's field names, in this order; metadata as its JSON text. */
export const CSV_COLUMNS = [
  'seq', 'id', 'createdAt', 'actorType', 'actorUserId', 'actorName', 'organizationId', 'workspaceId', 'projectId',
  'action', 'targetType', 'targetId', 'result', 'metadata', 'ip', 'userAgent', 'requestId', 'prevHash', 'hash',
] as const;

const CSV_ROW_FIELDS: ReadonlyArray<keyof AuditRow> = [
  'seq', 'id', 'created_at', 'actor_type', 'actor_user_id', 'actor_name', 'organization_id', 'workspace_id', 'project_id',
  'action', 'target_type', 'target_id', 'result', 'metadata', 'ip', 'user_agent', 'request_id', 'prev_hash', 'hash',
];

export const CSV_HEADER = CSV_COLUMNS.join(',') + '\r\n';

export function csvLine(r: AuditRow): string {
  let line = '';
  for (let i = 0; i < CSV_ROW_FIELDS.length; i++) line += (i ? ',' : '') + csvCell(r[CSV_ROW_FIELDS[i]]);
  return line + '\r\n';
}
