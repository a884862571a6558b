// MFA answers: the set-up secret is shown to its owner at set-up only; recovery codes once, at enablement.
import type { TotpSetup } from './factor.ts';
import type { MfaStatus } from './service.ts';

export const presentStatus = (s: MfaStatus) => ({ method: 'totp', ...s });

export const presentSetup = (s: TotpSetup, expiresAt?: string) => ({
  secret: s.secret, otpauthUri: s.otpauthUri, algorithm: s.algorithm, digits: s.digits, period: s.period,
  ...(expiresAt ? { expiresAt } : {}),
});
