// Query of the media artifact routes.
import * as v from '../../kernel/validate.ts';

const id = v.string({ min: 1, max: 64 });

export const ArtifactListQuery = v.object({
  shotId: v.optional(id),
  jobId: v.optional(id),
  episodeId: v.optional(id),
  kind: v.optional(v.oneOf(['image', 'video', 'audio', 'other'] as const)),
  limit: v.optional(v.int({ min: 1, max: 200, description: 'at most this many, newest first (default 50)' })),
}, { allowUnknown: true });

export const ArtifactContentQuery = v.object({
  frame: v.optional(v.oneOf(['first', 'last'] as const, { description: 'the real first or last frame (PNG) instead of the file' })),
}, { allowUnknown: true });
