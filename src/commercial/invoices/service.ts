// Invoices: a draft is a snapshot of one billing period (plan, seats, storage per workspace, usage
// per cost center, cost centers, tax rate) with its lines; one per organization and period (the
// unique key decides, so a repeat, also a concurrent one, gets the original), and no period may
// overlap another invoice's that is not void (409 invoice_period_overlap, checked under the
// organization's invoice lock, invoiceLock). The draft is computed before the transaction; the
// transaction only checks and inserts.
// Numbers are taken at issue from the billing account's counter, in the same transaction: gap-free
// per organization.
// Rounding (docs/commercial.md#invoices): each line's exact amount is rounded half-up once; the
// subtotal is the sum of the rounded lines; the tax is taken once on the sum of the unrounded lines.
import type { Ctx } from '../../directory/context.ts';
import { conflict, forbidden, notFound } from '../../kernel/errors.ts';
import type { Infer } from '../../kernel/validate.ts';
import { newId } from '../../kernel/ids.ts';
import { record } from '../../platform/audit/service.ts';
import { exportStamp, type ExportFormat } from '../../kernel/export-stream.ts';
import type { RowCursor } from '../../db/cursor.ts';
import { seatUsage } from '../../directory/plan/seats.ts';
import { organizationById } from '../../directory/tenancy/store.ts';
import { billingAccountOf, type BillingAccountRow } from '../../directory/plan/account.ts';
import { costCentersOf } from '../quotas/service.ts';
import {
  addExact, exactToDecimal, exponentOf, formatAmount, formatDecimal, formatE4Amount, formatUnitPrice, lineAmount, roundExact, taxOn, ZERO,
  type Exact,
} from '../../kernel/money.ts';
import { generation, type GenerateBody, type Generation, type InvoiceFilter } from './schema.ts';
import type { InvoiceStatus } from '../vocabulary.ts';
import {
  eventsOfInvoice, insertInvoice, insertInvoiceEvent, insertInvoiceLine, invoiceForPeriod, invoiceInOrganization,
  linesOfInvoice, liveInvoiceOverlapping, openInvoiceCursor, organizationOfInvoice, pageInvoices, storageByWorkspace, takeInvoiceNumber,
  updateInvoiceStatus, usageGroups, type ExportedInvoice, type InvoiceLineRow, type InvoiceRow,
} from './store.ts';

const GIB = 2n ** 30n;
const E4 = 10_000n;
const E6 = 1_000_000n;

/** The status table of the reference; paid and void are final. */
export const TRANSITIONS: Readonly<Record<InvoiceStatus, readonly InvoiceStatus[]>> = Object.freeze({
  draft: ['issued'], issued: ['paid', 'overdue', 'void'], overdue: ['paid'], paid: [], void: [],
});

interface DraftLine { kind: string; description: string; workspaceId: string | null; costCenterId: string | null; quantity: string; unit: string; unitPriceE4: bigint; priceUnit: string; exact: Exact }

const quantityText = (e6: bigint) => (e6 === 0n ? '0' : formatDecimal(e6, 6).replace(/\.?0+$/, ''));

/** Base fee (when not zero), seats, storage per workspace, then usage groups: the lines of a draft. */
async function draftLines(ctx: Ctx, account: BillingAccountRow, start: string, end: string) {
  const a = account;
  const lines: DraftLine[] = [];
  if (a.base_fee_minor !== 0) {
    lines.push({
      kind: 'base_fee', description: `${a.plan_name} plan, ${a.billing_cycle} base fee`, workspaceId: null, costCenterId: null,
      quantity: '1', unit: 'period', unitPriceE4: BigInt(a.base_fee_minor) * E4, priceUnit: 'period', exact: { num: BigInt(a.base_fee_minor), den: 1n },
    });
  }
  const seats = await seatUsage(ctx.db, a.organization_id, ctx.now().toISOString());
  lines.push({
    kind: 'seats', description: `Seats: ${seats.activeMembers} active members`, workspaceId: null, costCenterId: null,
    quantity: String(seats.activeMembers), unit: 'seat', unitPriceE4: BigInt(a.seat_unit_price_e4), priceUnit: 'seat',
    exact: lineAmount({ num: BigInt(seats.activeMembers), den: 1n }, BigInt(a.seat_unit_price_e4)),
  });
  const storage = await storageByWorkspace(ctx.db, a.organization_id);
  for (const w of storage) {
    const gib: Exact = { num: BigInt(w.bytes), den: GIB };
    lines.push({
      kind: 'storage', description: `Storage: ${w.workspaceName} (${w.bytes} bytes)`, workspaceId: w.workspaceId, costCenterId: w.costCenterId,
      quantity: exactToDecimal(gib), unit: 'GiB', unitPriceE4: BigInt(a.storage_unit_price_e4), priceUnit: 'GiB', exact: lineAmount(gib, BigInt(a.storage_unit_price_e4)),
    });
  }
  const groups = await usageGroups(ctx.db, a.organization_id, start, end);
  const skipped = groups.filter((g) => g.currency !== a.currency);
  // A usage line is its summed quantity x the unit price its events were recorded at (usage_events.unit_price_e4).
  for (const g of groups.filter((x) => x.currency === a.currency)) {
    lines.push({
      kind: 'usage', description: `${g.kind} usage: ${g.workspace_name ?? 'no workspace'}${g.cost_center_code ? ` (${g.cost_center_code})` : ''}, ${g.events} events`,
      workspaceId: g.workspace_id, costCenterId: g.cost_center_id, quantity: quantityText(g.quantity_e6), unit: g.unit,
      unitPriceE4: g.unit_price_e4, priceUnit: g.unit, exact: lineAmount({ num: g.quantity_e6, den: E6 }, g.unit_price_e4),
    });
  }
  return { lines, seats, storage, skipped };
}

/** The draft invoice of a period and its lines, computed from the current account, members, storage and usage. */
async function draftOf(ctx: Ctx, account: BillingAccountRow, timeZone: string, g: Generation): Promise<{ invoice: InvoiceRow; lines: InvoiceLineRow[] }> {
  const a = account;
  const cur = a.currency;
  const start = g.start.toISOString();
  const end = g.end.toISOString();
  const { lines, seats, storage, skipped } = await draftLines(ctx, a, start, end);
  const exactSum = lines.reduce((sum, l) => addExact(sum, l.exact), ZERO);
  const subtotal = lines.reduce((sum, l) => sum + roundExact(l.exact), 0n);
  const tax = taxOn(exactSum, g.rate);
  const now = ctx.now().toISOString();
  const id = newId('ivc');
  const snapshot = {
    plan: {
      name: a.plan_name, billingCycle: a.billing_cycle, currency: cur, baseFee: formatAmount(a.base_fee_minor, cur),
      seatUnitPrice: formatUnitPrice(a.seat_unit_price_e4, cur), storageUnitPrice: formatUnitPrice(a.storage_unit_price_e4, cur),
      clipUnitPrice: formatUnitPrice(a.clip_unit_price_e4, cur),
    },
    period: { start, end, timeZone },
    seats: { activeMembers: seats.activeMembers, seatLimit: seats.limit },
    storage: storage.map((w) => ({ ...w, gib: exactToDecimal({ num: BigInt(w.bytes), den: GIB }) })),
    costCenters: (await costCentersOf(ctx.db, a.organization_id)).map((c) => ({
      id: c.id, code: c.code, name: c.name, workspaceId: c.workspace_id, budget: c.budget_minor === null ? null : formatAmount(c.budget_minor, cur),
    })),
    usageInOtherCurrencies: skipped.map((s) => ({
      currency: s.currency, kind: s.kind, unit: s.unit, events: s.events, estimatedCost: formatE4Amount(s.cost_e4, s.currency),
    })),
    taxRate: g.taxRate,
    exactSubtotal: exactToDecimal({ num: exactSum.num, den: exactSum.den * 10n ** BigInt(exponentOf(cur)) }),
  };
  return {
    invoice: {
      id, organization_id: a.organization_id, period_start: start, period_end: end, status: 'draft', number: null, currency: cur,
      tax_rate: g.taxRate, due_days: g.dueDays, subtotal_minor: subtotal, tax_minor: tax, total_minor: subtotal + tax,
      snapshot: JSON.stringify(snapshot), created_by: ctx.actor.userId, created_at: now, updated_at: now,
      issued_at: null, due_at: null, paid_at: null, voided_at: null,
    },
    lines: lines.map((l, i) => ({
      invoice_id: id, position: i + 1, kind: l.kind, description: l.description, workspace_id: l.workspaceId, cost_center_id: l.costCenterId,
      quantity: l.quantity, unit: l.unit, unit_price_e4: l.unitPriceE4, price_unit: l.priceUnit,
      amount_exact: exactToDecimal(l.exact), amount_minor: roundExact(l.exact),
    })),
  };
}

async function eventOf(ctx: Ctx, inv: InvoiceRow, action: string, from: InvoiceStatus | null, note: string | null) {
  await insertInvoiceEvent(ctx.db, {
    id: newId('ive'), invoice_id: inv.id, organization_id: inv.organization_id, action, from_status: from, to_status: inv.status,
    actor_user_id: ctx.actor.userId, actor_name: ctx.actor.name, note, created_at: inv.updated_at,
  });
}

/** What a generation reads first: the account, the organization's time zone and the checked input with its period. */
async function basisOf(ctx: Ctx, organizationId: string, body: Infer<typeof GenerateBody>) {
  const timeZone = (await organizationById(ctx.db, organizationId))!.time_zone;
  const account = (await billingAccountOf(ctx.db, organizationId))!;
  const g = generation(body, account.billing_cycle, timeZone, ctx.now());
  return { account, timeZone, g, start: g.start.toISOString(), end: g.end.toISOString(), key: `${timeZone}\n${JSON.stringify(account)}` };
}

/**
 * Takes the organization's invoice lock for the rest of the caller's transaction: a generation's
 * overlap check and insert, and a billing change that redraws the periods (cycle, time zone), never
 * interleave with another's (SQLite's writers take turns already; PostgreSQL at READ COMMITTED needs
 * the lock, after which the checks see what the previous holder committed).
 */
export async function invoiceLock(ctx: Ctx, organizationId: string): Promise<void> {
  await ctx.db.lock(`invoices:${organizationId}`);
}

/** An invoice as named in a 409's details (overlapping period, locked billing cycle or time zone). */
export const invoiceRef = (i: InvoiceRow) => ({ id: i.id, number: i.number, status: i.status, periodStart: i.period_start, periodEnd: i.period_end });

/**
 * A draft for the period (default: the billing cycle's current period in the organization's time
 * zone). created false: the organization already had one for exactly that period, returned unchanged.
 * The draft (a GROUP BY over the period's usage, every stored file, the members) is computed before
 * the transaction; in it, under the organization's invoice lock: the same period again (the original,
 * 200), an overlapping invoice that is not void (409 invoice_period_overlap), then the insert. A
 * billing change committed in between (prices, cycle, time zone) makes the draft again under the lock.
 */
export async function generateInvoice(ctx: Ctx, organizationId: string, body: Infer<typeof GenerateBody>): Promise<{ invoice: InvoiceRow; created: boolean }> {
  const before = await basisOf(ctx, organizationId, body);
  const existing = await invoiceForPeriod(ctx.db, organizationId, before.start, before.end);
  if (existing) return { invoice: existing, created: false };
  const prepared = await draftOf(ctx, before.account, before.timeZone, before.g);
  return await ctx.db.tx(async () => {
    await invoiceLock(ctx, organizationId);
    const b = await basisOf(ctx, organizationId, body);
    const { start, end } = b;
    const original = await invoiceForPeriod(ctx.db, organizationId, start, end);
    if (original) return { invoice: original, created: false };
    const overlap = await liveInvoiceOverlapping(ctx.db, organizationId, start, end);
    if (overlap) {
      throw conflict('invoice_period_overlap',
        `the period overlaps invoice ${overlap.number ?? overlap.id} (${overlap.period_start} to ${overlap.period_end}, ${overlap.status})`,
        { periodStart: start, periodEnd: end, invoice: invoiceRef(overlap) });
    }
    const draft = b.key === before.key ? prepared : await draftOf(ctx, b.account, b.timeZone, b.g);
    if (!await insertInvoice(ctx.db, draft.invoice)) return { invoice: (await invoiceForPeriod(ctx.db, organizationId, start, end))!, created: false };
    for (const l of draft.lines) await insertInvoiceLine(ctx.db, l);
    const inv = draft.invoice;
    await eventOf(ctx, inv, 'generated', null, null);
    await record(ctx, {
      action: 'invoice.generated', targetType: 'invoice', targetId: inv.id, organizationId, workspaceId: null, projectId: null,
      metadata: {
        periodStart: start, periodEnd: end, currency: inv.currency, taxRate: inv.tax_rate, lines: draft.lines.length,
        subtotal: formatAmount(inv.subtotal_minor, inv.currency), tax: formatAmount(inv.tax_minor, inv.currency), total: formatAmount(inv.total_minor, inv.currency),
      },
    });
    return { invoice: inv, created: true };
  });
}

/**
 * The organization's invoice: 404 when no invoice has that id; 403 organization_forbidden (and an
 * access.denied record in the invoice's organization) when it belongs to another organization.
 */
export async function invoiceOf(ctx: Ctx, organizationId: string, invoiceId: string): Promise<InvoiceRow> {
  const inv = await invoiceInOrganization(ctx.db, organizationId, invoiceId);
  if (inv) return inv;
  const owner = await organizationOfInvoice(ctx.db, invoiceId);
  if (!owner) throw notFound('no such invoice');
  await record(ctx, {
    action: 'access.denied', targetType: 'invoice', targetId: invoiceId, result: 'denied', organizationId: owner, workspaceId: null, projectId: null,
    metadata: { reason: 'organization_forbidden', pathOrganizationId: organizationId },
  });
  throw forbidden('organization_forbidden', 'that invoice belongs to another organization');
}

export interface InvoiceDetail { invoice: InvoiceRow; lines: InvoiceLineRow[]; events: Awaited<ReturnType<typeof eventsOfInvoice>> }

export async function invoiceDetail(ctx: Ctx, organizationId: string, invoiceId: string): Promise<InvoiceDetail> {
  const invoice = await invoiceOf(ctx, organizationId, invoiceId);
  return { invoice, lines: await linesOfInvoice(ctx.db, organizationId, invoice.id), events: await eventsOfInvoice(ctx.db, organizationId, invoice.id) };
}

const DAY_MS = 86_400_000;

/** One move of the status table; issuing takes the next number. 409 invoice_final from paid or void, 409 invalid_transition otherwise. */
export async function changeInvoiceStatus(ctx: Ctx, organizationId: string, invoiceId: string, to: InvoiceStatus, note?: string): Promise<InvoiceRow> {
  await invoiceOf(ctx, organizationId, invoiceId);
  return await ctx.db.tx(async () => {
    const inv = (await invoiceInOrganization(ctx.db, organizationId, invoiceId))!;
    const from = inv.status;
    if (TRANSITIONS[from].length === 0) {
      throw conflict('invoice_final', `a ${from} invoice cannot be changed`, { status: from, number: inv.number });
    }
    if (!TRANSITIONS[from].includes(to)) {
      throw conflict('invalid_transition', `an invoice cannot go from ${from} to ${to}`, { from, to, allowed: TRANSITIONS[from] });
    }
    const now = ctx.now();
    const at = now.toISOString();
    const next: InvoiceRow = { ...inv, status: to, updated_at: at };
    if (to === 'issued') {
      const n = await takeInvoiceNumber(ctx.db, organizationId);
      next.number = `${n.prefix}${String(n.number).padStart(6, '0')}`;
      next.issued_at = at;
      next.due_at = new Date(now.getTime() + inv.due_days * DAY_MS).toISOString();
    }
    if (to === 'paid') next.paid_at = at;
    if (to === 'void') next.voided_at = at;
    if (!await updateInvoiceStatus(ctx.db, from, next)) throw conflict('invalid_transition', 'the invoice changed meanwhile; read it again');
    await eventOf(ctx, next, 'status_changed', from, note ?? null);
    await record(ctx, {
      action: 'invoice.status_changed', targetType: 'invoice', targetId: inv.id, organizationId, workspaceId: null, projectId: null,
      metadata: { from, to, number: next.number, ...(note ? { note } : {}) },
    });
    return next;
  });
}

export function listInvoices(ctx: Ctx, organizationId: string, f: InvoiceFilter, page: { limit: number; offset: number }) {
  return pageInvoices(ctx.db, organizationId, f, page.limit, page.offset);
}

/** The ledger's matching invoices for the streamed export: the cursor is open (its snapshot taken) before the answer starts. */
export function invoiceExport(ctx: Ctx, organizationId: string, f: InvoiceFilter, format: ExportFormat): { cursor: RowCursor<ExportedInvoice>; filename: string } {
  return { cursor: openInvoiceCursor(ctx.db, organizationId, f, format === 'json'), filename: `invoices-${organizationId}-${exportStamp(ctx.now())}.${format}` };
}
