// Invoices of an organization: ledger, detail with lines, streamed export (usage:view); generation
// and status changes (billing:manage). Amounts are decimal strings in the currency's major unit with
// its decimals, beside `currency`; unit prices carry up to four more decimals. An invoice of another
// organization named under this one's path is 403 organization_forbidden.
import { Readable } from 'node:stream';
import { json, type Router, type RouteMeta } from '../http/router.ts';
import { pageWindow } from '../http/validate.ts';
import { csvCell } from '../audit/present.ts';
import { exactToDecimal, exponentOf, formatAmount, formatUnitPrice } from './money.ts';
import { GenerateBody, InvoiceExportQuery, InvoiceListQuery, StatusBody } from './invoice-schema.ts';
import { changeInvoiceStatus, generateInvoice, invoiceDetail, invoiceExport, listInvoices } from './invoices.ts';
import type { InvoiceCursor, InvoiceEventRow, InvoiceLineRow, InvoiceRow } from './invoice-store.ts';

export function presentInvoice(r: InvoiceRow) {
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

export function presentLine(l: InvoiceLineRow, currency: string) {
  return {
    position: l.position, kind: l.kind, description: l.description, workspaceId: l.workspace_id, costCenterId: l.cost_center_id,
    quantity: l.quantity, unit: l.unit, unitPrice: formatUnitPrice(l.unit_price_e4, currency), priceUnit: l.price_unit,
    amount: formatAmount(l.amount_minor, currency), amountExact: exactMajor(l.amount_exact, currency),
  };
}

const presentEvent = (e: InvoiceEventRow) => ({
  id: e.id, action: e.action, fromStatus: e.from_status, toStatus: e.to_status, actorUserId: e.actor_user_id, actorName: e.actor_name, note: e.note, createdAt: e.created_at,
});

const CSV_COLUMNS = ['id', 'number', 'status', 'periodStart', 'periodEnd', 'currency', 'taxRate', 'subtotal', 'tax', 'total', 'dueDays', 'createdAt', 'issuedAt', 'dueAt', 'paidAt', 'voidedAt'] as const;
const CHUNK_CHARS = 64 * 1024;

/** The export, produced only as the client reads: text gathered into ~64 KiB chunks; the cursor closes at the end or when the client goes away. */
async function* exportChunks(open: () => InvoiceCursor, format: 'json' | 'csv'): AsyncGenerator<Buffer> {
  const cursor = open();
  try {
    let text = format === 'csv' ? `${CSV_COLUMNS.join(',')}\r\n` : '[';
    let count = 0;
    for (let next = cursor.rows.next(); !next.done; next = cursor.rows.next()) {
      const inv = presentInvoice(next.value);
      text += format === 'csv'
        ? `${CSV_COLUMNS.map((k) => csvCell(inv[k])).join(',')}\r\n`
        : `${count ? ',' : ''}\n${JSON.stringify({ ...inv, lines: cursor.lines(inv.id).map((l) => presentLine(l, inv.currency)) })}`;
      count++;
      if (text.length >= CHUNK_CHARS) {
        yield Buffer.from(text, 'utf8');
        text = '';
      }
    }
    if (format === 'json') text += count ? '\n]\n' : ']\n';
    if (text) yield Buffer.from(text, 'utf8');
  } finally {
    cursor.close();
  }
}

const CONTENT_TYPE = { csv: 'text/csv; charset=utf-8', json: 'application/json; charset=utf-8' } as const;

export function bindInvoiceRoutes(r: Router): void {
  const read: Partial<RouteMeta> = { tags: ['invoices'], scope: 'organization', organizationRecords: true, permission: 'usage:view' };
  const manage: Partial<RouteMeta> = { tags: ['invoices'], scope: 'organization', organizationRecords: true, permission: 'billing:manage' };
  const base = '/api/organizations/:organizationId/invoices';

  r.get(base, {
    ...read, query: InvoiceListQuery, summary: 'The invoice ledger, newest period first; status and query (number or id substring) filters.',
    response: { description: '{ items: [invoice without lines], pagination: { page, pageSize, total } }' },
  }, ({ ctx, params, query }) => {
    const { page, pageSize, offset } = pageWindow(query.page, query.pageSize);
    const p = listInvoices(ctx, params.organizationId, query, { limit: pageSize, offset });
    return json(200, { items: p.rows.map(presentInvoice), pagination: { page, pageSize, total: p.total } });
  });

  // A literal segment wins over :invoiceId in the router, so "export" and "generate" are never read as ids.
  r.get(`${base}/export`, {
    ...read, query: InvoiceExportQuery, summary: 'Streams the matching invoices (ledger order) as a JSON array with their lines, or CSV one row an invoice, as an attachment.',
    response: { description: 'application/json array or text/csv, Content-Disposition: attachment' },
  }, ({ ctx, params, query, res }) => {
    const format = query.format ?? 'json';
    const out = invoiceExport(ctx, params.organizationId, query);
    const stream = Readable.from(exportChunks(out.open, format), { objectMode: false });
    res.once('close', () => stream.destroy());
    return { status: 200, headers: { 'content-type': CONTENT_TYPE[format], 'content-disposition': `attachment; filename="${out.filename}.${format}"` }, raw: stream };
  });

  r.post(`${base}/generate`, {
    ...manage, body: GenerateBody,
    summary: 'Generates the draft invoice of a period (default: the current billing period in the organization\'s time zone); a repeat for the same period returns the original unchanged (200); a period overlapping another invoice that is not void is 409 invoice_period_overlap (details.invoice names it).',
    response: { status: 201, description: 'the draft invoice with snapshot and lines (201 created; 200 the existing one)' },
  }, ({ ctx, params, body }) => {
    const g = generateInvoice(ctx, params.organizationId, body);
    return json(g.created ? 201 : 200, detailOf(invoiceDetail(ctx, params.organizationId, g.invoice.id)));
  });

  r.get(`${base}/:invoiceId`, {
    ...read, summary: 'One invoice with its snapshot, lines and events; another organization\'s invoice is 403 organization_forbidden.',
    response: { description: 'invoice, snapshot, lines, events' },
  }, ({ ctx, params }) => json(200, detailOf(invoiceDetail(ctx, params.organizationId, params.invoiceId))));

  r.post(`${base}/:invoiceId/status`, {
    ...manage, body: StatusBody,
    summary: 'Changes the status: draft -> issued (takes the next number) -> paid | overdue | void; overdue -> paid. Paid and void are final (409 invoice_final); other moves 409 invalid_transition.',
    response: { description: 'the invoice with snapshot, lines and events' },
  }, ({ ctx, params, body }) => {
    changeInvoiceStatus(ctx, params.organizationId, params.invoiceId, body.status, body.note);
    return json(200, detailOf(invoiceDetail(ctx, params.organizationId, params.invoiceId)));
  });
}

function detailOf(d: ReturnType<typeof invoiceDetail>) {
  const c = d.invoice.currency;
  return { ...presentInvoice(d.invoice), snapshot: JSON.parse(d.invoice.snapshot), lines: d.lines.map((l) => presentLine(l, c)), events: d.events.map(presentEvent) };
}
