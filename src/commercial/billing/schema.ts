// Input of PATCH /api/organizations/:organizationId/billing. Every field is optional; the shape is
// checked here, and what depends on the account (the decimals its currency allows, a known
// currency or time zone) in billing.ts, so that one 422 names every bad field.
import * as v from '../../kernel/validate.ts';
import { BILLING_CYCLES } from '../vocabulary.ts';

type Check<T> = v.Schema<T>['check'];

/** A non-negative decimal in the major unit: a string ("12.50") or a JSON number read by its shortest decimal text (12.5). */
function decimal(description: string): v.Schema<string> & { optional: false } {
  const check: Check<string> = (value, path, st) => {
    const text = typeof value === 'number' && Number.isFinite(value) ? String(value) : value;
    if (typeof text !== 'string' || !/^\d{1,16}(\.\d{1,16})?$/.test(text.trim())) {
      st.errors[path] ??= 'must be a non-negative decimal string such as "12.50"';
      return '0';
    }
    return text.trim();
  };
  return { json: { type: 'string', pattern: '^\\d+(\\.\\d+)?$', description }, optional: false, check };
}


export const BillingPatchBody = v.object({
  planName: v.optional(v.string({ min: 1, max: 100 })),
  billingCycle: v.optional(v.oneOf(BILLING_CYCLES, { description: 'invoice periods: calendar month, quarter or year; 409 billing_cycle_locked while an invoice that is not void exists' })),
  currency: v.optional(v.string({ pattern: /^[A-Z]{3}$/, description: 'ISO 4217 code (src/kernel/money.ts); 409 currency_locked once usage or an invoice exists' })),
  baseFee: v.optional(decimal('amount per billing period, at most the currency\'s decimals')),
  seatUnitPrice: v.optional(decimal('per seat and billing period; up to the currency\'s decimals + 4')),
  storageUnitPrice: v.optional(decimal('per GiB and billing period; up to the currency\'s decimals + 4')),
  clipUnitPrice: v.optional(decimal('per clip; up to the currency\'s decimals + 4')),
  seatLimit: v.optional(v.int({ min: 0, max: 1_000_000 })),
  storageGb: v.optional(v.number({ min: 0, max: 1_000_000_000 })),
  monthlyClipQuota: v.optional(v.int({ min: 0, max: 1_000_000_000 })),
  quotaWarningPercent: v.optional(v.number({ min: 1, max: 100 })),
  localRunnerOnly: v.optional(v.boolean()),
  cloudConnectorsRequireApproval: v.optional(v.boolean()),
  invoicePrefix: v.optional(v.string({ min: 1, max: 20, pattern: /^[A-Z0-9\-/_]+$/, trim: false })),
  timeZone: v.optional(v.string({ min: 1, max: 64, description: 'IANA time zone of the organization (periods, months, trend days); 409 time_zone_locked while an invoice that is not void exists' })),
});
export type BillingPatch = v.Infer<typeof BillingPatchBody>;
