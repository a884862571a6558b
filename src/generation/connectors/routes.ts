// The model platform: model connector records of the session's current organization (the
// reference fixes the paths /api/platform/models...; the API calls the records connectors).
import { json, type Router } from '../../http/router.ts';
import { ApproveBody, ConnectorListQuery, ConnectorPatchBody, ConnectorRegisterBody } from './schema.ts';
import type { Ctx } from '../../directory/context.ts';
import { credentialPolicy } from '../../kernel/credentials.ts';
import * as o from '../../kernel/view.ts';
import { ConnectorView, presentConnector } from './present.ts';
import {
  approveConnector, changeConnector, disableConnector, enableConnector, getConnector, listConnectors, probeConnectorById, registerConnector,
} from './service.ts';

/** The full record; authConfigured only for a variable designated for connector credentials. */
const full = (ctx: Ctx) => ({ full: true, credentials: credentialPolicy(ctx.config) }) as const;

const ConnectorProbedView = o.named('ConnectorProbed', o.extend(ConnectorView, {
  probe: o.object({
    ok: o.bool(), latencyMs: o.int(), httpStatus: o.nullable(o.int()), error: o.nullable(o.text()), at: o.time(),
  }, 'this probe\'s result'),
}));

export function bindConnectorRoutes(router: Router): void {
  const r = router.module(import.meta.url);
  const tags = ['model platform'];
  const base = { tags, scope: 'organization', permission: 'model:manage' } as const;
  r.get('/api/platform/models', {
    ...base, query: ConnectorListQuery,
    summary: 'Model connectors of the current organization, newest first; filters status, kind, costMode; page, pageSize (default 50, clamped 1..200).',
    response: { description: 'a page of connectors', schema: o.page(ConnectorView) },
  }, async ({ ctx, query }) => {
    const { rows, pagination } = await listConnectors(ctx, query);
    return json(200, { items: rows.map((c) => presentConnector(c, full(ctx))), pagination });
  });

  r.post('/api/platform/models/register', {
    ...base, body: ConnectorRegisterBody, response: { status: 201, description: 'the connector: pending when local, awaiting_approval when mixed or cloud', schema: ConnectorView },
    summary: 'Register a model connector (authEnv is the NAME of the variable holding the credential, one the operator designated: SVC_CONNECTOR_SECRET_PREFIX or SVC_CONNECTOR_SECRET_NAMES, else 422 naming authEnv); 422 naming endpoint when the egress policy refuses its address, naming costMode when a local one is public; 409 local_runner_only for mixed or cloud under local_runner_only.',
  }, async ({ ctx, body }) => json(201, presentConnector(await registerConnector(ctx, body), full(ctx))));

  r.get('/api/platform/models/:connectorId', { ...base, summary: 'A model connector with its last probe.', response: { description: 'the connector', schema: ConnectorView } },
    async ({ ctx, params }) => json(200, presentConnector(await getConnector(ctx, params.connectorId), full(ctx))));

  r.patch('/api/platform/models/:connectorId', {
    ...base, body: ConnectorPatchBody,
    summary: 'Change a connector; endpoint, kind, protocol (replaced whole) or authEnv send it back to pending, a new costMode clears the approval; a new endpoint or costMode is judged by the egress policy like a registration.',
    response: { description: 'the changed connector', schema: ConnectorView },
  }, async ({ ctx, params, body }) => json(200, presentConnector(await changeConnector(ctx, params.connectorId, body), full(ctx))));

  r.post('/api/platform/models/:connectorId/probe', {
    ...base, summary: 'Probe the connector\u2019s health route (5 s time-out, through the egress policy: a refused destination fails the probe without a connection) and record the result: ready or unreachable (disabled and awaiting_approval stay).',
    response: { description: 'the connector and the probe\'s result', schema: ConnectorProbedView },
  }, async ({ ctx, params }) => {
    const { row, probe } = await probeConnectorById(ctx, params.connectorId);
    return json(200, { ...presentConnector(row, full(ctx)), probe });
  });

  r.post('/api/platform/models/:connectorId/disable', { ...base, summary: 'Disable a connector (the worker stops picking it).', response: { description: 'the connector', schema: ConnectorView } },
    async ({ ctx, params }) => json(200, presentConnector(await disableConnector(ctx, params.connectorId), full(ctx))));

  r.post('/api/platform/models/:connectorId/enable', {
    ...base, summary: 'Enable a disabled connector: pending, or awaiting_approval for mixed or cloud without approval.',
    response: { description: 'the connector', schema: ConnectorView },
  }, async ({ ctx, params }) => json(200, presentConnector(await enableConnector(ctx, params.connectorId), full(ctx))));

  r.post('/api/platform/models/:connectorId/approve', {
    ...base, orgRoles: ['org_owner', 'org_admin'], body: ApproveBody,
    summary: 'Approve a mixed or cloud connector (organization owner or admin; rule 2): awaiting_approval becomes pending; 409 approval_not_needed for local.',
    response: { description: 'the approved connector', schema: ConnectorView },
  }, async ({ ctx, params, body }) => json(200, presentConnector(await approveConnector(ctx, params.connectorId, body.note), full(ctx))));
}
