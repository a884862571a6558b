// Input of the workspace quota and cost center PATCH routes.
import * as v from '../../kernel/validate.ts';

export const QuotaPatchBody = v.object({
  monthlyClipQuota: v.optional(v.nullable(v.int({ min: 0, max: 1_000_000_000, description: 'clips a local calendar month; null: no own limit' }))),
  storageGb: v.optional(v.nullable(v.number({ min: 0, max: 1_000_000_000, description: 'GiB of stored files; null: no own limit' }))),
});

export const CostCenterPatchBody = v.object({
  budget: v.optional(v.nullable(v.string({ min: 1, max: 40, description: 'amount per billing period in the account currency ("1250.00"); null: no budget' }))),
  name: v.optional(v.string({ min: 1, max: 200 })),
});
