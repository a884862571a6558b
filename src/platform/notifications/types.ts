// Every notification type the service writes, with its category and the console page its link opens
// (src/kernel/links.ts builds the link; null: the type carries no link). A new type is added here and
// to the table of docs/console.md#object-pages-and-links; test/web/browser-links.test.ts opens the link of
// every type listed here in a browser, and fails for a type that notify() is called with in src/ but
// is not listed.
import type { ObjectPage } from '../../kernel/links.ts';
import type { NotificationCategory } from './service.ts';

export interface NotificationTypeInfo { category: NotificationCategory; page: ObjectPage | null; about: string }

export const NOTIFICATION_TYPES = {
  'job.attempt_failed': { category: 'generation_jobs', page: 'job', about: 'an attempt of a generation job failed; it will be retried' },
  'job.failed': { category: 'generation_jobs', page: 'job', about: 'a generation job failed its last attempt' },
  'review.requested': { category: 'review', page: 'review', about: 'a review of an artifact was requested' },
  'review.decided': { category: 'review', page: 'review', about: 'a review you requested was approved or sent back (to the requester)' },
  'review.reopened': { category: 'review', page: 'review', about: 'a new version replaced the artifact under review (to its deciders)' },
  'task.assigned': { category: 'collaboration_tasks', page: 'task', about: 'a task was assigned to you (to the assignee)' },
  'delivery.approved': { category: 'delivery', page: 'delivery', about: 'a delivery was approved' },
  'delivery.withdrawn': { category: 'delivery', page: 'delivery', about: 'an approved delivery was withdrawn' },
  'quota.warning': { category: 'usage_quota', page: 'commercial', about: 'usage crossed a warning threshold of a quota' },
  'quota.reached': { category: 'usage_quota', page: 'commercial', about: 'usage reached a quota' },
  'channel.test': { category: 'system_notices', page: null, about: 'a test event of one channel (webhook or log only, no inbox row)' },
} as const satisfies Record<string, NotificationTypeInfo>;

export type NotificationType = keyof typeof NOTIFICATION_TYPES;
