// Input of the generation job and queue routes.
import * as v from '../../kernel/validate.ts';
import { JOB_STATUSES } from './store.ts';

const id = v.string({ min: 1, max: 64 });
/** The longest prompt a job takes (also the limit of a workflow step's rendered prompt). */
export const PROMPT_MAX = 20_000;
const kind = v.string({ min: 1, max: 40, pattern: /^[a-z][a-z0-9_]*$/, description: 'kind of work: image, video, tts, asr, chat, prompt (through a connector), or compose (local: joins the shots of an episode)' });

export const JobCreateBody = v.object({
  kind,
  connectorId: v.optional(id),
  shotId: v.optional(v.nullable(id)),
  episodeId: v.optional(v.nullable(id)),
  prompt: v.optional(v.string({ min: 1, max: PROMPT_MAX, description: 'required for every kind but compose' })),
  negativePrompt: v.optional(v.nullable(v.string({ max: 20_000 }))),
  parameters: v.optional(v.anyObject({ maxKeys: 50, description: 'free-form generation parameters (size, seconds, voice, seed, ...); an image or video job bound to a shot gets the shot\'s format unless it sets it: width and height (the delivery spec\'s size in the shot\'s aspect ratio) and, for a video, seconds (the shot\'s durationTargetMs); compose: artifactIds (the video chosen per shot), audioArtifactIds (the voice line chosen per shot), voiceLines (false: no voice lines), width, height, frameRate' })),
  inputs: v.optional(v.array(v.object({ assetId: id, versionId: v.optional(id) }), { max: 20 })),
  dependsOn: v.optional(v.nullable(id)),
  useDependencyOutputs: v.optional(v.boolean({ description: 'true: the media the dependency job produced become inputs of this job at call time (image-to-video); needs dependsOn' })),
  priority: v.optional(v.int({ min: -100, max: 100 })),
  maxAttempts: v.optional(v.int({ min: 1, max: 10 })),
});

export const JobListQuery = v.object({
  status: v.optional(v.oneOf(JOB_STATUSES)),
  kind: v.optional(kind),
  shotId: v.optional(id),
  connector: v.optional(id),
  page: v.optional(v.int()),
  pageSize: v.optional(v.int()),
}, { allowUnknown: true });

export const JobRunBody = v.object({
  approveExternal: v.optional(v.boolean({ description: 'required (true) to run a job on a mixed or cloud connector' })),
});
export const JobRetryBody = v.object({ attempts: v.optional(v.int({ min: 1, max: 10, description: 'more attempts granted, default 3' })) });
export const JobPriorityBody = v.object({ priority: v.int({ min: -100, max: 100 }) });

export const QueueBatchBody = v.object({
  action: v.oneOf(['retry', 'cancel', 'priority'] as const),
  ids: v.optional(v.array(id, { min: 1, max: 1000 })),
  filter: v.optional(v.object({
    status: v.optional(v.oneOf(JOB_STATUSES)), kind: v.optional(kind), connectorId: v.optional(id), projectId: v.optional(id),
  })),
  priority: v.optional(v.int({ min: -100, max: 100 })),
});
