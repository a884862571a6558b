// Feature flags: named switches declared here with their default, a global value set by a system
// administrator, and per-organization values that win over the global one. The service reads a flag
// only through `featureEnabled`; every change is audited (system.feature_flag.updated).
import { mapSeq } from '../../kernel/seq.ts';
import type { Ctx } from '../../directory/context.ts';
import * as o from '../../kernel/view.ts';
import type { Db } from '../../db/db.ts';
import { conflict, notFound, requireSystemAdmin, validationFailed } from '../../kernel/errors.ts';
import { record } from '../audit/service.ts';
import { organizationById } from '../../directory/tenancy/store.ts';

export const FEATURE_FLAGS = {
  client_delivery_links: {
    default: true,
    description: 'Client delivery links: approved deliveries can be shared with a token link that downloads without an account (off, a kill switch: 409 feature_disabled on link creation, and existing links answer 401 like an unknown token until it is on again).',
  },
  workflow_queue_mode: {
    default: true,
    description: 'Workflow templates can be instantiated in queue mode, creating their jobs (off: 409 feature_disabled; plan mode still works).',
  },
} as const;
export type FlagKey = keyof typeof FEATURE_FLAGS;

const isFlag = (key: string): key is FlagKey => Object.hasOwn(FEATURE_FLAGS, key);

/** The one read of a flag: the organization's value, else the global value, else the declared default. */
export async function featureEnabled(db: Db, key: FlagKey, organizationId: string | null): Promise<boolean> {
  const row = await db.get<{ enabled: number }>(
    `SELECT enabled FROM (
       SELECT enabled, 0 AS rank FROM feature_flag_organizations WHERE flag_key = ?1 AND organization_id = ?2
       UNION ALL SELECT enabled, 1 AS rank FROM feature_flags WHERE flag_key = ?1) AS f
     ORDER BY rank LIMIT 1`, key, organizationId ?? '');
  return row ? row.enabled === 1 : FEATURE_FLAGS[key].default;
}

/** 409 feature_disabled when the flag is off for the organization. */
export async function requireFeature(db: Db, key: FlagKey, organizationId: string | null): Promise<void> {
  if (!await featureEnabled(db, key, organizationId)) {
    throw conflict('feature_disabled', `the feature ${key} is turned off for this organization`, { flag: key });
  }
}

export const FeatureFlagView = o.named('FeatureFlag', o.object({
  key: o.oneOf(Object.keys(FEATURE_FLAGS) as FlagKey[]),
  description: o.text(),
  default: o.bool('the value when neither the organization nor the global value is set'),
  global: o.nullable(o.bool('the global value; null: the default applies')),
  organizations: o.array(o.object({ organizationId: o.text(), enabled: o.bool(), updatedAt: o.time(), updatedBy: o.nullable(o.text()) }),
    'organizations with their own value (it wins over the global one)'),
  updatedAt: o.nullable(o.time('when the global value was last set')),
  updatedBy: o.nullable(o.text()),
}));
export type FlagView = o.Out<typeof FeatureFlagView>;

async function flagView(db: Db, key: FlagKey): Promise<FlagView> {
  const g = await db.get<{ enabled: number; updated_at: string; updated_by: string | null }>('SELECT * FROM feature_flags WHERE flag_key = ?', key);
  const orgs = await db.all<{ organization_id: string; enabled: number; updated_at: string; updated_by: string | null }>(
    'SELECT * FROM feature_flag_organizations WHERE flag_key = ? ORDER BY organization_id', key);
  return {
    key, description: FEATURE_FLAGS[key].description, default: FEATURE_FLAGS[key].default, global: g ? g.enabled === 1 : null,
    organizations: orgs.map((o) => ({ organizationId: o.organization_id, enabled: o.enabled === 1, updatedAt: o.updated_at, updatedBy: o.updated_by })),
    updatedAt: g?.updated_at ?? null, updatedBy: g?.updated_by ?? null,
  };
}

export async function listFlags(ctx: Ctx): Promise<FlagView[]> {
  requireSystemAdmin(ctx);
  return await mapSeq((Object.keys(FEATURE_FLAGS) as FlagKey[]), (k) => flagView(ctx.db, k));
}

export async function getFlag(ctx: Ctx, key: string): Promise<FlagView> {
  requireSystemAdmin(ctx);
  if (!isFlag(key)) throw notFound(`no feature flag ${key}`);
  return await flagView(ctx.db, key);
}

/**
 * Sets (true/false) or clears (null) the global value, or one organization's value when organizationId
 * is given. A change that changes nothing writes nothing and is not audited.
 */
export async function setFlag(ctx: Ctx, key: string, change: { enabled: boolean | null; organizationId?: string }): Promise<FlagView> {
  requireSystemAdmin(ctx);
  if (!isFlag(key)) throw notFound(`no feature flag ${key}`);
  const orgId = change.organizationId ?? null;
  if (orgId !== null && !await organizationById(ctx.db, orgId)) throw validationFailed({ organizationId: 'names no organization' });
  const at = ctx.now().toISOString();
  const by = ctx.actor.userId;
  return await ctx.db.tx(async () => {
    const before = orgId === null
      ? await ctx.db.get<{ enabled: number }>('SELECT enabled FROM feature_flags WHERE flag_key = ?', key)
      : await ctx.db.get<{ enabled: number }>('SELECT enabled FROM feature_flag_organizations WHERE flag_key = ? AND organization_id = ?', key, orgId);
    const from = before ? before.enabled === 1 : null;
    if (from === change.enabled) return await flagView(ctx.db, key);
    if (orgId === null) {
      if (change.enabled === null) await ctx.db.run('DELETE FROM feature_flags WHERE flag_key = ?', key);
      else await ctx.db.run(
        'INSERT INTO feature_flags (flag_key, enabled, updated_by, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT (flag_key) DO UPDATE SET enabled = excluded.enabled, updated_by = excluded.updated_by, updated_at = excluded.updated_at',
        key, change.enabled ? 1 : 0, by, at);
    } else if (change.enabled === null) {
      await ctx.db.run('DELETE FROM feature_flag_organizations WHERE flag_key = ? AND organization_id = ?', key, orgId);
    } else {
      await ctx.db.run(
        `INSERT INTO feature_flag_organizations (flag_key, organization_id, enabled, updated_by, updated_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (flag_key, organization_id) DO UPDATE SET enabled = excluded.enabled, updated_by = excluded.updated_by, updated_at = excluded.updated_at`,
        key, orgId, change.enabled ? 1 : 0, by, at);
    }
    await record(ctx, {
      action: 'system.feature_flag.updated', targetType: 'feature_flag', targetId: key, organizationId: orgId,
      metadata: { flag: key, level: orgId === null ? 'global' : 'organization', organizationId: orgId, from, to: change.enabled },
    });
    return await flagView(ctx.db, key);
  });
}
