// Entry of the worker thread: its own database connection, a logger that forwards lines to the main
// thread, the event subscriptions, and the loop, driven by messages from the main thread (see
// src/generation/worker/host.ts for the protocol).
import { parentPort, workerData } from 'node:worker_threads';
import { openDatabase } from './db/open.ts';
import { createContext } from './directory/context.ts';
import type { Config } from './kernel/config.ts';
import { portLogger } from './kernel/log.ts';
import { startWorkerLoop } from './generation/worker/loop.ts';
import { workerActor, type ToWorker } from './generation/worker/host.ts';
import { startCallThread } from './generation/worker/calls.ts';
import { onWorkerMessage, WORKER_CHANNEL } from './generation/dispatch/control.ts';
import { bindSubscribers } from './subscribers.ts';

const port = parentPort!;
const config = (workerData as { config: Config }).config;
const log = portLogger(port);
bindSubscribers();
const db = await openDatabase(config, { claims: true });
// On SQLite a commit blocks its thread for the fsync: the calls run on a thread of their own.
const calls = db.engine === 'sqlite' ? await startCallThread(config, log) : null;
const loop = await startWorkerLoop(createContext({ db, config, log, actor: workerActor(config.workerId), requestId: `worker-${config.workerId}` }), calls?.producer);
// Wake-ups and aborts from any process (PostgreSQL; nothing is heard on SQLite, where the main thread's messages below do it).
const unlisten = await db.listen(WORKER_CHANNEL, onWorkerMessage(loop));

port.on('message', (m: ToWorker) => {
  switch (m.type) {
    case 'wake': loop.wake(); break;
    case 'abort': loop.abort(m.jobId); break;
    case 'dispatch':
      // dispatch() answers null when the claim fails (it logs why): the caller always hears back.
      void loop.dispatch(m.organizationId).then((jobId) => { port.postMessage({ type: 'dispatched', ref: m.ref, jobId }); });
      break;
    case 'stop':
      void loop.stop(m.graceMs).finally(async () => {
        await unlisten();
        await calls?.stop();
        await db.close();
        port.postMessage({ type: 'stopped' });
      });
      break;
  }
});
port.postMessage({ type: 'ready' });
