// The main thread's side of the worker thread: start it with the configuration, forward its log
// lines, wake it after commits (a message, never a poll from here), ask it to dispatch one claim,
// abort a cancelled job's call, and stop it within the shutdown budget.
import type { Actor } from '../../directory/context.ts';
import type { Config } from '../../kernel/config.ts';
import type { Db } from '../../db/db.ts';
import type { Logger, LogMessage } from '../../kernel/log.ts';
import { registerWorker } from '../dispatch/control.ts';
import { spawnThread } from './spawn.ts';

export type ToWorker =
  | { type: 'wake' }
  | { type: 'abort'; jobId: string }
  | { type: 'dispatch'; ref: number; organizationId: string | null }
  | { type: 'stop'; graceMs: number };

type FromWorker =
  | { type: 'ready' }
  | { type: 'stopped' }
  | { type: 'dispatched'; ref: number; jobId: string | null }
  | LogMessage;

export const workerActor = (id: string): Actor => ({
  type: 'system', userId: null, name: `worker ${id}`, email: null, isSystemAdmin: false, sessionId: null, sessionKind: null,
});

export interface WorkerHost {
  dispatch(organizationId: string | null): Promise<string | null>;
  stop(graceMs: number): Promise<void>;
}

/** Starts the thread whose entry module is `entry` (src/worker-thread.ts: the server names it, from above every wing). */
export async function startWorkerThread(deps: { db: Db; config: Config; log: Logger; entry: URL }): Promise<WorkerHost> {
  const { db, config, log, entry } = deps;
  const pending = new Map<number, (jobId: string | null) => void>();
  let ref = 0;
  let exited = false;
  let stopped: (() => void) | null = null;
  const { thread, ready } = spawnThread<FromWorker>(entry, config, log, { worker: config.workerId }, (m) => {
    if (m.type === 'dispatched') { pending.get(m.ref)?.(m.jobId); pending.delete(m.ref); }
    else if (m.type === 'stopped') stopped?.();
  });
  const post = (m: ToWorker) => { if (!exited) thread.postMessage(m); };
  thread.on('error', (err) => log.error('worker thread failed', { err }));
  thread.on('exit', (code) => {
    exited = true;
    registerWorker(db, null);
    for (const r of pending.values()) r(null);
    pending.clear();
    if (code !== 0 && !stopped) log.error('worker thread exited', { code });
    stopped?.();
  });
  await ready;
  const dispatch = (organizationId: string | null): Promise<string | null> => {
    if (exited) return Promise.resolve(null);
    return new Promise((resolve) => {
      pending.set(++ref, resolve);
        post({ type: 'dispatch', ref, organizationId });
      });
  };
  registerWorker(db, { wake: () => post({ type: 'wake' }), abort: (jobId) => post({ type: 'abort', jobId }), dispatch });
  return {
    dispatch,
    async stop(graceMs) {
      if (exited) return;
      registerWorker(db, null);
      await new Promise<void>((resolve) => {
        stopped = resolve;
        post({ type: 'stop', graceMs });
        setTimeout(() => { void thread.terminate(); }, graceMs + 1500).unref();
      });
      await thread.terminate();
    },
  };
}
