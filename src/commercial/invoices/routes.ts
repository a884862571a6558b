// Invoices of an organization: ledger, detail with lines, streamed export (usage:view); generation
// and status changes (billing:manage). Amounts are decimal strings in the currency's major unit with
// its decimals, beside `currency`; unit prices carry up to four more decimals. An invoice of another
// organization named under this one's path is 403 organization_forbidden.
import { json, type Router, type RouteMeta } from '../../http/router.ts';
import { pageWindow } from '../../kernel/validate.ts';
import { attachment, csvRow, csvText, jsonArrayText, recordStream } from '../../kernel/export-stream.ts';
import { GenerateBody, InvoiceExportQuery, InvoiceListQuery, StatusBody } from './schema.ts';
import { changeInvoiceStatus, generateInvoice, invoiceDetail, invoiceExport, listInvoices } from './service.ts';
import { presentEvent, presentInvoice, presentLine } from './present.ts';
import * as o from '../../kernel/view.ts';
import { InvoiceDetailView, InvoiceLineView, InvoiceView } from '../views.ts';

const CSV_COLUMNS = ['id', 'number', 'status', 'periodStart', 'periodEnd', 'currency', 'taxRate', 'subtotal', 'tax', 'total', 'dueDays', 'createdAt', 'issuedAt', 'dueAt', 'paidAt', 'voidedAt'] as const;
export function bindInvoiceRoutes(router: Router): void {
  const r = router.module(import.meta.url);
  const read: Partial<RouteMeta> = { tags: ['invoices'], scope: 'organization', organizationRecords: true, permission: 'usage:view' };
  const manage: Partial<RouteMeta> = { tags: ['invoices'], scope: 'organization', organizationRecords: true, permission: 'billing:manage' };

  r.get('/api/organizations/:organizationId/invoices', {
    ...read, query: InvoiceListQuery, summary: 'The invoice ledger, newest period first; status and query (number or id substring) filters.',
    response: { description: 'a page of invoices (without lines)', schema: o.page(InvoiceView) },
  }, async ({ ctx, params, query }) => {
    const { page, pageSize, offset } = pageWindow(query.page, query.pageSize);
    const p = await listInvoices(ctx, params.organizationId, query, { limit: pageSize, offset });
    return json(200, { items: p.rows.map(presentInvoice), pagination: { page, pageSize, total: p.total } });
  });

  // A literal segment wins over :invoiceId in the router, so "export" and "generate" are never read as ids.
  r.get('/api/organizations/:organizationId/invoices/export', {
    ...read, query: InvoiceExportQuery, summary: 'Streams the matching invoices (ledger order) as a JSON array with their lines, or CSV one row an invoice, as an attachment.',
    response: { type: 'text/csv', schema: o.array(o.extend(InvoiceView, { lines: o.array(InvoiceLineView) })), description: 'a JSON array of invoices with their lines, or CSV one row an invoice; Content-Disposition: attachment' },
  }, ({ ctx, params, query, res }) => {
    const format = query.format ?? 'json';
    const { cursor, filename } = invoiceExport(ctx, params.organizationId, query, format);
    const stream = recordStream(cursor, format === 'csv'
      ? csvText(`${CSV_COLUMNS.join(',')}\r\n`, (r) => { const inv = presentInvoice(r); return csvRow(CSV_COLUMNS.map((k) => inv[k])); })
      : jsonArrayText((r) => ({ ...presentInvoice(r), lines: (r.lines ?? []).map((l) => presentLine(l, r.currency)) })));
    return attachment(res, format, filename, stream);
  });

  r.post('/api/organizations/:organizationId/invoices/generate', {
    ...manage, body: GenerateBody,
    summary: 'Generates the draft invoice of a period (default: the current billing period in the organization\'s time zone); a repeat for the same period returns the original unchanged (200); a period overlapping another invoice that is not void is 409 invoice_period_overlap (details.invoice names it).',
    response: { status: 201, also: [200], description: 'the draft invoice with snapshot and lines (201 created; 200 the existing one)', schema: InvoiceDetailView },
  }, async ({ ctx, params, body }) => {
    const g = await generateInvoice(ctx, params.organizationId, body);
    return json(g.created ? 201 : 200, detailOf(await invoiceDetail(ctx, params.organizationId, g.invoice.id)));
  });

  r.get('/api/organizations/:organizationId/invoices/:invoiceId', {
    ...read, summary: 'One invoice with its snapshot, lines and events; another organization\'s invoice is 403 organization_forbidden.',
    response: { description: 'the invoice with snapshot, lines and events', schema: InvoiceDetailView },
  }, async ({ ctx, params }) => json(200, detailOf(await invoiceDetail(ctx, params.organizationId, params.invoiceId))));

  r.post('/api/organizations/:organizationId/invoices/:invoiceId/status', {
    ...manage, body: StatusBody,
    summary: 'Changes the status: draft -> issued (takes the next number) -> paid | overdue | void; overdue -> paid. Paid and void are final (409 invoice_final); other moves 409 invalid_transition.',
    response: { description: 'the invoice with snapshot, lines and events', schema: InvoiceDetailView },
  }, async ({ ctx, params, body }) => {
    await changeInvoiceStatus(ctx, params.organizationId, params.invoiceId, body.status, body.note);
    return json(200, detailOf(await invoiceDetail(ctx, params.organizationId, params.invoiceId)));
  });
}

function detailOf(d: Awaited<ReturnType<typeof invoiceDetail>>): o.Out<typeof InvoiceDetailView> {
  const c = d.invoice.currency;
  return { ...presentInvoice(d.invoice), snapshot: JSON.parse(d.invoice.snapshot) as Record<string, unknown>, lines: d.lines.map((l) => presentLine(l, c)), events: d.events.map(presentEvent) };
}
