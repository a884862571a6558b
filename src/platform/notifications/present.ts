// Notifications, preferences, channels and deliveries as the API shows them: never a webhook secret,
// its ciphertext or a signature.
import * as o from '../../kernel/view.ts';
import { CATEGORY_LABELS, NOTIFICATION_CATEGORIES, type NotificationCategory, type Preference } from './service.ts';
import type { AllowListRow, ChannelRow, NotificationRow, OutboxRow } from './store.ts';

const category = (description?: string) => o.oneOf(NOTIFICATION_CATEGORIES, description);

export const NotificationView = o.named('Notification', o.object({
  id: o.text(), category: category(), type: o.text({ description: 'dotted event type, e.g. task.assigned, job.failed' }),
  subject: o.text(), body: o.nullable(o.text()), link: o.nullable(o.text({ description: 'the console page of the object (relative)' })),
  organizationId: o.text(), workspaceId: o.nullable(o.text()), projectId: o.nullable(o.text()),
  read: o.bool(), readAt: o.nullable(o.time()), createdAt: o.time(),
}));

export const presentNotification = (n: NotificationRow): o.Out<typeof NotificationView> => ({
  id: n.id, category: n.category as NotificationCategory, type: n.type, subject: n.subject, body: n.body, link: n.link,
  organizationId: n.organization_id, workspaceId: n.workspace_id, projectId: n.project_id,
  read: n.read_at !== null, readAt: n.read_at, createdAt: n.created_at,
});

export const NotificationPreferenceView = o.named('NotificationPreference', o.object({
  category: category(), label: o.text(), enabled: o.bool(), updatedAt: o.nullable(o.time('null while never changed (enabled by default)')),
}));

export const presentPreference = (p: Preference): o.Out<typeof NotificationPreferenceView> =>
  ({ category: p.category, label: CATEGORY_LABELS[p.category], enabled: p.enabled, updatedAt: p.updatedAt });

export const NotificationChannelView = o.named('NotificationChannel', o.object({
  id: o.text(), organizationId: o.text(), kind: o.oneOf(['log', 'webhook'] as const),
  url: o.nullable(o.text({ description: 'the webhook\'s URL; null for a log channel' })), description: o.text(), enabled: o.bool(),
  categories: o.array(category(), 'the categories it receives; empty: every category'),
  secretHint: o.optional(o.nullable(o.text({ description: 'webhooks only: the end of the secret, to recognise it (never the secret)' }))),
  logFile: o.optional(o.text({ description: 'log channels only: the JSON-lines file under the data folder' })),
  createdAt: o.time(), createdBy: o.nullable(o.text()), updatedAt: o.time(),
}));

export const presentChannel = (c: ChannelRow): o.Out<typeof NotificationChannelView> => ({
  id: c.id, organizationId: c.organization_id, kind: c.kind, url: c.url, description: c.description, enabled: c.enabled === 1,
  categories: JSON.parse(c.categories) as NotificationCategory[],
  ...(c.kind === 'webhook' ? { secretHint: c.secret_hint } : { logFile: `notifications/${c.organization_id}.jsonl` }),
  createdAt: c.created_at, createdBy: c.created_by, updatedAt: c.updated_at,
});

export const NotificationDeliveryView = o.named('NotificationDelivery', o.object({
  id: o.text({ description: 'the webhook-id' }), channelId: o.text(), organizationId: o.text(), eventId: o.text(), category: category(), type: o.text(),
  status: o.oneOf(['pending', 'delivered', 'failed'] as const), attempts: o.int(),
  nextAttemptAt: o.nullable(o.time('while pending')),
  lastAttemptAt: o.nullable(o.time()), lastStatusCode: o.nullable(o.int('the HTTP status of the last attempt')), lastError: o.nullable(o.text()),
  deliveredAt: o.nullable(o.time()), createdAt: o.time(),
}, 'one event\'s delivery to one channel'));

export const presentDelivery = (d: OutboxRow): o.Out<typeof NotificationDeliveryView> => ({
  id: d.id, channelId: d.channel_id, organizationId: d.organization_id, eventId: d.event_id, category: d.category as NotificationCategory, type: d.type,
  status: d.status, attempts: d.attempts, nextAttemptAt: d.status === 'pending' ? d.next_attempt_at : null,
  lastAttemptAt: d.last_attempt_at, lastStatusCode: d.last_status_code, lastError: d.last_error, deliveredAt: d.delivered_at, createdAt: d.created_at,
});

export const WebhookAllowListEntryView = o.named('WebhookAllowListEntry', o.object({
  id: o.text(), organizationId: o.text(), cidr: o.text({ description: 'an address or CIDR range' }), description: o.text(),
  createdAt: o.time(), createdBy: o.nullable(o.text()),
}));

export const presentAllowListEntry = (e: AllowListRow): o.Out<typeof WebhookAllowListEntryView> => ({
  id: e.id, organizationId: e.organization_id, cidr: e.cidr, description: e.description, createdAt: e.created_at, createdBy: e.created_by,
});
