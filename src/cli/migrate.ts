// svc migrate
import type { Argv } from 'yargs';
import { openDb } from '../db/db.ts';
import { migrate } from '../db/migrate.ts';
import { configFrom, output, sharedOptions, type SharedArgs } from './common.ts';

export const migrateCommand = {
  command: 'migrate',
  describe: 'bring the database to this version\'s schema (serve does this too)',
  builder: (y: Argv) => sharedOptions(y),
  handler: async (args: SharedArgs) => {
    const config = configFrom(args);
    const db = openDb(config.dbPath, { synchronous: config.dbSynchronous });
    try {
      const r = await migrate(db);
      output(args, { database: config.dbPath, ...r },
        r.applied.length ? `migrated ${config.dbPath} from version ${r.from} to ${r.to} (${r.applied.join(', ')})` : `${config.dbPath} is at version ${r.to}; nothing to do`);
    } finally {
      db.close();
    }
  },
};
