// A thread of the worker (the worker thread, host.ts; its call thread, calls.ts): started with a copy
// of the configuration and the live environment (SHARE_ENV: credentials, authEnv, are read at call
// time, as in the main thread), its log lines forwarded to the process's logger with `fields` added,
// ready once it says so. Its other messages go to `onMessage`.
import { SHARE_ENV, Worker } from 'node:worker_threads';
import type { Config } from '../../kernel/config.ts';
import type { Logger, LogMessage } from '../../kernel/log.ts';

/** What a thread says besides its own messages. */
type Common = LogMessage | { type: 'ready' };

/** `M`: every message the thread posts ('ready' and its log lines among them). */
export function spawnThread<M extends { type: string }>(
  entry: URL, config: Config, log: Logger, fields: Record<string, unknown>, onMessage: (m: Exclude<M, Common>) => void,
): { thread: Worker; ready: Promise<void> } {
  const thread = new Worker(entry, { workerData: { config: { ...config } }, env: SHARE_ENV });
  const ready = new Promise<void>((resolve, reject) => {
    thread.once('error', reject);
    thread.on('message', (m: M | Common) => {
      if (m.type === 'ready') resolve();
      else if (m.type === 'log') { const l = m as LogMessage; log[l.level](l.msg, { ...fields, ...l.fields }); }
      else onMessage(m as Exclude<M, Common>);
    });
  });
  return { thread, ready };
}
