// The worker's loop, inside the worker thread: claim while a concurrency slot is free, run each
// claimed job through the shared runner, heartbeat and reclaim expired leases every poll. It is
// woken by a message (enqueue, dispatch, connector ready; on PostgreSQL a notification from any
// process, src/generation/dispatch/control.ts); the poll interval is only the backstop,
// and a timer wakes it when the earliest backoff ends.
import type { Ctx } from '../../directory/context.ts';
import { produceHere, runLeased, type Committer, type Producer } from '../jobs/runner.ts';
import type { SettleOutcome } from '../jobs/settle.ts';
import { recordFailure, jobScope } from '../jobs/settle.ts';
import { recordAttempt, type Completion, type JobRow } from '../jobs/store.ts';
import { anyClaimable, claimJobs, nextRunAfter, reclaimExpired, releaseLeases } from '../jobs/claim.ts';
import { batchedCompletions, type BatchRide } from './completions.ts';
import { wakeWorker } from '../dispatch/control.ts';
import { outsideTransactions } from '../../db/transactions.ts';

export interface WorkerLoop {
  wake(): void;
  /** Claims (at most) one job now, of one organization when given, even when paused. */
  dispatch(organizationId: string | null): Promise<string | null>;
  abort(jobId: string): void;
  /** Stops claiming, lets running jobs finish for up to `graceMs`, then aborts and releases them. */
  stop(graceMs: number): Promise<void>;
}

type Stamp = 'last_claimed_at' | 'last_completed_at' | 'last_failed_at' | 'last_reclaimed_at' | 'last_retried_at';
/** Least interval between two writes of the last-event times outside heartbeats. */
const STAMP_MS = 100;

/** `producer` runs the calls (on the call thread on SQLite, calls.ts; in this thread by default). */
export async function startWorkerLoop(ctx: Ctx, producer: Producer = produceHere): Promise<WorkerLoop> {
  const { db, config, log } = ctx;
  const id = config.workerId;
  interface Slot { controller: AbortController; done: Promise<void> }
  /** The jobs this worker holds a lease on and has not settled (each in a concurrency slot). */
  const running = new Map<string, Slot>();
  const stopping = new AbortController();
  let tickTimer: NodeJS.Timeout | null = null;
  let wakeTimer: NodeJS.Timeout | null = null;
  let wakeAt = Infinity;

  const now = () => ctx.now().toISOString();
  // The last-event times live here and reach worker_state with the next commit at most every
  // STAMP_MS (and with every heartbeat), so that a busy worker does not rewrite the row per job.
  const stamps: Partial<Record<Stamp, string>> = {};
  let lastError: string | null = null;
  let stampedAt = 0;
  const stamp = (col: Stamp, at: string) => { stamps[col] = at; };
  const flushStamps = async (force = false) => {
    if (!force && Date.now() - stampedAt < STAMP_MS) return;
    stampedAt = Date.now();
    const cols = Object.keys(stamps) as Stamp[];
    await db.run(`UPDATE worker_state SET running = ?, last_error = coalesce(?, last_error)${cols.map((c) => `, ${c} = ?`).join('')} WHERE worker_id = ?`,
      running.size, lastError, ...cols.map((c) => stamps[c]!), id);
    for (const c of cols) delete stamps[c];
    lastError = null;
  };

  /** Slots promised to claims in flight (taken before their statement's await, so two claims never share a slot). */
  let reserved = 0;
  const free = () => (stopping.signal.aborted ? 0 : config.workerConcurrency - running.size - reserved);
  /**
   * The free slots this worker fills on its own, with those of `settling` results whose calls have
   * ended: none while it is paused (SVC_WORKER_ENABLED=0; dispatch still claims) or stopping.
   */
  const auto = (settling = 0) => (config.workerEnabled && !stopping.signal.aborted ? free() + settling : 0);
  /**
   * On SQLite a commit blocks this thread for its fsync: the settles that come in meanwhile share
   * the next commit (group commit below). On PostgreSQL a commit does not block this thread: chat
   * completions that end while one statement of completions is being written share the next, which
   * carries the claim for the slots they free (completions.ts); any other settle commits on its own
   * connection.
   */
  const grouped = !db.dialect.writingCtes;

  /**
   * Claims inside the caller's transaction (or its own). Claimed jobs take their slot at once (a
   * claim made while a batch of results commits must not see the slots of jobs not yet started as
   * free); start() runs them once their lease is written (in a group commit before its COMMIT, see
   * flushBatch).
   */
  async function claim(limit: number, organizationId: string | null = null): Promise<JobRow[]> {
    if (limit <= 0) return [];
    reserved += limit;
    try {
      return take(await claimJobs(db, id, now(), limit, organizationId));
    } finally {
      reserved -= limit;
    }
  }

  /** Claimed jobs take their slots. */
  function take(rows: JobRow[]): JobRow[] {
    if (rows.length) stamp('last_claimed_at', now());
    for (const job of rows) running.set(job.id, { controller: new AbortController(), done: Promise.resolve() });
    return rows;
  }

  // Group commit: settles of calls that finish in the same turn of the event loop share one
  // transaction (one fsync), each in its own savepoint; one claim for the slots they free opens it.
  // (Waiting longer for more calls to finish was measured: it lowers throughput on 2 cores.)
  type Pending = { fn: () => unknown; resolve: (v: unknown) => void; reject: (e: unknown) => void };
  let batch: Pending[] = [];
  const flushBatch = async () => {
    const work = batch;
    batch = [];
    // The claim for the slots the batch frees comes first, so that its calls start at once. Each
    // settle runs in its own savepoint (a failing one is undone alone and rejected), unless it is
    // alone: its failure then rolls the whole transaction back. The others are resolved only once
    // the whole transaction has committed. (This is SQLite's path: a statement that fails there
    // undoes only itself, so the claim and the state write, one statement each, need no savepoint
    // to spare the settles beside them.)
    const done: Array<() => void> = [];
    let claimed: JobRow[] = [];
    try {
      await db.tx(async () => {
        try {
          claimed = await claim(auto(work.length)); // the results settled below free their slots
        } catch (err) {
          log.error('worker claim failed', { err }); // never at the price of the settles beside it
        }
        // The claimed calls are posted now and run while the settles and the commit's fsync do: a
        // call needs its lease written, not yet durable. A crash loses both; a failed commit aborts
        // them (below). What a call reads (a parent job's outputs too) was committed before: the
        // claim is this transaction's first write.
        outsideTransactions(() => { start(claimed); });
        for (const w of work) {
          try {
            const v = work.length === 1 ? await w.fn() : await db.tx(w.fn);
            done.push(() => w.resolve(v));
          } catch (err) {
            if (work.length === 1) throw err;
            done.push(() => w.reject(err));
          }
        }
        try {
          await flushStamps();
        } catch (err) {
          log.error('worker state write failed', { err });
        }
      });
    } catch (err) {
      // Claimed inside the rolled-back transaction: their calls stop, and their settles, finding no
      // lease, write nothing; each keeps its slot until then.
      for (const j of claimed) running.get(j.id)?.controller.abort();
      for (const w of work) w.reject(err);
      return;
    }
    for (const d of done) d();
  };
  const commit: Committer = <T>(fn: () => T | Promise<T>) => new Promise<T>((resolve, reject) => {
    if (batch.length === 0) setImmediate(() => { void flushBatch(); });
    batch.push({ fn, resolve: resolve as (v: unknown) => void, reject });
  });

  await db.tx(async () => {
    const at = now();
    await db.run(
      `INSERT INTO worker_state (worker_id, started_at, heartbeat_at, enabled, concurrency, poll_ms, lease_ms, running, stopped_at)
       VALUES (?1, ?2, ?2, ?3, ?4, ?5, ?6, 0, NULL)
       ON CONFLICT (worker_id) DO UPDATE SET started_at = ?2, heartbeat_at = ?2, enabled = ?3, concurrency = ?4, poll_ms = ?5,
         lease_ms = ?6, running = 0, stopped_at = NULL`,
      id, at, config.workerEnabled ? 1 : 0, config.workerConcurrency, config.workerPollMs, config.workerLeaseMs);
  });

  function start(rows: JobRow[]): void {
    for (const job of rows) {
      const entry = running.get(job.id);
      if (entry) entry.done = execute(job, entry);
    }
  }

  /**
   * Gives back a slot, only if it is still this run's: a job can be claimed again (its next attempt)
   * inside the very transaction that settles this one, under the same id.
   */
  const release = (jobId: string, entry: Slot) => {
    if (running.get(jobId) === entry) running.delete(jobId);
  };

  /**
   * PostgreSQL: the claim that chat completions make for the free slots and the `n` their jobs free
   * (`freed` gives those back as the claim answers; the others are reserved until then), its jobs
   * started at once: the statement has committed when it answers.
   */
  const batchRide = (n: number, freed: () => void): BatchRide | null => {
    if (!config.workerEnabled || stopping.signal.aborted || free() < 0) return null;
    let held = free();
    reserved += held;
    const end = () => { reserved -= held; held = 0; };
    return { workerId: id, now: now(), limit: held + n, end, taken: (jobs) => { end(); freed(); start(take(jobs)); } };
  };
  const completions = grouped ? null : batchedCompletions(db, batchRide);

  async function execute(job: JobRow, slot: Slot): Promise<void> {
    const signal = slot.controller.signal;
    // PostgreSQL: a chat completion goes with those that end meanwhile (completions.ts), and their
    // statement carries the claim for the slots they free. A settle without one (a failure, media)
    // is followed by a claim of its own.
    let rode = false;
    const complete = completions && ((chat: Completion) => completions(chat, () => { rode = true; release(job.id, slot); }));
    const also = (o: SettleOutcome) => {
      release(job.id, slot);
      const at = now();
      if (o.status === 'completed') stamp('last_completed_at', at);
      else if (o.status === 'queued') stamp('last_retried_at', at);
      else if (o.status === 'failed') stamp('last_failed_at', at);
    };
    try {
      const outcome = await runLeased(ctx, job, complete ? { signal, also, complete, producer } : { signal, also, commit, producer });
      if (!grouped) await flushStamps().catch((err: unknown) => { log.error('worker state write failed', { err }); });
      if (outcome.failure && outcome.status !== 'lost') {
        log.warn('job attempt failed', { jobId: job.id, attempt: job.attempt, outcome: outcome.status, error: outcome.failure.message });
        lastError = `${job.id}: ${outcome.failure.code}: ${outcome.failure.message}`;
      }
      if (outcome.runAfter) scheduleWake(Date.parse(outcome.runAfter));
      if (outcome.released.length) {
        await pump();
        await wakeWorker(ctx); // the workers of other processes, for what this one has no slot for (PostgreSQL)
      }
    } catch (err) {
      // The settle failed (the lease stays and expires).
      log.error('worker failed to run a job', { jobId: job.id, err });
    } finally {
      const mine = running.get(job.id) === slot;
      if (mine) release(job.id, slot);
      if (mine || !(grouped || rode)) await pump();
    }
  }

  /** Claims for the free call slots. */
  async function pump(): Promise<void> {
    if (auto() <= 0) return;
    try {
      start(await claim(auto()));
      const due = await nextRunAfter(db, now());
      if (due) scheduleWake(Date.parse(due));
    } catch (err) {
      log.error('worker claim failed', { err });
    }
  }

  function scheduleWake(at: number): void {
    if (stopping.signal.aborted || at >= wakeAt) return;
    if (wakeTimer) clearTimeout(wakeTimer);
    wakeAt = at;
    wakeTimer = setTimeout(() => { wakeTimer = null; wakeAt = Infinity; void pump(); }, Math.max(0, at - Date.now()));
  }

  /** Heartbeat, expired leases, then a claim if anything is claimable (a read first: idle polls take no write lock for it). */
  async function tick(): Promise<void> {
    try {
      const at = now();
      const reclaimed = await db.tx(async () => {
        await db.run('UPDATE worker_state SET heartbeat_at = ? WHERE worker_id = ?', at, id);
        await flushStamps(true);
        const rows = await reclaimExpired(db, new Date(Date.parse(at) - config.workerLeaseMs).toISOString(), at);
        for (const job of rows) await reclaimed1(job, at);
        if (rows.length) stamp('last_reclaimed_at', at);
        return rows;
      });
      if (reclaimed.length) log.warn('expired leases reclaimed', { jobs: reclaimed.map((j) => j.id) });
      if (await anyClaimable(db, at)) await pump();
    } catch (err) {
      log.error('worker tick failed', { err });
    }
    if (!stopping.signal.aborted) tickTimer = setTimeout(() => { void tick(); }, Math.min(config.workerPollMs, Math.max(100, Math.floor(config.workerLeaseMs / 3))));
  }

  async function reclaimed1(job: JobRow, at: string): Promise<void> {
    const error = job.error ?? 'lease expired';
    await recordAttempt(db, job, 'reclaimed', at, error);
    await recordFailure(jobScope(ctx, job), job, job.attempt, error, job.status === 'failed' ? 'failed' : 'retry', null);
  }

  await tick();

  return {
    wake: () => { void pump(); },
    async dispatch(organizationId) {
      try {
        const rows = await claim(free() > 0 ? 1 : 0, organizationId);
        start(rows);
        return rows[0]?.id ?? null;
      } catch (err) {
        log.error('worker dispatch failed', { err });
        return null;
      }
    },
    abort(jobId) {
      running.get(jobId)?.controller.abort(new Error('cancelled'));
    },
    async stop(graceMs) {
      stopping.abort();
      if (tickTimer) clearTimeout(tickTimer);
      if (wakeTimer) clearTimeout(wakeTimer);
      const all = () => Promise.all([...running.values()].map((r) => r.done));
      const grace = new Promise<void>((resolve) => setTimeout(resolve, graceMs).unref());
      await Promise.race([all(), grace]);
      for (const r of running.values()) r.controller.abort(new Error('the service is stopping'));
      await all();
      const released = await releaseLeases(db, id, now());
      if (released.length) log.info('leases released at shutdown', { jobs: released.map((j) => j.id) });
      await flushStamps(true);
      await db.run('UPDATE worker_state SET stopped_at = ?, running = 0 WHERE worker_id = ?', now(), id);
    },
  };
}
