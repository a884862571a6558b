// Runs one leased job: builds the call (connector, production contract, execution) or composes an
// episode cut, examines every output file (media evidence), renews the lease meanwhile (a lost
// lease aborts the work), then settles the outcome with the artifacts. The worker
// thread and POST /api/jobs/:jobId/run both come through here, so a job behaves the same whoever
// runs it.
import type { Ctx } from '../../directory/context.ts';
import { callConnector } from '../connectors/protocols/index.ts';
import { connectorById } from '../connectors/store.ts';
import { connectorSpec } from '../connectors/present.ts';
import { credentialPolicy } from '../../kernel/credentials.ts';
import { ConnectorError, type CallResult } from '../connectors/protocols/types.ts';
import { AppError } from '../../kernel/errors.ts';
import { buildContract, stageInputs, type JobInput } from './contract.ts';
import { settleFailure, settleSuccess, type FailureInfo, type MediaOutcome, type SettleHooks, type SettleOutcome } from './settle.ts';
import { gatherEvidence, inputProvenance } from '../media/register.ts';
import { COMPOSE_KIND, runCompose } from './compose-job.ts';
import { renewLease, setExternalRef, type JobRow, type Lease } from './store.ts';
import type { CallContext } from './claim.ts';

export interface RunOutcome extends SettleOutcome { result: CallResult | null; failure: FailureInfo | null }

/** How an attempt's error is recorded (the worker's call thread answers this for a call that threw). */
export function failureOf(err: unknown, aborted: string | null): FailureInfo {
  if (aborted) return { code: 'job_aborted', message: aborted, retryable: true };
  if (err instanceof ConnectorError) return { code: err.code, message: err.message, retryable: err.retryable };
  if (err instanceof AppError) return { code: err.code, message: err.message, retryable: false };
  return { code: 'runner_error', message: err instanceof Error ? err.message : String(err), retryable: true };
}

/**
 * How a settle is committed: at once by default; the worker passes a group commit that runs the
 * settles of calls finishing together in one transaction (each in its own savepoint).
 */
export type Committer = <T>(fn: () => T | Promise<T>) => Promise<T>;
const immediate: Committer = async (fn) => await fn();

/**
 * A leased job: as claimed (claim.ts), with what its call is made from; without `call` (a row read
 * otherwise), the connector and the names are read here.
 */
export type LeasedJob = JobRow & { call?: CallContext };

/** What a call produced: the connector's answer (or a compose job's episode cut) with the media evidence of its files. */
export interface Produced { result: CallResult; media: MediaOutcome }

/**
 * Makes a leased job's call and examines its output files; `onRef` records the connector's external
 * reference (with the lease). Here by default; the worker runs it on its call thread on SQLite
 * (worker/calls.ts), so that its commits never wait on a connector nor a connector on a commit.
 */
export type Producer = (base: Ctx, job: LeasedJob, signal: AbortSignal, onRef: (ref: string) => Promise<void>) => Promise<Produced>;

export const produceHere: Producer = async (base, job, signal, onRef) => {
  const { result, media } = await produce(base, job, signal, onRef);
  signal.throwIfAborted();
  return { result, media: { ...media, prepared: await gatherEvidence(base, job, result.files, signal) } };
};

/** The call's result: the connector's answer, or the episode cut of a compose job; with the artifacts' provenance. */
async function produce(
  base: Ctx, job: LeasedJob, signal: AbortSignal, onRef: (ref: string) => Promise<void>,
): Promise<{ result: CallResult; media: Omit<MediaOutcome, 'prepared'> }> {
  const { config } = base;
  const input = JSON.parse(job.input) as JobInput;
  if (job.kind === COMPOSE_KIND) {
    const { result, composition } = await runCompose(base, job, input.parameters, signal);
    const inputs = composition.inputs.flatMap((i) => [
      { role: 'video', shotId: i.shotId, artifactId: i.artifactId, contentSha256: i.contentSha256 },
      ...(i.audioArtifactId ? [{ role: 'voice', shotId: i.shotId, artifactId: i.audioArtifactId, contentSha256: i.audioContentSha256 }] : []),
    ]);
    const provenance = { kind: job.kind, connectorId: null, model: null, parameters: input.parameters, workflow: input.workflow ?? null, inputs };
    return { result, media: { composition, provenance } };
  }
  const row = job.call ? job.call.connector : job.connector_id ? await connectorById(base.db, job.organization_id, job.connector_id) : undefined;
  if (!row) throw new ConnectorError('connector_missing', 'the job has no usable connector', false);
  const connector = connectorSpec(row);
  const { contract, inputs: stored } = await buildContract(base.db, job, job.call);
  const model = connector.protocol.models?.[job.kind] ?? null;
  const staged = await stageInputs(base.storage, stored);
  let result: CallResult;
  try {
    result = await callConnector({
      connector, contract, inputFiles: staged.files,
      execution: { jobId: job.id, attempt: job.attempt, kind: job.kind, model, deadline: new Date(base.now().getTime() + config.jobTimeoutMs).toISOString() },
      resumeRef: job.external_ref,
      onRef,
      signal, storage: base.storage, maxOutputBytes: config.maxOutputBytes, timeoutMs: config.connectorTimeoutMs, env: process.env,
      outputOrigins: config.connectorOutputOrigins ? config.connectorOutputOrigins.split(',') : [],
      credentials: credentialPolicy(config),
    });
  } finally {
    await staged.release();
  }
  const seed = input.parameters.seed;
  return {
    result,
    media: {
      composition: null,
      provenance: {
        kind: job.kind, connectorId: row.id, connectorLabel: row.label, protocol: connector.kind, model, attempt: job.attempt,
        prompt: input.prompt, negativePrompt: input.negativePrompt, parameters: input.parameters,
        seed: typeof seed === 'number' || typeof seed === 'string' ? seed : null, workflow: input.workflow ?? null,
        inputs: inputProvenance(contract.inputs),
      },
    },
  };
}

export interface RunOptions extends SettleHooks {
  /** Aborted when the runner stops (the lease is then released, not failed). */
  signal?: AbortSignal;
  commit?: Committer;
  producer?: Producer;
}

export async function runLeased(base: Ctx, job: LeasedJob, opts: RunOptions = {}): Promise<RunOutcome> {
  const { signal, also, complete, commit = immediate, producer = produceHere } = opts;
  const { config } = base;
  const lease: Lease = { jobId: job.id, leasedBy: job.leased_by!, attempt: job.attempt };
  const abort = new AbortController();
  let aborted: string | null = null;
  const stop = (why: string) => { if (!aborted) { aborted = why; abort.abort(new Error(why)); } };
  const onOuter = () => stop('the runner is stopping');
  signal?.addEventListener('abort', onOuter, { once: true });
  const deadline = setTimeout(() => stop(`the attempt ran longer than ${config.jobTimeoutMs} ms`), config.jobTimeoutMs);
  const renew = setInterval(() => { void renewing(); }, Math.max(100, Math.floor(config.workerLeaseMs / 3)));
  async function renewing(): Promise<void> {
    try {
      if (!await renewLease(base.db, lease, base.now().toISOString())) stop('the lease was lost (job cancelled or reclaimed)');
    } catch (err) {
      // A renewal that cannot be written (database busy or closing) must not take the process down:
      // the call is stopped and the lease left to expire.
      base.log.warn('lease renewal failed', { jobId: job.id, err });
      stop('the lease could not be renewed');
    }
  }
  try {
    const { result, media } = await producer(base, job, abort.signal, async (ref) => { await setExternalRef(base.db, lease, ref); });
    if (aborted) throw new Error(aborted);
    clearInterval(renew);
    return { ...await commit(() => settleSuccess(base, job, lease, result, media, { also, complete })), result, failure: null };
  } catch (err) {
    const failure = failureOf(err, aborted);
    // Stopping the service is not the job's failure: the lease is released (see releaseLeases).
    if (signal?.aborted) return { status: 'lost', released: [], runAfter: null, result: null, failure };
    clearInterval(renew);
    return { ...await commit(() => settleFailure(base, job, lease, failure, config.workerRetryBaseMs, { also })), result: null, failure };
  } finally {
    clearTimeout(deadline);
    clearInterval(renew);
    signal?.removeEventListener('abort', onOuter);
  }
}
