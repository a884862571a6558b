// Job records as the API shows them: camelCase, output files by relative path, attempts with latency.
import type { AttemptRow, JobRow } from './store.ts';
import type { JobInput } from './contract.ts';
import * as o from '../../kernel/view.ts';
import { JOB_STATUSES } from './store.ts';

export const JobInputView = o.named('JobInput', o.object({
  prompt: o.text(), negativePrompt: o.nullable(o.text()),
  parameters: o.anyObject('the job\'s parameters as given (size, seconds, ... ; a compose job: its checked parameters)'),
  inputs: o.array(o.object({ assetId: o.text(), versionId: o.text() }), 'asset versions the connector receives'),
  workflow: o.optional(o.nullable(o.object({ templateId: o.text(), templateVersion: o.int(), runId: o.text(), stepKey: o.text() }, 'the workflow run step that created the job'))),
  useDependencyOutputs: o.optional(o.bool('the dependency job\'s media artifacts become inputs at call time')),
}));

export const JobView = o.named('Job', o.object({
  id: o.text(), organizationId: o.text(), workspaceId: o.text(), projectId: o.text(), episodeId: o.nullable(o.text()), shotId: o.nullable(o.text()),
  kind: o.text({ description: 'a kind of work (image, video, tts, asr, chat, prompt) or compose' }), status: o.oneOf(JOB_STATUSES),
  connectorId: o.nullable(o.text()), priority: o.int('-100..100; higher runs first'), attempt: o.int(), maxAttempts: o.int(),
  dependsOn: o.nullable(o.text()), leasedBy: o.nullable(o.text()), leasedAt: o.nullable(o.time()), runAfter: o.nullable(o.time()),
  input: JobInputView, output: o.nullable(o.anyObject('what the job produced (files by relative path, connector metadata)')), error: o.nullable(o.text()),
  createdBy: o.nullable(o.text()), createdAt: o.time(), updatedAt: o.time(), startedAt: o.nullable(o.time()), finishedAt: o.nullable(o.time()),
}));

export const JobAttemptView = o.named('JobAttempt', o.object({
  attempt: o.int(), mode: o.oneOf(['worker', 'run'] as const), runner: o.text(), startedAt: o.time(), finishedAt: o.nullable(o.time()),
  outcome: o.oneOf(['running', 'completed', 'retry', 'failed', 'reclaimed', 'cancelled'] as const), error: o.nullable(o.text()), latencyMs: o.nullable(o.int()),
}));

export function presentJob(j: JobRow): o.Out<typeof JobView> {
  const input = JSON.parse(j.input) as JobInput;
  return {
    id: j.id, organizationId: j.organization_id, workspaceId: j.workspace_id, projectId: j.project_id, episodeId: j.episode_id, shotId: j.shot_id,
    kind: j.kind, status: j.status, connectorId: j.connector_id, priority: j.priority, attempt: j.attempt, maxAttempts: j.max_attempts,
    dependsOn: j.depends_on, leasedBy: j.leased_by, leasedAt: j.leased_at, runAfter: j.run_after,
    input, output: j.output ? JSON.parse(j.output) as Record<string, unknown> : null, error: j.error,
    createdBy: j.created_by, createdAt: j.created_at, updatedAt: j.updated_at, startedAt: j.started_at, finishedAt: j.finished_at,
  };
}

export const presentAttempt = (a: AttemptRow): o.Out<typeof JobAttemptView> => ({
  attempt: a.attempt, mode: a.mode, runner: a.runner, startedAt: a.started_at, finishedAt: a.finished_at,
  outcome: a.outcome, error: a.error, latencyMs: a.latency_ms,
});
