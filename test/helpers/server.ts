// A real server on an ephemeral port over a temporary SQLite file and storage folder, and a small
// fetch wrapper. Password hashing cost is lowered for speed (SVC_SCRYPT_LOG_N=10). The media store is
// the local folder, or the s3 driver on the test gateway (a fresh key prefix, emptied after the test)
// when SVC_TEST_STORAGE_DRIVER=s3 or the `storage: 's3'` option asks for it: the same test files run
// on both drivers. The business database is SQLite in the data folder, or, when
// SVC_TEST_DATABASE=postgres (`npm run test:postgres`), a PostgreSQL database on the test server
// (tools/pg/pg.sh) with the schema and no rows, reused from test/helpers/postgres-pool.ts: a server
// started again on the same data folder finds the same database.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { loadConfig, type Config } from '../../src/kernel/config.ts';
import { createContext, type Ctx } from '../../src/directory/context.ts';
import { createLogger, type Logger } from '../../src/kernel/log.ts';
import { startServer, type RunningServer } from '../../src/server.ts';
import { dataFolderDatabase, testDatabase } from './postgres.ts';
import { checkAnswer } from './openapi-check.ts';
import { cleanUpPrefix, freshPrefix, s3Env } from './s3.ts';

export interface Answer<T = any> { status: number; headers: Headers; body: T; text: string }

export interface CallOptions { token?: string; body?: unknown; headers?: Record<string, string>; raw?: string | Buffer }

export interface TestServer extends RunningServer {
  config: Config;
  log: Logger;
  /** Every log line the server wrote. */
  logs: string[];
  dir: string;
  call<T = any>(method: string, path: string, opts?: CallOptions): Promise<Answer<T>>;
  /** A context for the local operator on the server's database (for factories). */
  operator(): Ctx;
}

export const TEST_ENV = { SVC_SCRYPT_LOG_N: '10', SVC_LOG_LEVEL: 'info' };

/** Each temporary folder's users: what must stop writing in it (a server on it closes) before it is removed. */
const folderUsers = new Map<string, Array<() => Promise<void>>>();

/**
 * Removes the temporary folder `dir` after the test, once `first` has run (a sandbox's children
 * stopped) and every test server started on it (or on a folder in it) has closed. Hooks run in the
 * order they were added and a failing one skips the rest, so removing the folder under a worker still
 * writing in it would fail and leave the server open: the file would never end.
 */
export function removeAfterTest(t: TestContext, dir: string, first: () => Promise<void> = async () => {}): void {
  const users: Array<() => Promise<void>> = [];
  folderUsers.set(dir, users);
  t.after(async () => {
    folderUsers.delete(dir);
    await first();
    for (const close of users) await close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
}

/** A temporary folder, removed after the test (removeAfterTest). */
export function tempDir(t: TestContext): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-test-'));
  removeAfterTest(t, dir);
  return dir;
}

/** `close` runs before the temporary folders holding any of `paths` are removed. */
function closeBeforeRemoval(paths: string[], close: () => Promise<void>): void {
  for (const [dir, users] of folderUsers) {
    if (paths.some((p) => p === dir || p.startsWith(dir + path.sep))) users.push(close);
  }
}

// Test servers serve the API only (SVC_ROLE=api): starting the worker thread is most of a server's
// start, and most tests never run a job. A file whose tests run jobs or send notifications says so
// once, and its servers run the worker and the deliveries too (role all, as `svc serve` by default).
let defaultRole: 'api' | 'all' = 'api';

/** This file's test servers run the job worker and the notification deliveries (SVC_ROLE=all). */
export function serversRunTheWorker(): void {
  defaultRole = 'all';
}

export interface TestServerOptions {
  dataDir?: string;
  storageDir?: string;
  /** The media store's driver; default SVC_TEST_STORAGE_DRIVER, else local. An SVC_STORAGE_DRIVER in `env` wins. */
  storage?: 'local' | 's3';
}

/**
 * A call over real HTTP to the server at `base()` (asked per call: a caller may spread its calls over
 * several processes), its answer checked against the OpenAPI document.
 */
export function callerOf(base: () => string): TestServer['call'] {
  return async (method: string, p: string, opts: CallOptions = {}): Promise<Answer> => {
    const url = base();
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    let body: string | Buffer | undefined = opts.raw;
    if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await fetch(url + p, { method, headers, body, redirect: 'manual' });
    const text = await res.text();
    let parsed: unknown = null;
    if (text && (res.headers.get('content-type') ?? '').includes('json')) parsed = JSON.parse(text);
    await checkAnswer(url, method, p, res.status, res.headers.get('content-type'), parsed);
    return { status: res.status, headers: res.headers, body: parsed, text };
  };
}

// The engine test servers use (SVC_TEST_DATABASE=postgres runs the suite on PostgreSQL).
export { testDatabase };

/** SVC_DATABASE and SVC_POSTGRES_URL of another process on a test server's database (nothing on SQLite, found in the data folder). */
export const databaseEnvOf = (config: Config): Record<string, string> =>
  (config.database === 'postgres' ? { SVC_DATABASE: 'postgres', SVC_POSTGRES_URL: config.postgresUrl } : {});

/** The driver test servers use unless asked otherwise (SVC_TEST_STORAGE_DRIVER=s3 runs a test file on the s3 driver). */
export const testStorageDriver = (): 'local' | 's3' => (process.env.SVC_TEST_STORAGE_DRIVER === 's3' ? 's3' : 'local');

export async function startTestServer(t: TestContext, env: Record<string, string> = {}, dirs: TestServerOptions = {}): Promise<TestServer> {
  const dir = tempDir(t);
  const storageDir = dirs.storageDir ?? path.join(dir, 'storage');
  let storageEnv: Record<string, string> = {};
  if ((dirs.storage ?? testStorageDriver()) === 's3' && env.SVC_STORAGE_DRIVER === undefined) {
    const prefix = freshPrefix();
    storageEnv = s3Env(prefix);
    cleanUpPrefix(t, prefix, storageDir);
  }
  const dataDir = dirs.dataDir ?? path.join(dir, 'data');
  // The data folder's database: every server and child on the folder finds the same one; this server is closed before it is dropped.
  const started: { server?: RunningServer } = {};
  const databaseEnvs = await dataFolderDatabase(t, dataDir, async () => { await started.server?.close(); }, 'schema');
  const config = loadConfig({
    port: 0, host: '127.0.0.1', dataDir, storageDir,
  }, { ...TEST_ENV, SVC_ROLE: defaultRole, ...storageEnv, ...databaseEnvs, ...env });
  const logs: string[] = [];
  // SVC_TEST_ECHO_ERRORS=1 also prints the server's error lines (the cause behind a 500) to stderr.
  const echo = process.env.SVC_TEST_ECHO_ERRORS === '1';
  const log = createLogger(config.logLevel, {
    write: (chunk: string) => {
      const lines = chunk.split('\n').filter(Boolean);
      logs.push(...lines);
      if (echo) for (const l of lines) if (l.includes('"level":"error"')) process.stderr.write(`server error: ${l}\n`);
    },
  });
  const running = await startServer(config, log);
  started.server = running;
  closeBeforeRemoval([path.resolve(dataDir), path.resolve(storageDir)], () => running.close());
  t.after(() => running.close());
  const call = callerOf(() => running.url);
  return {
    ...running, config, log, logs, dir, call,
    operator: () => createContext({ db: running.db, config, log }),
  };
}
