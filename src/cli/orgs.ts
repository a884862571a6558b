// svc orgs ...
import type { Argv } from 'yargs';
import { createOrganization, listOrganizations } from '../tenancy/service.ts';
import { presentOrganization } from '../directory/present/tenancy.ts';
import { userByEmail, userById } from '../directory/users/store.ts';
import { validationFailed } from '../kernel/errors.ts';
import { parse } from '../kernel/validate.ts';
import { OrganizationBody } from '../tenancy/schema.ts';
import { output, sharedOptions, withOperator, type SharedArgs } from './common.ts';

interface CreateArgs extends SharedArgs { name: string; owner: string }

const create = {
  command: 'create',
  // The local operator is no person and cannot own it: an organization never starts without an owner.
  describe: 'create an organization and its billing account, owned by --owner (e-mail address or user id)',
  builder: (y: Argv) => sharedOptions(y)
    .option('name', { type: 'string', demandOption: true, requiresArg: true })
    .option('owner', { type: 'string', demandOption: true, requiresArg: true, describe: 'e-mail address or id of the user who becomes org_owner (required: the operator is no member)' }),
  handler: async (args: CreateArgs) => {
    const org = await withOperator(args, async (ctx) => {
      const owner = await userById(ctx.db, args.owner) ?? await userByEmail(ctx.db, args.owner);
      if (!owner) throw validationFailed({ owner: `names no user: ${args.owner}` });
      return await createOrganization(ctx, parse(OrganizationBody, { name: args.name, ownerUserId: owner.id }));
    });
    output(args, presentOrganization(org), `created organization ${org.id} "${org.name}"`);
  },
};

const list = {
  command: 'list',
  describe: 'list every organization',
  builder: (y: Argv) => sharedOptions(y),
  handler: async (args: SharedArgs) => {
    const orgs = (await withOperator(args, (ctx) => listOrganizations(ctx))).map(presentOrganization);
    output(args, { items: orgs, pagination: { page: 1, pageSize: orgs.length, total: orgs.length } },
      [...orgs.map((o) => `${o.id}  ${JSON.stringify(o.name)}  created ${o.createdAt}`), `${orgs.length} organizations`]);
  },
};

export const orgsCommand = {
  command: 'orgs <command>',
  describe: 'manage organizations',
  builder: (y: Argv) => y.command(create).command(list).demandCommand(1),
  handler: () => {},
};
