// Feature flags for the system administrator: every declared flag, one flag, and setting its global
// or one organization's value (audited as system.feature_flag.updated).
import { json, type Router } from '../../http/router.ts';
import * as v from '../../kernel/validate.ts';
import * as o from '../../kernel/view.ts';
import { FeatureFlagView, getFlag, listFlags, setFlag } from './flags.ts';

const FlagBody = v.object({
  enabled: v.nullable(v.boolean({ description: 'true or false; null clears the value (the organization then follows the global value, the global value the default)' })),
  organizationId: v.optional(v.string({ min: 1, max: 100, description: 'set this organization\'s value instead of the global one' })),
});

export function bindFlagRoutes(router: Router): void {
  const r = router.module(import.meta.url);
  const admin = { tags: ['system'], systemAdmin: true, scope: 'none' as const };
  r.get('/api/system/feature-flags', {
    ...admin, summary: 'Every declared feature flag: { items: [{ key, description, default, global, organizations: [{ organizationId, enabled }], updatedAt, updatedBy }] }.',
    response: { description: 'every feature flag', schema: o.object({ items: o.array(FeatureFlagView) }) },
  }, async ({ ctx }) => json(200, { items: await listFlags(ctx) }));
  r.get('/api/system/feature-flags/:flagKey', { ...admin, summary: 'One feature flag with its global and per-organization values.', response: { description: 'the feature flag', schema: FeatureFlagView } },
    async ({ ctx, params }) => json(200, await getFlag(ctx, params.flagKey)));
  r.put('/api/system/feature-flags/:flagKey', {
    ...admin, body: FlagBody, response: { description: 'the feature flag', schema: FeatureFlagView },
    summary: 'Set the global value of a flag, or one organization\'s value (organizationId), to true or false, or clear it with null. An organization\'s value wins over the global one, which wins over the default. Audited as system.feature_flag.updated.',
  }, async ({ ctx, params, body }) => json(200, await setFlag(ctx, params.flagKey, { enabled: body.enabled, organizationId: body.organizationId })));
}
