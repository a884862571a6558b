// The organization's billing account: made with the organization, with documented defaults
// (README "Billing account defaults"). Money is in integer minor units of the currency.
import type { Db } from '../db/db.ts';

export const BILLING_DEFAULTS = Object.freeze({
  plan_name: 'Studio',
  billing_cycle: 'monthly' as const,
  currency: 'USD',
  base_fee_minor: 0,
  seat_unit_price_minor: 0,
  storage_unit_price_minor: 0,
  clip_unit_price_minor: 0,
  seat_limit: 25,
  storage_gb: 100,
  monthly_clip_quota: 1000,
  quota_warning_percent: 80,
  local_runner_only: 0,
  cloud_connectors_require_approval: 1,
});

export type BillingAccountRow = typeof BILLING_DEFAULTS & { organization_id: string; created_at: string; updated_at: string };

export function insertDefaultBillingAccount(db: Db, organizationId: string, now: string): void {
  const a: BillingAccountRow = { ...BILLING_DEFAULTS, organization_id: organizationId, created_at: now, updated_at: now };
  db.run(
    `INSERT INTO billing_accounts (organization_id, plan_name, billing_cycle, currency, base_fee_minor, seat_unit_price_minor,
       storage_unit_price_minor, clip_unit_price_minor, seat_limit, storage_gb, monthly_clip_quota, quota_warning_percent,
       local_runner_only, cloud_connectors_require_approval, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    a.organization_id, a.plan_name, a.billing_cycle, a.currency, a.base_fee_minor, a.seat_unit_price_minor, a.storage_unit_price_minor,
    a.clip_unit_price_minor, a.seat_limit, a.storage_gb, a.monthly_clip_quota, a.quota_warning_percent, a.local_runner_only,
    a.cloud_connectors_require_approval, a.created_at, a.updated_at,
  );
}

export function billingAccountOf(db: Db, organizationId: string): BillingAccountRow | undefined {
  return db.get<BillingAccountRow>('SELECT * FROM billing_accounts WHERE organization_id = ?', organizationId);
}
