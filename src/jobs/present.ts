// Job records as the API shows them: camelCase, output files by relative path, attempts with latency.
import type { AttemptRow, JobRow } from './store.ts';
import type { JobInput } from './contract.ts';

export function presentJob(j: JobRow) {
  const input = JSON.parse(j.input) as JobInput;
  return {
    id: j.id, organizationId: j.organization_id, workspaceId: j.workspace_id, projectId: j.project_id, episodeId: j.episode_id, shotId: j.shot_id,
    kind: j.kind, status: j.status, connectorId: j.connector_id, priority: j.priority, attempt: j.attempt, maxAttempts: j.max_attempts,
    dependsOn: j.depends_on, leasedBy: j.leased_by, leasedAt: j.leased_at, runAfter: j.run_after,
    input, output: j.output ? JSON.parse(j.output) as Record<string, unknown> : null, error: j.error,
    createdBy: j.created_by, createdAt: j.created_at, updatedAt: j.updated_at, startedAt: j.started_at, finishedAt: j.finished_at,
  };
}

export const presentAttempt = (a: AttemptRow) => ({
  attempt: a.attempt, mode: a.mode, runner: a.runner, startedAt: a.started_at, finishedAt: a.finished_at,
  outcome: a.outcome, error: a.error, latencyMs: a.latency_ms,
});
