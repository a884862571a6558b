// SQL of model connectors; every statement names the organization.
import type { Db } from '../../db/db.ts';
import { lockClause, type RowRead } from '../../db/dialect.ts';

export interface ConnectorRow {
  id: string; organization_id: string; label: string; endpoint: string; kind: string;
  /** JSON array of kinds of work. */
  capability: string;
  cost_mode: string; auth_env: string | null;
  /** JSON object (ConnectorProtocol). */
  protocol: string;
  status: string; approved_by: string | null; approved_at: string | null;
  last_probe_at: string | null; last_probe_ok: number | null; last_probe_latency_ms: number | null;
  last_probe_status: number | null; last_probe_error: string | null;
  created_by: string | null; created_at: string; updated_at: string;
}

/** The columns a call is made from (present.ts connectorSpec): what the worker's claim reads with each job. */
export const SPEC_COLUMNS = ['id', 'label', 'endpoint', 'kind', 'capability', 'cost_mode', 'auth_env', 'protocol'] as const;
export type SpecRow = Pick<ConnectorRow, (typeof SPEC_COLUMNS)[number]>;

export async function insertConnector(db: Db, c: ConnectorRow): Promise<void> {
  await db.run(
    `INSERT INTO model_connectors (id, organization_id, label, endpoint, kind, capability, cost_mode, auth_env, protocol, status,
       approved_by, approved_at, last_probe_at, last_probe_ok, last_probe_latency_ms, last_probe_status, last_probe_error,
       created_by, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    c.id, c.organization_id, c.label, c.endpoint, c.kind, c.capability, c.cost_mode, c.auth_env, c.protocol, c.status,
    c.approved_by, c.approved_at, c.last_probe_at, c.last_probe_ok, c.last_probe_latency_ms, c.last_probe_status, c.last_probe_error,
    c.created_by, c.created_at, c.updated_at,
  );
}

/** Writes every mutable column of the row (configuration, status, approval, last probe). */
export async function updateConnector(db: Db, c: ConnectorRow): Promise<void> {
  await db.run(
    `UPDATE model_connectors SET label = ?, endpoint = ?, kind = ?, capability = ?, cost_mode = ?, auth_env = ?, protocol = ?, status = ?,
       approved_by = ?, approved_at = ?, last_probe_at = ?, last_probe_ok = ?, last_probe_latency_ms = ?, last_probe_status = ?,
       last_probe_error = ?, updated_at = ? WHERE id = ? AND organization_id = ?`,
    c.label, c.endpoint, c.kind, c.capability, c.cost_mode, c.auth_env, c.protocol, c.status,
    c.approved_by, c.approved_at, c.last_probe_at, c.last_probe_ok, c.last_probe_latency_ms, c.last_probe_status,
    c.last_probe_error, c.updated_at, c.id, c.organization_id,
  );
}

export function connectorById(db: Db, organizationId: string, id: string, read?: RowRead): Promise<ConnectorRow | undefined> {
  return db.get<ConnectorRow>(`SELECT * FROM model_connectors WHERE organization_id = ? AND id = ?${lockClause(db, read)}`, organizationId, id);
}

/** Every connector of the organization, oldest first. */
export function connectorsOfOrg(db: Db, organizationId: string): Promise<ConnectorRow[]> {
  return db.all<ConnectorRow>('SELECT * FROM model_connectors WHERE organization_id = ? ORDER BY created_at, id', organizationId);
}

export interface ConnectorFilter { status: string | null; kind: string | null; costMode: string | null; limit: number; offset: number }

/** One page of the organization's connectors, newest first, with the filtered total. */
export async function pageConnectors(db: Db, organizationId: string, f: ConnectorFilter): Promise<{ rows: ConnectorRow[]; total: number }> {
  const where = 'organization_id = ?1 AND (status = ?2 OR ?2 IS NULL) AND (kind = ?3 OR ?3 IS NULL) AND (cost_mode = ?4 OR ?4 IS NULL)';
  const total = (await db.get<{ n: number }>(`SELECT count(*) AS n FROM model_connectors WHERE ${where}`, organizationId, f.status, f.kind, f.costMode))!.n;
  const rows = await db.all<ConnectorRow>(
    `SELECT * FROM model_connectors WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT ?5 OFFSET ?6`,
    organizationId, f.status, f.kind, f.costMode, f.limit, f.offset);
  return { rows, total };
}
