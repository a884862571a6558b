// bin/svc as a real child process in a sandbox directory: commands run to completion, `svc serve`
// started and awaited until its listening line; every child is killed and the directory removed
// when the test ends. A child runs on the suite's engine: on PostgreSQL (SVC_TEST_DATABASE=postgres)
// it gets the database of the data folder it is started on (test/helpers/postgres.ts), the one a test
// server on that folder uses, as the SQLite file svc.db in the folder would be shared.
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { dataFolderDatabase, testDatabase } from './postgres.ts';
import { removeAfterTest } from './server.ts';

export const BIN_SVC = fileURLToPath(new URL('../../bin/svc', import.meta.url));
export const LISTENING = /^listening on http:\/\/127\.0\.0\.1:(\d+)$/;
/** Longest a command may run before it is killed (and the test fails). */
export const COMMAND_TIMEOUT_MS = 30_000;

export interface Result { code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }

/**
 * The data folder of a `bin/svc` command line started in `cwd`, as the command resolves it: the last
 * --data-dir (or --dataDir), else SVC_DATA_DIR of its environment, else ./data.
 */
export function dataDirOf(args: string[], env: Record<string, string | undefined>, cwd: string): string {
  let dir: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const m = /^--(?:data-dir|dataDir)(?:=(.*))?$/.exec(args[i]);
    if (m) dir = m[1] ?? args[++i];
  }
  return path.resolve(cwd, dir ?? env.SVC_DATA_DIR ?? 'data');
}

/** The child's environment: the caller's minus every SVC_* setting, plus cheap scrypt and `extra`. */
export function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!k.startsWith('SVC_') && k !== 'NODE_TEST_CONTEXT') env[k] = v;
  }
  return { ...env, SVC_SCRYPT_LOG_N: '10', ...extra };
}

export const lines = (s: string): string[] => s.split('\n').filter((l) => l !== '');

export const describe = (r: Result): string => `exit ${r.code} signal ${r.signal}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`;

export function exited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

export interface SandboxOptions {
  /**
   * The engine of the children that name none themselves (no SVC_DATABASE or SVC_POSTGRES_URL in
   * their env): the suite's (the default), or 'sqlite' for tests about a given engine's files.
   */
  database?: 'sqlite' | 'postgres';
}

/**
 * One test's world: its own temporary directory (cwd of every child, holding data/ and storage/)
 * and every child it started; both are cleaned up after the test, children first, then the test
 * servers started on its folders (removeAfterTest), whatever failed.
 */
export class Sandbox {
  readonly root: string;
  readonly data: string;
  readonly storage: string;
  readonly database: 'sqlite' | 'postgres';
  private readonly t: TestContext;
  private readonly children = new Set<ChildProcess>();

  constructor(t: TestContext, opts: SandboxOptions = {}) {
    this.t = t;
    this.database = opts.database ?? testDatabase();
    this.root = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-cli-test-'));
    this.data = path.join(this.root, 'data');
    this.storage = path.join(this.root, 'storage');
    removeAfterTest(t, this.root, async () => {
      const running = [...this.children].filter((c) => !exited(c));
      await Promise.all(running.map((c) => new Promise<void>((resolve) => {
        c.once('exit', () => resolve());
        c.kill('SIGKILL');
        setTimeout(resolve, 5_000).unref();
      })));
    });
  }

  /** --data-dir and --storage-dir of this sandbox. */
  get dirs(): string[] {
    return ['--data-dir', this.data, '--storage-dir', this.storage];
  }

  /**
   * The database settings of a child on `args` and `env`: none on SQLite or when `env` names its
   * database itself; on PostgreSQL those of the data folder the command line names.
   */
  async databaseEnv(args: string[], env: Record<string, string> = {}): Promise<Record<string, string>> {
    if (this.database === 'sqlite' || env.SVC_DATABASE !== undefined || env.SVC_POSTGRES_URL !== undefined) return {};
    return await dataFolderDatabase(this.t, dataDirOf(args, env, this.root));
  }

  async spawn(args: string[], opts: { env?: Record<string, string>; node?: string } = {}): Promise<ChildProcess> {
    const env = childEnv({ ...await this.databaseEnv(args, opts.env), ...opts.env });
    const child = spawn(opts.node ?? process.execPath, [BIN_SVC, ...args], {
      cwd: this.root, env, stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.children.add(child);
    child.stdin.on('error', () => { /* EPIPE when the child does not read its input */ });
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    return child;
  }

  /** Runs `svc args` to completion (killed after COMMAND_TIMEOUT_MS), `input` on its stdin. */
  async run(args: string[], opts: { input?: string; env?: Record<string, string>; node?: string } = {}): Promise<Result> {
    const child = await this.spawn(args, opts);
    child.stdin!.end(opts.input ?? '');
    return await collect(child);
  }

  /** Starts `svc serve args` and waits for its first stdout line. */
  async serve(args: string[], env: Record<string, string> = {}, node?: string): Promise<Server> {
    const child = await this.spawn(['serve', ...args], { env, node });
    child.stdin!.end();
    const done = collect(child, null);
    let stdout = '';
    const firstLine = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`serve printed no line within ${COMMAND_TIMEOUT_MS} ms; stdout: ${stdout}`)), COMMAND_TIMEOUT_MS);
      const onData = (chunk: string) => {
        stdout += chunk;
        const nl = stdout.indexOf('\n');
        if (nl >= 0) {
          clearTimeout(timer);
          child.stdout!.off('data', onData);
          resolve(stdout.slice(0, nl));
        }
      };
      child.stdout!.on('data', onData);
      void done.then((r) => {
        clearTimeout(timer);
        reject(new Error(`serve ended before listening: ${describe(r)}`));
      });
    });
    const m = LISTENING.exec(firstLine);
    assert.ok(m, `first stdout line of serve: ${JSON.stringify(firstLine)}`);
    return { child, firstLine, port: Number(m[1]), url: firstLine.slice('listening on '.length), done };
  }
}

export interface Server { child: ChildProcess; firstLine: string; port: number; url: string; done: Promise<Result> }

/**
 * Collects a child's output until it has exited and closed its streams; SIGKILL after the timeout
 * (none for a server, which runs until its test stops it or ends).
 */
export function collect(child: ChildProcess, timeoutMs: number | null = COMMAND_TIMEOUT_MS): Promise<Result> {
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: string) => { stdout += c; });
  child.stderr!.on('data', (c: string) => { stderr += c; });
  const timer = timeoutMs === null ? undefined : setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((resolve, reject) => {
    child.once('error', (err) => { clearTimeout(timer); reject(err); });
    child.once('close', (code, signal) => { clearTimeout(timer); resolve({ code, signal, stdout, stderr }); });
  });
}
