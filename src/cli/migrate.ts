// svc migrate
import type { Argv } from 'yargs';
import { databaseLabel, openDatabase } from '../db/open.ts';
import { migrate } from '../db/migrate.ts';
import { configFrom, output, sharedOptions, type SharedArgs } from './common.ts';

export const migrateCommand = {
  command: 'migrate',
  describe: 'bring the database to this version\'s schema (serve does this too)',
  builder: (y: Argv) => sharedOptions(y),
  handler: async (args: SharedArgs) => {
    const config = configFrom(args);
    const db = await openDatabase(config);
    const name = databaseLabel(config);
    try {
      const r = await migrate(db);
      output(args, { database: name, ...r },
        r.applied.length ? `migrated ${name} from version ${r.from} to ${r.to} (${r.applied.join(', ')})` : `${name} is at version ${r.to}; nothing to do`);
    } finally {
      await db.close();
    }
  },
};
