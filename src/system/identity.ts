// The identity control plane, read in one place: the policy, the sign-in providers (password, OIDC
// and SAML; secrets and certificates only ever as *Ref variable names), the SCIM directories, and counts.
import { mapSeq } from '../kernel/seq.ts';
import type { IncomingMessage } from 'node:http';
import type { Ctx } from '../directory/context.ts';
import { requireSystemAdmin } from '../kernel/errors.ts';
import { identityPolicy } from '../identity/policy/service.ts';
import { listDirectoriesOf } from '../identity/scim/directories.ts';
import { DirectoryView, presentDirectory } from '../identity/scim/present.ts';
import { directoryUserCounts } from '../identity/scim/store.ts';
import { serviceOrigin } from '../identity/scim/admin.ts';
import { presentProvider } from '../identity/sso/present.ts';
import { identityCounts, listProviders } from '../identity/sso/store.ts';
import * as o from '../kernel/view.ts';
import { IdentityPolicyView } from '../identity/policy/service.ts';
import { IdentityProviderView } from '../identity/sso/present.ts';

export const IdentityOverviewView = o.named('IdentityOverview', o.object({
  policy: IdentityPolicyView,
  providers: o.object({
    password: o.object({ enabled: o.constant(true) }), oidc: o.array(IdentityProviderView), saml: o.array(IdentityProviderView),
  }),
  directories: o.array(DirectoryView),
  counts: o.object({
    users: o.int(), activeUsers: o.int(), suspendedUsers: o.int(), systemAdministrators: o.int(), usersWithMfa: o.int(), usersWithPassword: o.int(),
    activeSessions: o.int(), directories: o.int(), activeDirectories: o.int(), providers: o.int(), activeProviders: o.int(),
  }),
}, 'the identity control plane'));

export async function identityOverview(ctx: Ctx, req: IncomingMessage): Promise<o.Out<typeof IdentityOverviewView>> {
  requireSystemAdmin(ctx);
  const { db } = ctx;
  const now = ctx.now().toISOString();
  const users = (await db.get<{ total: number; active: number; suspended: number; admins: number; mfa: number; password: number }>(
    `SELECT count(*) AS total, count(*) FILTER (WHERE status = 'active') AS active, count(*) FILTER (WHERE status = 'suspended') AS suspended,
            coalesce(sum(is_system_admin), 0) AS admins, coalesce(sum(mfa_enabled), 0) AS mfa,
            count(*) FILTER (WHERE password_hash IS NOT NULL) AS password
       FROM users`))!;
  const sessions = (await db.get<{ n: number }>('SELECT count(*) AS n FROM sessions WHERE revoked_at IS NULL AND expires_at > ?', now))!.n;
  const directories = await listDirectoriesOf(ctx, null);
  const origin = serviceOrigin(req, ctx.config);
  const providers = await listProviders(db);
  const linked = await identityCounts(db);
  const show = (kind: 'oidc' | 'saml') => providers.filter((p) => p.kind === kind).map((p) => presentProvider(p, origin, ctx.config, linked.get(p.id) ?? 0));
  return {
    policy: await identityPolicy(ctx),
    providers: { password: { enabled: true }, oidc: show('oidc'), saml: show('saml') },
    directories: await mapSeq(directories, async (d) => presentDirectory(d, await directoryUserCounts(db, d.id), origin)),
    counts: {
      users: users.total, activeUsers: users.active, suspendedUsers: users.suspended, systemAdministrators: users.admins,
      usersWithMfa: users.mfa, usersWithPassword: users.password, activeSessions: sessions,
      directories: directories.length, activeDirectories: directories.filter((d) => d.status === 'active').length,
      providers: providers.length, activeProviders: providers.filter((p) => p.status === 'active').length,
    },
  };
}
