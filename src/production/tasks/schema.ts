// Input of the collaboration task routes.
import * as v from '../../kernel/validate.ts';

export const TASK_STATUSES = ['todo', 'in_progress', 'blocked', 'done', 'cancelled'] as const;
export const TASK_TYPES = ['general', 'script', 'art', 'voice', 'generation', 'review', 'delivery'] as const;
export const TASK_PRIORITIES = ['low', 'normal', 'high', 'urgent'] as const;

const fields = {
  description: v.optional(v.string({ max: 10_000 })),
  type: v.optional(v.oneOf(TASK_TYPES)),
  priority: v.optional(v.oneOf(TASK_PRIORITIES)),
  status: v.optional(v.oneOf(TASK_STATUSES)),
  assigneeUserId: v.optional(v.nullable(v.string({ min: 1, max: 64 }))),
  dueAt: v.optional(v.nullable(v.string({ min: 10, max: 40, pattern: /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2}))?$/, description: 'ISO 8601 date or date-time' }))),
  linkedPage: v.optional(v.nullable(v.string({ min: 1, max: 500, description: 'production page the task is about, e.g. /production/shots/sht_...' }))),
};

export const TaskCreateBody = v.object({ title: v.string({ min: 1, max: 300 }), ...fields });
export const TaskPatchBody = v.object({ title: v.optional(v.string({ min: 1, max: 300 })), ...fields });
export const TaskListQuery = v.object({
  status: v.optional(v.oneOf(['all', ...TASK_STATUSES] as const)),
  assignedTo: v.optional(v.string({ min: 1, max: 64, description: '"me" or a user id' })),
  limit: v.optional(v.int({ description: 'default 50, clamped to 1..200' })),
  page: v.optional(v.int()),
}, { allowUnknown: true });
