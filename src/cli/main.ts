// The svc command line: yargs root. Commands parse their arguments, build a context for the
// local operator, call the same services as HTTP and print the result. Errors: one line on
// stderr (one JSON document with --json, src/cli/errors.ts) and a non-zero exit.
import yargs, { type Argv } from 'yargs';
import { hideBin } from 'yargs/helpers';
import { exitWithError, reportErrorsAsJson, usageError, wantsJson } from './errors.ts';
import { SHARED_OPTIONS } from './common.ts';
import { commandsFor } from './commands.ts';

export async function main(argv: string[]): Promise<void> {
  reportErrorsAsJson(wantsJson(argv));
  try {
    const commands = await commandsFor(argv);
    const base: Argv = yargs(argv)
      .scriptName('svc')
      .usage('$0 <command> [options]\n\nThe svc service and its operator\'s tools. Every command accepts the global options below.')
      .options(SHARED_OPTIONS)
      .group(Object.keys(SHARED_OPTIONS), 'Global options:');
    await commands.reduce((y, register) => register(y), base)
      .demandCommand(1, 'name a command; see svc --help')
      .strict()
      .fail((msg, err) => {
        // yargs' own exceptions (YError) are usage errors too; any other is the command's failure.
        if (err) throw err.name === 'YError' ? usageError(err.message, 1) : err;
        throw usageError(msg);
      })
      .help()
      .epilogue('Errors: one line on stderr and exit 1 (2 for a command line that cannot be parsed); with --json that line is '
        + 'one JSON document { "error": { "code", "message", "details"? } }. Settings also come from SVC_* variables (svc config lists them).')
      .parseAsync();
  } catch (err) {
    exitWithError(err);
  }
}

await main(hideBin(process.argv));
