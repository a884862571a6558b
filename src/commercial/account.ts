// The organization's billing account: made with the organization, with documented defaults
// (README "Billing account defaults"). Amounts are integer minor units of the currency; unit prices
// are in 1/10,000 of a minor unit (`_e4`).
import type { Db } from '../db/db.ts';

export const BILLING_DEFAULTS = Object.freeze({
  plan_name: 'Studio',
  billing_cycle: 'monthly' as const,
  currency: 'USD',
  base_fee_minor: 0,
  seat_unit_price_e4: 0,
  storage_unit_price_e4: 0,
  clip_unit_price_e4: 0,
  seat_limit: 25,
  storage_gb: 100,
  monthly_clip_quota: 1000,
  quota_warning_percent: 80,
  local_runner_only: 0,
  cloud_connectors_require_approval: 1,
  invoice_prefix: 'INV-',
  next_invoice_number: 1,
});

export type BillingAccountRow = typeof BILLING_DEFAULTS & { organization_id: string; created_at: string; updated_at: string };

export function insertDefaultBillingAccount(db: Db, organizationId: string, now: string): void {
  const a: BillingAccountRow = { ...BILLING_DEFAULTS, organization_id: organizationId, created_at: now, updated_at: now };
  db.run(
    `INSERT INTO billing_accounts (organization_id, plan_name, billing_cycle, currency, base_fee_minor, seat_unit_price_e4,
       storage_unit_price_e4, clip_unit_price_e4, seat_limit, storage_gb, monthly_clip_quota, quota_warning_percent,
       local_runner_only, cloud_connectors_require_approval, created_at, updated_at, invoice_prefix, next_invoice_number)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    a.organization_id, a.plan_name, a.billing_cycle, a.currency, a.base_fee_minor, a.seat_unit_price_e4, a.storage_unit_price_e4,
    a.clip_unit_price_e4, a.seat_limit, a.storage_gb, a.monthly_clip_quota, a.quota_warning_percent, a.local_runner_only,
    a.cloud_connectors_require_approval, a.created_at, a.updated_at, a.invoice_prefix, a.next_invoice_number,
  );
}

export function billingAccountOf(db: Db, organizationId: string): BillingAccountRow | undefined {
  return db.get<BillingAccountRow>('SELECT * FROM billing_accounts WHERE organization_id = ?', organizationId);
}

/**
 * A new workspace's cost center (code WS- and the id's last 8 characters, named like the workspace) and
 * its quota row (no own limits): the same rows migration 0006 made for existing workspaces.
 */
export function insertWorkspaceCommercial(db: Db, ws: { id: string; organization_id: string; name: string }, now: string): void {
  const suffix = ws.id.slice(4);
  db.run(
    `INSERT INTO cost_centers (id, organization_id, workspace_id, code, name, budget_minor, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, NULL, ?, ?)`,
    `cc_${suffix}`, ws.organization_id, ws.id, `WS-${ws.id.slice(-8).toUpperCase()}`, ws.name, now, now);
  db.run(
    `INSERT INTO workspace_quotas (id, organization_id, workspace_id, monthly_clip_quota, storage_gb, created_at, updated_at)
     VALUES (?, ?, ?, NULL, NULL, ?, ?)`,
    `wq_${suffix}`, ws.organization_id, ws.id, now, now);
}
