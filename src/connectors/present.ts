// Connectors as the API and the protocols see them. The credential is never stored, so it can never
// be shown: authEnv is a variable NAME, authConfigured says whether that variable is set in this
// process now, and only for a name designated for connector credentials (src/connectors/credentials.ts:
// the presence of any other variable is nobody's business). Holders of model:manage see the full record; job readers see no endpoint.
import type { ConnectorKind, ConnectorProtocol, ConnectorSpec, CostMode } from './types.ts';
import type { ConnectorRow } from './store.ts';
import { credentialPresent, type CredentialPolicy } from './credentials.ts';

function parseObject(text: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? v as Record<string, unknown> : {};
  } catch {
    return {};
  }
}

function parseList(text: string): string[] {
  try {
    const v: unknown = JSON.parse(text);
    return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
  } catch {
    return [];
  }
}

const stringMap = (v: unknown): Record<string, string> =>
  typeof v === 'object' && v !== null && !Array.isArray(v)
    ? Object.fromEntries(Object.entries(v).filter((e): e is [string, string] => typeof e[1] === 'string'))
    : {};

/** The stored protocol object, with only the known members. */
export function protocolOf(row: Pick<ConnectorRow, 'protocol'>): ConnectorProtocol {
  const p = parseObject(row.protocol);
  const out: ConnectorProtocol = {};
  if (typeof p.healthRoute === 'string') out.healthRoute = p.healthRoute;
  if (p.routes !== undefined) out.routes = stringMap(p.routes);
  if (p.models !== undefined) out.models = stringMap(p.models);
  if (typeof p.workflow === 'object' && p.workflow !== null && !Array.isArray(p.workflow)) out.workflow = p.workflow as Record<string, unknown>;
  return out;
}

export const capabilityOf = (row: Pick<ConnectorRow, 'capability'>): string[] => parseList(row.capability);

/** A connector row as the protocols take it (JSON columns parsed). */
export function connectorSpec(row: ConnectorRow): ConnectorSpec {
  return {
    id: row.id, label: row.label, endpoint: row.endpoint, kind: row.kind as ConnectorKind,
    capability: capabilityOf(row), costMode: row.cost_mode as CostMode, authEnv: row.auth_env, protocol: protocolOf(row),
  };
}


export interface ConnectorSummary {
  id: string; label: string; kind: string; capability: string[]; costMode: string; status: string;
}

export interface ConnectorDetail extends ConnectorSummary {
  endpoint: string;
  authEnv: string | null;
  authConfigured: boolean;
  protocol: { healthRoute: string | null; routes: Record<string, string>; models: Record<string, string>; workflow: Record<string, unknown> | null };
  approvedBy: string | null;
  approvedAt: string | null;
  lastProbe: { at: string | null; ok: boolean | null; latencyMs: number | null; httpStatus: number | null; error: string | null };
  createdAt: string;
  updatedAt: string;
}

type Full = { full: true; credentials: CredentialPolicy };
export function presentConnector(row: ConnectorRow, o: Full): ConnectorDetail;
export function presentConnector(row: ConnectorRow, o: { full: false }): ConnectorSummary;
export function presentConnector(row: ConnectorRow, o: Full | { full: false }): ConnectorDetail | ConnectorSummary {
  const summary: ConnectorSummary = {
    id: row.id, label: row.label, kind: row.kind, capability: capabilityOf(row), costMode: row.cost_mode, status: row.status,
  };
  if (!o.full) return summary;
  const p = protocolOf(row);
  return {
    id: row.id, label: row.label, endpoint: row.endpoint, kind: row.kind, capability: summary.capability, costMode: row.cost_mode,
    authEnv: row.auth_env, authConfigured: credentialPresent(row.auth_env, o.credentials),
    protocol: { healthRoute: p.healthRoute ?? null, routes: (p.routes ?? {}) as Record<string, string>, models: (p.models ?? {}) as Record<string, string>, workflow: p.workflow ?? null },
    status: row.status, approvedBy: row.approved_by, approvedAt: row.approved_at,
    lastProbe: {
      at: row.last_probe_at, ok: row.last_probe_ok === null ? null : row.last_probe_ok === 1,
      latencyMs: row.last_probe_latency_ms, httpStatus: row.last_probe_status, error: row.last_probe_error,
    },
    createdAt: row.created_at, updatedAt: row.updated_at,
  };
}
