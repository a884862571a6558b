// Input of the review routes.
import * as v from '../../kernel/validate.ts';
import { REVIEW_STATUSES } from './store.ts';

const id = (description: string) => v.string({ min: 1, max: 64, description });
const fraction = (description: string) => v.number({ min: 0, max: 1, description });

export const ReviewCreateBody = v.object({
  artifactId: id('a media artifact of the project: a shot\'s artifact or an episode cut'),
  title: v.optional(v.string({ min: 1, max: 300 })),
  note: v.optional(v.string({ max: 4000 })),
});

export const ReviewListQuery = v.object({
  status: v.optional(v.oneOf(REVIEW_STATUSES)),
  shotId: v.optional(id('only reviews of this shot')),
  episodeId: v.optional(id('only reviews of this episode (its shots and cuts)')),
  artifactId: v.optional(id('only reviews whose current artifact is this one')),
  page: v.optional(v.int({ description: 'page number from 1' })),
  pageSize: v.optional(v.int({ description: 'items per page, default 50, clamped to 1..200' })),
}, { allowUnknown: true });

export const CommentBody = v.object({
  body: v.string({ min: 1, max: 4000 }),
  timeCodeMs: v.optional(v.int({ min: 0, description: 'milliseconds from the start; below the artifact\'s duration' })),
  frame: v.optional(v.int({ min: 0, description: 'frame number from 0; below the artifact\'s frame count' })),
  rect: v.optional(v.object({
    x: fraction('left edge, fraction of the width'), y: fraction('top edge, fraction of the height'),
    width: fraction('fraction of the width'), height: fraction('fraction of the height'),
  }, { description: 'a rectangle on the frame, in fractions 0..1 of its width and height; it must lie inside the frame' })),
});

export const DecisionBody = v.object({
  decision: v.oneOf(['approve', 'request_changes'] as const),
  note: v.optional(v.string({ max: 4000 })),
});

export type ReviewCreate = v.Infer<typeof ReviewCreateBody>;
export type ReviewListFilter = v.Infer<typeof ReviewListQuery>;
export type CommentInput = v.Infer<typeof CommentBody>;
export type DecisionInput = v.Infer<typeof DecisionBody>;
