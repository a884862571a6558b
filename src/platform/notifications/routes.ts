// The current user's inbox and preferences (organization in scope), and the system administrator's
// organization channels, allow-list and delivery audit under /api/system/notifications.
import { json, type Router } from '../../http/router.ts';
import { pageOf } from '../../kernel/validate.ts';
import { listNotifications, markAllRead, NOTIFICATION_CATEGORIES, preferences, setNotificationRead, setPreference } from './service.ts';
import {
  addAllowListEntry, channelDeliveries, channelOrFail, createChannel, deleteChannel, listAllowList, listChannels, removeAllowListEntry,
  rotateSecret, testChannel, updateChannel,
} from './channels.ts';
import { MAX_ATTEMPTS, RETRY_CAP_MS, TIMEOUT_MS } from './delivery.ts';
import {
  AllowListBody, ChannelCreateBody, ChannelPatchBody, DeliveryListQuery, NotificationListQuery, OrganizationFilterQuery, PreferenceBody, ReadBody,
} from './schema.ts';
import * as o from '../../kernel/view.ts';
import {
  NotificationChannelView, NotificationDeliveryView, NotificationPreferenceView, NotificationView, WebhookAllowListEntryView,
  presentAllowListEntry, presentChannel, presentDelivery, presentNotification, presentPreference,
} from './present.ts';

const secret = (description: string) => o.text({ description: `${description} (whsec_...), answered this once` });

export function bindNotificationRoutes(router: Router): void {
  const r = router.module(import.meta.url);
  const inbox = { tags: ['notifications'], scope: 'organization' as const };
  r.get('/api/notifications', { ...inbox, summary: 'The current user\u2019s notifications in the current organization and visible workspaces, newest first: { items, unreadCount, pagination: { limit, total } }. limit default 50, clamped to 1..200; unreadOnly=1 narrows the list, not unreadCount.', query: NotificationListQuery,
    response: { description: 'the inbox, newest first', schema: o.object({
      items: o.array(NotificationView), unreadCount: o.int('every unread one, whatever unreadOnly'),
      pagination: o.object({ limit: o.int(), total: o.int('the notifications listed by this query, in all') }),
    }) } },
    async ({ ctx, query }) => {
      const page = await listNotifications(ctx, query);
      return json(200, { items: page.items.map(presentNotification), unreadCount: page.unreadCount, pagination: { limit: page.limit, total: page.total } });
    });
  r.post('/api/notifications/read-all', { ...inbox, summary: 'Marks every visible unread notification of the current user read: { updated }.',
    response: { description: 'how many were marked read', schema: o.object({ updated: o.int() }) } },
    async ({ ctx }) => json(200, { updated: await markAllRead(ctx) }));
  r.patch('/api/notifications/:notificationId', { ...inbox, summary: 'Marks one notification read or unread; another user\u2019s or another scope\u2019s is 404.', body: ReadBody, response: { description: 'the notification', schema: NotificationView } },
    async ({ ctx, params, body }) => json(200, presentNotification(await setNotificationRead(ctx, params.notificationId, body.read))));
  r.get('/api/notification-preferences', { ...inbox, summary: `Every category with enabled (default true) for the current user and organization: { organizationId, items }. Categories: ${NOTIFICATION_CATEGORIES.join(', ')}.`,
    response: { description: 'the preferences', schema: o.object({ organizationId: o.text(), items: o.array(NotificationPreferenceView) }) } },
    async ({ ctx }) => json(200, { organizationId: ctx.scope.organizationId!, items: (await preferences(ctx)).map(presentPreference) }));
  r.patch('/api/notification-preferences/:category', { ...inbox, summary: 'Turns a category on or off for the current user and organization (unknown category: 404). Off: nothing is written to the inbox; on again: no back-fill.', body: PreferenceBody, response: { description: 'the preference', schema: NotificationPreferenceView } },
    async ({ ctx, params, body }) => json(200, presentPreference(await setPreference(ctx, params.category, body.enabled))));

  const sys = { tags: ['system', 'notifications'], systemAdmin: true, scope: 'none' as const };
  r.get('/api/system/notifications', { ...sys, summary: 'Organization channels, allow-list and delivery settings (filter organizationId).', query: OrganizationFilterQuery,
    response: { description: 'channels, allow-list, categories and delivery settings', schema: o.object({
      channels: o.array(NotificationChannelView), allowList: o.array(WebhookAllowListEntryView), categories: o.array(o.oneOf(NOTIFICATION_CATEGORIES)),
      delivery: o.object({ retryBaseMs: o.int(), retryCapMs: o.int(), maxAttempts: o.int(), timeoutMs: o.int() }, 'webhook delivery: retries back off from retryBaseMs to retryCapMs'),
    }) } },
    async ({ ctx, query }) => json(200, {
      channels: (await listChannels(ctx, query.organizationId ?? null)).map(presentChannel),
      allowList: (await listAllowList(ctx, query.organizationId ?? null)).map(presentAllowListEntry),
      categories: [...NOTIFICATION_CATEGORIES],
      delivery: { retryBaseMs: ctx.config.webhookRetryBaseMs, retryCapMs: RETRY_CAP_MS, maxAttempts: MAX_ATTEMPTS, timeoutMs: TIMEOUT_MS },
    }));
  r.get('/api/system/notifications/channels', { ...sys, summary: 'Channels (filter organizationId), paged.', query: OrganizationFilterQuery, response: { description: 'a page of channels', schema: o.page(NotificationChannelView) } },
    async ({ ctx, query, searchParams }) => json(200, pageOf(searchParams, await listChannels(ctx, query.organizationId ?? null), presentChannel)));
  r.post('/api/system/notifications/channels', { ...sys, summary: 'Create a log or webhook channel of an organization; a webhook\u2019s secret (whsec_...) is answered here once: { channel, secret }.', body: ChannelCreateBody,
    response: { status: 201, description: '{ channel, secret }', schema: o.object({ channel: NotificationChannelView, secret: o.optional(secret('webhooks only: the signing secret')) }) } },
    async ({ ctx, body }) => {
      const { channel, secret } = await createChannel(ctx, body);
      return json(201, { channel: presentChannel(channel), ...(secret ? { secret } : {}) });
    });
  r.get('/api/system/notifications/channels/:channelId', { ...sys, summary: 'One channel (never its secret).', response: { description: 'the channel', schema: NotificationChannelView } },
    async ({ ctx, params }) => json(200, presentChannel(await channelOrFail(ctx, params.channelId))));
  r.patch('/api/system/notifications/channels/:channelId', { ...sys, summary: 'Change url, description, enabled or categories (empty: every category).', body: ChannelPatchBody, response: { description: 'the channel', schema: NotificationChannelView } },
    async ({ ctx, params, body }) => json(200, presentChannel(await updateChannel(ctx, params.channelId, body))));
  r.delete('/api/system/notifications/channels/:channelId', { ...sys, summary: 'Delete a channel with its pending deliveries (the audit records stay).', response: { status: 204, description: 'deleted' } },
    async ({ ctx, params }) => { await deleteChannel(ctx, params.channelId); return { status: 204 }; });
  r.post('/api/system/notifications/channels/:channelId/rotate-secret', { ...sys, summary: 'New webhook secret, answered once: { channel, secret }; the old one stops signing at once.',
    response: { description: '{ channel, secret }', schema: o.object({ channel: NotificationChannelView, secret: secret('the new signing secret') }) } },
    async ({ ctx, params }) => {
      const { channel, secret } = await rotateSecret(ctx, params.channelId);
      return json(200, { channel: presentChannel(channel), secret });
    });
  r.post('/api/system/notifications/channels/:channelId/test', { ...sys, summary: 'Queue a channel.test event for this channel: 202 { delivery }.', response: { status: 202, description: '{ delivery }', schema: o.object({ delivery: NotificationDeliveryView }) } },
    async ({ ctx, params }) => json(202, { delivery: presentDelivery(await testChannel(ctx, params.channelId)) }));
  r.get('/api/system/notifications/channels/:channelId/deliveries', { ...sys, summary: 'Delivery audit of a channel, newest first: status, attempts, last status code and error (filter status), paged.', query: DeliveryListQuery, response: { description: 'a page of deliveries, newest first', schema: o.page(NotificationDeliveryView) } },
    async ({ ctx, params, query, searchParams }) => {
      const { rows, pagination } = await channelDeliveries(ctx, params.channelId, query.status ?? null, searchParams);
      return json(200, { items: rows.map(presentDelivery), pagination });
    });
  r.get('/api/system/notifications/allow-list', { ...sys, summary: 'Allow-list entries for public webhook destinations (filter organizationId), paged.', query: OrganizationFilterQuery, response: { description: 'a page of allow-list entries', schema: o.page(WebhookAllowListEntryView) } },
    async ({ ctx, query, searchParams }) => json(200, pageOf(searchParams, await listAllowList(ctx, query.organizationId ?? null), presentAllowListEntry)));
  r.post('/api/system/notifications/allow-list', { ...sys, summary: 'Allow an organization\u2019s webhooks to reach a public address or CIDR range (never link-local or metadata addresses).', body: AllowListBody, response: { status: 201, description: 'the entry', schema: WebhookAllowListEntryView } },
    async ({ ctx, body }) => json(201, presentAllowListEntry(await addAllowListEntry(ctx, body))));
  r.delete('/api/system/notifications/allow-list/:entryId', { ...sys, summary: 'Remove an allow-list entry.', response: { status: 204, description: 'removed' } },
    async ({ ctx, params }) => { await removeAllowListEntry(ctx, params.entryId); return { status: 204 }; });
}
