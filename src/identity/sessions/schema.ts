// Input of the authentication routes.
import * as v from '../../kernel/validate.ts';

export const LoginBody = v.object({
  email: v.string({ min: 1, max: 320, description: 'account e-mail address (case-insensitive)' }),
  password: v.string({ min: 1, max: 1024, trim: false }),
});

export const PasswordChangeBody = v.object({
  currentPassword: v.string({ min: 1, max: 1024, trim: false }),
  newPassword: v.string({ min: 1, max: 1024, trim: false, description: 'the identity policy\'s minimum length (default 12) to 1024 characters, not the e-mail address, not a common or breached password' }),
});
