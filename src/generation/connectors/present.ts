// Connectors as the API and the protocols see them. The credential is never stored, so it can never
// be shown: authEnv is a variable NAME, authConfigured says whether that variable is set in this
// process now, and only for a name designated for connector credentials (src/kernel/credentials.ts:
// the presence of any other variable is nobody's business). Holders of model:manage see the full record; job readers see no endpoint.
import * as o from '../../kernel/view.ts';
import { CONNECTOR_KINDS, CONNECTOR_STATUSES, COST_MODES, WORK_KINDS, type ConnectorKind, type ConnectorProtocol, type ConnectorSpec, type ConnectorStatus, type CostMode, type WorkKind } from './protocols/types.ts';
import type { ConnectorRow, SpecRow } from './store.ts';
import { credentialPresent, type CredentialPolicy } from '../../kernel/credentials.ts';

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
export function connectorSpec(row: SpecRow): ConnectorSpec {
  return {
    id: row.id, label: row.label, endpoint: row.endpoint, kind: row.kind as ConnectorKind,
    capability: capabilityOf(row), costMode: row.cost_mode as CostMode, authEnv: row.auth_env, protocol: protocolOf(row),
  };
}


export const ConnectorSummaryView = o.named('ConnectorSummary', o.object({
  id: o.text(), label: o.text(), kind: o.oneOf(CONNECTOR_KINDS), capability: o.array(o.oneOf(WORK_KINDS), 'kinds of work the connector serves'),
  costMode: o.oneOf(COST_MODES), status: o.oneOf(CONNECTOR_STATUSES),
}, 'a model connector as job readers see it (no endpoint)'));

export const ConnectorView = o.named('Connector', o.extend(ConnectorSummaryView, {
  endpoint: o.text({ description: 'the base URL requests go to' }),
  authEnv: o.nullable(o.text({ description: 'the NAME of the environment variable holding the credential; never its value' })),
  authConfigured: o.bool('whether that variable is set in the service now (only for names designated for connector credentials)'),
  protocol: o.object({
    healthRoute: o.nullable(o.text()), routes: o.record(o.text(), 'route of each kind of work'), models: o.record(o.text(), 'model name of each kind of work'),
    workflow: o.nullable(o.anyObject('the ComfyUI workflow, as registered')),
  }),
  approvedBy: o.nullable(o.text()), approvedAt: o.nullable(o.time()),
  lastProbe: o.object({
    at: o.nullable(o.time()), ok: o.nullable(o.bool()), latencyMs: o.nullable(o.int()), httpStatus: o.nullable(o.int()), error: o.nullable(o.text()),
  }, 'the last health probe (all null before the first)'),
  createdAt: o.time(), updatedAt: o.time(),
}, 'a model connector (the full record, for model:manage)'));

export type ConnectorSummary = o.Out<typeof ConnectorSummaryView>;
export type ConnectorDetail = o.Out<typeof ConnectorView>;

type Full = { full: true; credentials: CredentialPolicy };
export function presentConnector(row: ConnectorRow, opts: Full): ConnectorDetail;
export function presentConnector(row: ConnectorRow, opts: { full: false }): ConnectorSummary;
export function presentConnector(row: ConnectorRow, opts: Full | { full: false }): ConnectorDetail | ConnectorSummary {
  const summary: ConnectorSummary = {
    id: row.id, label: row.label, kind: row.kind as ConnectorKind, capability: capabilityOf(row) as WorkKind[], costMode: row.cost_mode as CostMode, status: row.status as ConnectorStatus,
  };
  if (!opts.full) return summary;
  const p = protocolOf(row);
  return {
    id: row.id, label: row.label, endpoint: row.endpoint, kind: summary.kind, capability: summary.capability, costMode: summary.costMode,
    authEnv: row.auth_env, authConfigured: credentialPresent(row.auth_env, opts.credentials),
    protocol: { healthRoute: p.healthRoute ?? null, routes: (p.routes ?? {}) as Record<string, string>, models: (p.models ?? {}) as Record<string, string>, workflow: p.workflow ?? null },
    status: summary.status, approvedBy: row.approved_by, approvedAt: row.approved_at,
    lastProbe: {
      at: row.last_probe_at, ok: row.last_probe_ok === null ? null : row.last_probe_ok === 1,
      latencyMs: row.last_probe_latency_ms, httpStatus: row.last_probe_status, error: row.last_probe_error,
    },
    createdAt: row.created_at, updatedAt: row.updated_at,
  };
}
