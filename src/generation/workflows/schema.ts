// Input of the workflow template and run routes. Rules across fields (unique keys, the first step,
// placeholders, the connector) are checked by the service.
import * as v from '../../kernel/validate.ts';
import { WORK_KINDS } from '../connectors/protocols/types.ts';
import { COMPOSE_KIND } from '../jobs/compose-job.ts';

/** Kinds a step can create: the connector kinds of work and the local compose job. */
export const STEP_KINDS = [...WORK_KINDS, COMPOSE_KIND] as const;
export const TEMPLATE_STATUSES = ['draft', 'active', 'archived'] as const;
export type TemplateStatus = (typeof TEMPLATE_STATUSES)[number];
/** The limit of the reference: steps per workflow template. */
export const MAX_STEPS = 32;
export const RUN_STATUSES = ['planned', 'queued', 'running', 'blocked', 'awaiting_qa', 'failed', 'completed', 'cancelled'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

const key = v.string({ min: 1, max: 64, pattern: /^[a-z0-9][a-z0-9_.-]*$/, description: 'lower-case letters, digits, _ . -' });
const label = v.string({ min: 1, max: 200 });
const id = v.string({ min: 1, max: 64 });

export const Step = v.object({
  key,
  label,
  jobKind: v.oneOf(STEP_KINDS, { description: 'the kind of generation job the step creates' }),
  requiresShot: v.optional(v.boolean({ description: 'the step is bound to the shot given at instantiate (default false)' })),
  dependsOnPrevious: v.optional(v.boolean({ description: 'the step waits for the previous step\'s job (default true, except the first step)' })),
  prompt: v.optional(v.string({ max: 4000, description: 'prompt with placeholders such as {{shot.prompt}}, {{shot.dialogue|shot.description}} (first non-empty); default {{shot.prompt|shot.description|shot.title|episode.title|project.name}}' })),
  parameters: v.optional(v.anyObject({ maxKeys: 50, description: 'generation parameters of the step\'s job (size, seconds, voice, ...); an image or video step bound to a shot gets the shot\'s format (width, height, seconds) where these leave it open' })),
  inputFromPrevious: v.optional(v.boolean({ description: 'the media the previous step produced become this job\'s inputs (image-to-video); needs dependsOnPrevious' })),
});
export type StepInput = v.Infer<typeof Step>;

export const Gate = v.object({ key, label, blocking: v.optional(v.boolean({ description: 'default true: the run waits for QA to pass it' })) });
export type GateInput = v.Infer<typeof Gate>;

const fields = {
  name: v.string({ min: 1, max: 200 }),
  category: v.string({ min: 1, max: 80 }),
  status: v.oneOf(TEMPLATE_STATUSES),
  description: v.string({ max: 4000 }),
  defaultAdapterId: v.nullable(v.string({ min: 1, max: 64, description: 'the default connector of the template\'s runs: a model connector of the organization (GET /api/platform/models); null: for each step the organization\'s best connector for its kind of work' })),
  steps: v.array(Step, { min: 1, max: MAX_STEPS }),
  gates: v.array(Gate, { max: 32 }),
};

export const TemplateCreateBody = v.object({
  name: fields.name,
  templateKey: key,
  scope: v.optional(v.oneOf(['workspace', 'organization'] as const, { description: 'default workspace (the current one); organization needs org_owner or org_admin' })),
  category: v.optional(fields.category),
  status: v.optional(fields.status),
  description: v.optional(fields.description),
  defaultAdapterId: v.optional(fields.defaultAdapterId),
  steps: fields.steps,
  gates: v.optional(fields.gates),
});

export const TemplatePatchBody = v.object({
  name: v.optional(fields.name),
  category: v.optional(fields.category),
  status: v.optional(fields.status),
  description: v.optional(fields.description),
  defaultAdapterId: v.optional(fields.defaultAdapterId),
  steps: v.optional(fields.steps),
  gates: v.optional(fields.gates),
});

export const TemplateListQuery = v.object({
  includeArchived: v.optional(v.oneOf(['0', '1', 'true', 'false'] as const, { description: '1 lists archived templates too' })),
}, { allowUnknown: true });

export const TemplateGetQuery = v.object({ version: v.optional(v.int({ min: 1, description: 'a past version (default the current one)' })) }, { allowUnknown: true });

export const InstantiateBody = v.object({
  mode: v.optional(v.oneOf(['plan', 'queue'] as const, { description: 'plan (default): the steps, the jobs they would create and what blocks them, no jobs; queue: one job a step, chained' })),
  shotId: v.optional(v.nullable(id)),
  episodeId: v.optional(v.nullable(id)),
  adapter: v.optional(v.nullable(v.string({ min: 1, max: 64, description: 'the connector of every step\'s job: a model connector of the organization; default the template\'s defaultAdapterId, else for each step the organization\'s best connector for its kind of work' }))),
  priority: v.optional(v.int({ min: -100, max: 100 })),
  approveExternal: v.optional(v.boolean({ description: 'required (true) to queue jobs on a mixed or cloud connector' })),
});

export const RunListQuery = v.object({
  status: v.optional(v.oneOf(RUN_STATUSES)),
  limit: v.optional(v.int({ description: 'default 50, clamped to 1..200' })),
}, { allowUnknown: true });

export const GateDecisionBody = v.object({
  status: v.oneOf(['passed', 'failed', 'pending'] as const, { description: 'QA\'s decision; pending takes a decision back' }),
  note: v.optional(v.nullable(v.string({ max: 4000 }))),
});
