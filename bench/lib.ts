// Shared by the bench/*.bench.ts scripts: temporary directories, svc set up through its own CLI,
// servers as child processes (same Node binary) waited for by their "listening on URL" line, an
// aligned plain-text table, and the machine's figures. Every child and temporary directory is
// registered and removed when the script exits, also on an error or a signal.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import type { Config } from '../src/kernel/config.ts';
import type { Db } from '../src/db/db.ts';
import type { Ctx } from '../src/directory/context.ts';

export const ROOT = path.resolve(import.meta.dirname, '..');
export const SVC_BIN = path.join(ROOT, 'bin', 'svc');

/** Environment overrides for a child: a string sets the variable, undefined removes an inherited one. */
export type EnvOverrides = Record<string, string | undefined>;

const children = new Set<ChildProcess>();
const dirs = new Set<string>();

function cleanup(): void {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  children.clear();
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  dirs.clear();
}
const hooks = new Set<() => Promise<void>>();

/**
 * Runs (once each) the asynchronous clean-ups registered with onExit, such as emptying a bucket
 * prefix; a script calls it in its own `finally`, the signal handlers call it before exiting.
 * Failures are printed, never thrown; each hook gets at most 60 s.
 */
export function runExitHooks(): Promise<void> {
  // A second caller (the script's finally while a signal's clean-up runs) waits for the same run.
  running ??= (async () => {
    for (const h of [...hooks]) {
      hooks.delete(h);
      let timer: NodeJS.Timeout | undefined;
      const limit = new Promise<void>((resolve) => { timer = setTimeout(() => { process.stderr.write('clean-up still running after 60 s; left\n'); resolve(); }, 60_000); });
      await Promise.race([h().catch((err: unknown) => { process.stderr.write(`clean-up failed: ${(err as Error).message}\n`); }), limit]);
      clearTimeout(timer);
    }
  })().finally(() => { running = null; });
  return running;
}
let running: Promise<void> | null = null;

/** Registers an asynchronous clean-up (run by runExitHooks, also on SIGINT/SIGTERM); returns it. */
export function onExit(hook: () => Promise<void>): () => Promise<void> {
  armCleanup();
  hooks.add(hook);
  return hook;
}

const exiting = new AbortController();
/**
 * Aborted when the script is interrupted (SIGINT/SIGTERM): give it to the tools a script runs itself
 * (runFfmpeg's `signal`), so that none outlives the script.
 */
export function exitSignal(): AbortSignal {
  armCleanup();
  return exiting.signal;
}

let armed = false;
/** Installed with the first child, directory or hook, so that merely importing this file adds no handlers. */
function armCleanup(): void {
  if (armed) return;
  armed = true;
  process.on('exit', cleanup);
  for (const [sig, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
    process.once(sig, () => {
      // Tools and servers first (they may hold what the hooks remove), then the hooks, then the folders.
      exiting.abort();
      for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
      void runExitHooks().finally(() => {
        cleanup();
        process.exit(code);
      });
    });
  }
}

function childEnv(overrides: EnvOverrides = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const [k, v] of Object.entries(overrides)) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return env;
}

/** A fresh directory under the OS temp dir, removed when the script exits. */
export function tempDir(prefix = 'svc-bench-'): string {
  armCleanup();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  dirs.add(dir);
  return dir;
}

export interface Running {
  url: string;
  pid: number;
  /** SIGTERM, then wait for the exit (SIGKILL after 15 s); resolves to the exit code or signal. */
  stop(): Promise<number | string>;
}

const LISTENING = /^listening on (http:\/\/\S+)$/;

/**
 * Starts `node ...args` (process.execPath), resolves once it prints "listening on URL" on stdout.
 * Its stderr goes to `stderrFile` (appended) or is ignored. BENCH_NODE_ARGS (space-separated) are
 * Node's own options for these processes, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile
 * every thread of the measured servers (Node refuses --cpu-prof in NODE_OPTIONS).
 */
export function startProcess(args: string[], opts: { env?: EnvOverrides; stderrFile?: string } = {}): Promise<Running> {
  const nodeArgs = process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  return startChild(process.execPath, [...nodeArgs, ...args], { ...opts, ready: LISTENING });
}

export interface Child extends Running {
  /** Writes one line to the child's stdin. */
  send(line: string): void;
}

/**
 * Starts `command ...args` (stdin a pipe), resolves once a line of its stdout matches `ready`; `url`
 * is the match's first group (or the whole line). Its stderr goes to `stderrFile` (appended) or is
 * ignored; it is killed when the script exits.
 */
export async function startChild(command: string, args: string[], opts: { env?: EnvOverrides; stderrFile?: string; ready: RegExp }): Promise<Child> {
  armCleanup();
  const errFd = opts.stderrFile ? fs.openSync(opts.stderrFile, 'a') : null;
  const child = spawn(command, args, { cwd: ROOT, env: childEnv(opts.env), stdio: ['pipe', 'pipe', errFd ?? 'ignore'] });
  if (errFd !== null) fs.closeSync(errFd);
  children.add(child);
  const exited = new Promise<number | string>((resolve) => {
    child.once('exit', (code, signal) => {
      children.delete(child);
      resolve(code ?? signal ?? 'unknown');
    });
  });
  child.once('error', () => {}); // a missing binary: reported through `exited` below
  child.stdin!.on('error', () => {}); // a child that exits early closes its stdin
  const lines = readline.createInterface({ input: child.stdout! });
  let ready = false;
  const what = [command, ...args].join(' ');
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what}: no line matching ${opts.ready} within 30 s`)), 30_000);
    lines.on('line', (line) => {
      const m = opts.ready.exec(line.trim());
      if (m && !ready) {
        ready = true;
        clearTimeout(timer);
        resolve(m[1] ?? m[0]);
      }
    });
    void exited.then((how) => {
      if (ready) return;
      clearTimeout(timer);
      const tail = opts.stderrFile ? fs.readFileSync(opts.stderrFile, 'utf8').trim().split('\n').slice(-5).join('\n') : '';
      reject(new Error(`${what} exited (${how}) before it was ready${tail ? `:\n${tail}` : ''}`));
    });
  });
  return {
    url,
    pid: child.pid!,
    send(line) { child.stdin!.write(line + '\n'); },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const hard = setTimeout(() => child.kill('SIGKILL'), 15_000);
        const how = await exited;
        clearTimeout(hard);
        return how;
      }
      return exited;
    },
  };
}

export interface SvcDirs { dataDir: string; storageDir: string }

/** Runs `svc ARGS --json --data-dir D --storage-dir S` to completion and returns its JSON output. */
export function svcCli(d: SvcDirs, args: string[], opts: { input?: string; env?: EnvOverrides } = {}): any {
  const r = spawnSync(process.execPath, [SVC_BIN, ...args, '--json', '--data-dir', d.dataDir, '--storage-dir', d.storageDir], {
    cwd: ROOT, env: childEnv(opts.env), input: opts.input ?? '', encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`svc ${args.join(' ')} failed (${r.status ?? r.signal}): ${r.stderr.trim() || r.error?.message}`);
  return JSON.parse(r.stdout);
}

export interface SvcSetup extends SvcDirs { dir: string; logFile: string; email: string; password: string; userId: string }

/** A temporary data and storage directory holding one active user created with `svc users create`. */
export function setupSvc(opts: { env?: EnvOverrides; email?: string; password?: string } = {}): SvcSetup {
  const dir = tempDir();
  const d = { dataDir: path.join(dir, 'data'), storageDir: path.join(dir, 'storage') };
  const email = opts.email ?? 'bench@example.com';
  const password = opts.password ?? 'quiet lantern over the night train 7';
  const out = svcCli(d, ['users', 'create', '--email', email, '--name', 'Bench User', '--password-stdin'], { input: password + '\n', env: opts.env });
  return { ...d, dir, logFile: path.join(dir, 'svc.log'), email, password, userId: out.user.id };
}

/**
 * `svc serve` on 127.0.0.1 and an ephemeral port over the setup's directories, with `args` added
 * (such as `--role api`); stderr (the JSON log) to setup.logFile.
 */
export function startSvc(s: SvcSetup, env: EnvOverrides = {}, args: string[] = []): Promise<Running> {
  return startProcess(
    [SVC_BIN, 'serve', '--host', '127.0.0.1', '--port', '0', '--data-dir', s.dataDir, '--storage-dir', s.storageDir, ...args],
    { env, stderrFile: s.logFile },
  );
}

export interface Studio { organizationId: string; workspaceId: string; projectId: string; /** Scoped to the project. */ ctx: Ctx }

/**
 * Creates through the service functions, on an open and migrated `db`, organization "Bench Studio"
 * owned by the user `ownerEmail`, its workspace "Dramas" and project "Night Train" (with its first
 * season, episode and shot); returns their ids and a context scoped to the project for seeding more.
 * The service modules are loaded here, so that the scripts which need no studio do not load them.
 */
export async function createStudio(db: Db, config: Config, ownerEmail: string): Promise<Studio> {
  const [{ createContext, withScope }, { createLogger }, { createOrganization, createWorkspace }, { createProject }, { userByEmail }] = await Promise.all([
    import('../src/directory/context.ts'), import('../src/kernel/log.ts'), import('../src/tenancy/service.ts'),
    import('../src/production/projects/service.ts'), import('../src/directory/users/store.ts'),
  ]);
  const owner = await userByEmail(db, ownerEmail);
  if (!owner) throw new Error(`createStudio: no user ${ownerEmail}`);
  const ctx = createContext({ db, config, log: createLogger('warn') });
  const org = await createOrganization(ctx, { name: 'Bench Studio', ownerUserId: owner.id });
  const ws = await createWorkspace(ctx, org.id, { name: 'Dramas' });
  const project = await createProject(ctx, ws.id, { name: 'Night Train' });
  const scope = { organizationId: org.id, workspaceId: ws.id, projectId: project.id };
  return { ...scope, ctx: withScope(ctx, scope) };
}

/** POST /api/auth/login; returns the Bearer token or throws. */
export async function login(url: string, email: string, password: string): Promise<string> {
  const res = await fetch(`${url}/api/auth/login`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password }),
  });
  const body = (await res.json()) as { token?: string };
  if (res.status !== 200 || !body.token) throw new Error(`login failed: ${res.status} ${JSON.stringify(body)}`);
  return body.token;
}

export interface Machine { cpu: string; cores: number; node: string; os: string; memGiB: number; load: string; date: string }

export function machine(): Machine {
  const cpus = os.cpus();
  return {
    cpu: cpus[0]?.model.trim() ?? 'unknown',
    cores: cpus.length,
    node: process.version,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    memGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    load: os.loadavg().slice(0, 2).map((l) => l.toFixed(2)).join(' / '),
    date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
  };
}

export function machineLine(m = machine()): string {
  return `${m.cpu}, ${m.cores} cores, ${m.memGiB} GiB, Node ${m.node}, ${m.os}, load ${m.load} (1/5 min), ${m.date}`;
}

/**
 * One figure of a script in machine-readable form: `better` says which way is an improvement,
 * `goal` (optional) is the script's own bound for the figure (a latency under it is good enough).
 */
export interface Figure { figure: string; value: number; unit: string; better: 'higher' | 'lower'; goal?: number }

/**
 * Appends the figure as one JSON line `{bench, figure, value, unit, better, goal}` to the file named
 * by BENCH_RESULT_FILE (bench/compare.ts reads them); does nothing without it. `bench` is the
 * script's name without `.bench.ts`.
 */
export function report(f: Figure): void {
  const file = process.env.BENCH_RESULT_FILE;
  if (!file) return;
  const bench = path.basename(process.argv[1] ?? 'unknown').replace(/\.bench\.ts$/, '');
  fs.appendFileSync(file, JSON.stringify({ bench, ...f }) + '\n');
}

/**
 * The verdict on a goal the script prints: 'met', or 'NOT MET', which also makes the script exit 1
 * once it has printed everything (so `npm run bench` lists it as failed and exits 1 too).
 */
export function goal(met: boolean): 'met' | 'NOT MET' {
  if (!met) process.exitCode = 1;
  return met ? 'met' : 'NOT MET';
}

/** Formats a number with `digits` decimals and thousands separators. */
export const num = (n: number, digits = 0): string =>
  n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

/** Nearest-rank percentile (p in 0..100) of unsorted samples. */
export function percentile(samples: readonly number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)];
}

/**
 * Prints an aligned plain-text table: rows[0] is the header; cells that look numeric are right
 * aligned. Notes follow the table, then the machine line.
 */
export function printTable(title: string, rows: ReadonlyArray<ReadonlyArray<string | number>>, notes: readonly string[] = []): void {
  const cells = rows.map((r) => r.map(String));
  const widths = cells[0].map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  const numeric = /^[-+]?[\d,.]+\s*(%|ms|s|x|×)?$/;
  const line = (r: string[]) => r.map((c, i) => (i > 0 && numeric.test(c) ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join('  ').trimEnd();
  const out = [`\n${title}`, line(cells[0]), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)];
  for (const n of notes) out.push(`  ${n}`);
  out.push(`  machine: ${machineLine()}`);
  process.stdout.write(out.join('\n') + '\n');
}

/** The resident set size of a process, from /proc (Linux). */
export function rssBytes(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmRSS for process ${pid}`);
  return Number(m[1]) * 1024;
}

export interface Download { status: number; bytes: number; newlines: number; seconds: number; baseRss: number; peakRss: number }

/** GETs `url` and reads the body through, counting bytes and newlines, while sampling the server's RSS every `sampleMs`. */
export async function measuredDownload(url: string, headers: Record<string, string>, serverPid: number, sampleMs = 20): Promise<Download> {
  await new Promise((resolve) => setTimeout(resolve, 300));
  const baseRss = rssBytes(serverPid);
  let peakRss = baseRss;
  const sampler = setInterval(() => { peakRss = Math.max(peakRss, rssBytes(serverPid)); }, sampleMs);
  const t0 = performance.now();
  try {
    const res = await fetch(url, { headers });
    let bytes = 0;
    let newlines = 0;
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      bytes += chunk.length;
      for (let i = 0; i < chunk.length; i++) if (chunk[i] === 10) newlines++;
    }
    const seconds = (performance.now() - t0) / 1000;
    return { status: res.status, bytes, newlines, seconds, baseRss, peakRss: Math.max(peakRss, rssBytes(serverPid)) };
  } finally {
    clearInterval(sampler);
  }
}

let cluster: Promise<string | null> | undefined;

/**
 * The URL of a new empty database on the benchmarks' own PostgreSQL cluster; null when the server
 * binaries are missing (the Debian package postgresql). The cluster is started on first use by
 * tools/pg/pg.sh with SVC_PG_DURABLE=1 (fsync, synchronous_commit and full_page_writes on, as on a
 * production server, unlike the tests' cluster) in a folder of its own on a free port, and stopped
 * when the script exits; the databases go with it.
 */
export async function freshPostgresUrl(): Promise<string | null> {
  cluster ??= startBenchCluster();
  const admin = await cluster;
  return admin ? await newDatabase(admin, 'template0') : null;
}

/** A copy of the database at `url` (CREATE DATABASE ... TEMPLATE: nothing may be connected to it) on the same cluster; its URL. */
export function clonePostgresDatabase(url: string): Promise<string> {
  const admin = new URL(url);
  admin.pathname = '/postgres';
  return newDatabase(admin.toString(), new URL(url).pathname.slice(1));
}

/** A new database made from `template` on the cluster of the maintenance database `adminUrl`; its URL. */
async function newDatabase(adminUrl: string, template: string): Promise<string> {
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  const name = `bench_${Date.now()}_${Math.floor(Math.random() * 1e6)}`;
  try {
    await client.query(`CREATE DATABASE ${name} TEMPLATE ${template}`);
  } finally {
    await client.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Words for the figures' notes on the cluster freshPostgresUrl starts. */
export const BENCH_POSTGRES = 'PostgreSQL: the bench\'s own cluster (tools/pg/pg.sh, SVC_PG_DURABLE=1: fsync, synchronous_commit and full_page_writes on)';
export const NO_BENCH_POSTGRES = 'PostgreSQL: skipped, no server binaries (apt-get install postgresql)';

async function startBenchCluster(): Promise<string | null> {
  const script = path.join(ROOT, 'tools', 'pg', 'pg.sh');
  // Not under a mkdtemp folder: as root the server runs as the user postgres, who must reach it.
  const dir = path.join(os.tmpdir(), `svc-bench-pg-${process.pid}`);
  const env = { ...process.env, SVC_PG_DIR: dir, SVC_PG_DURABLE: '1' };
  const started = spawnSync(script, ['start'], { env, encoding: 'utf8' });
  if (started.status !== 0) {
    process.stderr.write(`no PostgreSQL cluster for the bench: ${started.stderr.trim()}\n`);
    return null;
  }
  armCleanup();
  process.on('exit', () => { spawnSync(script, ['stop'], { env }); });
  const url = /^SVC_TEST_POSTGRES_URL=(.+)$/m.exec(started.stdout)?.[1];
  if (!url) throw new Error(`tools/pg/pg.sh start printed no URL: ${started.stdout}`);
  return url;
}
