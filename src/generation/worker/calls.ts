// The worker's call thread (SQLite): the loop's thread claims, renews and commits (a SQLite commit
// blocks its thread for the fsync), and the connector calls with their media evidence run on this
// second thread, so that neither waits for the other. A call's result comes back as a message;
// results that arrive during a commit are settled together by the next one (group commit, loop.ts).
// What the loop's thread says in one turn crosses as one message (a claim's calls among it), so that
// the call thread wakes once for them and sends their requests back to back.
// The call thread opens the database read-only: the external reference a connector reports is
// written by the loop's thread, which answers once it is stored. An error is sent back as what the
// attempt records (failureOf), so the job fails exactly as if the call had run in the loop's thread.
import type { Worker } from 'node:worker_threads';
import type { Config } from '../../kernel/config.ts';
import type { Logger, LogMessage } from '../../kernel/log.ts';
import { ConnectorError } from '../connectors/protocols/types.ts';
import type { FailureInfo } from '../jobs/settle.ts';
import type { LeasedJob, Produced, Producer } from '../jobs/runner.ts';
import { spawnThread } from './spawn.ts';

/** To the call thread (as lists: what one turn of the loop's thread said, in order). */
export type ToCalls =
  | { type: 'call'; ref: number; job: LeasedJob }
  | { type: 'abort'; ref: number; reason: string }
  | { type: 'refStored'; ref: number; error: string | null }
  | { type: 'stop' };

/** From the call thread. */
export type FromCalls =
  | { type: 'ready' }
  | { type: 'produced'; ref: number; produced: Produced }
  | { type: 'failed'; ref: number; failure: FailureInfo }
  | { type: 'externalRef'; ref: number; externalRef: string }
  | LogMessage;

export interface CallThread {
  /** Runs a call on the call thread (started again if it died). */
  producer: Producer;
  /** Stops the thread; calls still running are answered as failed (the loop aborts them first). */
  stop(): Promise<void>;
}

interface Call { resolve(p: Produced): void; reject(e: unknown): void; onRef(ref: string): Promise<void> }

/** Starts the call thread (ready when this resolves: the first call does not wait for it). */
export async function startCallThread(config: Config, log: Logger): Promise<CallThread> {
  const calls = new Map<number, Call>();
  let next = 0;
  interface Live { thread: Worker; ready: Promise<void>; up: boolean; send: (m: ToCalls) => void }
  let live: Live | null = null;
  let stopping = false;

  const settle = (ref: number, how: (c: Call) => void) => {
    const c = calls.get(ref);
    if (!c) return;
    calls.delete(ref);
    how(c);
  };

  function spawn(): Live {
    // The messages of this turn, to this thread (a thread started again later does not get them).
    let outbox: ToCalls[] = [];
    const flush = () => {
      const said = outbox;
      outbox = [];
      try {
        thread.postMessage(said);
      } catch {
        // A message that cannot cross (a value that cannot be cloned) fails its own call only.
        for (const m of said) {
          try {
            thread.postMessage([m]);
          } catch (err) {
            if (m.type === 'call') settle(m.ref, (c) => { c.reject(err); });
          }
        }
      }
    };
    const send = (m: ToCalls) => {
      if (outbox.length === 0) queueMicrotask(flush);
      outbox.push(m);
    };
    const { thread, ready } = spawnThread<FromCalls>(new URL('./call-thread.ts', import.meta.url), config, log, { worker: config.workerId, thread: 'calls' }, (m) => {
      switch (m.type) {
        case 'produced': settle(m.ref, (c) => { c.resolve(m.produced); }); break;
        case 'failed': settle(m.ref, (c) => { c.reject(new ConnectorError(m.failure.code, m.failure.message, m.failure.retryable)); }); break;
        case 'externalRef': {
          const c = calls.get(m.ref);
          const stored = c ? c.onRef(m.externalRef) : Promise.reject(new Error('the call is no longer running'));
          stored.then(() => null, (err: unknown) => (err instanceof Error ? err.message : String(err)))
            .then((error) => { send({ type: 'refStored', ref: m.ref, error }); }, () => {});
          break;
        }
      }
    });
    thread.on('error', (err) => { log.error('call thread failed', { err }); });
    thread.on('exit', (code) => {
      if (live?.thread === thread) live = null;
      if (!stopping) log.error('call thread exited', { code });
      // A call the thread never answered is an attempt that failed for the runner's reason (retried).
      for (const ref of [...calls.keys()]) settle(ref, (c) => { c.reject(new Error('the call thread stopped')); });
    });
    ready.catch(() => {});
    const spawned: Live = { thread, ready, up: false, send };
    void ready.then(() => { spawned.up = true; }, () => {});
    return spawned;
  }

  live = spawn();
  await live.ready;

  const producer: Producer = async (_base, job, signal, onRef) => {
    live ??= spawn();
    const { send, ready, up } = live;
    if (!up) await ready; // once it is up, a call is posted in this turn
    signal.throwIfAborted();
    const ref = ++next;
    const abort = () => { send({ type: 'abort', ref, reason: String((signal.reason as Error | undefined)?.message ?? signal.reason) }); };
    signal.addEventListener('abort', abort, { once: true });
    try {
      return await new Promise<Produced>((resolve, reject) => {
        calls.set(ref, { resolve, reject, onRef });
        send({ type: 'call', ref, job });
      });
    } finally {
      signal.removeEventListener('abort', abort);
    }
  };

  return {
    producer,
    async stop() {
      stopping = true;
      const l = live;
      if (!l) return;
      const exited = new Promise<void>((resolve) => { l.thread.once('exit', () => { resolve(); }); });
      l.send({ type: 'stop' });
      const timer = setTimeout(() => { void l.thread.terminate(); }, 2000).unref();
      await exited;
      clearTimeout(timer);
    },
  };
}
