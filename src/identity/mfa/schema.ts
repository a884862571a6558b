// Input of the MFA routes.
import * as v from '../../kernel/validate.ts';

const challengeToken = v.string({ min: 1, max: 200, description: 'the challengeToken of the login or enrollment answer' });
const code = v.string({ min: 1, max: 64, description: 'the 6-digit code of the authenticator app' });

export const LoginMfaBody = v.object({
  challengeToken,
  code: v.string({ min: 1, max: 64, description: 'the 6-digit code of the authenticator app, or one of the recovery codes' }),
});

export const ChallengeBody = v.object({ challengeToken });

export const ChallengeCodeBody = v.object({ challengeToken, code });

export const CodeBody = v.object({ code });

export const DisableBody = v.object({
  password: v.optional(v.string({ min: 1, max: 1024, trim: false, description: 'the account password' })),
  code: v.optional(v.string({ min: 1, max: 64, description: 'a current code of the authenticator, or a recovery code' })),
}, { description: 'the password or a code' });
