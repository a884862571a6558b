// Generation jobs of the current project: create (kind checked against the connector, shot and
// dependency in this project, inputs fixed to exact asset versions, clip quota), read with every
// attempt, cancel, retry, priority, and run now (POST /run: the worker's code path, the only way a
// mixed or cloud connector's job runs, with approval and approveExternal).
import { mapSeq } from '../../kernel/seq.ts';
import type { Ctx } from '../../directory/context.ts';
import { conflict, notFound, validationFailed } from '../../kernel/errors.ts';
import type { Infer } from '../../kernel/validate.ts';
import { pageWindow } from '../../kernel/validate.ts';
import { newId } from '../../kernel/ids.ts';
import { record } from '../../platform/audit/service.ts';
import { billingAccountOf } from '../../directory/plan/account.ts';
import { clipsTowardQuota } from '../../commercial/meters.ts';
import { organizationMonth, workspaceClipQuota } from '../../commercial/quotas/service.ts';
import { projectById } from '../../directory/tenancy/store.ts';
import { LOCKS } from '../../directory/locks.ts';
import { episodeById, shotById } from '../../production/catalog/store.ts';
import { checkComposeParameters, COMPOSE_KIND } from './compose-job.ts';
import { assetInProject } from '../../production/assets/store.ts';
import { connectorById, connectorsOfOrg, type ConnectorRow } from '../connectors/store.ts';
import { connectorSpec } from '../connectors/present.ts';
import { localRunnerOnly } from '../connectors/service.ts';
import { credentialPolicy } from '../../kernel/credentials.ts';
import { dryRun, supportsKind } from '../connectors/protocols/index.ts';
import { ConnectorError, type DryRunRequest } from '../connectors/protocols/types.ts';
import { abortOnWorkers, wakeWorker } from '../dispatch/control.ts';
import { claimForRun } from './claim.ts';
import { manualRuns, type ManualRun } from './manual-runs.ts';
import type { Db } from '../../db/db.ts';
import { buildContract, type JobInput } from './contract.ts';
import { withShotFormat } from './format.ts';
import { advanceShot } from '../media/shot-status.ts';
import { runLeased } from './runner.ts';
import { indexJob } from './settle.ts';
import { setDocumentStatus } from '../../platform/search/index.ts';
import type { JobCreateBody, JobListQuery } from './schema.ts';
import {
  attemptsOf, blockDescendants, cancelJob, dependencyStatus, insertJob, recordAttempt, jobById, jobInProject, jobsOfProject,
  requeueJob, setPriority, type AttemptRow, type JobRow,
} from './store.ts';

type Create = Infer<typeof JobCreateBody>;

export const DEFAULT_MAX_ATTEMPTS = 3;
export const CLIP_KINDS = new Set(['video']);

/**
 * True when a job depending on `dependencyId` must be blocked: the dependency failed, was cancelled or
 * is blocked itself. Inside a write transaction: the dependency's row is read as last committed and
 * stays so until the transaction ends (dependencyStatus), so the job written next is queued or blocked
 * on the dependency's final word, and a worker that fails the dependency afterwards sees the job.
 */
async function waitsOnFailure(db: Db, dependencyId: string): Promise<boolean> {
  const status = await dependencyStatus(db, dependencyId);
  return status === 'failed' || status === 'cancelled' || status === 'blocked';
}

export async function getJob(ctx: Ctx, jobId: string): Promise<JobRow> {
  const job = await jobInProject(ctx.db, ctx.scope.projectId!, jobId);
  if (!job) throw notFound('no such job in this project');
  return job;
}

export async function jobDetail(ctx: Ctx, jobId: string): Promise<{ job: JobRow; attempts: AttemptRow[]; connector: ConnectorRow | undefined }> {
  const job = await getJob(ctx, jobId);
  return { job, attempts: await attemptsOf(ctx.db, job), connector: job.connector_id ? await connectorById(ctx.db, job.organization_id, job.connector_id) : undefined };
}

export async function listJobs(ctx: Ctx, q: Infer<typeof JobListQuery>) {
  const { page, pageSize, offset } = pageWindow(q.page, q.pageSize);
  const { rows, total } = await jobsOfProject(ctx.db, ctx.scope.projectId!, {
    status: q.status ?? null, kind: q.kind ?? null, shotId: q.shotId ?? null, connectorId: q.connector ?? null, limit: pageSize, offset,
  });
  return { rows, pagination: { page, pageSize, total } };
}

/** The connector named, or the organization's best one for the kind (ready and local first). */
export async function pickConnector(ctx: Ctx, kind: string, connectorId: string | undefined): Promise<ConnectorRow> {
  const orgId = ctx.scope.organizationId!;
  if (connectorId) {
    const row = await connectorById(ctx.db, orgId, connectorId);
    if (!row) throw validationFailed({ connectorId: 'names no connector of this organization' });
    if (row.status === 'disabled') throw validationFailed({ connectorId: 'the connector is disabled' });
    if (!supportsKind(connectorSpec(row), kind)) throw validationFailed({ kind: `connector ${row.label} cannot do ${kind} (capability or route missing)` });
    return row;
  }
  const rank = (r: ConnectorRow) => (r.status === 'ready' ? 0 : 2) + (r.cost_mode === 'local' ? 0 : 1);
  const best = (await connectorsOfOrg(ctx.db, orgId))
    .filter((r) => r.status !== 'disabled' && supportsKind(connectorSpec(r), kind))
    .sort((a, b) => rank(a) - rank(b))[0];
  if (!best) throw validationFailed({ connectorId: `no connector of this organization can do ${kind}; register one or name it` });
  return best;
}

/**
 * Why one more video clip (after `before` others of the same batch) would exceed the organization's
 * monthly quota or the workspace's own one, or null. Counted: the clips of the organization's local
 * calendar month plus its video jobs not finished yet (queued, running, blocked), so that queued jobs
 * cannot overrun the quota before they complete.
 */
export async function clipQuotaProblem(
  db: Db, organizationId: string, before: number, workspaceId: string, now: Date,
): Promise<{ message: string; used: number; quota: number; scope: 'organization' | 'workspace' } | null> {
  const quota = (await billingAccountOf(db, organizationId))?.monthly_clip_quota ?? 0;
  const own = await workspaceClipQuota(db, organizationId, workspaceId);
  const m = await organizationMonth(db, organizationId, now);
  const n = await clipsTowardQuota(db, organizationId, own ? workspaceId : null, m.start, m.end);
  const used = n.organization + before;
  if (used >= quota) {
    return { message: `this month's ${used} clip(s), with video jobs not finished yet, reached the organization's monthly clip quota of ${quota}`, used, quota, scope: 'organization' };
  }
  const wsUsed = (n.workspace ?? 0) + before;
  if (!own || wsUsed < own.quota) return null;
  return {
    message: `this month's ${wsUsed} clip(s) of workspace ${own.workspaceName}, with video jobs not finished yet, reached the workspace's own monthly clip quota of ${own.quota}`,
    used: wsUsed, quota: own.quota, scope: 'workspace',
  };
}

async function checkClipQuota(db: Db, organizationId: string, workspaceId: string, before: number, now: Date): Promise<void> {
  const problem = await clipQuotaProblem(db, organizationId, before, workspaceId, now);
  if (problem) throw conflict('clip_quota_exceeded', problem.message, { used: problem.used, quota: problem.quota, scope: problem.scope });
}

/**
 * The clip quota check that decides, inside the transaction that then writes one more video job (a
 * creation or a retry): 409 clip_quota_exceeded when it does not fit. The organization's clips key
 * comes first (src/directory/locks.ts), so no other creation or retry of the organization counts
 * between this count and this transaction's end; the video jobs this transaction wrote before count
 * already (they are not finished). The check before the transaction, when there is one, only answers
 * early.
 */
export async function holdClipQuota(db: Db, organizationId: string, workspaceId: string, now: Date): Promise<void> {
  await db.lock(LOCKS.clips(organizationId));
  await checkClipQuota(db, organizationId, workspaceId, 0, now);
}

async function resolveInputs(ctx: Ctx, projectId: string, inputs: Create['inputs']): Promise<JobInput['inputs']> {
  return await mapSeq((inputs ?? []), async (i, n) => {
    const asset = await assetInProject(ctx.db, projectId, i.assetId);
    if (!asset) throw validationFailed({ [`inputs[${n}].assetId`]: 'names no asset of this project' });
    const versionId = i.versionId ?? asset.current_version_id;
    const ok = versionId && await ctx.db.get('SELECT 1 AS x FROM asset_versions WHERE project_id = ? AND asset_id = ? AND id = ?', projectId, asset.id, versionId);
    if (!ok) throw validationFailed({ [`inputs[${n}].versionId`]: 'names no version of that asset' });
    return { assetId: asset.id, versionId: versionId };
  });
}

/** The job's episode: named, or the shot's; a compose job names one and no shot or connector. */
async function episodeOf(ctx: Ctx, projectId: string, input: Create): Promise<string | null> {
  const shot = input.shotId ? await shotById(ctx.db, projectId, input.shotId) : undefined;
  if (input.shotId && !shot) throw validationFailed({ shotId: 'names no shot of this project' });
  if (input.episodeId && !await episodeById(ctx.db, projectId, input.episodeId)) throw validationFailed({ episodeId: 'names no episode of this project' });
  if (shot && input.episodeId && shot.episode_id !== input.episodeId) throw validationFailed({ episodeId: 'the shot belongs to another episode' });
  if (input.kind === COMPOSE_KIND) {
    const problems: Record<string, string> = {};
    if (input.connectorId) problems.connectorId = 'a compose job runs locally, without a connector';
    if (input.shotId) problems.shotId = 'a compose job joins a whole episode: give episodeId, not shotId';
    if (!input.episodeId) problems.episodeId = 'required for a compose job';
    if (input.inputs?.length) problems.inputs = 'a compose job takes the videos of the episode\'s shots, not asset inputs';
    if (Object.keys(problems).length) throw validationFailed(problems);
  } else if (!input.prompt) {
    throw validationFailed({ prompt: 'required' });
  }
  return input.episodeId ?? shot?.episode_id ?? null;
}

/** A job checked and built, not yet written: what createJob and a workflow run insert. */
export interface PreparedJob { job: JobRow; prompt: string; costMode: string }

export interface PrepareOptions {
  /** The dependency when it is created in the same transaction (a workflow's previous step), instead of body.dependsOn. */
  dependsOnNew?: string;
  /** Set on the jobs of a workflow run (kept in the artifacts' provenance). */
  workflow?: JobInput['workflow'];
  /** Video clips of this batch checked against the quota before this one; null: the quota is not checked (a plan). */
  clipsBefore?: number | null;
  /** The id to give the job (a workflow run fixes its steps' ids before inserting). */
  id?: string;
  /** false: the organization's local-runner-only policy is not applied (a plan or a dry run writes and calls nothing). */
  policy?: boolean;
}

/** Every check of a job creation, without writing (validation before writes). */
export async function prepareJob(ctx: Ctx, input: Create, opts: PrepareOptions = {}): Promise<PreparedJob> {
  const project = (await projectById(ctx.db, ctx.scope.projectId!))!;
  const episodeId = await episodeOf(ctx, project.id, input);
  const dependency = input.dependsOn ? await jobInProject(ctx.db, project.id, input.dependsOn) ?? null : null;
  if (input.dependsOn && !dependency) throw validationFailed({ dependsOn: 'names no job of this project' });
  const dependsOn = opts.dependsOnNew ?? dependency?.id ?? null;
  if (input.useDependencyOutputs && !dependsOn) throw validationFailed({ useDependencyOutputs: 'needs dependsOn: the job whose outputs become inputs' });
  const compose = input.kind === COMPOSE_KIND;
  if (compose && input.useDependencyOutputs) throw validationFailed({ useDependencyOutputs: 'a compose job takes the videos of the episode\'s shots' });
  const connector = compose ? null : await pickConnector(ctx, input.kind, input.connectorId);
  if (opts.policy !== false && connector && connector.cost_mode !== 'local' && await localRunnerOnly(ctx.db, project.organization_id)) {
    throw conflict('local_runner_only', 'this organization runs local connectors only; the connector is ' + connector.cost_mode);
  }
  const jobInput: JobInput = {
    prompt: input.prompt ?? '', negativePrompt: input.negativePrompt ?? null,
    parameters: compose
      ? { ...await checkComposeParameters(ctx.db, project.id, episodeId!, input.parameters ?? {}) }
      : await withShotFormat(ctx.db, input.shotId ? await shotById(ctx.db, project.id, input.shotId) : undefined, input.kind, input.parameters ?? {}),
    inputs: await resolveInputs(ctx, project.id, input.inputs),
    ...(input.useDependencyOutputs ? { useDependencyOutputs: true } : {}),
    ...(opts.workflow ? { workflow: opts.workflow } : {}),
  };
  if (CLIP_KINDS.has(input.kind) && opts.clipsBefore !== null) await checkClipQuota(ctx.db, project.organization_id, project.workspace_id, opts.clipsBefore ?? 0, ctx.now());
  const now = ctx.now().toISOString();
  const job: JobRow = {
    id: opts.id ?? newId('job'), organization_id: project.organization_id, workspace_id: project.workspace_id, project_id: project.id,
    shot_id: input.shotId ?? null, kind: input.kind, status: 'queued', connector_id: connector?.id ?? null,
    priority: input.priority ?? 0, attempt: 0, max_attempts: input.maxAttempts ?? DEFAULT_MAX_ATTEMPTS, depends_on: dependsOn,
    leased_by: null, leased_at: null, run_after: null, input: JSON.stringify(jobInput), output: null, error: null,
    created_by: ctx.actor.userId, created_at: now, updated_at: now, started_at: null, finished_at: null, external_ref: null,
    attempt_started_at: null, episode_id: episodeId, workflow_run_id: opts.workflow?.runId ?? null,
  };
  return { job, prompt: jobInput.prompt, costMode: connector?.cost_mode ?? 'local' };
}

/**
 * Writes prepared jobs of one organization; call inside a write transaction. Each video job is checked
 * against the clip quotas again (holdClipQuota), and a job behind a failed dependency starts blocked.
 */
export async function insertPrepared(ctx: Ctx, prepared: PreparedJob[]): Promise<void> {
  // The clips key before the first audit record (src/directory/locks.ts); holdClipQuota takes it again.
  const video = prepared.find((p) => CLIP_KINDS.has(p.job.kind));
  if (video) await ctx.db.lock(LOCKS.clips(video.job.organization_id));
  for (const { job, prompt, costMode } of prepared) {
    if (CLIP_KINDS.has(job.kind)) await holdClipQuota(ctx.db, job.organization_id, job.workspace_id, ctx.now());
    // Read inside the write transaction, its row locked against change until the end (waitsOnFailure):
    // the worker cannot fail the dependency between this read and the insert (a job queued behind a
    // failed dependency would wait forever).
    if (job.depends_on && await waitsOnFailure(ctx.db, job.depends_on)) job.status = 'blocked';
    await insertJob(ctx.db, job);
    await indexJob(ctx, job, prompt);
    await record(ctx, {
      action: 'job.created', targetType: 'generation_job', targetId: job.id,
      metadata: {
        kind: job.kind, connectorId: job.connector_id, costMode, shotId: job.shot_id, episodeId: job.episode_id,
        dependsOn: job.depends_on, priority: job.priority,
      },
    });
    // The shot a video is being made for is generating (src/generation/media/shot-status.ts).
    if (CLIP_KINDS.has(job.kind) && job.shot_id) await advanceShot(ctx, job.project_id, job.shot_id, 'video_job_created', { jobId: job.id });
  }
  if (prepared.length) await wakeWorker(ctx);
}

export async function createJob(ctx: Ctx, input: Create): Promise<JobRow> {
  const prepared = await prepareJob(ctx, input);
  return await ctx.db.tx(async () => {
    await insertPrepared(ctx, [prepared]);
    return prepared.job;
  });
}

/** Cancels a job (any state but completed); a running call is aborted; waiting descendants are blocked. */
export async function cancel(ctx: Ctx, job: JobRow, reason = 'cancelled'): Promise<JobRow> {
  if (job.status === 'completed' || job.status === 'cancelled') throw conflict('job_finished', `the job is already ${job.status}`);
  const at = ctx.now().toISOString();
  return await ctx.db.tx(async () => {
    const before = await cancelJob(ctx.db, job.id, reason, at);
    if (!before) throw conflict('job_finished', 'the job finished meanwhile');
    if (before.status === 'running') await recordAttempt(ctx.db, before, 'cancelled', at, reason);
    const blocked = await blockDescendants(ctx.db, job.id, at);
    const after = (await jobById(ctx.db, job.id))!;
    await setDocumentStatus(ctx.db, 'job', job.id, after.status);
    await record(ctx, { action: 'job.cancelled', targetType: 'generation_job', targetId: job.id, metadata: { from: before.status, blockedJobs: blocked } });
    if (before.status === 'running') {
      await abortOnWorkers(ctx, job.id);
      await ctx.afterCommit(() => { manualRuns.get(job.id)?.controller.abort(new Error('cancelled')); });
    }
    return after;
  });
}

/**
 * A failed or cancelled job goes back to the queue (blocked while its dependency has not completed);
 * a video job only while the clip quotas have room (it reserves a clip again).
 */
export async function retry(ctx: Ctx, job: JobRow, attempts = DEFAULT_MAX_ATTEMPTS): Promise<JobRow> {
  if (job.status !== 'failed' && job.status !== 'cancelled') throw conflict('job_not_retryable', `a ${job.status} job cannot be retried`);
  const at = ctx.now().toISOString();
  return await ctx.db.tx(async () => {
    if (CLIP_KINDS.has(job.kind)) await holdClipQuota(ctx.db, job.organization_id, job.workspace_id, ctx.now());
    const row = await requeueJob(ctx.db, job.id, attempts, job.depends_on !== null && await waitsOnFailure(ctx.db, job.depends_on), at);
    if (!row) throw conflict('job_not_retryable', 'the job changed meanwhile');
    await setDocumentStatus(ctx.db, 'job', job.id, row.status);
    await record(ctx, { action: 'job.retried', targetType: 'generation_job', targetId: job.id, metadata: { from: job.status, to: row.status, maxAttempts: row.max_attempts } });
    await wakeWorker(ctx);
    return row;
  });
}

export async function reprioritize(ctx: Ctx, job: JobRow, priority: number): Promise<JobRow> {
  if (['completed', 'failed', 'cancelled'].includes(job.status)) throw conflict('job_finished', `a ${job.status} job has no place in the queue`);
  return await ctx.db.tx(async () => {
    if (!await setPriority(ctx.db, job.project_id, job.id, priority, ctx.now().toISOString())) throw conflict('job_finished', 'the job finished meanwhile');
    await record(ctx, { action: 'job.priority_changed', targetType: 'generation_job', targetId: job.id, metadata: { from: job.priority, to: priority } });
    await wakeWorker(ctx);
    return (await jobById(ctx.db, job.id))!;
  });
}

export interface RunAnswer { idempotent: boolean; job: JobRow; result: Record<string, unknown> | null; error: string | null }

async function checkRunnable(ctx: Ctx, job: JobRow, connector: ConnectorRow | undefined, approveExternal: boolean): Promise<ConnectorRow | null> {
  if (job.status === 'running') throw conflict('job_running', `the job is running (leased by ${job.leased_by}); wait for it or cancel it`);
  if (job.status === 'cancelled') throw conflict('job_cancelled', 'the job was cancelled; retry it first');
  const dep = job.depends_on ? await jobById(ctx.db, job.depends_on) : undefined;
  if (job.status === 'blocked' || (dep && dep.status !== 'completed')) {
    throw conflict('dependency_not_completed', `the job depends on ${job.depends_on}, which is ${dep?.status ?? 'missing'}`);
  }
  if (job.kind === COMPOSE_KIND) return null;
  if (!connector) throw conflict('connector_not_ready', 'the job has no connector');
  if (connector.cost_mode !== 'local') {
    if (await localRunnerOnly(ctx.db, job.organization_id)) throw conflict('local_runner_only', 'this organization runs local connectors only');
    if (!connector.approved_at) throw conflict('connector_not_approved', `connector ${connector.label} (${connector.cost_mode}) needs an administrator's approval first`);
  }
  if (connector.status !== 'ready') throw conflict('connector_not_ready', `connector ${connector.label} is ${connector.status}; probe it until it is ready`);
  if (connector.cost_mode !== 'local' && !approveExternal) {
    throw conflict('external_approval_required', `connector ${connector.label} is ${connector.cost_mode} and may cost money: send approveExternal: true to run it`);
  }
  return connector;
}

/** Runs one job now in this request, through the worker's runner; a completed job answers its stored result. */
export async function runNow(ctx: Ctx, jobId: string, approveExternal: boolean): Promise<RunAnswer> {
  const job = await getJob(ctx, jobId);
  if (job.status === 'completed') {
    return { idempotent: true, job, result: job.output ? JSON.parse(job.output) as Record<string, unknown> : null, error: null };
  }
  const connector = await checkRunnable(ctx, job, job.connector_id ? await connectorById(ctx.db, job.organization_id, job.connector_id) : undefined, approveExternal);
  const runner = `run:${ctx.actor.userId ?? ctx.actor.type}`;
  const leased = await ctx.db.tx(async () => {
    const row = await claimForRun(ctx.db, job.id, runner, ctx.now().toISOString());
    if (!row) throw conflict('job_running', 'the job was claimed meanwhile');
    if (connector && connector.cost_mode !== 'local') {
      await record(ctx, {
        action: 'job.external_run_approved', targetType: 'generation_job', targetId: job.id,
        metadata: { connectorId: connector.id, connectorLabel: connector.label, costMode: connector.cost_mode, attempt: row.attempt },
      });
    }
    return row;
  });
  const controller = new AbortController();
  const run: ManualRun = { controller, db: ctx.db, runner };
  manualRuns.set(job.id, run);
  try {
    const outcome = await runLeased(ctx, leased, { signal: controller.signal });
    await run.released;
    if (outcome.released.length) await wakeWorker(ctx);
    const after = (await jobById(ctx.db, job.id))!;
    return {
      // The stored output once completed (it names the registered artifacts too).
      idempotent: false, job: after, result: outcome.result && after.output ? JSON.parse(after.output) as Record<string, unknown> : null,
      error: outcome.failure ? `${outcome.failure.code}: ${outcome.failure.message}` : null,
    };
  } finally {
    manualRuns.delete(job.id);
  }
}

/** The exact request the connector would receive for a job (stored, or described by the body). */
export async function dryRunJob(ctx: Ctx, input: Create): Promise<DryRunRequest> {
  if (input.kind === COMPOSE_KIND) throw validationFailed({ kind: 'a compose job calls no connector: there is no request to show' });
  // The same checks and job row as a creation (nothing is written): inputs, dependency outputs, connector.
  const { job } = await prepareJob(ctx, input, { id: 'job_dry_run', clipsBefore: null, policy: false });
  const connector = (await connectorById(ctx.db, job.organization_id, job.connector_id!))!;
  const spec = connectorSpec(connector);
  const { contract } = await buildContract(ctx.db, job);
  try {
    return dryRun(spec, contract, {
      jobId: job.id, attempt: 1, kind: job.kind, model: spec.protocol.models?.[job.kind] ?? null,
      deadline: new Date(ctx.now().getTime() + ctx.config.jobTimeoutMs).toISOString(),
    }, credentialPolicy(ctx.config));
  } catch (err) {
    // A connector configured so that no request can be built (no route, no ComfyUI workflow, a forbidden authEnv).
    if (err instanceof ConnectorError) throw validationFailed({ connectorId: `${err.code}: ${err.message}` });
    throw err;
  }
}
