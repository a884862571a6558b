// The svc command line: yargs root. Commands parse their arguments, build a context for the
// local operator, call the same services as HTTP and print the result. Errors: one line on
// stderr and a non-zero exit.
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { AppError } from '../http/errors.ts';
import { serveCommand } from './serve.ts';
import { usersCommand } from './users.ts';
import { orgsCommand } from './orgs.ts';
import { migrateCommand } from './migrate.ts';
import { auditCommand } from './audit.ts';
import { modelServerCommand } from './modelserver.ts';
import { workerCommand } from './worker.ts';
import { storageCommand } from './storage.ts';
import { backupCommand } from './backup.ts';
import { configCommand, healthCommand } from './health.ts';

function fail(message: string, code = 1): never {
  process.stderr.write(`svc: ${message.replace(/\s+/g, ' ').trim()}\n`);
  process.exit(code);
}

export async function main(argv: string[]): Promise<void> {
  try {
    await yargs(argv)
      .scriptName('svc')
      .command(serveCommand)
      .command(migrateCommand)
      .command(usersCommand)
      .command(orgsCommand)
      .command(auditCommand)
      .command(modelServerCommand)
      .command(workerCommand)
      .command(storageCommand)
      .command(backupCommand)
      .command(healthCommand)
      .command(configCommand)
      .demandCommand(1, 'name a command; see svc --help')
      .strict()
      .fail((msg, err) => {
        if (err) throw err;
        fail(msg, 2);
      })
      .help()
      .parseAsync();
  } catch (err) {
    if (err instanceof AppError) {
      const fields = (err.details?.fields ?? null) as Record<string, string> | null;
      fail(fields ? Object.entries(fields).map(([k, v]) => `${k} ${v}`).join('; ') : err.message);
    }
    fail(err instanceof Error ? err.message : String(err));
  }
}

await main(hideBin(process.argv));
