// The identity policy under /api/system/identity (system administrators).
import { json, type Router } from '../../http/router.ts';
import { PolicyPatchBody } from './schema.ts';
import { IdentityPolicyView, identityPolicy, updateIdentityPolicy } from './service.ts';

export function bindIdentityPolicyRoutes(router: Router): void {
  const r = router.module(import.meta.url);
  const sys = { tags: ['system', 'identity'], systemAdmin: true, scope: 'none' as const };
  const shape = '{ mfaRequired, mfaRequiredOrganizations, passwordMinLength, passwordBreachedCheck, sessionIdleMinutes, sessionAbsoluteHours, effective, updatedAt, updatedBy }';
  r.get('/api/system/identity/policy', { ...sys, summary: `The identity policy: ${shape}.`, response: { description: 'the identity policy', schema: IdentityPolicyView } },
    async ({ ctx }) => json(200, await identityPolicy(ctx)));
  r.patch('/api/system/identity/policy', {
    ...sys, body: PolicyPatchBody, response: { description: 'the changed identity policy', schema: IdentityPolicyView },
    summary: `Change the identity policy (given fields; mfaRequiredOrganizations replaces the list; null session lifetimes fall back to SVC_SESSION_*). Audited as system.identity.policy_updated with before and after. Answers ${shape}.`,
  }, async ({ ctx, body }) => json(200, await updateIdentityPolicy(ctx, body)));
}
