// The model platform: model connector records of the session's organization. Statuses: pending
// (registered or changed, not yet probed), ready (last probe succeeded; the only status the worker
// picks up), unreachable (last probe failed), disabled, awaiting_approval (mixed or cloud without an
// administrator's approval; rule 2: never enabled automatically). A probe moves pending, ready and
// unreachable only; disabled and awaiting_approval stay, with the probe recorded. Under the billing
// account's local_runner_only, mixed and cloud connectors cannot be registered, changed to,
// approved or enabled (409 local_runner_only). Every change is audited at organization level;
// audit metadata holds the authEnv NAME, never a credential, and no endpoint (producers read
// organization-level audit records; endpoints are for model:manage holders only).
// Endpoints are judged by the egress policy (src/kernel/egress.ts) before anything is written: an
// endpoint whose literal address or resolved name is link-local, metadata or reserved is 422 naming
// endpoint, and costMode local requires loopback or private addresses (422 naming costMode
// otherwise). Every call judges the endpoint again (src/generation/connectors/protocols/transport.ts).
import type { Ctx } from '../../directory/context.ts';
import type { Db } from '../../db/db.ts';
import type { RowRead } from '../../db/dialect.ts';
import { record } from '../../platform/audit/service.ts';
import { billingAccountOf } from '../../directory/plan/account.ts';
import { conflict, notFound, validationFailed } from '../../kernel/errors.ts';
import { pageWindow } from '../../kernel/validate.ts';
import { newId } from '../../kernel/ids.ts';
import { CONNECTOR_EGRESS, LOCAL_CONNECTOR_EGRESS, ResolveError, refusalOf, resolveHost, systemResolver } from '../../kernel/egress.ts';
import { normalizeAddress, type Address } from '../../kernel/addresses.ts';
import { wakeWorker } from '../dispatch/control.ts';
import { probeConnector } from './protocols/index.ts';
import { credentialNameProblem, credentialPolicy } from '../../kernel/credentials.ts';
import { providerReadingVariable } from '../../identity/sso/store.ts';
import { capabilityOf, connectorSpec, protocolOf } from './present.ts';
import type { PatchInput, ProtocolInput, RegisterInput } from './schema.ts';
import { connectorById, insertConnector, pageConnectors, updateConnector, type ConnectorRow } from './store.ts';
import type { ConnectorProtocol, ConnectorStatus, ProbeResult } from './protocols/types.ts';

export const PROBE_TIMEOUT_MS = 5000;
const MAX_PROBE_ERROR = 500;

/** True when the organization's billing account allows local connectors only. */
export async function localRunnerOnly(db: Db, organizationId: string): Promise<boolean> {
  return Number((await billingAccountOf(db, organizationId))?.local_runner_only ?? 0) === 1;
}

const isLocal = (costMode: string) => costMode === 'local';

async function refuseUnderLocalRunnerOnly(ctx: Ctx, what: string): Promise<void> {
  if (await localRunnerOnly(ctx.db, ctx.scope.organizationId!)) {
    throw conflict('local_runner_only', `this organization runs local connectors only (billing account local_runner_only); ${what} is refused`);
  }
}

const auditConnector = (ctx: Ctx, action: string, c: ConnectorRow, metadata: Record<string, unknown>, result: 'success' | 'failure' = 'success') =>
  record(ctx, {
    action, targetType: 'model_connector', targetId: c.id, result, metadata,
    organizationId: c.organization_id, workspaceId: null, projectId: null,
  });

/** The stored protocol: only the given members, JSON. */
function protocolJson(p: ProtocolInput | undefined): string {
  const out: ConnectorProtocol = {};
  if (p?.healthRoute !== undefined) out.healthRoute = p.healthRoute;
  if (p?.routes !== undefined) out.routes = p.routes;
  if (p?.models !== undefined) out.models = p.models;
  if (p?.workflow !== undefined) out.workflow = p.workflow;
  return JSON.stringify(out);
}

/**
 * 422 authEnv for a name the operator did not designate for connector credentials
 * (src/kernel/credentials.ts) or one a sign-in provider reads as its secret or certificate.
 */
async function credentialErrors(ctx: Ctx, name: string | null | undefined): Promise<Record<string, string>> {
  if (!name) return {};
  const problem = credentialNameProblem(name, credentialPolicy(ctx.config))
    ?? (await providerReadingVariable(ctx.db, name) ? 'is read by a sign-in provider, which is never a connector credential' : null);
  return problem ? { authEnv: problem } : {};
}

/** Rules across fields, on the record as it would be stored: 422 naming each offending field (with `errors` found before). */
function checkRecord(r: Pick<ConnectorRow, 'kind' | 'capability' | 'protocol'>, errors: Record<string, string> = {}): void {
  const capability = new Set(capabilityOf(r));
  const p = protocolOf(r);
  for (const member of ['routes', 'models'] as const) {
    for (const key of Object.keys(p[member] ?? {})) {
      if (!capability.has(key)) errors[`protocol.${member}.${key}`] = `names a kind of work that is not in capability (${[...capability].join(', ')})`;
    }
  }
  if (r.kind === 'comfyui' && !p.workflow) errors['protocol.workflow'] = 'is required for kind comfyui (the API-format workflow)';
  if (Object.keys(errors).length > 0) throw validationFailed(errors);
}

/** How long a registration or change waits for the endpoint's name to resolve. */
export const RESOLVE_TIMEOUT_MS = 3000;

/**
 * The endpoint under the egress policy, before anything is written: an always-refused address (the
 * literal host or any address its name resolves to) is 422 naming endpoint; costMode local with a
 * public address is 422 naming costMode. A name that does not resolve now is accepted: every probe
 * and call resolves and judges it again.
 */
async function checkReach(endpoint: string, costMode: string): Promise<void> {
  const host = new URL(endpoint).hostname;
  let addresses: Address[];
  try {
    addresses = await resolveHost(host, systemResolver, RESOLVE_TIMEOUT_MS);
  } catch (err) {
    if (err instanceof ResolveError) return;
    throw err;
  }
  const named = (address: string) => (normalizeAddress(host) ? '' : `${host} resolves to ${address}: `);
  const refused = refusalOf(addresses, CONNECTOR_EGRESS);
  if (refused) throw validationFailed({ endpoint: `is refused by the egress policy: ${named(refused.address)}${refused.reason}` });
  const pub = isLocal(costMode) ? refusalOf(addresses, LOCAL_CONNECTOR_EGRESS) : null;
  if (pub) {
    throw validationFailed({
      costMode: `cannot be local: ${named(pub.address)}${pub.address} is a public address (local means the endpoint resolves to loopback or private addresses only); register it as mixed or cloud`,
    });
  }
}

/** The connector; `read` { forUpdate } for the change computed from it (src/db/dialect.ts RowRead). */
export async function getConnector(ctx: Ctx, connectorId: string, read?: RowRead): Promise<ConnectorRow> {
  const row = await connectorById(ctx.db, ctx.scope.organizationId!, connectorId, read);
  if (!row) throw notFound('no such model connector in this organization');
  return row;
}

export async function listConnectors(ctx: Ctx, q: { status?: string; kind?: string; costMode?: string; page?: number; pageSize?: number }) {
  const { page, pageSize, offset } = pageWindow(q.page, q.pageSize);
  const { rows, total } = await pageConnectors(ctx.db, ctx.scope.organizationId!, {
    status: q.status ?? null, kind: q.kind ?? null, costMode: q.costMode ?? null, limit: pageSize, offset,
  });
  return { rows, pagination: { page, pageSize, total } };
}

/**
 * The prefix of new connector ids: `con_`. Connectors registered before it came keep their `mdl_`
 * ids, which work everywhere as before (ids are opaque: nothing reads the prefix).
 */
export const CONNECTOR_ID_PREFIX = 'con';

/** Registers a connector: local ones start pending, mixed and cloud ones awaiting_approval. */
export async function registerConnector(ctx: Ctx, input: RegisterInput): Promise<ConnectorRow> {
  const now = ctx.now().toISOString();
  const row: ConnectorRow = {
    id: newId(CONNECTOR_ID_PREFIX), organization_id: ctx.scope.organizationId!, label: input.label, endpoint: input.endpoint, kind: input.kind,
    capability: JSON.stringify(input.capability), cost_mode: input.costMode, auth_env: input.authEnv ?? null,
    protocol: protocolJson(input.protocol), status: isLocal(input.costMode) ? 'pending' : 'awaiting_approval',
    approved_by: null, approved_at: null, last_probe_at: null, last_probe_ok: null, last_probe_latency_ms: null,
    last_probe_status: null, last_probe_error: null, created_by: ctx.actor.userId, created_at: now, updated_at: now,
  };
  checkRecord(row, await credentialErrors(ctx, row.auth_env));
  await checkReach(row.endpoint, row.cost_mode);
  if (!isLocal(row.cost_mode)) await refuseUnderLocalRunnerOnly(ctx, `registering a ${row.cost_mode} connector`);
  return await ctx.db.tx(async () => {
    await insertConnector(ctx.db, row);
    await auditConnector(ctx, 'model.connector.registered', row, {
      label: row.label, kind: row.kind, costMode: row.cost_mode, capability: input.capability, authEnv: row.auth_env, status: row.status,
    });
    return row;
  });
}

/** Fields whose change needs a new probe before the worker may use the connector again. */
const REACH_FIELDS = ['endpoint', 'kind', 'auth_env', 'protocol'] as const;

/**
 * Changes a connector. endpoint, kind, protocol (replaced whole) or authEnv send it back to
 * pending; a new costMode clears the approval (mixed/cloud: awaiting_approval, local: pending).
 * disabled stays disabled. A new endpoint or costMode is judged by the egress policy first (checkReach).
 */
export async function changeConnector(ctx: Ctx, connectorId: string, patch: PatchInput): Promise<ConnectorRow> {
  const given = (Object.keys(patch) as Array<keyof PatchInput>).filter((k) => patch[k] !== undefined);
  if (given.length === 0) throw validationFailed({ body: 'name at least one field to change' });
  let judged: { endpoint: string; costMode: string } | null = null;
  if (patch.endpoint !== undefined || patch.costMode !== undefined) {
    const current = await getConnector(ctx, connectorId);
    judged = { endpoint: patch.endpoint ?? current.endpoint, costMode: patch.costMode ?? current.cost_mode };
    await checkReach(judged.endpoint, judged.costMode);
  }
  return await ctx.db.tx(async () => {
    const row = await getConnector(ctx, connectorId, { forUpdate: true });
    const next: ConnectorRow = {
      ...row,
      label: patch.label ?? row.label,
      endpoint: patch.endpoint ?? row.endpoint,
      kind: patch.kind ?? row.kind,
      capability: patch.capability ? JSON.stringify(patch.capability) : row.capability,
      cost_mode: patch.costMode ?? row.cost_mode,
      auth_env: patch.authEnv === undefined ? row.auth_env : patch.authEnv,
      protocol: patch.protocol ? protocolJson(patch.protocol) : row.protocol,
    };
    checkRecord(next, await credentialErrors(ctx, patch.authEnv));
    if (judged && (judged.endpoint !== next.endpoint || judged.costMode !== next.cost_mode)) {
      throw conflict('connector_changed', 'the connector changed while its endpoint was being checked; send the change again');
    }
    const costChanged = next.cost_mode !== row.cost_mode;
    if (costChanged && !isLocal(next.cost_mode)) await refuseUnderLocalRunnerOnly(ctx, `changing a connector to ${next.cost_mode}`);
    const reachChanged = REACH_FIELDS.filter((f) => next[f] !== row[f]);
    if (costChanged) {
      next.approved_by = null;
      next.approved_at = null;
      if (row.status !== 'disabled') next.status = isLocal(next.cost_mode) ? 'pending' : 'awaiting_approval';
    } else if (reachChanged.length > 0 && row.status !== 'disabled' && row.status !== 'awaiting_approval') {
      next.status = 'pending';
    }
    const changes: Record<string, unknown> = {};
    for (const [key, column] of [['label', 'label'], ['kind', 'kind'], ['costMode', 'cost_mode'], ['authEnv', 'auth_env'], ['status', 'status']] as const) {
      if (next[column] !== row[column]) changes[key] = { from: row[column], to: next[column] };
    }
    if (next.capability !== row.capability) changes.capability = { from: capabilityOf(row), to: capabilityOf(next) };
    if (next.endpoint !== row.endpoint) changes.endpoint = { changed: true };
    if (next.protocol !== row.protocol) changes.protocol = { changed: true };
    if (Object.keys(changes).length === 0) return row;
    next.updated_at = ctx.now().toISOString();
    await updateConnector(ctx.db, next);
    await auditConnector(ctx, 'model.connector.updated', next, {
      changes, ...(costChanged && row.approved_at ? { approvalCleared: true } : {}),
    });
    return next;
  });
}

export interface ProbeOutcome { row: ConnectorRow; probe: ProbeResult & { at: string } }

/**
 * Probes the connector's health route (outside any transaction), then records the result: ready or
 * unreachable, except that disabled and awaiting_approval stay, and a connector whose configuration
 * changed while the probe ran keeps its status (the probe was of the old configuration).
 */
export async function probeConnectorById(ctx: Ctx, connectorId: string): Promise<ProbeOutcome> {
  const before = await getConnector(ctx, connectorId);
  const spec = connectorSpec(before);
  const at = ctx.now().toISOString();
  let result: ProbeResult;
  try {
    result = await probeConnector(spec, { env: process.env, credentials: credentialPolicy(ctx.config), timeoutMs: PROBE_TIMEOUT_MS });
  } catch (err) {
    result = { ok: false, latencyMs: Date.now() - Date.parse(at), httpStatus: null, error: err instanceof Error ? err.message : 'probe failed' };
  }
  const probe = {
    ok: result.ok, latencyMs: Math.max(0, Math.round(result.latencyMs)), httpStatus: result.httpStatus ?? null,
    error: result.ok ? null : (result.error ?? 'probe failed').slice(0, MAX_PROBE_ERROR), at,
  };
  return await ctx.db.tx(async () => {
    const row = await getConnector(ctx, connectorId, { forUpdate: true });
    const sameConfig = REACH_FIELDS.every((f) => row[f] === before[f]);
    let status = row.status as ConnectorStatus;
    if (sameConfig && status !== 'disabled' && status !== 'awaiting_approval') status = probe.ok ? 'ready' : 'unreachable';
    const next: ConnectorRow = {
      ...row, status, last_probe_at: at, last_probe_ok: probe.ok ? 1 : 0, last_probe_latency_ms: probe.latencyMs,
      last_probe_status: probe.httpStatus, last_probe_error: probe.error, updated_at: status !== row.status ? ctx.now().toISOString() : row.updated_at,
    };
    await updateConnector(ctx.db, next);
    await auditConnector(ctx, 'model.connector.probed', next, {
      ok: probe.ok, latencyMs: probe.latencyMs, httpStatus: probe.httpStatus, error: probe.error,
      status: { from: row.status, to: status }, ...(sameConfig ? {} : { configurationChangedDuringProbe: true }),
    }, probe.ok ? 'success' : 'failure');
    if (status === 'ready' && row.status !== 'ready') await wakeWorker(ctx);
    return { row: next, probe };
  });
}

export async function disableConnector(ctx: Ctx, connectorId: string): Promise<ConnectorRow> {
  return await ctx.db.tx(async () => {
    const row = await getConnector(ctx, connectorId, { forUpdate: true });
    if (row.status === 'disabled') return row;
    const next: ConnectorRow = { ...row, status: 'disabled', updated_at: ctx.now().toISOString() };
    await updateConnector(ctx.db, next);
    await auditConnector(ctx, 'model.connector.disabled', next, { status: { from: row.status, to: 'disabled' } });
    return next;
  });
}

/** disabled -> pending (a probe makes it ready), or awaiting_approval for mixed/cloud without approval. */
export async function enableConnector(ctx: Ctx, connectorId: string): Promise<ConnectorRow> {
  return await ctx.db.tx(async () => {
    const row = await getConnector(ctx, connectorId, { forUpdate: true });
    if (row.status !== 'disabled') return row;
    if (!isLocal(row.cost_mode)) await refuseUnderLocalRunnerOnly(ctx, `enabling a ${row.cost_mode} connector`);
    const status: ConnectorStatus = !isLocal(row.cost_mode) && !row.approved_at ? 'awaiting_approval' : 'pending';
    const next: ConnectorRow = { ...row, status, updated_at: ctx.now().toISOString() };
    await updateConnector(ctx.db, next);
    await auditConnector(ctx, 'model.connector.enabled', next, { status: { from: 'disabled', to: status } });
    return next;
  });
}

/**
 * An administrator's approval of a mixed or cloud connector (rule 2). awaiting_approval becomes
 * pending (a probe makes it ready); other statuses stay. Local connectors need none (409).
 */
export async function approveConnector(ctx: Ctx, connectorId: string, note: string | undefined): Promise<ConnectorRow> {
  return await ctx.db.tx(async () => {
    const row = await getConnector(ctx, connectorId, { forUpdate: true });
    if (isLocal(row.cost_mode)) throw conflict('approval_not_needed', 'local connectors need no approval');
    await refuseUnderLocalRunnerOnly(ctx, `approving a ${row.cost_mode} connector`);
    const now = ctx.now().toISOString();
    const status: ConnectorStatus = row.status === 'awaiting_approval' ? 'pending' : row.status as ConnectorStatus;
    const next: ConnectorRow = { ...row, status, approved_by: ctx.actor.userId ?? ctx.actor.name, approved_at: now, updated_at: now };
    await updateConnector(ctx.db, next);
    await auditConnector(ctx, 'model.connector.approved', next, {
      costMode: row.cost_mode, note: note || null, status: { from: row.status, to: status },
      ...(row.approved_at ? { previousApproval: { by: row.approved_by, at: row.approved_at } } : {}),
    });
    return next;
  });
}
