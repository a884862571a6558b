// The billing account and its change history as the API shows them.
import type { Out } from '../kernel/view.ts';
import { billingSettings, type BillingAccountEventRow, type BillingAccountRow, type BillingSettings } from '../directory/plan/account.ts';
import type { BillingAccountChangeView, BillingAccountView } from './views.ts';

/** The billing account as the API shows it: its settings, the next invoice number and its times. */
export const presentBillingAccount = (a: BillingAccountRow, timeZone: string): Out<typeof BillingAccountView> => ({
  organizationId: a.organization_id, ...billingSettings(a, timeZone), nextInvoiceNumber: a.next_invoice_number,
  createdAt: a.created_at, updatedAt: a.updated_at,
});

export const presentBillingAccountEvent = (e: BillingAccountEventRow): Out<typeof BillingAccountChangeView> => ({
  kind: 'account' as const, id: e.id, at: e.created_at, actor: { userId: e.actor_user_id, name: e.actor_name },
  changed: JSON.parse(e.changed) as string[], before: JSON.parse(e.before) as BillingSettings, after: JSON.parse(e.after) as BillingSettings,
});
