// Input of the production content routes: catalog (seasons, episodes), shots, work items.
import * as v from '../../kernel/validate.ts';

export const CATALOG_STATUSES = ['draft', 'in_production', 'review', 'approved', 'delivered'] as const;
export const SHOT_STATUSES = ['draft', 'ready', 'generating', 'review', 'approved'] as const;
export const ASPECT_RATIOS = ['9:16', '16:9', '1:1', '4:5'] as const;

const title = v.string({ min: 1, max: 300 });
const position = v.int({ min: 1, description: 'position from 1; past the end means last' });
const id = v.string({ min: 1, max: 64 });

export const SeasonCreateBody = v.object({ title: v.optional(title), status: v.optional(v.oneOf(CATALOG_STATUSES)), position: v.optional(position) });
export const EpisodeCreateBody = SeasonCreateBody;
export const CatalogPatchBody = v.object({ title: v.optional(title), status: v.optional(v.oneOf(CATALOG_STATUSES)) });
export const ReorderBody = v.object({ position });

const shotFields = {
  title: v.optional(title),
  sceneId: v.optional(v.nullable(v.string({ min: 1, max: 200, description: 'scene link (free text until scripts name scenes)' }))),
  description: v.optional(v.string({ max: 10_000 })),
  prompt: v.optional(v.string({ max: 20_000 })),
  negativePrompt: v.optional(v.string({ max: 20_000 })),
  durationTargetMs: v.optional(v.nullable(v.int({ min: 1, max: 3_600_000 }))),
  aspectRatio: v.optional(v.oneOf(ASPECT_RATIOS)),
  status: v.optional(v.oneOf(SHOT_STATUSES)),
  bibleEntryIds: v.optional(v.array(id, { max: 200 })),
  assetIds: v.optional(v.array(id, { max: 200 })),
};

export const ShotCreateBody = v.object({ episodeId: id, position: v.optional(position), ...shotFields });
export const ShotPatchBody = v.object(shotFields);
export const ShotListQuery = v.object({
  episodeId: v.optional(v.string({ min: 1, max: 64, description: 'only the shots of this episode' })),
  page: v.optional(v.int()), pageSize: v.optional(v.int()),
}, { allowUnknown: true });
