// svc db copy --from sqlite|postgres --to postgres|sqlite: the whole installation's database moved to
// the other engine (src/db/copy.ts). sqlite is the data folder's svc.db (--data-dir), postgres the
// server of SVC_POSTGRES_URL (never on the command line, where other users see it; shown without its
// user and password). The source is only read; the target must be empty. After the rows are verified,
// the audit chain is verified on the target and the copy recorded there (system.database.copied), in
// the copy's own transaction: any failure leaves the target without the copy.
import fs from 'node:fs';
import type { Argv } from 'yargs';
import { loadConfig, type Config } from '../kernel/config.ts';
import { createContext } from '../directory/context.ts';
import { createLogger } from '../kernel/log.ts';
import { databaseLabel, openDatabase } from '../db/open.ts';
import type { Db } from '../db/db.ts';
import { copyDatabase, CopyMismatchError, CopySchemaError, TargetNotEmptyError, type CopyReport } from '../db/copy.ts';
import { verifyChain, type ChainReport } from '../platform/audit/chain.ts';
import { record } from '../platform/audit/service.ts';
import { CliError } from './errors.ts';
import { output, sharedOptions, type SharedArgs } from './common.ts';

type Engine = 'sqlite' | 'postgres';

interface CopyArgs extends SharedArgs { from: Engine; to: Engine }

interface Side { engine: Engine; database: string }

export interface CopyResult extends CopyReport {
  from: Side;
  to: Side;
  chain: Pick<ChainReport, 'ok' | 'rows' | 'headSeq' | 'headHash'>;
}

/** The configuration of one side: the same flags and SVC_* settings, with the engine named. */
function sideConfig(args: CopyArgs, engine: Engine, flag: 'from' | 'to'): Config {
  if (engine === 'postgres' && !process.env.SVC_POSTGRES_URL) {
    throw new CliError('invalid_configuration', `--${flag} postgres needs SVC_POSTGRES_URL (postgres://user:password@host:port/database)`);
  }
  return loadConfig({ dataDir: args.dataDir, storageDir: args.storageDir, database: engine });
}

function tableLines(r: CopyReport): string[] {
  const width = Math.max(...r.tables.map((t) => t.table.length));
  return r.tables.map((t) => `  ${t.table.padEnd(width)}  ${String(t.source).padStart(8)} -> ${String(t.target).padStart(8)}${t.same ? '' : '  DIFFERS'}`);
}

const copy = {
  command: 'copy',
  describe: 'copy the whole database to the other engine (sqlite: DATA_DIR/svc.db; postgres: SVC_POSTGRES_URL) into an empty target, verified by row counts, row digests and the audit chain',
  builder: (y: Argv) => sharedOptions(y)
    .option('from', { choices: ['sqlite', 'postgres'] as const, demandOption: true, describe: 'the engine to copy from (only read)' })
    .option('to', { choices: ['sqlite', 'postgres'] as const, demandOption: true, describe: 'the engine to copy to (must be empty)' }),
  handler: async (args: CopyArgs) => {
    if (args.from === args.to) {
      throw new CliError('validation_failed', '--from and --to name the same engine', { fields: { to: 'must differ from --from' } });
    }
    const fromConfig = sideConfig(args, args.from, 'from');
    const toConfig = sideConfig(args, args.to, 'to');
    const from: Side = { engine: args.from, database: databaseLabel(fromConfig) };
    const to: Side = { engine: args.to, database: databaseLabel(toConfig) };
    if (args.from === 'sqlite' && !fs.existsSync(fromConfig.dbPath)) {
      throw new CliError('validation_failed', `no database to copy at ${fromConfig.dbPath}`, { fields: { from: `no ${fromConfig.dbPath} (see --data-dir)` } });
    }
    const dbs: Db[] = [];
    try {
      const source = await openDatabase(fromConfig, { readOnly: true });
      dbs.push(source);
      const target = await openDatabase(toConfig);
      dbs.push(target);
      let chain: ChainReport | undefined;
      const log = createLogger(toConfig.logLevel === 'info' ? 'warn' : toConfig.logLevel);
      const ctx = createContext({ db: target, config: toConfig, log });
      const report = await copyDatabase(source, target, {
        beforeCommit: async (r) => {
          chain = await verifyChain(target);
          if (chain.broken) {
            if (args.json) output(args, { from, to, ...r, chain }, '');
            throw new CliError('audit_chain_broken', `the copy was rolled back: ${chain.broken.message}`, { broken: chain.broken });
          }
          await record(ctx, {
            action: 'system.database.copied', targetType: 'database', targetId: to.engine,
            organizationId: null, workspaceId: null, projectId: null,
            metadata: { from, to, schemaVersion: r.schemaVersion, tables: r.tables.length, rows: r.rows, auditHeadSeq: chain.headSeq, auditHeadHash: chain.headHash },
          });
        },
      });
      const { ok, rows, headSeq, headHash } = chain!;
      const result: CopyResult = { from, to, ...report, chain: { ok, rows, headSeq, headHash } };
      output(args, result, [
        `copied ${from.engine} ${from.database} to ${to.engine} ${to.database} (schema version ${report.schemaVersion}):`,
        ...tableLines(report),
        `${report.tables.length} tables, ${report.rows} rows, the same on both sides (counts and row digests)`,
        `audit chain intact on the target: ${chain!.rows} rows${chain!.headSeq === null ? '' : `; head seq ${chain!.headSeq} hash ${chain!.headHash}`}; the copy is recorded there as system.database.copied`,
        `not copied, kept by each engine itself: ${report.derived.join(', ') || 'none'}`,
        `switch SVC_DATABASE to ${to.engine} when ready (the ${from.engine} database was not changed)`,
      ]);
    } catch (err) {
      if (err instanceof CopyMismatchError) {
        if (args.json) output(args, { from, to, ...err.report }, '');
        else output(args, null, tableLines(err.report));
        throw new CliError('database_copy_mismatch', err.message, { tables: err.report.tables.filter((t) => !t.same) });
      }
      if (err instanceof TargetNotEmptyError) throw new CliError('database_not_empty', `${to.engine} ${to.database}: ${err.message}`, { tables: err.tables });
      if (err instanceof CopySchemaError) throw new CliError('unsupported_schema_version', err.message);
      throw err;
    } finally {
      for (const db of dbs.reverse()) await db.close();
    }
  },
};

export const dbCommand = {
  command: 'db <command>',
  describe: 'move the whole database between SQLite and PostgreSQL',
  builder: (y: Argv) => y.command(copy).demandCommand(1),
  handler: () => {},
};
