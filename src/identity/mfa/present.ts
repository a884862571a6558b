// MFA answers: the set-up secret is shown to its owner at set-up only; recovery codes once, at enablement.
import * as o from '../../kernel/view.ts';
import type { TotpSetup } from './factor.ts';
import type { MfaStatus } from './service.ts';

export const MfaStatusView = o.named('MfaStatus', o.object({
  method: o.constant('totp'),
  enabled: o.bool(),
  pendingSetup: o.bool('a set-up was started and not yet confirmed'),
  recoveryCodesLeft: o.int(),
  enabledAt: o.nullable(o.time()),
  requiredByPolicy: o.bool('the identity policy requires MFA of this user (it cannot be turned off)'),
}));

export const presentStatus = (s: MfaStatus): o.Out<typeof MfaStatusView> => ({ method: 'totp', ...s });

export const TotpSetupView = o.named('TotpSetup', o.object({
  secret: o.text({ description: 'the base32 TOTP secret; shown at set-up only' }),
  otpauthUri: o.text({ description: 'otpauth:// URI for the authenticator app (as a QR code)' }),
  algorithm: o.constant('SHA1'), digits: o.int(), period: o.int('seconds'),
  expiresAt: o.optional(o.time('enrollment during sign-in only: when the challenge ends')),
}));

export const presentSetup = (s: TotpSetup, expiresAt?: string): o.Out<typeof TotpSetupView> => ({
  secret: s.secret, otpauthUri: s.otpauthUri, algorithm: s.algorithm, digits: s.digits, period: s.period,
  ...(expiresAt ? { expiresAt } : {}),
});

export const recoveryCodes = o.array(o.text(), 'ten one-time recovery codes; shown in this answer only');

export const MfaEnabledView = o.named('MfaEnabled', o.object({ enabled: o.constant(true), recoveryCodes }));
