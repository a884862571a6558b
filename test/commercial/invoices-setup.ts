// What the invoice test files (test/commercial/invoices*.test.ts) share: PATCH .../billing, usage events
// inserted with SQL as the jobs write them, an organization with its people, and an invoice's line.
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { makeTree, member } from '../helpers/factories.ts';
import { newId } from '../../src/kernel/ids.ts';

export const STATUSES = ['draft', 'issued', 'paid', 'overdue', 'void'] as const;
export type Status = (typeof STATUSES)[number];

/** PATCH /api/organizations/:organizationId/billing (prices as decimal strings in the major unit). */
export async function setBilling(s: TestServer, token: string, organizationId: string, body: Record<string, unknown>): Promise<void> {
  const r = await s.call('PATCH', `/api/organizations/${organizationId}/billing`, { token, body });
  assert.equal(r.status, 200, r.text);
}

interface Usage { kind?: string; unit?: string; quantity?: number; costE4: number; unitPriceE4?: number; at: string; currency?: string }

/** Usage events as the jobs write them: on the workspace's cost center, with a unique key and their unit price (default cost / quantity). */
export async function addUsage(s: TestServer, organizationId: string, workspaceId: string, u: Usage, times = 1): Promise<void> {
  for (let i = 0; i < times; i++) {
    const id = newId('use');
    await s.db.run(
      `INSERT INTO usage_events (id, organization_id, workspace_id, kind, unit, quantity, unit_price_e4, estimated_cost_e4, currency, cost_center_id,
         metadata, created_at, event_key)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, (SELECT id FROM cost_centers WHERE workspace_id = ?), '{}', ?, ?)`,
      id, organizationId, workspaceId, u.kind ?? 'clip', u.unit ?? 'clip', u.quantity ?? 1, u.unitPriceE4 ?? u.costE4 / (u.quantity ?? 1), u.costE4,
      u.currency ?? 'USD', workspaceId, u.at, `test:${id}`);
  }
}

export const base = (orgId: string) => `/api/organizations/${orgId}/invoices`;

export async function setup(t: any) {
  const s = await startTestServer(t);
  const tree = await makeTree(s);
  const owner = await member(s, 'org_owner', tree);
  const generate = (body: Record<string, unknown> = {}, token = owner.token, orgId = tree.organizationId) =>
    s.call('POST', `${base(orgId)}/generate`, { token, body });
  const setStatus = (invoiceId: string, status: string, token = owner.token, note?: string, orgId = tree.organizationId) =>
    s.call('POST', `${base(orgId)}/${invoiceId}/status`, { token, body: { status, ...(note ? { note } : {}) } });
  return { s, tree, owner, generate, setStatus };
}

export const lineOf = (inv: any, kind: string, workspaceId?: string | null, unit?: string) =>
  inv.lines.find((l: any) => l.kind === kind && (workspaceId === undefined || l.workspaceId === workspaceId) && (unit === undefined || l.unit === unit));
