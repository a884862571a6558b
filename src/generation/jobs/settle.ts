// How a job's attempt ends, in one transaction each: completed (result, media artifacts, clip usage
// for videos, children released), failed with a retry left (back to the queue after a backoff) or for good
// (descendants blocked), or reclaimed after its lease expired. Every failure keeps the attempt's
// error, an audit record and a notification (generation jobs category). The same code settles
// jobs of the worker thread and of a manual run.
import type { Ctx } from '../../directory/context.ts';
import type { Db } from '../../db/db.ts';
import { withScope } from '../../directory/context.ts';
import { record } from '../../platform/audit/service.ts';
import { notify } from '../../platform/notifications/service.ts';
import { documentStatuses, indexDocument, setDocumentStatus } from '../../platform/search/index.ts';
import { recordUsageEvent } from '../../commercial/usage/service.ts';
import { quotaContextOf, type QuotaContext } from '../../commercial/quotas/service.ts';
import { clipQuotaWarnings } from '../../commercial/quotas/warnings.ts';
import type { CallResult } from '../connectors/protocols/types.ts';
import { artifactRows, registerArtifacts, type CompositionDraft, type PreparedArtifact } from '../media/register.ts';
import { jobRetryDelayMs } from './backoff.ts';
import {
  blockDescendants, completeLeased, completeWithoutMedia, failLeased, recordAttempt, unblockChildren, type Completion, type JobRow, type Lease,
} from './store.ts';
import { claimRider, type ClaimRide } from './claim.ts';
import { consoleLinks } from '../../kernel/links.ts';

export const jobScope = (ctx: Ctx, job: JobRow) =>
  withScope(ctx, { organizationId: job.organization_id, workspaceId: job.workspace_id, projectId: job.project_id });

export async function indexJob(ctx: Ctx, job: JobRow, prompt: string): Promise<void> {
  await indexDocument(ctx.db, {
    type: 'job', id: job.id, organizationId: job.organization_id, workspaceId: job.workspace_id, projectId: job.project_id,
    title: `${job.kind} job`, subtitle: job.kind, body: prompt, status: job.status, updatedAt: job.updated_at,
  });
}

const VIDEO_KINDS = new Set(['video']);

/**
 * One clip usage event per completed video job (unique by its key), priced from the billing account
 * (unit_price_e4 the clip price, estimated_cost_e4 = 1 clip x that price), on the workspace's cost center.
 */
async function recordClipUsage(ctx: Ctx, job: JobRow, at: string, { account }: QuotaContext): Promise<boolean> {
  const price = account?.clip_unit_price_e4 ?? 0;
  return await recordUsageEvent(ctx.db, {
    organizationId: job.organization_id, workspaceId: job.workspace_id, projectId: job.project_id, actorUserId: job.created_by,
    kind: 'clip', unit: 'clip', quantity: 1, unitPriceE4: price, currency: account?.currency ?? 'USD', jobId: job.id,
    metadata: { connectorId: job.connector_id, attempt: job.attempt }, at, eventKey: `clip:${job.id}`,
  });
}

export interface SettleOutcome { status: 'completed' | 'queued' | 'failed' | 'lost'; released: string[]; runAfter: string | null }

/** What the worker adds to a settle. */
export interface SettleHooks {
  /** Runs in the settle, after its writes (the worker gives back the job's slot and records its state). */
  also?: (o: SettleOutcome) => void | Promise<void>;
  /**
   * Stores a chat answer (no media) for the worker; null when its lease was lost. On PostgreSQL the
   * worker's completions go together in one statement with its next claim (worker/completions.ts).
   */
  complete?: (c: Completion) => Promise<string[] | null>;
}

const COMPLETED = documentStatuses('job', 'completed');

/** Chat completions (completeWithoutMedia) with their search documents' status; a claim rides on them on PostgreSQL. */
export const completeChats = (db: Db, items: readonly Completion[], ride: ClaimRide | null = null) =>
  completeWithoutMedia(db, items, COMPLETED, ride ? claimRider(ride) : null);

async function finish(o: SettleOutcome, { also }: SettleHooks): Promise<SettleOutcome> {
  await also?.(o);
  return o;
}

/** The media evidence of a finished call, registered with its completion. */
export interface MediaOutcome { prepared: PreparedArtifact[]; provenance: Record<string, unknown>; composition: CompositionDraft | null }

const LOST: SettleOutcome = { status: 'lost', released: [], runAfter: null };

export async function settleSuccess(
  ctx: Ctx, job: JobRow, lease: Lease, result: CallResult, media: MediaOutcome | null, hooks: SettleHooks = {},
): Promise<SettleOutcome> {
  const at = ctx.now().toISOString();
  const c = jobScope(ctx, job);
  const artifacts = media ? artifactRows(job, media.prepared, media.provenance, at) : [];
  const clip = VIDEO_KINDS.has(job.kind);
  const output = { ...result.output, files: result.files, artifactIds: artifacts.map((a) => a.id) };
  if (artifacts.length === 0 && !clip) {
    // Nothing to register, no quota to read (a chat answer): on PostgreSQL one statement, which
    // needs no transaction of its own (and carries the worker's next claim: one round trip).
    const chat: Completion = { job, lease, output: JSON.stringify(output), at };
    const complete = async () => {
      const released = hooks.complete ? await hooks.complete(chat) : (await completeChats(ctx.db, [chat]))[0];
      return released === null ? LOST : await finish({ status: 'completed', released, runAfter: null }, hooks);
    };
    return ctx.db.dialect.writingCtes ? await complete() : await ctx.db.tx(complete);
  }
  return await ctx.db.tx(async () => {
    if (!await completeLeased(ctx.db, lease, JSON.stringify(output), at)) return LOST;
    // The billing account, time zone and workspace quota, read once for the artifacts' and the clip's quota warnings.
    const quotas = await quotaContextOf(ctx.db, job.organization_id, job.workspace_id);
    if (media && artifacts.length > 0) await registerArtifacts(c, job, artifacts, media.composition, at, quotas);
    await recordAttempt(ctx.db, job, 'completed', at, null);
    if (clip && await recordClipUsage(c, job, at, quotas)) await clipQuotaWarnings(c, job.organization_id, job.workspace_id, quotas);
    await setDocumentStatus(ctx.db, 'job', job.id, 'completed');
    return await finish({ status: 'completed', released: await unblockChildren(ctx.db, job.id, at), runAfter: null }, hooks);
  });
}

export interface FailureInfo { code: string; message: string; retryable: boolean }

export async function settleFailure(ctx: Ctx, job: JobRow, lease: Lease, f: FailureInfo, retryBaseMs: number, hooks: SettleHooks = {}): Promise<SettleOutcome> {
  const now = ctx.now();
  const at = now.toISOString();
  const c = jobScope(ctx, job);
  const retry = f.retryable && lease.attempt < job.max_attempts;
  const runAfter = retry ? new Date(now.getTime() + jobRetryDelayMs(lease.attempt, retryBaseMs)).toISOString() : null;
  const error = `${f.code}: ${f.message}`;
  return await ctx.db.tx(async () => {
    if (!await failLeased(ctx.db, lease, retry ? 'queued' : 'failed', error, runAfter, at)) return LOST;
    await recordAttempt(ctx.db, job, retry ? 'retry' : 'failed', at, error);
    await recordFailure(c, job, lease.attempt, error, retry ? 'retry' : 'failed', runAfter);
    return await finish({ status: retry ? 'queued' : 'failed', released: [], runAfter }, hooks);
  });
}

/** Audit, notification and (when final) blocked descendants of a failed attempt; inside the caller's transaction. */
export async function recordFailure(ctx: Ctx, job: JobRow, attempt: number, error: string, next: 'retry' | 'failed', runAfter: string | null): Promise<void> {
  const at = ctx.now().toISOString();
  const blocked = next === 'failed' ? await blockDescendants(ctx.db, job.id, at) : [];
  await record(ctx, {
    action: next === 'failed' ? 'job.failed' : 'job.attempt_failed', targetType: 'generation_job', targetId: job.id, result: 'failure',
    metadata: { kind: job.kind, connectorId: job.connector_id, attempt, maxAttempts: job.max_attempts, error, retryAt: runAfter, blockedJobs: blocked },
  });
  await notify(ctx, {
    category: 'generation_jobs', type: next === 'failed' ? 'job.failed' : 'job.attempt_failed',
    organizationId: job.organization_id, workspaceId: job.workspace_id, projectId: job.project_id,
    subject: next === 'failed'
      ? `Generation job failed: ${job.kind} (attempt ${attempt} of ${job.max_attempts})`
      : `Generation job attempt ${attempt} of ${job.max_attempts} failed; retrying`,
    body: error.slice(0, 1000), link: consoleLinks.job({ id: job.id, projectId: job.project_id }),
  });
  if (next === 'failed') await setDocumentStatus(ctx.db, 'job', job.id, 'failed');
}
