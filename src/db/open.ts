// The business database the configuration names (SVC_DATABASE): the SQLite file of the data folder,
// or the PostgreSQL server of SVC_POSTGRES_URL. Every process part (the server, its worker thread,
// each CLI command) opens its own.
import type { Config } from '../kernel/config.ts';
import { openDb, type Db } from './db.ts';

/**
 * With `readOnly`, nothing can be written through it (the SQLite file must exist). `claims`: the
 * connection claims queued work (the worker's), planned for it on PostgreSQL (workerPlans).
 */
export async function openDatabase(config: Config, opts: { readOnly?: boolean; claims?: boolean } = {}): Promise<Db> {
  const readOnly = opts.readOnly ?? false;
  if (config.database === 'sqlite') return openDb(config.dbPath, { synchronous: config.dbSynchronous, readOnly });
  const { openPostgres } = await import('./postgres.ts');
  return await openPostgres({ url: config.postgresUrl, max: config.postgresPoolSize, readOnly, workerPlans: opts.claims ?? false });
}

/** The database as shown to operators: the SQLite file, or the PostgreSQL server and database (never the user or password). */
export function databaseLabel(config: Config): string {
  if (config.database === 'sqlite') return config.dbPath;
  const url = new URL(config.postgresUrl);
  return `postgres://${url.host}${url.pathname}`;
}
