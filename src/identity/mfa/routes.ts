// TOTP MFA: the login exchange and enrollment (challenge holders, no session yet) and the management
// of one's own factor (browser session only).
import { json, type Router } from '../../http/router.ts';
import { fromBrowser } from '../sessions/cookies.ts';
import { sessionReply } from '../sessions/routes.ts';
import type { LoginLimits } from '../sessions/service.ts';
import { ChallengeBody, ChallengeCodeBody, CodeBody, DisableBody, LoginMfaBody } from './schema.ts';
import * as o from '../../kernel/view.ts';
import { SignedInView } from '../sessions/present.ts';
import { MfaEnabledView, MfaStatusView, TotpSetupView, presentSetup, presentStatus, recoveryCodes } from './present.ts';
import { enrollmentConfirm, enrollmentSetup, redeemLoginChallenge } from './redeem.ts';
import { cancelSetup, disableMfa, enableMfa, mfaStatus, setupMfa } from './service.ts';

export function bindMfaRoutes(router: Router, limits: LoginLimits): void {
  const r = router.module(import.meta.url);
  const tags = ['auth', 'mfa'];
  const holder = { tags, auth: 'none' as const };
  const browser = { tags, session: 'browser' as const };

  r.post('/api/auth/login/mfa', {
    ...holder, body: LoginMfaBody, response: { description: 'the session', schema: SignedInView },
    summary: 'Exchange the login challenge and a TOTP code (or a recovery code, once) for the session login would have given. '
      + 'Challenge: 5 minutes, single use; 401 mfa_code_invalid (details.attemptsLeft), mfa_challenge_locked after 5 wrong codes (also under concurrent requests), mfa_challenge_expired, mfa_challenge_invalid. '
      + '429 rate_limited: wrong codes over all of the user\'s challenges within SVC_LOGIN_WINDOW_SECONDS reached SVC_LOGIN_MAX_FAILURES_PER_EMAIL, or unknown challenge tokens from the address reached SVC_LOGIN_MAX_FAILURES_PER_ADDRESS.',
  }, async ({ ctx, req, body }) => {
    const { user, started } = await redeemLoginChallenge(ctx, limits, body.challengeToken, body.code, fromBrowser(req, ctx.config));
    return sessionReply(200, user, started);
  });

  r.post('/api/auth/mfa/enroll/setup', {
    ...holder, body: ChallengeBody, response: { description: 'the pending TOTP secret', schema: TotpSetupView },
    summary: 'Enrollment challenge holder: a new TOTP secret and otpauth:// URI for the authenticator app (pending until confirmed): { secret, otpauthUri, algorithm, digits, period, expiresAt }.',
  }, async ({ ctx, body }) => {
    const setup = await enrollmentSetup(ctx, body.challengeToken);
    return json(200, presentSetup(setup, setup.expiresAt));
  });

  r.post('/api/auth/mfa/enroll/confirm', {
    ...holder, body: ChallengeCodeBody, response: { description: 'the session and the recovery codes', schema: o.extend(SignedInView, { recoveryCodes }) },
    summary: 'Enrollment challenge holder: a current code enables TOTP and ends the sign-in: the session answer plus recoveryCodes (ten, shown once).',
  }, async ({ ctx, req, body }) => {
    const { user, started, recoveryCodes } = await enrollmentConfirm(ctx, body.challengeToken, body.code, fromBrowser(req, ctx.config));
    return sessionReply(200, user, started, { recoveryCodes });
  });

  r.get('/api/auth/mfa', { ...browser, summary: 'Own MFA status: { method, enabled, pendingSetup, recoveryCodesLeft, enabledAt, requiredByPolicy }.', response: { description: 'the MFA status', schema: MfaStatusView } },
    async ({ ctx }) => json(200, presentStatus(await mfaStatus(ctx))));

  r.post('/api/auth/mfa/setup', {
    ...browser, response: { description: 'the pending TOTP secret', schema: TotpSetupView },
    summary: 'Start TOTP set-up: { secret, otpauthUri, algorithm, digits, period }; pending until POST /api/auth/mfa/enable (a new set-up replaces a pending one). 409 mfa_already_enabled.',
  }, async ({ ctx }) => json(200, presentSetup(await setupMfa(ctx))));

  r.post('/api/auth/mfa/enable', {
    ...browser, body: CodeBody, response: { description: 'enabled, with the recovery codes', schema: MfaEnabledView },
    summary: 'A current code of the pending secret enables TOTP: { enabled: true, recoveryCodes } (ten one-time codes, shown once). 422 wrong code; 409 mfa_setup_required, mfa_already_enabled.',
  }, async ({ ctx, body }) => json(200, { enabled: true as const, recoveryCodes: (await enableMfa(ctx, body.code)).recoveryCodes }));

  r.post('/api/auth/mfa/setup/cancel', { ...browser, summary: 'Forget a pending set-up (an enabled factor stays); answers the status.', response: { description: 'the MFA status', schema: MfaStatusView } },
    async ({ ctx }) => json(200, presentStatus(await cancelSetup(ctx))));

  r.post('/api/auth/mfa/disable', {
    ...browser, body: DisableBody, response: { description: 'the MFA status', schema: MfaStatusView },
    summary: 'Turn TOTP off with { password } or { code } (TOTP or recovery code); recovery codes are deleted. 422 wrong proof (counted against the e-mail\'s failed-login limit, reserved before the check: over it, 429 rate_limited); 409 mfa_not_enabled, mfa_required_by_policy.',
  }, async ({ ctx, body }) => json(200, presentStatus(await disableMfa(ctx, limits, body))));
}
