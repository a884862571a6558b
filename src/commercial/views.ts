// What the commercial routes answer (billing account, commercial view and export, quotas, cost
// centers, invoices, usage), described once: the presenters' return types are these views' types.
// Amounts are decimal strings in the major unit of `currency`; unit prices carry up to four more decimals.
import * as o from '../kernel/view.ts';
import { BILLING_CYCLES, INVOICE_STATUSES, USAGE_LEVELS } from './vocabulary.ts';

const amount = (description = 'a decimal amount in the major unit of the currency') => o.text({ description });
const localMonth = () => o.text({ description: 'a local calendar month of the organization\'s time zone, YYYY-MM' });
const actor = o.object({ userId: o.nullable(o.text()), name: o.nullable(o.text()) }, 'who made the change (null: the system or a deleted user)');

export const BillingSettingsView = o.named('BillingSettings', o.object({
  planName: o.text(), billingCycle: o.oneOf(BILLING_CYCLES, 'invoice periods: calendar month, quarter or year'),
  currency: o.text({ description: 'ISO 4217 code' }),
  baseFee: amount('the base fee per billing period'), seatUnitPrice: amount('price per active member'),
  storageUnitPrice: amount('price per stored GiB'), clipUnitPrice: amount('price per generated clip'),
  seatLimit: o.int(), storageGb: o.number('storage limit in GiB'), monthlyClipQuota: o.int(),
  quotaWarningPercent: o.int('share of a quota (percent) at which a warning is recorded'), localRunnerOnly: o.bool(), cloudConnectorsRequireApproval: o.bool(),
  invoicePrefix: o.text(), timeZone: o.text({ description: 'IANA time zone of the organization: local months and billing periods' }),
}, 'the settings PATCH .../billing changes'));

export const BillingAccountView = o.named('BillingAccount', o.extend(BillingSettingsView, {
  organizationId: o.text(), nextInvoiceNumber: o.int('the number the next issued invoice takes'), createdAt: o.time(), updatedAt: o.time(),
}));

export const WorkspaceQuotaView = o.named('WorkspaceQuota', o.object({
  id: o.text(), workspaceId: o.text(), workspaceName: o.text(),
  monthlyClipQuota: o.nullable(o.int('the workspace\'s own monthly clip limit (null: only the plan applies)')),
  storageGb: o.nullable(o.number('the workspace\'s own storage limit in GiB (null: only the plan applies)')),
  usedClips: o.int('clips of this local month'), usedStorageBytes: o.int(),
}));

export const CostCenterView = o.named('CostCenter', o.object({
  id: o.text(), code: o.text(), name: o.text(), workspaceId: o.nullable(o.text()),
  budget: o.nullable(amount('budget per billing period (null: none)')), currency: o.text(),
  spent: amount('estimated cost of this billing period'), events: o.int('usage events of this billing period'),
  budgetUsedRatio: o.nullable(o.number('spent / budget (null: no budget)')),
}));

export const CostCenterUsageView = o.named('CostCenterUsage', o.object({
  costCenterId: o.text(), code: o.text(), workspaceId: o.nullable(o.text()), workspaceName: o.nullable(o.text()),
  events: o.int(), units: o.number('summed quantity'), estimatedCost: amount(),
}, 'this billing period\'s usage of one cost center in one workspace'));

export const QuotaWarningView = o.named('QuotaWarning', o.object({
  workspaceId: o.nullable(o.text({ description: 'null: the organization\'s quota' })), metric: o.oneOf(['clips', 'storage'] as const),
  period: o.text({ description: 'the local month (clips), empty for storage' }), threshold: o.number('percent of the quota'),
  used: o.number(), quota: o.number(), at: o.time(),
}));

export const BillingAccountChangeView = o.named('BillingAccountChange', o.object({
  kind: o.constant('account'), id: o.text(), at: o.time(), actor,
  changed: o.array(o.text(), 'names of the changed settings'), before: BillingSettingsView, after: BillingSettingsView,
}));

export const InvoiceStatusChangeView = o.named('InvoiceStatusChange', o.object({
  kind: o.constant('invoice'), id: o.text(), at: o.time(), actor,
  invoiceId: o.text(), invoiceNumber: o.nullable(o.text()), action: o.text(), fromStatus: o.nullable(o.oneOf(INVOICE_STATUSES)),
  toStatus: o.oneOf(INVOICE_STATUSES), note: o.nullable(o.text()),
}));

export const UsageTrendDayView = o.named('UsageTrendDay', o.object({
  day: o.text({ format: 'date', description: 'local day' }), units: o.number('summed quantity'), estimatedCost: amount(), events: o.int(),
}));

export const CommercialView = o.named('Commercial', o.object({
  organization: o.object({ id: o.text(), name: o.text(), timeZone: o.text() }),
  account: BillingAccountView,
  seats: o.object({
    limit: o.int(), activeMembers: o.int(), pendingInvitations: o.int(),
    reserved: o.int('active members plus pending invitations'), available: o.int(),
  }),
  workspaceQuotas: o.array(WorkspaceQuotaView),
  usageThisMonth: o.object({
    month: localMonth(), start: o.time(), end: o.time(), clips: o.int(), events: o.int(), estimatedCost: amount(), currency: o.text(),
    storageBytes: o.int(),
  }),
  quotaWarnings: o.array(QuotaWarningView, 'newest first (the latest 50; the export: all)'),
  costCenters: o.array(CostCenterView),
  costCenterDetail: o.array(CostCenterUsageView),
  billingHistory: o.array(o.anyOf([BillingAccountChangeView, InvoiceStatusChangeView]), 'account and invoice status changes, newest first (the latest 50; the export: all)'),
  usageTrend: o.array(UsageTrendDayView, 'the last 31 local days with events, oldest first'),
}));

export const InvoiceView = o.named('Invoice', o.object({
  id: o.text(), organizationId: o.text(), number: o.nullable(o.text({ description: 'given when issued' })), status: o.oneOf(INVOICE_STATUSES),
  periodStart: o.time(), periodEnd: o.time(), currency: o.text(), taxRate: o.text({ description: 'decimal tax rate, e.g. "0.2"' }), dueDays: o.int(),
  subtotal: amount(), tax: amount(), total: amount(),
  createdBy: o.nullable(o.text()), createdAt: o.time(), updatedAt: o.time(),
  issuedAt: o.nullable(o.time()), dueAt: o.nullable(o.time()), paidAt: o.nullable(o.time()), voidedAt: o.nullable(o.time()),
}));

export const InvoiceSummaryView = o.named('InvoiceSummary', o.object({
  id: o.text(), number: o.nullable(o.text()), status: o.oneOf(INVOICE_STATUSES), periodStart: o.time(), periodEnd: o.time(), currency: o.text(),
  subtotal: amount(), tax: amount(), total: amount(), createdAt: o.time(),
  issuedAt: o.nullable(o.time()), dueAt: o.nullable(o.time()), paidAt: o.nullable(o.time()), voidedAt: o.nullable(o.time()),
}));

export const UsageMonthView = o.named('UsageMonth', o.object({
  month: localMonth(), events: o.int(), clips: o.int(),
  byUnit: o.array(o.object({ unit: o.text(), events: o.int(), units: o.number(), estimatedCost: amount() })),
  estimatedCost: amount(), currency: o.text(),
}));

export const CommercialExportView = o.named('CommercialExport', o.extend(CommercialView, {
  exportedAt: o.time(),
  billingAccountEvents: o.array(BillingAccountChangeView),
  usageByMonth: o.array(UsageMonthView, 'every local month from the first usage event'),
  invoices: o.array(InvoiceSummaryView, 'oldest period first'),
}));

export const InvoiceLineView = o.named('InvoiceLine', o.object({
  position: o.int(), kind: o.text({ description: 'base_fee, seats, storage or usage' }), description: o.text(),
  workspaceId: o.nullable(o.text()), costCenterId: o.nullable(o.text()),
  quantity: o.text({ description: 'a decimal quantity' }), unit: o.text(), unitPrice: amount('price per price unit (up to four more decimals)'),
  priceUnit: o.text(), amount: amount('the line amount, rounded half-up once'), amountExact: amount('the exact line amount'),
}));

export const InvoiceEventView = o.named('InvoiceEvent', o.object({
  id: o.text(), action: o.text(), fromStatus: o.nullable(o.oneOf(INVOICE_STATUSES)), toStatus: o.oneOf(INVOICE_STATUSES),
  actorUserId: o.nullable(o.text()), actorName: o.nullable(o.text()), note: o.nullable(o.text()), createdAt: o.time(),
}));

export const InvoiceDetailView = o.named('InvoiceDetail', o.extend(InvoiceView, {
  snapshot: o.anyObject('what the invoice was drawn from, frozen at generation: plan, period, seats, storage by workspace, cost centers, usage in other currencies, tax rate, exact subtotal'),
  lines: o.array(InvoiceLineView),
  events: o.array(InvoiceEventView),
}));

const facet = o.object({ value: o.nullable(o.text()), count: o.int() });
const namedFacet = o.object({ value: o.nullable(o.text()), count: o.int(), name: o.nullable(o.text()) });

export const UsageEventView = o.named('UsageEvent', o.object({
  id: o.text(), at: o.time(), workspaceId: o.nullable(o.text()), workspaceName: o.nullable(o.text()), projectId: o.nullable(o.text()),
  projectName: o.nullable(o.text()), actorUserId: o.nullable(o.text()), actorName: o.nullable(o.text()),
  kind: o.text(), unit: o.text(), quantity: o.number(), estimatedCost: amount(), currency: o.text(),
  costCenter: o.nullable(o.object({ id: o.text(), code: o.nullable(o.text()), name: o.nullable(o.text()) })),
  jobId: o.nullable(o.text()), metadata: o.anything('what the recorder stored with the event'),
}));

export const UsageListView = o.named('UsageList', o.object({
  items: o.array(UsageEventView),
  summary: o.object({
    events: o.int(), estimatedCost: amount(), currency: o.text(),
    byUnit: o.array(o.object({ unit: o.text(), events: o.int(), quantity: o.number(), estimatedCost: amount() })),
  }, 'totals over the whole filtered set'),
  pagination: o.Pagination,
  facets: o.object({
    kind: o.array(facet), unit: o.array(facet), workspace: o.array(namedFacet), project: o.array(namedFacet),
    costCenter: o.array(o.object({ ...namedFacet.shape, code: o.nullable(o.text()) })), user: o.array(namedFacet),
  }, 'counts by value over the whole filtered set, top 100 each, most frequent first'),
  window: o.object({ from: o.time(), to: o.nullable(o.time()), timeZone: o.text() }, 'the window read: [from, to), to null: open'),
}));

const clipLimits = {
  monthlyClipQuota: o.nullable(o.int()), clipsUsed: o.int('clip usage events of this local month'),
  clipsTowardQuota: o.nullable(o.int('recorded clips plus video jobs not finished yet')),
  storageLimitBytes: o.nullable(o.int()), storageUsedBytes: o.nullable(o.int()),
};

export const ScopeUsageView = o.named('ScopeUsage', o.object({
  scope: o.object({ level: o.oneOf(USAGE_LEVELS), organizationId: o.text(), workspaceId: o.nullable(o.text()), projectId: o.nullable(o.text()) }),
  month: o.object({ label: localMonth(), start: o.time(), end: o.time(), timeZone: o.text() }),
  events: o.int(), clips: o.int(), estimatedCost: amount(), currency: o.text(),
  byKind: o.array(o.object({ kind: o.text(), unit: o.text(), events: o.int(), quantity: o.number(), estimatedCost: amount() })),
  storage: o.object({ usedBytes: o.int() }),
  limits: o.object({
    organization: o.object({
      monthlyClipQuota: o.int(), clipsUsed: o.int(), clipsTowardQuota: o.int(), storageLimitBytes: o.nullable(o.int()),
      storageUsedBytes: o.int(), quotaWarningPercent: o.int(),
    }),
    workspace: o.nullable(o.object({ workspaceId: o.text(), ...clipLimits }, 'null when the scope has no workspace')),
  }),
}));

export const BillingOverviewView = o.named('BillingOverview', o.extend(BillingAccountView, {
  period: o.object({ cycle: o.oneOf(BILLING_CYCLES), start: o.time(), end: o.time(), timeZone: o.text() }, 'the current billing period'),
  estimatedCharges: o.object({
    currency: o.text(),
    lines: o.array(o.object({
      kind: o.oneOf(['base_fee', 'seats', 'storage', 'usage'] as const), quantity: o.text({ description: 'a decimal quantity' }),
      unitPrice: o.nullable(amount('null for usage: each event carries its recorded cost')), amount: amount(),
    })),
    total: amount('the lines\' sum, before tax'),
  }, 'the current billing period\'s charges so far'),
}));
