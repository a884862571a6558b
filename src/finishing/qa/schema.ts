// Bodies and queries of the QA routes.
import * as v from '../../kernel/validate.ts';

const id = (description: string) => v.string({ min: 1, max: 100, description });

/** Exactly one target: a shot, an episode, the whole project, or a chosen set of artifacts. */
export const QaRunBody = v.object({
  shotId: v.optional(id('the shot\'s newest video, voice line and image')),
  episodeId: v.optional(id('those of every shot of the episode, and its newest cut')),
  project: v.optional(v.boolean({ description: 'true: those of every episode of the project' })),
  artifactIds: v.optional(v.array(id('an artifact of the current project'), { min: 1, max: 200 })),
});

export const QaRunListQuery = v.object({
  target: v.optional(v.oneOf(['shot', 'episode', 'project', 'artifacts'] as const, { description: 'the kind of target' })),
  targetId: v.optional(id('the shot or episode id')),
  result: v.optional(v.oneOf(['pass', 'warn', 'fail'] as const)),
  artifactId: v.optional(id('runs that checked this artifact')),
  page: v.optional(v.int({ min: 1, description: 'page number from 1' })),
  pageSize: v.optional(v.int({ min: 1, max: 200, description: 'items per page, default 50' })),
}, { allowUnknown: true });
