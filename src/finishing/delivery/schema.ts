// Input of the delivery routes. Rules across fields (episodeIds or artifactIds, ids of this project,
// kinds) are checked by the service before anything is written.
import * as v from '../../kernel/validate.ts';

export const DELIVERY_STATUSES = ['draft', 'approved', 'withdrawn'] as const;
/** Items a delivery may hold (episode cuts or chosen artifacts). */
export const MAX_ITEMS = 200;
export const LINK_HOURS = { default: 168, max: 2160 } as const;

const id = v.string({ min: 1, max: 64 });
const title = v.string({ min: 1, max: 300 });
const note = v.nullable(v.string({ max: 4000 }));
const episodeIds = v.array(id, { min: 1, max: MAX_ITEMS });
const artifactIds = v.array(id, { min: 1, max: MAX_ITEMS });

export const DeliveryCreateBody = v.object({
  title,
  note: v.optional(note),
  episodeIds: v.optional(episodeIds),
  artifactIds: v.optional(artifactIds),
});
export type DeliveryCreate = v.Infer<typeof DeliveryCreateBody>;

export const DeliveryPatchBody = v.object({
  title: v.optional(title),
  note: v.optional(note),
  episodeIds: v.optional(episodeIds),
  artifactIds: v.optional(artifactIds),
});
export type DeliveryPatch = v.Infer<typeof DeliveryPatchBody>;

export const WithdrawBody = v.object({ note: v.optional(note) });

export const DeliveryListQuery = v.object({
  status: v.optional(v.oneOf(DELIVERY_STATUSES)),
  page: v.optional(v.int({ description: 'page number from 1' })),
  pageSize: v.optional(v.int({ description: 'items per page, default 50, clamped to 1..200' })),
}, { allowUnknown: true });

export const LinkCreateBody = v.object({
  expiresInHours: v.optional(v.int({ min: 1, max: LINK_HOURS.max, description: `hours until the link expires, default ${LINK_HOURS.default}` })),
  label: v.optional(v.nullable(v.string({ max: 200 }))),
  includeExport: v.optional(v.boolean({
    description: 'also open the export package of the delivery (its archive and every file of its manifest, once written with POST /api/exports/write); default false',
  })),
});
export type LinkCreate = v.Infer<typeof LinkCreateBody>;

export const ClientQuery = v.object({
  token: v.optional(v.string({ max: 200, description: 'the link token (or the x-delivery-token header)' })),
}, { allowUnknown: true });

export const ClientFileQuery = v.object({
  token: v.optional(v.string({ max: 200, description: 'the link token (or the x-delivery-token header)' })),
  path: v.string({ min: 1, max: 300, description: 'the file\'s path in the export package, as the manifest lists it' }),
}, { allowUnknown: true });
