// SQL of the append-only audit log.
import type { Db } from '../db/db.ts';

export interface AuditRow {
  seq: number;
  id: string;
  created_at: string;
  actor_type: string;
  actor_user_id: string | null;
  actor_name: string | null;
  organization_id: string | null;
  workspace_id: string | null;
  project_id: string | null;
  action: string;
  target_type: string | null;
  target_id: string | null;
  result: 'success' | 'failure' | 'denied';
  metadata: string;
  ip: string | null;
  user_agent: string | null;
  request_id: string | null;
}

export function insertAudit(db: Db, r: Omit<AuditRow, 'seq'>): void {
  db.run(
    `INSERT INTO audit_log (id, created_at, actor_type, actor_user_id, actor_name, organization_id, workspace_id,
       project_id, action, target_type, target_id, result, metadata, ip, user_agent, request_id)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    r.id, r.created_at, r.actor_type, r.actor_user_id, r.actor_name, r.organization_id, r.workspace_id,
    r.project_id, r.action, r.target_type, r.target_id, r.result, r.metadata, r.ip, r.user_agent, r.request_id,
  );
}
