// Input of the notification, preference and channel routes.
import * as v from '../../kernel/validate.ts';
import { NOTIFICATION_CATEGORIES } from './service.ts';

const id = v.string({ min: 1, max: 64 });

export const NotificationListQuery = v.object({
  limit: v.optional(v.int({ description: 'items to answer, default 50, clamped to 1..200' })),
  unreadOnly: v.optional(v.boolean({ description: '1: only unread notifications in the list (unreadCount is unchanged)' })),
}, { allowUnknown: true });
export const ReadBody = v.object({ read: v.boolean() });
export const PreferenceBody = v.object({ enabled: v.boolean() });

const categories = v.array(v.oneOf(NOTIFICATION_CATEGORIES), { max: NOTIFICATION_CATEGORIES.length * 2 });
const url = v.string({ min: 1, max: 2000, format: 'uri', description: 'http or https; private or loopback addresses, others only with an allow-list entry' });
const description = v.string({ max: 500 });

export const ChannelCreateBody = v.object({
  organizationId: id,
  kind: v.oneOf(['log', 'webhook'] as const),
  url: v.optional(url),
  description: v.optional(description),
  enabled: v.optional(v.boolean()),
  categories: v.optional(categories),
});
export const ChannelPatchBody = v.object({
  url: v.optional(url),
  description: v.optional(description),
  enabled: v.optional(v.boolean()),
  categories: v.optional(categories),
});
export const OrganizationFilterQuery = v.object({
  organizationId: v.optional(id),
  page: v.optional(v.int()),
  pageSize: v.optional(v.int()),
}, { allowUnknown: true });
export const DeliveryListQuery = v.object({
  status: v.optional(v.oneOf(['pending', 'delivered', 'failed'] as const)),
  page: v.optional(v.int()),
  pageSize: v.optional(v.int()),
}, { allowUnknown: true });
export const AllowListBody = v.object({
  organizationId: id,
  cidr: v.string({ min: 1, max: 64, description: 'IPv4 or IPv6 address or CIDR range, e.g. 203.0.113.0/24' }),
  description: v.optional(description),
});
