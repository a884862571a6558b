// The organization's billing account: made with the organization, with documented defaults
// (docs/tenancy.md#tenancy). Amounts are integer minor units of the currency; unit prices
// are in 1/10,000 of a minor unit (`_e4`).
import type { Db } from '../../db/db.ts';
import { lockClause, type RowRead } from '../../db/dialect.ts';
import { ALL_ROWS } from '../../db/page.ts';
import { formatAmount, formatUnitPrice } from '../../kernel/money.ts';
import type { BillingCycle } from '../../kernel/periods.ts';

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

export interface BillingAccountRow {
  organization_id: string; plan_name: string; billing_cycle: BillingCycle; currency: string; base_fee_minor: number;
  seat_unit_price_e4: number; storage_unit_price_e4: number; clip_unit_price_e4: number; seat_limit: number; storage_gb: number;
  monthly_clip_quota: number; quota_warning_percent: number; local_runner_only: number; cloud_connectors_require_approval: number;
  invoice_prefix: string; next_invoice_number: number; created_at: string; updated_at: string;
}

export async function insertDefaultBillingAccount(db: Db, organizationId: string, now: string): Promise<void> {
  const a: BillingAccountRow = { ...BILLING_DEFAULTS, organization_id: organizationId, created_at: now, updated_at: now };
  await db.run(
    `INSERT INTO billing_accounts (organization_id, plan_name, billing_cycle, currency, base_fee_minor, seat_unit_price_e4,
       storage_unit_price_e4, clip_unit_price_e4, seat_limit, storage_gb, monthly_clip_quota, quota_warning_percent,
       local_runner_only, cloud_connectors_require_approval, created_at, updated_at, invoice_prefix, next_invoice_number)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    a.organization_id, a.plan_name, a.billing_cycle, a.currency, a.base_fee_minor, a.seat_unit_price_e4, a.storage_unit_price_e4,
    a.clip_unit_price_e4, a.seat_limit, a.storage_gb, a.monthly_clip_quota, a.quota_warning_percent, a.local_runner_only,
    a.cloud_connectors_require_approval, a.created_at, a.updated_at, a.invoice_prefix, a.next_invoice_number,
  );
}

/** The organization's billing account; `read` { forUpdate } for the change computed from it (src/db/dialect.ts RowRead). */
export function billingAccountOf(db: Db, organizationId: string, read?: RowRead): Promise<BillingAccountRow | undefined> {
  return db.get<BillingAccountRow>(`SELECT * FROM billing_accounts WHERE organization_id = ?${lockClause(db, read)}`, organizationId);
}

/**
 * A new workspace's cost center (code WS- and the id's last 8 characters, named like the workspace) and
 * its quota row (no own limits): the same rows migration 0006 made for existing workspaces.
 */
export async function insertWorkspaceCommercial(db: Db, ws: { id: string; organization_id: string; name: string }, now: string): Promise<void> {
  const suffix = ws.id.slice(4);
  await db.run(
    `INSERT INTO cost_centers (id, organization_id, workspace_id, code, name, budget_minor, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, NULL, ?, ?)`,
    `cc_${suffix}`, ws.organization_id, ws.id, `WS-${ws.id.slice(-8).toUpperCase()}`, ws.name, now, now);
  await db.run(
    `INSERT INTO workspace_quotas (id, organization_id, workspace_id, monthly_clip_quota, storage_gb, created_at, updated_at)
     VALUES (?, ?, ?, NULL, NULL, ?, ?)`,
    `wq_${suffix}`, ws.organization_id, ws.id, now, now);
}

// ---- API shape, updates and change records (billing-routes.ts) ---------------------------------

/** The fields PATCH /billing sets, in the API's order (amounts and unit prices as decimal strings of `currency`). */
export interface BillingSettings {
  planName: string; billingCycle: BillingCycle; currency: string; baseFee: string; seatUnitPrice: string; storageUnitPrice: string;
  clipUnitPrice: string; seatLimit: number; storageGb: number; monthlyClipQuota: number; quotaWarningPercent: number;
  localRunnerOnly: boolean; cloudConnectorsRequireApproval: boolean; invoicePrefix: string; timeZone: string;
}

export function billingSettings(a: BillingAccountRow, timeZone: string): BillingSettings {
  const c = a.currency;
  return {
    planName: a.plan_name, billingCycle: a.billing_cycle, currency: c, baseFee: formatAmount(a.base_fee_minor, c),
    seatUnitPrice: formatUnitPrice(a.seat_unit_price_e4, c), storageUnitPrice: formatUnitPrice(a.storage_unit_price_e4, c),
    clipUnitPrice: formatUnitPrice(a.clip_unit_price_e4, c), seatLimit: a.seat_limit, storageGb: a.storage_gb,
    monthlyClipQuota: a.monthly_clip_quota, quotaWarningPercent: a.quota_warning_percent, localRunnerOnly: a.local_runner_only === 1,
    cloudConnectorsRequireApproval: a.cloud_connectors_require_approval === 1, invoicePrefix: a.invoice_prefix, timeZone,
  };
}

export async function updateBillingAccountRow(db: Db, a: BillingAccountRow): Promise<void> {
  await db.run(
    `UPDATE billing_accounts SET plan_name = ?, billing_cycle = ?, currency = ?, base_fee_minor = ?, seat_unit_price_e4 = ?,
       storage_unit_price_e4 = ?, clip_unit_price_e4 = ?, seat_limit = ?, storage_gb = ?, monthly_clip_quota = ?, quota_warning_percent = ?,
       local_runner_only = ?, cloud_connectors_require_approval = ?, invoice_prefix = ?, updated_at = ?
     WHERE organization_id = ?`,
    a.plan_name, a.billing_cycle, a.currency, a.base_fee_minor, a.seat_unit_price_e4, a.storage_unit_price_e4, a.clip_unit_price_e4,
    a.seat_limit, a.storage_gb, a.monthly_clip_quota, a.quota_warning_percent, a.local_runner_only, a.cloud_connectors_require_approval,
    a.invoice_prefix, a.updated_at, a.organization_id);
}

export interface BillingAccountEventRow {
  id: string; organization_id: string; actor_user_id: string | null; actor_name: string | null;
  changed: string; before: string; after: string; created_at: string;
}

export async function insertBillingAccountEvent(db: Db, e: BillingAccountEventRow): Promise<void> {
  await db.run(
    `INSERT INTO billing_account_events (id, organization_id, actor_user_id, actor_name, changed, before, after, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    e.id, e.organization_id, e.actor_user_id, e.actor_name, e.changed, e.before, e.after, e.created_at);
}

/** The organization's account events, newest first (all of them unless `limit` is given). */
export const billingAccountEventsOf = (db: Db, organizationId: string, limit = ALL_ROWS) =>
  db.all<BillingAccountEventRow>(
    'SELECT * FROM billing_account_events WHERE organization_id = ? ORDER BY created_at DESC, id DESC LIMIT ?', organizationId, limit);

/** The organization's time zone (organizations.time_zone) is one of the billing settings. */
export const setOrganizationTimeZone = async (db: Db, organizationId: string, timeZone: string): Promise<void> => {
  await db.run('UPDATE organizations SET time_zone = ? WHERE id = ?', timeZone, organizationId);
};
