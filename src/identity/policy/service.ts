// The identity policy (system administrators): who must use MFA, the password rules and the session
// lifetimes. Enforced where they matter: signIn() (MFA enrollment), passwordProblem() callers
// (account creation, registration, password change), startSession() and session validation.
import { filterSeq } from '../../kernel/seq.ts';
import type { Ctx } from '../../directory/context.ts';
import * as o from '../../kernel/view.ts';
import { record } from '../../platform/audit/service.ts';
import { requireSystemAdmin, validationFailed } from '../../kernel/errors.ts';
import type { Infer } from '../../kernel/validate.ts';
import type { RowRead } from '../../db/dialect.ts';
import { organizationById } from '../../directory/tenancy/store.ts';
import type { PolicyPatchBody } from './schema.ts';
import { mfaOrganizations, policyRow, replaceMfaOrganizations, savePolicyRow, sessionLifetimes, type PolicyRow } from '../../directory/policy/store.ts';

export const IdentityPolicyView = o.named('IdentityPolicy', o.object({
  mfaRequired: o.bool('every user must use MFA'),
  mfaRequiredOrganizations: o.array(o.text(), 'organizations whose members must use MFA'),
  passwordMinLength: o.int(),
  passwordBreachedCheck: o.bool('refuse passwords from the list of common and breached passwords'),
  sessionIdleMinutes: o.nullable(o.int('null: SVC_SESSION_IDLE_MINUTES applies')),
  sessionAbsoluteHours: o.nullable(o.int('null: SVC_SESSION_ABSOLUTE_HOURS applies')),
  effective: o.object({ sessionIdleMinutes: o.int(), sessionAbsoluteHours: o.int() }, 'the lifetimes in force: the policy\'s, else the SVC_SESSION_* settings'),
  updatedAt: o.nullable(o.time()),
  updatedBy: o.nullable(o.text()),
}));
export type IdentityPolicy = o.Out<typeof IdentityPolicyView>;

export type PolicyPatch = Infer<typeof PolicyPatchBody>;

async function current(ctx: Ctx, read?: RowRead): Promise<IdentityPolicy> {
  const p = await policyRow(ctx.db, read);
  const lifetimes = await sessionLifetimes(ctx.db, ctx.config);
  return {
    mfaRequired: p.mfa_required === 1,
    mfaRequiredOrganizations: await mfaOrganizations(ctx.db),
    passwordMinLength: p.password_min_length,
    passwordBreachedCheck: p.password_breached_check === 1,
    sessionIdleMinutes: p.session_idle_minutes,
    sessionAbsoluteHours: p.session_absolute_hours,
    effective: { sessionIdleMinutes: lifetimes.idleMinutes, sessionAbsoluteHours: lifetimes.absoluteHours },
    updatedAt: p.updated_at,
    updatedBy: p.updated_by,
  };
}

export async function identityPolicy(ctx: Ctx): Promise<IdentityPolicy> {
  requireSystemAdmin(ctx);
  return await current(ctx);
}

const settings = ({ effective: _e, updatedAt: _a, updatedBy: _b, ...rest }: IdentityPolicy) => rest;

/** Changes the given fields (the organization list is replaced as a whole); audited with before and after. */
export async function updateIdentityPolicy(ctx: Ctx, patch: PolicyPatch): Promise<IdentityPolicy> {
  requireSystemAdmin(ctx);
  if (Object.values(patch).every((v) => v === undefined)) {
    throw validationFailed({ body: 'name at least one of mfaRequired, mfaRequiredOrganizations, passwordMinLength, passwordBreachedCheck, sessionIdleMinutes, sessionAbsoluteHours' });
  }
  return await ctx.db.tx(async () => {
    const before = await current(ctx, { forUpdate: true });
    const orgs = patch.mfaRequiredOrganizations === undefined ? undefined : [...new Set(patch.mfaRequiredOrganizations)].sort();
    const unknown = await filterSeq((orgs ?? []), async (id) => !await organizationById(ctx.db, id));
    if (unknown.length) throw validationFailed({ mfaRequiredOrganizations: `names no organization: ${unknown.join(', ')}` });
    const now = ctx.now().toISOString();
    const row = await policyRow(ctx.db);
    const next: PolicyRow = {
      mfa_required: patch.mfaRequired === undefined ? row.mfa_required : patch.mfaRequired ? 1 : 0,
      password_min_length: patch.passwordMinLength ?? row.password_min_length,
      password_breached_check: patch.passwordBreachedCheck === undefined ? row.password_breached_check : patch.passwordBreachedCheck ? 1 : 0,
      session_idle_minutes: patch.sessionIdleMinutes === undefined ? row.session_idle_minutes : patch.sessionIdleMinutes,
      session_absolute_hours: patch.sessionAbsoluteHours === undefined ? row.session_absolute_hours : patch.sessionAbsoluteHours,
      updated_at: now,
      updated_by: ctx.actor.userId ?? ctx.actor.name,
    };
    await savePolicyRow(ctx.db, next);
    if (orgs) await replaceMfaOrganizations(ctx.db, orgs, now);
    const after = await current(ctx);
    await record(ctx, {
      action: 'system.identity.policy_updated', targetType: 'identity_policy', targetId: 'identity_policy',
      organizationId: null, workspaceId: null, projectId: null,
      metadata: { before: settings(before), after: settings(after), changed: Object.keys(patch).filter((k) => patch[k as keyof PolicyPatch] !== undefined) },
    });
    return after;
  });
}
