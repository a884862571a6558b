// Entry of the worker's call thread (see calls.ts): a read-only database connection, a logger that
// forwards lines, and the calls the loop's thread sends, each with its own abort.
import { parentPort, workerData } from 'node:worker_threads';
import { openDatabase } from '../../db/open.ts';
import { createContext } from '../../directory/context.ts';
import type { Config } from '../../kernel/config.ts';
import { portLogger } from '../../kernel/log.ts';
import { failureOf, produceHere, type LeasedJob } from '../jobs/runner.ts';
import type { FromCalls, ToCalls } from './calls.ts';
import { workerActor } from './host.ts';

const port = parentPort!;
const post = (m: FromCalls) => { port.postMessage(m); };
const config = (workerData as { config: Config }).config;
const log = portLogger(port);
const db = await openDatabase(config, { readOnly: true });
const ctx = createContext({ db, config, log, actor: workerActor(config.workerId), requestId: `worker-${config.workerId}` });
const running = new Map<number, AbortController>();
const refsStored = new Map<number, (error: string | null) => void>();

async function call(ref: number, job: LeasedJob): Promise<void> {
  const controller = new AbortController();
  running.set(ref, controller);
  // This connection never writes, so nothing else would tell its read cache of other connections' commits.
  db.syncCache();
  const onRef = (externalRef: string) => new Promise<void>((resolve, reject) => {
    refsStored.set(ref, (error) => {
      refsStored.delete(ref);
      if (error === null) resolve();
      else reject(new Error(error));
    });
    post({ type: 'externalRef', ref, externalRef });
  });
  try {
    post({ type: 'produced', ref, produced: await produceHere(ctx, job, controller.signal, onRef) });
  } catch (err) {
    post({ type: 'failed', ref, failure: failureOf(err, null) });
  } finally {
    running.delete(ref);
  }
}

port.on('message', (said: ToCalls[]) => { for (const m of said) take(m); });

function take(m: ToCalls): void {
  switch (m.type) {
    case 'call': void call(m.ref, m.job); break;
    case 'abort': running.get(m.ref)?.abort(new Error(m.reason)); break;
    case 'refStored': refsStored.get(m.ref)?.(m.error); break;
    case 'stop':
      for (const c of running.values()) c.abort(new Error('the service is stopping'));
      // The loop's thread waits for this thread's exit, which follows once the port is closed.
      void Promise.resolve(db.close()).finally(() => { port.close(); });
      break;
  }
}
post({ type: 'ready' });
