// svc serve: open the database (migrating it), prepare storage, listen, print the one line
// "listening on http://HOST:PORT", and shut down cleanly on SIGTERM/SIGINT within 10 s. The role
// (SVC_ROLE) decides whether the job worker and the notification deliveries run here (all, worker)
// and whether the API is served (all, api; a worker answers only GET /api/health, src/app.ts).
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Config } from './kernel/config.ts';
import { storageOf } from './kernel/storage/index.ts';
import type { Db } from './db/db.ts';
import { openDatabase } from './db/open.ts';
import { migrate } from './db/migrate.ts';
import { syncBuiltinTemplates } from './generation/workflows/builtin.ts';
import { createLogger, type Logger } from './kernel/log.ts';
import { createApp, type App } from './app.ts';
import { REQUEST_TIMEOUT_MS, answerClientError } from './http/request.ts';
import { dummyHash } from './kernel/password.ts';
import { mfaKey, ssoStorageKey } from './kernel/seal.ts';
import { startDeliveryLoop } from './platform/notifications/delivery.ts';
import { startWorkerThread, type WorkerHost } from './generation/worker/host.ts';
import { credentialPolicy } from './kernel/credentials.ts';
import { sessionKey } from './directory/sessions/token-hash.ts';
import { stopManualRuns } from './generation/jobs/manual-runs.ts';
import { createContext, events } from './directory/context.ts';
import { workerActor } from './generation/worker/host.ts';
import { bindSubscribers } from './subscribers.ts';

export const STORAGE_SUBDIRS = ['assets', 'outputs', 'frames', 'tmp', 'cache'] as const;
/** The local working folders (scratch files of ffmpeg, staged copies) every driver uses under the storage dir. */
const WORKING_SUBDIRS = ['tmp', 'cache'] as const;

/** The data folder, and under the storage dir the store's folders (local driver) or only the working folders. */
export function prepareDirectories(config: Config): void {
  fs.mkdirSync(config.backupsDir, { recursive: true });
  const dirs = storageOf(config).driver === 'local' ? STORAGE_SUBDIRS : WORKING_SUBDIRS;
  for (const d of dirs) fs.mkdirSync(path.join(config.storageDir, d), { recursive: true });
}

export interface RunningServer {
  url: string;
  port: number;
  app: App;
  db: Db;
  server: http.Server;
  close(): Promise<void>;
}

const SHUTDOWN_GRACE_MS = 8_000;
/** Running jobs get this long to finish at shutdown before their leases are released. */
const WORKER_GRACE_MS = 6_000;

/** Starts the service; the caller prints the listening line and wires signals (see cli/serve.ts). */
export async function startServer(config: Config, log: Logger = createLogger(config.logLevel)): Promise<RunningServer> {
  // A bad SVC_MFA_ENCRYPTION_KEY, SVC_OIDC_STORAGE_KEY or SVC_SESSION_SECRET stops the start (before anything is opened); the
  // development keys are warned about.
  const key = mfaKey(config);
  const ssoKey = ssoStorageKey(config);
  const sessionSecret = sessionKey(config);
  credentialPolicy(config); // a malformed SVC_CONNECTOR_SECRET_PREFIX / _NAMES stops the start too
  prepareDirectories(config);
  const db = await openDatabase(config);
  const m = await migrate(db);
  if (m.applied.length) log.info('database migrated', { from: m.from, to: m.to, applied: m.applied });
  const builtins = await syncBuiltinTemplates(db, new Date().toISOString());
  if (builtins.length) log.info('built-in workflow templates written', { templates: builtins });
  // News a crash (or a failing handler) left undelivered is handled before the first request.
  bindSubscribers();
  const replayed = await events.dispatchPending(createContext({ db, config, log, actor: workerActor(config.workerId), requestId: 'startup' }));
  if (replayed) log.info('pending events dispatched', { events: replayed });
  if (config.allowDevContext) {
    log.warn('SVC_ALLOW_DEV_CONTEXT=1: x-user-id and x-*-id headers act as credentials and scope. NEVER use this in production.');
  }
  if (key.source === 'development') {
    log.warn('SVC_MFA_ENCRYPTION_KEY is not set: TOTP secrets are encrypted with the built-in development key, which is public. NEVER run production like this; set a 32-byte key (64 hex or base64 characters) or a long passphrase.');
  }
  if (sessionSecret.source === 'development') {
    log.warn('SVC_SESSION_SECRET is not set: session and API-client access tokens are stored under the built-in development key, which is public. NEVER run production like this; set a 32-byte key (64 hex or base64 characters) or a long passphrase (changing it later signs everyone out).');
  }
  if (ssoKey.source === 'development') {
    log.warn('SVC_OIDC_STORAGE_KEY is not set: single sign-on flow states are encrypted with the built-in development key, which is public. Set a 32-byte key (64 hex or base64 characters) or a long passphrase before enabling sign-in providers in production.');
  }
  const app = createApp({ config, db, log });
  // Logins with unknown e-mail addresses are checked against a dummy hash; have it ready before
  // the first request so that they take no longer than the others.
  await dummyHash(config.scryptLogN);
  const server = http.createServer({ keepAliveTimeout: 5_000, requestTimeout: REQUEST_TIMEOUT_MS }, (req, res) => {
    void app.handle(req, res);
  });
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => answerClientError(err, socket));
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.port, config.host, () => resolve());
    });
  } catch (err) {
    await db.close();
    throw err;
  }
  // The background work (jobs, notification deliveries) runs in the worker and all roles only.
  const background = config.role !== 'api';
  const delivery = background ? startDeliveryLoop({ db, config, log }) : null;
  let worker: WorkerHost | null = null;
  try {
    if (background) worker = await startWorkerThread({ db, config, log, entry: new URL('./worker-thread.ts', import.meta.url) });
  } catch (err) {
    await delivery?.stop();
    server.close();
    await db.close();
    throw err;
  }
  const port = (server.address() as AddressInfo).port;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  let closing: Promise<void> | null = null;
  return {
    url: `http://${host}:${port}`,
    port,
    app,
    db,
    server,
    close() {
      closing ??= (async () => {
        const done = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        // Connections that finish their request during the shutdown are closed as soon as they are idle.
        const sweep = setInterval(() => server.closeIdleConnections(), 50);
        const force = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS);
        // Manual runs are put back in the queue at once (their requests answer); the worker finishes its
        // running jobs or releases their leases while connections drain.
        await stopManualRuns(db, new Date().toISOString());
        const workerStopped = worker?.stop(WORKER_GRACE_MS);
        await done;
        clearInterval(sweep);
        clearTimeout(force);
        await workerStopped;
        await delivery?.stop();
        await app.close();
        await db.close();
        log.flush();
      })();
      return closing;
    },
  };
}
