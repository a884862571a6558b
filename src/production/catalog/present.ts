// Shots and jobs as the production API shows them, and the views of the catalog, graph and work items.
import * as o from '../../kernel/view.ts';
import { ASPECT_RATIOS, CATALOG_STATUSES, SHOT_STATUSES } from './schema.ts';
import { PROJECT_STATUSES } from '../../directory/tenancy/lifecycle.ts';
import type { RefRow, ShotRow } from './store.ts';

type ShotStatus = (typeof SHOT_STATUSES)[number];
type AspectRatio = (typeof ASPECT_RATIOS)[number];
export type CatalogStatus = (typeof CATALOG_STATUSES)[number];

export const ShotView = o.named('Shot', o.object({
  id: o.text(), organizationId: o.text(), workspaceId: o.text(), projectId: o.text(), episodeId: o.text(),
  position: o.int('from 1, within the episode'), title: o.text(), sceneId: o.nullable(o.text({ description: 'the scene it belongs to (free text)' })),
  description: o.text(), prompt: o.text(), negativePrompt: o.text(),
  durationTargetMs: o.nullable(o.int()), aspectRatio: o.oneOf(ASPECT_RATIOS), status: o.oneOf(SHOT_STATUSES),
  bibleEntryIds: o.array(o.text(), 'story bible entries the shot refers to'), assetIds: o.array(o.text(), 'assets the shot refers to'),
  createdAt: o.time(), updatedAt: o.time(),
}));

export const presentShot = (s: ShotRow, refs: readonly RefRow[]): o.Out<typeof ShotView> => ({
  id: s.id, organizationId: s.organization_id, workspaceId: s.workspace_id, projectId: s.project_id, episodeId: s.episode_id,
  position: s.position, title: s.title, sceneId: s.scene_id, description: s.description, prompt: s.prompt, negativePrompt: s.negative_prompt,
  durationTargetMs: s.duration_target_ms, aspectRatio: s.aspect_ratio as AspectRatio, status: s.status as ShotStatus,
  bibleEntryIds: refs.filter((r) => r.shot_id === s.id && r.kind === 'bible').map((r) => r.ref_id),
  assetIds: refs.filter((r) => r.shot_id === s.id && r.kind === 'asset').map((r) => r.ref_id),
  createdAt: s.created_at, updatedAt: s.updated_at,
});

const catalogRow = {
  number: o.int('follows the position'), title: o.text(), status: o.oneOf(CATALOG_STATUSES), position: o.int('from 1, within the parent'),
  createdAt: o.time(), updatedAt: o.time(),
};
export const SeasonView = o.named('Season', o.object({ id: o.text(), seriesId: o.text(), ...catalogRow }));
export const EpisodeView = o.named('Episode', o.object({ id: o.text(), seasonId: o.text(), ...catalogRow }));

const shotCount = o.int('shots in all');
export const CatalogView = o.named('Catalog', o.object({
  projectId: o.text(), projectStatus: o.oneOf(PROJECT_STATUSES),
  series: o.array(o.object({
    id: o.text(), title: o.text(), status: o.oneOf(PROJECT_STATUSES, 'the project\'s status'), createdAt: o.time(),
    seasonCount: o.int(), episodeCount: o.int(), shotCount,
    seasons: o.array(o.extend(SeasonView, {
      episodeCount: o.int(), shotCount,
      episodes: o.array(o.extend(EpisodeView, {
        shotCount, shotStatusCounts: o.record(o.int(), 'shots per status (only the statuses present)'),
      })),
    })),
  })),
}));
