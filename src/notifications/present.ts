// Notifications, preferences, channels and deliveries as the API shows them: never a webhook secret,
// its ciphertext or a signature.
import { CATEGORY_LABELS, type Preference } from './service.ts';
import type { AllowListRow, ChannelRow, NotificationRow, OutboxRow } from './store.ts';

export const presentNotification = (n: NotificationRow) => ({
  id: n.id, category: n.category, type: n.type, subject: n.subject, body: n.body, link: n.link,
  organizationId: n.organization_id, workspaceId: n.workspace_id, projectId: n.project_id,
  read: n.read_at !== null, readAt: n.read_at, createdAt: n.created_at,
});

export const presentPreference = (p: Preference) => ({ category: p.category, label: CATEGORY_LABELS[p.category], enabled: p.enabled, updatedAt: p.updatedAt });

export const presentChannel = (c: ChannelRow) => ({
  id: c.id, organizationId: c.organization_id, kind: c.kind, url: c.url, description: c.description, enabled: c.enabled === 1,
  categories: JSON.parse(c.categories) as string[],
  ...(c.kind === 'webhook' ? { secretHint: c.secret_hint } : { logFile: `notifications/${c.organization_id}.jsonl` }),
  createdAt: c.created_at, createdBy: c.created_by, updatedAt: c.updated_at,
});

export const presentDelivery = (d: OutboxRow) => ({
  id: d.id, channelId: d.channel_id, organizationId: d.organization_id, eventId: d.event_id, category: d.category, type: d.type,
  status: d.status, attempts: d.attempts, nextAttemptAt: d.status === 'pending' ? d.next_attempt_at : null,
  lastAttemptAt: d.last_attempt_at, lastStatusCode: d.last_status_code, lastError: d.last_error, deliveredAt: d.delivered_at, createdAt: d.created_at,
});

export const presentAllowListEntry = (e: AllowListRow) => ({
  id: e.id, organizationId: e.organization_id, cidr: e.cidr, description: e.description, createdAt: e.created_at, createdBy: e.created_by,
});
