// The commercial words every part shares: billing cycles, invoice statuses, usage levels (the
// schemas validate them, the views document them).
export const BILLING_CYCLES = ['monthly', 'quarterly', 'annual'] as const;
export const INVOICE_STATUSES = ['draft', 'issued', 'paid', 'overdue', 'void'] as const;
export type InvoiceStatus = (typeof INVOICE_STATUSES)[number];
export const USAGE_LEVELS = ['organization', 'workspace', 'project'] as const;
export type UsageLevel = (typeof USAGE_LEVELS)[number];
