// svc backup: the same database snapshot as POST /api/system/backups, as the local operator (the
// same system.database.backup_created audit record and retention). Safe while `svc serve` runs.
import type { Argv } from 'yargs';
import { createBackup } from '../system/backups.ts';
import { output, sharedOptions, withOperator, type SharedArgs } from './common.ts';

export const backupCommand = {
  command: 'backup',
  describe: 'snapshot the database into DATA_DIR/backups/ (checked, hashed; the newest SVC_BACKUP_RETENTION kept)',
  builder: (y: Argv) => sharedOptions(y),
  handler: async (args: SharedArgs) => {
    const b = await withOperator(args, (ctx) => createBackup(ctx));
    output(args, b, [b.path, `${b.sizeBytes} bytes`, `sha256 ${b.sha256}`]);
  },
};
