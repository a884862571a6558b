// Invoices, their lines and events as the API shows them (amounts as decimal strings with the currency).
import { exactToDecimal, exponentOf, formatAmount, formatUnitPrice } from '../../kernel/money.ts';
import type { InvoiceEventRow, InvoiceLineRow, InvoiceRow } from './store.ts';
import type { InvoiceStatus } from '../vocabulary.ts';
import * as o from '../../kernel/view.ts';
import type { InvoiceEventView, InvoiceLineView, InvoiceView } from '../views.ts';

export function presentInvoice(r: Omit<InvoiceRow, 'snapshot'>): o.Out<typeof InvoiceView> {
  const c = r.currency;
  return {
    id: r.id, organizationId: r.organization_id, number: r.number, status: r.status, periodStart: r.period_start, periodEnd: r.period_end,
    currency: c, taxRate: r.tax_rate, dueDays: r.due_days,
    subtotal: formatAmount(r.subtotal_minor, c), tax: formatAmount(r.tax_minor, c), total: formatAmount(r.total_minor, c),
    createdBy: r.created_by, createdAt: r.created_at, updatedAt: r.updated_at,
    issuedAt: r.issued_at, dueAt: r.due_at, paidAt: r.paid_at, voidedAt: r.voided_at,
  };
}

/** A stored exact amount in minor units ("953.67431640625") as the exact amount in the major unit ("9.5367431640625"). */
function exactMajor(minorText: string, currency: string): string {
  const [whole, frac = ''] = minorText.split('.');
  return exactToDecimal({ num: BigInt(whole + frac), den: 10n ** BigInt(frac.length + exponentOf(currency)) });
}

export function presentLine(l: InvoiceLineRow, currency: string): o.Out<typeof InvoiceLineView> {
  return {
    position: l.position, kind: l.kind, description: l.description, workspaceId: l.workspace_id, costCenterId: l.cost_center_id,
    quantity: l.quantity, unit: l.unit, unitPrice: formatUnitPrice(l.unit_price_e4, currency), priceUnit: l.price_unit,
    amount: formatAmount(l.amount_minor, currency), amountExact: exactMajor(l.amount_exact, currency),
  };
}

export const presentEvent = (e: InvoiceEventRow): o.Out<typeof InvoiceEventView> => ({
  id: e.id, action: e.action, fromStatus: e.from_status as InvoiceStatus | null, toStatus: e.to_status as InvoiceStatus, actorUserId: e.actor_user_id, actorName: e.actor_name, note: e.note, createdAt: e.created_at,
});
