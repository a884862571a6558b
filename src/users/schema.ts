// Input of account creation (CLI `svc users create`, and the administrator's routes later).
import * as v from '../http/validate.ts';

export const NewUserBody = v.object({
  email: v.string({ min: 3, max: 320, format: 'email' }),
  name: v.string({ min: 1, max: 200 }),
  password: v.optional(v.string({ min: 1, max: 1024, trim: false })),
  isSystemAdmin: v.optional(v.boolean()),
});
