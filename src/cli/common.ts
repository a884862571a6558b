// What every command shares: configuration from flags and environment, the database opened and
// migrated, a context for the local operator, and output as text or one JSON document.
import type { Argv } from 'yargs';
import { loadConfig, type Config } from '../kernel/config.ts';
import { createContext, type Ctx } from '../directory/context.ts';
import { openDatabase } from '../db/open.ts';
import { migrate } from '../db/migrate.ts';
import { createLogger } from '../kernel/log.ts';
import { CliError, exitWithError } from './errors.ts';

export interface SharedArgs { dataDir?: string; storageDir?: string; json?: boolean }

/** The options every command accepts (`svc --help` lists them as the global options). */
export const SHARED_OPTIONS = {
  'data-dir': { type: 'string', describe: 'data directory (SVC_DATA_DIR, default ./data)' },
  'storage-dir': { type: 'string', describe: 'storage root (SVC_STORAGE_DIR, default ./storage)' },
  json: { type: 'boolean', default: false, describe: 'print one JSON document on stdout; an error as one JSON document on stderr' },
} as const;

export function sharedOptions<T>(y: Argv<T>) {
  return y.options(SHARED_OPTIONS);
}

export function configFrom(args: SharedArgs & { host?: string; port?: string; role?: string }): Config {
  return loadConfig({ dataDir: args.dataDir, storageDir: args.storageDir, host: args.host, port: args.port, role: args.role });
}

/** Opens the database for one command, runs fn as the local operator, closes it again. */
export async function withOperator<T>(args: SharedArgs, fn: (ctx: Ctx) => T | Promise<T>): Promise<T> {
  const config = configFrom(args);
  const db = await openDatabase(config);
  try {
    await migrate(db);
    const log = createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel);
    return await fn(createContext({ db, config, log }));
  } finally {
    await db.close();
  }
}

/** Prints `data` as JSON with --json, else the text lines. */
export function output(args: SharedArgs, data: unknown, text: string | string[]): void {
  if (args.json) process.stdout.write(JSON.stringify(data, null, 2) + '\n');
  else process.stdout.write((Array.isArray(text) ? text.join('\n') : text) + '\n');
}

export async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Prints the contract's one line `listening on URL`, then stops the service on SIGTERM/SIGINT
 * (exit 0 once closed, exit 1 when closing fails, takes longer than 10 s, or a second signal comes).
 */
export function serveUntilSignal(url: string, close: () => Promise<void>): void {
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) exitWithError(new CliError('interrupted', `${signal} again: exiting at once`));
    stopping = true;
    setTimeout(() => process.exit(1), 10_000).unref();
    close().then(() => process.exit(0), (err) => {
      exitWithError(new CliError('shutdown_failed', `shutdown failed: ${err instanceof Error ? err.message : String(err)}`));
    });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  // Printed only once the handlers are in place: a supervisor that signals as soon as it reads the
  // line must not meet the default action (measured: 2 deaths by SIGTERM in 12 quick stops before).
  process.stdout.write(`listening on ${url}\n`);
}
