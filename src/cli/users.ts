// svc users ...
import type { Argv } from 'yargs';
import { createUser } from '../users/service.ts';
import { presentUser } from '../users/present.ts';
import { NewUserBody } from '../users/schema.ts';
import { parse } from '../http/validate.ts';
import { output, readStdin, sharedOptions, withOperator, type SharedArgs } from './common.ts';

interface CreateArgs extends SharedArgs { email: string; name: string; systemAdmin?: boolean; passwordStdin?: boolean }

const create = {
  command: 'create',
  describe: 'create an active user; prints a one-time initial password unless --password-stdin',
  builder: (y: Argv) => sharedOptions(y)
    .option('email', { type: 'string', demandOption: true, requiresArg: true })
    .option('name', { type: 'string', demandOption: true, requiresArg: true })
    .option('system-admin', { type: 'boolean', default: false, describe: 'grant the system administrator identity' })
    .option('password-stdin', { type: 'boolean', default: false, describe: 'read the password from standard input' }),
  handler: async (args: CreateArgs) => {
    const password = args.passwordStdin ? (await readStdin()).replace(/\r?\n$/, '') : undefined;
    const input = parse(NewUserBody, { email: args.email, name: args.name, password, isSystemAdmin: args.systemAdmin });
    const { user, initialPassword } = await withOperator(args, (ctx) => createUser(ctx, input));
    output(args, { user: presentUser(user), ...(initialPassword ? { initialPassword } : {}) }, [
      `created user ${user.id} <${user.email}>${user.is_system_admin ? ' (system administrator)' : ''}`,
      ...(initialPassword ? [`one-time initial password (change it at first login): ${initialPassword}`] : []),
    ]);
  },
};

export const usersCommand = {
  command: 'users <command>',
  describe: 'manage user accounts',
  builder: (y: Argv) => y.command(create).demandCommand(1),
  handler: () => {},
};
