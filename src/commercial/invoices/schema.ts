// Input of the invoice routes: the ledger's filters, generation (paired period bounds read in the
// organization's time zone, tax rate, due days) and status changes.
import { validationFailed } from '../../kernel/errors.ts';
import * as v from '../../kernel/validate.ts';
import { exactToDecimal, parseRate, type Exact } from '../../kernel/money.ts';
import { billingPeriod, dayOrInstant, localDate, startOfLocalDay, type BillingCycle } from '../../kernel/periods.ts';
import { INVOICE_STATUSES, type InvoiceStatus } from '../vocabulary.ts';


const filterShape = {
  status: v.optional(v.oneOf(INVOICE_STATUSES, { description: 'only invoices in this status' })),
  query: v.optional(v.string({ max: 200, description: 'case-insensitive substring of the invoice number or id' })),
};

export const InvoiceListQuery = v.object({
  page: v.optional(v.int({ description: 'page number from 1' })),
  pageSize: v.optional(v.int({ description: 'invoices per page, default 50, clamped to 1..200' })),
  ...filterShape,
}, { allowUnknown: true });

export const InvoiceExportQuery = v.object({
  format: v.optional(v.oneOf(['json', 'csv'] as const, { description: 'json (default): an array of invoices with their lines; csv: one row an invoice' })),
  ...filterShape,
}, { allowUnknown: true });

export type InvoiceFilter = { status?: InvoiceStatus; query?: string };

const BOUND = 'YYYY-MM-DD (that local date\'s start in the organization\'s time zone) or an ISO 8601 instant with Z or an offset';

export const GenerateBody = v.object({
  periodStart: v.optional(v.string({ max: 40, description: `first instant of the period (inclusive), with periodEnd: ${BOUND}` })),
  periodEnd: v.optional(v.string({ max: 40, description: `end of the period (exclusive), with periodStart: ${BOUND}` })),
  taxRate: v.optional(v.string({ max: 20, description: 'decimal fraction 0..1 with at most 6 decimals ("0.0825"), default "0"' })),
  dueDays: v.optional(v.int({ min: 0, max: 365, description: 'days from issue to due, default 30' })),
});

export const StatusBody = v.object({
  status: v.oneOf(INVOICE_STATUSES, { description: 'target status: draft -> issued -> paid | overdue | void; overdue -> paid' }),
  note: v.optional(v.string({ max: 1000, description: 'kept with the invoice event' })),
});

export interface Generation {
  start: Date;
  end: Date;
  /** The rate as stored and shown: decimal text without trailing zeros ("0.0825", "0"). */
  taxRate: string;
  rate: Exact;
  dueDays: number;
}

const INSTANT = /^(\d{4}-\d{2}-\d{2})T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})$/i;
const DAY = /^(\d{4})-(\d{2})-(\d{2})$/;

/** A period bound: a local date's start in the zone, or an instant of the INSTANT form; null when it is neither. */
function bound(text: string, timeZone: string): Date | null {
  if (!DAY.test(text) && !INSTANT.test(text)) return null;
  return dayOrInstant(text, timeZone)?.at ?? null;
}

/** The same local date and time of day one year later (Feb 29 runs on to Mar 1). */
function oneYearAfter(start: Date, timeZone: string): Date {
  const [y, m, d] = localDate(start, timeZone).split('-').map(Number);
  const into = start.getTime() - startOfLocalDay(y, m, d, timeZone).getTime();
  return new Date(startOfLocalDay(y + 1, m, d, timeZone).getTime() + into);
}

/**
 * The generation's checked input: both bounds or neither (422 naming the missing one); start before
 * end, at most one year; the default period is the billing cycle's period containing `now` in the
 * zone. Every problem is named in one 422.
 */
export function generation(body: v.Infer<typeof GenerateBody>, cycle: BillingCycle, timeZone: string, now: Date): Generation {
  const errors: Record<string, string> = {};
  let period = billingPeriod(cycle, timeZone, now);
  const { periodStart, periodEnd } = body;
  if (periodStart !== undefined && periodEnd === undefined) errors.periodEnd = 'is required with periodStart';
  else if (periodEnd !== undefined && periodStart === undefined) errors.periodStart = 'is required with periodEnd';
  else if (periodStart !== undefined && periodEnd !== undefined) {
    const start = bound(periodStart, timeZone);
    const end = bound(periodEnd, timeZone);
    if (!start) errors.periodStart = `must be ${BOUND}`;
    if (!end) errors.periodEnd = `must be ${BOUND}`;
    if (start && end) {
      if (end <= start) errors.periodEnd = 'must be after periodStart';
      else if (end > oneYearAfter(start, timeZone)) errors.periodEnd = 'must be at most one year after periodStart';
      period = { start, end };
    }
  }
  const rateText = body.taxRate ?? '0';
  const rate = rateText.trim().startsWith('-') ? null : parseRate(rateText);
  if (!rate) {
    errors.taxRate = 'must be a decimal string from 0 to 1 with at most 6 decimals';
  }
  if (Object.keys(errors).length > 0) throw validationFailed(errors);
  return {
    start: period.start,
    end: period.end,
    taxRate: exactToDecimal(rate!),
    rate: rate!,
    dueDays: body.dueDays ?? 30,
  };
}
