// svc users ...
import type { Argv } from 'yargs';
import type { Ctx } from '../directory/context.ts';
import { createUser } from '../identity/users/service.ts';
import { presentGovernedUser, presentUser, type GovernedUser } from '../directory/present/users.ts';
import { NewUserBody, UserListQuery } from '../identity/users/schema.ts';
import { findUser, listGovernedUsers, resetMfa, resetPassword, revokeSessions, updateUser } from '../identity/users/governance.ts';
import type { UserRow } from '../directory/users/store.ts';
import { parse } from '../kernel/validate.ts';
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

interface ListArgs extends SharedArgs { query?: string; status?: string; limit?: number }

const who = (u: UserRow) => `${u.id} <${u.email}>`;

function userLine(g: Awaited<ReturnType<typeof presentGovernedUser>>): string {
  const flags = [g.status, ...(g.isSystemAdmin ? ['system-admin'] : []), ...(g.mfaEnabled ? ['mfa'] : [])].join(',');
  return `${g.id}  ${g.email}  ${flags}  sessions=${g.activeSessions}  memberships=${g.memberships.length}  ${JSON.stringify(g.name)}`;
}

const list = {
  command: 'list',
  describe: 'list users with status, sessions and memberships',
  builder: (y: Argv) => sharedOptions(y)
    .option('query', { type: 'string', requiresArg: true, describe: 'substring of the e-mail address or name (case-insensitive)' })
    .option('status', { type: 'string', requiresArg: true, describe: 'active or suspended' })
    .option('limit', { type: 'number', requiresArg: true, describe: 'at most this many users, default 50, clamped to 1..200' }),
  handler: async (args: ListArgs) => {
    const q = parse(UserListQuery, { query: args.query, status: args.status, limit: args.limit });
    const { items, pagination } = await withOperator(args, (ctx) => listGovernedUsers(ctx, q));
    const shown = items.map(presentGovernedUser);
    output(args, { items: shown, pagination }, [...shown.map(userLine), `${shown.length} of ${pagination.total} users`]);
  },
};

interface UserArgs extends SharedArgs { user?: string }

/** `svc users <name> <email-or-id>`: finds the user (404 when unknown), acts, prints. */
function onUser<T>(name: string, describe: string, act: (ctx: Ctx, user: UserRow) => T | Promise<T>, show: (r: T, user: UserRow) => { data: unknown; text: string | string[] }) {
  return {
    command: `${name} <user>`,
    describe,
    builder: (y: Argv) => sharedOptions(y).positional('user', { type: 'string', demandOption: true, describe: 'e-mail address or id of the user' }),
    handler: async (args: UserArgs) => {
      const { r, user } = await withOperator(args, async (ctx) => {
        const user = await findUser(ctx, String(args.user));
        return { r: await act(ctx, user), user };
      });
      const { data, text } = show(r, user);
      output(args, data, text);
    },
  };
}

const shown = (verb: string) => (g: GovernedUser) => ({ data: presentGovernedUser(g), text: `${verb} user ${who(g.user)}` });

const suspend = onUser('suspend', 'suspend a user; every session is revoked at once',
  (ctx, u) => updateUser(ctx, u.id, { status: 'suspended' }), shown('suspended'));
const activate = onUser('activate', 'reactivate a suspended user',
  (ctx, u) => updateUser(ctx, u.id, { status: 'active' }), shown('activated'));
const resetMfaCommand = onUser('reset-mfa', 'turn MFA off for a user (enrolls again); every session is revoked',
  (ctx, u) => resetMfa(ctx, u.id), shown('reset MFA of'));
const resetPasswordCommand = onUser('reset-password', 'set a one-time password (printed once, changed at the next login); every session is revoked',
  (ctx, u) => resetPassword(ctx, u.id), (r, u) => ({
    data: { userId: u.id, email: u.email, initialPassword: r.initialPassword },
    text: [`reset the password of user ${who(u)}`, `one-time password (change it at next login): ${r.initialPassword}`],
  }));
const revokeSessionsCommand = onUser('revoke-sessions', 'revoke every session of a user',
  (ctx, u) => revokeSessions(ctx, u.id), (n, u) => ({ data: { userId: u.id, revoked: n }, text: `revoked ${n} session(s) of user ${who(u)}` }));

export const usersCommand = {
  command: 'users <command>',
  describe: 'manage user accounts',
  builder: (y: Argv) => y.command(create).command(list).command(suspend).command(activate)
    .command(resetPasswordCommand).command(resetMfaCommand).command(revokeSessionsCommand).demandCommand(1),
  handler: () => {},
};
