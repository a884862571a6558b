// The billing account's changes (PATCH /billing) and the commercial view and its export.
//
// A PATCH is checked whole before anything is written: the shape (billing-schema.ts), then what
// depends on the account (decimals of the currency, a known currency and time zone: 422), then the
// bounds of the changed fields (409, each with { requested, minimum }): seats below active members
// plus pending invitations, the clip quota below this local month's clips or below a workspace's own
// clip quota, storage below the stored bytes or below a workspace's own storage quota, the currency
// once a usage event or an invoice exists, and the billing cycle and time zone (which draw invoice
// periods) once an invoice that is not void exists. An accepted change writes the account, one
// billing_account_events row and the audit record billing.account.updated in one transaction; a
// PATCH that changes nothing writes nothing.
import type { Ctx } from '../../directory/context.ts';
import type { Db } from '../../db/db.ts';
import { ALL_ROWS } from '../../db/page.ts';
import { conflict, validationFailed, type ErrorCodeWithStatus } from '../../kernel/errors.ts';
import { newId } from '../../kernel/ids.ts';
import { record } from '../../platform/audit/service.ts';
import { organizationById } from '../../directory/tenancy/store.ts';
import { seatUsage } from '../../directory/plan/seats.ts';
import { activeVideoClipsThisMonth, organizationStoredBytes } from '../meters.ts';
import {
  billingAccountEventsOf, billingAccountOf, billingSettings, insertBillingAccountEvent,
  setOrganizationTimeZone, updateBillingAccountRow, type BillingAccountRow, type BillingSettings,
} from '../../directory/plan/account.ts';
import { presentBillingAccount, presentBillingAccountEvent } from '../account.ts';
import type { BillingPatch } from './schema.ts';
import { exponentOf, formatE4Amount, isCurrency, parseAmount, parseUnitPrice } from '../../kernel/money.ts';
import { isTimeZone, monthWindow } from '../../kernel/periods.ts';
import { costCenterDetailView, costCentersView, gbToBytes, GIB, quotaWarningsView, workspaceQuotasView } from '../quotas/service.ts';
import { roundUnits, usageByBucket, usageTrend, type Bucket } from '../trend.ts';
import { liveInvoiceOverlapping, type InvoiceRow } from '../invoices/store.ts';
import { presentInvoice } from '../invoices/present.ts';
import { invoiceLock, invoiceRef } from '../invoices/service.ts';
import type { Out } from '../../kernel/view.ts';
import type { CommercialExportView, CommercialView, InvoiceStatusChangeView, InvoiceSummaryView, UsageMonthView } from '../views.ts';
import type { InvoiceStatus } from '../vocabulary.ts';

const MAX_FEE_MAJOR = 10n ** 9n;
const MAX_PRICE_MAJOR = 10n ** 6n;
const PRICES = [['seatUnitPrice', 'seat_unit_price_e4'], ['storageUnitPrice', 'storage_unit_price_e4'], ['clipUnitPrice', 'clip_unit_price_e4']] as const;

/** The account after the patch, or 422 naming every field that cannot be stored. */
function patched(row: BillingAccountRow, before: BillingSettings, p: BillingPatch): { next: BillingAccountRow; timeZone: string } {
  const errors: Record<string, string> = {};
  const currency = p.currency ?? row.currency;
  if (!isCurrency(currency)) throw validationFailed({ currency: 'is not a currency this service knows (ISO 4217 codes of src/kernel/money.ts)' });
  const timeZone = p.timeZone ?? before.timeZone;
  if (!isTimeZone(timeZone)) errors.timeZone = 'is not an IANA time zone the runtime knows';
  const exp = exponentOf(currency);
  // Unchanged amounts keep their decimal value in a new currency; one it cannot hold must be given anew.
  const money = (field: 'baseFee' | (typeof PRICES)[number][0], parse: typeof parseAmount, decimals: number, maxMajor: bigint): number => {
    const text = p[field] ?? before[field];
    const value = parse(text, currency);
    if (value === null) {
      errors[field] = p[field] !== undefined ? `must have at most ${decimals} decimals in ${currency}`
        : `the current value ${text} has more decimals than ${currency} allows; give a new value with the currency`;
    } else if (value > maxMajor * 10n ** BigInt(decimals)) errors[field] = `must be at most ${maxMajor}`;
    return Number(value ?? 0n);
  };
  const next: BillingAccountRow = {
    ...row,
    plan_name: p.planName ?? row.plan_name,
    billing_cycle: p.billingCycle ?? row.billing_cycle,
    currency,
    base_fee_minor: money('baseFee', parseAmount, exp, MAX_FEE_MAJOR),
    seat_limit: p.seatLimit ?? row.seat_limit,
    storage_gb: p.storageGb ?? row.storage_gb,
    monthly_clip_quota: p.monthlyClipQuota ?? row.monthly_clip_quota,
    quota_warning_percent: p.quotaWarningPercent ?? row.quota_warning_percent,
    local_runner_only: p.localRunnerOnly === undefined ? row.local_runner_only : Number(p.localRunnerOnly),
    cloud_connectors_require_approval: p.cloudConnectorsRequireApproval === undefined ? row.cloud_connectors_require_approval : Number(p.cloudConnectorsRequireApproval),
    invoice_prefix: p.invoicePrefix ?? row.invoice_prefix,
  };
  for (const [field, column] of PRICES) next[column] = money(field, parseUnitPrice, exp + 4, MAX_PRICE_MAJOR);
  if (Object.keys(errors).length) throw validationFailed(errors);
  return { next, timeZone };
}

const bound = (code: ErrorCodeWithStatus<409>, what: string, requested: number, minimum: number, extra: Record<string, unknown> = {}) =>
  conflict(code, `${what}: requested ${requested}, at least ${minimum}`, { requested, minimum, ...extra });

/** The smallest GiB figure (6 decimals, rounded up) that holds `bytes`. */
function gibAtLeast(bytes: number): number {
  const gib = Math.ceil((bytes / GIB) * 1e6) / 1e6;
  return gib * GIB >= bytes ? gib : gib + 1e-6;
}

/** The highest own limit of a workspace of the organization, if any. */
function highestWorkspaceQuota(db: Db, organizationId: string, column: 'monthly_clip_quota' | 'storage_gb') {
  return db.get<{ id: string; workspace_id: string; q: number }>(
    `SELECT id, workspace_id, ${column} AS q FROM workspace_quotas WHERE organization_id = ? AND ${column} IS NOT NULL ORDER BY ${column} DESC, id LIMIT 1`,
    organizationId);
}

const hasUsageOrInvoice = async (db: Db, organizationId: string) => (await db.get<{ usage: number; invoices: number }>(
  `SELECT CASE WHEN EXISTS (SELECT 1 FROM usage_events WHERE organization_id = ?1) THEN 1 ELSE 0 END AS usage,
          CASE WHEN EXISTS (SELECT 1 FROM invoices WHERE organization_id = ?1) THEN 1 ELSE 0 END AS invoices`,
  organizationId))!;

/** Clip usage events of the organization's local month of `now` (jobs' counter, from the local month's start). */
export const clipsThisMonth = (db: Db, organizationId: string, timeZone: string, now: Date): Promise<number> =>
  activeVideoClipsThisMonth(db, organizationId, monthWindow(timeZone, now).start);

/** 409 for the first changed field whose new value is below what is used or reserved. */
async function checkBounds(
  ctx: Ctx, organizationId: string, changed: Set<string>, next: BillingAccountRow, was: BillingAccountRow, timeZone: string, wasTimeZone: string,
): Promise<void> {
  const db = ctx.db;
  const now = ctx.now();
  if (changed.has('currency')) {
    const used = await hasUsageOrInvoice(db, organizationId);
    if (used.usage || used.invoices) {
      throw conflict('currency_locked', 'the currency cannot change once the organization has usage events or invoices',
        { requested: next.currency, current: was.currency, usageEvents: used.usage === 1, invoices: used.invoices === 1 });
    }
  }
  // Invoice periods are drawn in the cycle and the zone: another one would draw periods across those billed.
  if (changed.has('billingCycle') || changed.has('timeZone')) {
    const billed = await liveInvoiceOverlapping(db, organizationId);
    if (billed) {
      const cycle = changed.has('billingCycle');
      throw conflict(cycle ? 'billing_cycle_locked' : 'time_zone_locked',
        `the ${cycle ? 'billing cycle' : 'time zone'} cannot change while the organization has an invoice that is not void`,
        { requested: cycle ? next.billing_cycle : timeZone, current: cycle ? was.billing_cycle : wasTimeZone, invoice: invoiceRef(billed) });
    }
  }
  if (changed.has('seatLimit')) {
    const seats = await seatUsage(db, organizationId, now.toISOString());
    if (next.seat_limit < seats.used) {
      throw bound('seat_limit_below_reserved', 'seat limit below active members plus pending invitations', next.seat_limit, seats.used,
        { activeMembers: seats.activeMembers, pendingInvitations: seats.pendingInvitations });
    }
  }
  if (changed.has('monthlyClipQuota')) {
    const used = await clipsThisMonth(db, organizationId, timeZone, now);
    if (next.monthly_clip_quota < used) {
      throw bound('clip_quota_below_usage', 'monthly clip quota below this month\'s clips', next.monthly_clip_quota, used,
        { month: monthWindow(timeZone, now).label });
    }
    const ws = await highestWorkspaceQuota(db, organizationId, 'monthly_clip_quota');
    if (ws && next.monthly_clip_quota < ws.q) {
      throw bound('quota_above_plan', 'a workspace clip quota is above the requested plan limit', next.monthly_clip_quota, ws.q,
        { field: 'monthlyClipQuota', quotaId: ws.id, workspaceId: ws.workspace_id });
    }
  }
  if (changed.has('storageGb')) {
    const usedBytes = await organizationStoredBytes(db, organizationId);
    if (gbToBytes(next.storage_gb) < usedBytes) {
      throw bound('storage_below_usage', 'storage (GiB) below the stored bytes', next.storage_gb, gibAtLeast(usedBytes), { usedBytes });
    }
    const ws = await highestWorkspaceQuota(db, organizationId, 'storage_gb');
    if (ws && next.storage_gb < ws.q) {
      throw bound('quota_above_plan', 'a workspace storage quota is above the requested plan limit', next.storage_gb, ws.q,
        { field: 'storageGb', quotaId: ws.id, workspaceId: ws.workspace_id });
    }
  }
}

/** PATCH /api/organizations/:organizationId/billing: the account's API shape after the change. */
export async function updateBillingAccount(ctx: Ctx, organizationId: string, p: BillingPatch) {
  return await ctx.db.tx(async () => {
    // What an invoice locks (its periods are drawn in the cycle and the zone, its amounts in the
    // currency) is checked and changed under the invoice lock, never between a generation's checks:
    // taken when the patch names one of them, before the account's row is locked (src/directory/locks.ts).
    if (p.billingCycle !== undefined || p.timeZone !== undefined || p.currency !== undefined) await invoiceLock(ctx, organizationId);
    const row = (await billingAccountOf(ctx.db, organizationId, { forUpdate: true }))!;
    const tz = (await organizationById(ctx.db, organizationId))!.time_zone;
    const before = billingSettings(row, tz);
    const { next, timeZone } = patched(row, before, p);
    const after = billingSettings(next, timeZone);
    const changed = (Object.keys(after) as Array<keyof BillingSettings>).filter((k) => after[k] !== before[k]);
    if (changed.length === 0) return presentBillingAccount(row, tz);
    await checkBounds(ctx, organizationId, new Set(changed), next, row, timeZone, tz);
    const at = ctx.now().toISOString();
    next.updated_at = at;
    await updateBillingAccountRow(ctx.db, next);
    if (timeZone !== tz) await setOrganizationTimeZone(ctx.db, organizationId, timeZone);
    await insertBillingAccountEvent(ctx.db, {
      id: newId('bae'), organization_id: organizationId, actor_user_id: ctx.actor.userId, actor_name: ctx.actor.name,
      changed: JSON.stringify(changed), before: JSON.stringify(before), after: JSON.stringify(after), created_at: at,
    });
    await record(ctx, {
      action: 'billing.account.updated', targetType: 'billing_account', targetId: organizationId,
      organizationId, workspaceId: null, projectId: null, metadata: { changed, before, after },
    });
    return presentBillingAccount(next, timeZone);
  });
}

// ---- the commercial view and its export -------------------------------------------------------

interface InvoiceEventRow {
  id: string; invoice_id: string; number: string | null; action: string; from_status: string | null; to_status: string;
  actor_user_id: string | null; actor_name: string | null; note: string | null; created_at: string;
}

const invoiceEventsOf = (db: Db, organizationId: string, limit: number) => db.all<InvoiceEventRow>(
  `SELECT e.*, i.number FROM invoice_events e JOIN invoices i ON i.id = e.invoice_id AND i.organization_id = e.organization_id
    WHERE e.organization_id = ? ORDER BY e.created_at DESC, e.id DESC LIMIT ?`, organizationId, limit);

const presentInvoiceEvent = (e: InvoiceEventRow): Out<typeof InvoiceStatusChangeView> => ({
  kind: 'invoice' as const, id: e.id, at: e.created_at, actor: { userId: e.actor_user_id, name: e.actor_name },
  invoiceId: e.invoice_id, invoiceNumber: e.number, action: e.action, fromStatus: e.from_status as InvoiceStatus | null, toStatus: e.to_status as InvoiceStatus, note: e.note,
});

/** Account changes and invoice status changes, newest first (`limit` -1: all). */
async function billingHistory(db: Db, organizationId: string, limit: number) {
  const items = [
    ...(await billingAccountEventsOf(db, organizationId, limit)).map(presentBillingAccountEvent),
    ...(await invoiceEventsOf(db, organizationId, limit)).map(presentInvoiceEvent),
  ].sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : 0));
  return items.slice(0, limit);
}

async function usageThisMonth(db: Db, organizationId: string, timeZone: string, currency: string, now: Date) {
  const m = monthWindow(timeZone, now);
  const [t] = await db.allBig<{ events: bigint; e4: bigint }>(
    'SELECT count(*) AS events, coalesce(sum(estimated_cost_e4), 0) AS e4 FROM usage_events WHERE organization_id = ? AND created_at >= ? AND created_at < ?',
    organizationId, m.start, m.end);
  return {
    month: m.label, start: m.start, end: m.end,
    clips: await clipsThisMonth(db, organizationId, timeZone, now), events: Number(t.events), estimatedCost: formatE4Amount(t.e4, currency), currency,
    storageBytes: await organizationStoredBytes(db, organizationId),
  };
}

const HISTORY_IN_VIEW = 50;
const WARNINGS_IN_VIEW = 50;

/** GET /api/organizations/:organizationId/commercial. */
export async function commercialView(ctx: Ctx, organizationId: string, all = false): Promise<Out<typeof CommercialView>> {
  const db = ctx.db;
  const now = ctx.now();
  const org = (await organizationById(db, organizationId))!;
  const account = (await billingAccountOf(db, organizationId))!;
  const seats = await seatUsage(db, organizationId, now.toISOString());
  return {
    organization: { id: org.id, name: org.name, timeZone: org.time_zone },
    account: presentBillingAccount(account, org.time_zone),
    seats: {
      limit: seats.limit, activeMembers: seats.activeMembers, pendingInvitations: seats.pendingInvitations,
      reserved: seats.used, available: Math.max(0, seats.limit - seats.used),
    },
    workspaceQuotas: await workspaceQuotasView(db, organizationId, now),
    usageThisMonth: await usageThisMonth(db, organizationId, org.time_zone, account.currency, now),
    quotaWarnings: await quotaWarningsView(db, organizationId, all ? ALL_ROWS : WARNINGS_IN_VIEW),
    costCenters: await costCentersView(db, organizationId, now),
    costCenterDetail: await costCenterDetailView(db, organizationId, now),
    billingHistory: await billingHistory(db, organizationId, all ? ALL_ROWS : HISTORY_IN_VIEW),
    usageTrend: await usageTrend(db, organizationId, org.time_zone, account.currency, now),
  };
}

/** The organization's local months from its first usage event to the month of `now`. */
async function monthsOfUsage(db: Db, organizationId: string, timeZone: string, now: Date): Promise<Bucket[]> {
  const first = (await db.get<{ at: string | null }>('SELECT min(created_at) AS at FROM usage_events WHERE organization_id = ?', organizationId))!.at;
  const months: Bucket[] = [];
  for (let m = first ? monthWindow(timeZone, new Date(first)) : null; m && m.start <= now.toISOString(); m = monthWindow(timeZone, new Date(m.end))) {
    months.push({ label: m.label, start: new Date(m.start), end: new Date(m.end) });
  }
  return months;
}

/** Usage totals of every local month with events, with their split by unit name. */
async function usageByMonth(db: Db, organizationId: string, timeZone: string, currency: string, now: Date): Promise<Array<Out<typeof UsageMonthView>>> {
  const months = new Map<string, { month: string; events: number; clips: number; e4: bigint; byUnit: Array<{ unit: string; events: number; units: number; estimatedCost: string }> }>();
  for (const r of await usageByBucket(db, organizationId, await monthsOfUsage(db, organizationId, timeZone, now), now, true)) {
    const m = months.get(r.label) ?? { month: r.label, events: 0, clips: 0, e4: 0n, byUnit: [] };
    m.events += r.events;
    m.clips += r.clips;
    m.e4 += r.e4;
    m.byUnit.push({ unit: r.unit ?? '', events: r.events, units: roundUnits(r.units), estimatedCost: formatE4Amount(r.e4, currency) });
    months.set(r.label, m);
  }
  return [...months.values()].map(({ e4, ...m }) => ({ ...m, estimatedCost: formatE4Amount(e4, currency), currency }));
}

/** The organization's invoices, oldest period first, as the ledger presents them without tax rate, due days, creator and update time. */
const invoiceSummaries = async (db: Db, organizationId: string): Promise<Array<Out<typeof InvoiceSummaryView>>> => (await db.allBig<Omit<InvoiceRow, 'snapshot'>>(
  `SELECT id, organization_id, number, status, period_start, period_end, currency, tax_rate, due_days, subtotal_minor, tax_minor, total_minor,
          created_by, created_at, updated_at, issued_at, due_at, paid_at, voided_at FROM invoices WHERE organization_id = ? ORDER BY period_start, id`,
  organizationId))
  .map((i) => {
    const { organizationId: _o, taxRate: _r, dueDays: _d, createdBy: _c, updatedAt: _u, ...summary } = presentInvoice(i);
    return summary;
  });

/** GET .../commercial/export: the view with every history entry and warning, plus account events, usage by month and invoices. */
export async function commercialExport(ctx: Ctx, organizationId: string): Promise<Out<typeof CommercialExportView>> {
  const view = await commercialView(ctx, organizationId, true);
  const now = ctx.now();
  return {
    exportedAt: now.toISOString(),
    ...view,
    billingAccountEvents: (await billingAccountEventsOf(ctx.db, organizationId)).map(presentBillingAccountEvent),
    usageByMonth: await usageByMonth(ctx.db, organizationId, view.organization.timeZone, view.account.currency, now),
    invoices: await invoiceSummaries(ctx.db, organizationId),
  };
}
