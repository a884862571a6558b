// Input of the identity policy route.
import * as v from '../../kernel/validate.ts';

export const PolicyPatchBody = v.object({
  mfaRequired: v.optional(v.boolean({ description: 'every user must use TOTP MFA (users without it get an enrollment challenge at login)' })),
  mfaRequiredOrganizations: v.optional(v.array(v.string({ min: 1, max: 64 }), { max: 1000 })),
  passwordMinLength: v.optional(v.int({ min: 8, max: 128, description: 'minimum length of new passwords (8..128, default 12)' })),
  passwordBreachedCheck: v.optional(v.boolean({ description: 'refuse common/breached passwords and simple patterns (default true)' })),
  sessionIdleMinutes: v.optional(v.nullable(v.int({ min: 1, max: 525600, description: 'idle lifetime of sessions; null = SVC_SESSION_IDLE_MINUTES' }))),
  sessionAbsoluteHours: v.optional(v.nullable(v.int({ min: 1, max: 8760, description: 'absolute lifetime of sessions; null = SVC_SESSION_ABSOLUTE_HOURS' }))),
}, { description: 'the fields to change; mfaRequiredOrganizations replaces the whole list' });
