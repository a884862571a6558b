// Input of the project routes.
import * as v from '../../kernel/validate.ts';
import { LIFECYCLE_ACTIONS } from '../../directory/tenancy/lifecycle.ts';

export const ProjectBody = v.object({ name: v.string({ min: 1, max: 200 }), templateId: v.optional(v.string({ min: 1, max: 100 })) });
export const ProjectPatchBody = v.object({
  name: v.optional(v.string({ min: 1, max: 200 })),
  templateId: v.optional(v.nullable(v.string({ min: 1, max: 100 }))),
});
export const LifecycleBody = v.object({ action: v.oneOf(LIFECYCLE_ACTIONS, { description: 'pause, resume, activate, submit-review, archive or restore' }) });
