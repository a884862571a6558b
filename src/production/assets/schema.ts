// Input of the asset routes.
import * as v from '../../kernel/validate.ts';

export const ASSET_KINDS = ['image', 'video', 'audio', 'voice', 'reference', 'document'] as const;
export type AssetKind = (typeof ASSET_KINDS)[number];

const tags = v.array(v.string({ min: 1, max: 64 }), { max: 50 });

export const AssetCreateBody = v.object({
  kind: v.oneOf(ASSET_KINDS),
  name: v.string({ min: 1, max: 300 }),
  description: v.optional(v.string({ max: 10_000 })),
  tags: v.optional(tags),
});

export const AssetPatchBody = v.object({
  name: v.optional(v.string({ min: 1, max: 300 })),
  description: v.optional(v.string({ max: 10_000 })),
  tags: v.optional(tags),
});

export const AssetListQuery = v.object({
  kind: v.optional(v.oneOf(ASSET_KINDS)),
  q: v.optional(v.string({ min: 1, max: 200, description: 'substring of the name or a tag' })),
  includeArchived: v.optional(v.boolean()),
  page: v.optional(v.int()),
  pageSize: v.optional(v.int({ description: 'default 50, clamped to 1..200' })),
}, { allowUnknown: true });

export const UploadQuery = v.object({
  fileName: v.optional(v.string({ min: 1, max: 255, description: 'file name; else taken from Content-Disposition' })),
}, { allowUnknown: true });
