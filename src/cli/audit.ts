// svc audit ...
import type { Argv } from 'yargs';
import { verifyChain } from '../platform/audit/chain.ts';
import { CliError } from './errors.ts';
import { output, sharedOptions, withOperator, type SharedArgs } from './common.ts';

const verify = {
  command: 'verify',
  describe: 're-walk the audit log\'s hash chain; exits 1 naming the first broken row (seq and id)',
  builder: (y: Argv) => sharedOptions(y),
  handler: async (args: SharedArgs) => {
    const report = await withOperator(args, (ctx) => verifyChain(ctx.db));
    if (report.broken) {
      // The report on stdout for scripts (with --json), the broken link as the one-line error.
      if (args.json) output(args, report, '');
      throw new CliError('audit_chain_broken', report.broken.message, { broken: report.broken });
    }
    output(args, report, report.rows === 0
      ? 'audit log intact: 0 rows'
      : `audit log intact: ${report.rows} rows; head seq ${report.headSeq} hash ${report.headHash}`);
  },
};

export const auditCommand = {
  command: 'audit <command>',
  describe: 'check the audit log',
  builder: (y: Argv) => y.command(verify).demandCommand(1),
  handler: () => {},
};
