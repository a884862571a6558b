// Production content of the current project: catalog (seasons, episodes) and shots. The shot detail,
// the graph and work items join generation and finishing records: src/views/routes.ts.
// Reads need script:read; catalog changes project:create; shot changes job:create.
import { READ_ACCESS } from '../../directory/tenancy/reads.ts';
import { json, type Router } from '../../http/router.ts';
import { pageOf } from '../../kernel/validate.ts';
import {
  catalog, changeEpisode, changeSeason, createEpisode, createSeason, presentEpisodeRow, presentSeasonRow, removeEpisode, removeSeason,
  reorderEpisode, reorderSeason,
} from './catalog.ts';
import * as o from '../../kernel/view.ts';
import {
  CatalogView, EpisodeView, SeasonView, ShotView, presentShot,
} from './present.ts';
import { CatalogPatchBody, EpisodeCreateBody, ReorderBody, SeasonCreateBody, ShotCreateBody, ShotListQuery, ShotPatchBody } from './schema.ts';
import { changeShot, createShot, listShots, removeShot, reorderShot } from './shots.ts';
import { referencesOf, referencesOfProject } from './store.ts';

export function bindProductionRoutes(router: Router): void {
  const r = router.module(import.meta.url);
  const tags = ['production'];
  const read = { tags, scope: 'project', permission: READ_ACCESS.shot } as const;
  const cat = { tags, scope: 'project', permission: 'project:create' } as const;
  const shot = { tags, scope: 'project', permission: 'job:create' } as const;

  r.get('/api/production/catalog', { summary: 'Series, seasons and episodes of the current project (ordered), with counts and statuses.', ...read, response: { description: 'the catalog', schema: CatalogView } },
    async ({ ctx }) => json(200, await catalog(ctx)));
  r.post('/api/production/seasons', { summary: 'Add a season to the project\'s series (at `position`, default last).', ...cat, body: SeasonCreateBody, response: { status: 201, description: 'the season', schema: SeasonView } },
    async ({ ctx, body }) => json(201, presentSeasonRow(await createSeason(ctx, body))));
  r.patch('/api/production/seasons/:seasonId', { summary: 'Rename a season or change its status.', ...cat, body: CatalogPatchBody, response: { description: 'the season', schema: SeasonView } },
    async ({ ctx, params, body }) => json(200, presentSeasonRow(await changeSeason(ctx, params.seasonId, body))));
  r.post('/api/production/seasons/:seasonId/reorder', { summary: 'Move a season to `position`; positions and numbers stay 1..n.', ...cat, body: ReorderBody, response: { description: 'the season in its new place', schema: SeasonView } },
    async ({ ctx, params, body }) => json(200, presentSeasonRow(await reorderSeason(ctx, params.seasonId, body.position))));
  r.delete('/api/production/seasons/:seasonId', { summary: 'Remove an empty season (409 season_has_episodes otherwise).', ...cat, response: { status: 204, description: 'removed' } },
    async ({ ctx, params }) => { await removeSeason(ctx, params.seasonId); return json(204, undefined); });
  r.post('/api/production/seasons/:seasonId/episodes', { summary: 'Add an episode to a season (at `position`, default last).', ...cat, body: EpisodeCreateBody, response: { status: 201, description: 'the episode', schema: EpisodeView } },
    async ({ ctx, params, body }) => json(201, presentEpisodeRow(await createEpisode(ctx, params.seasonId, body))));
  r.patch('/api/production/episodes/:episodeId', { summary: 'Rename an episode or change its status.', ...cat, body: CatalogPatchBody, response: { description: 'the episode', schema: EpisodeView } },
    async ({ ctx, params, body }) => json(200, presentEpisodeRow(await changeEpisode(ctx, params.episodeId, body))));
  r.post('/api/production/episodes/:episodeId/reorder', { summary: 'Move an episode to `position` within its season.', ...cat, body: ReorderBody, response: { description: 'the episode in its new place', schema: EpisodeView } },
    async ({ ctx, params, body }) => json(200, presentEpisodeRow(await reorderEpisode(ctx, params.episodeId, body.position))));
  r.delete('/api/production/episodes/:episodeId', { summary: 'Remove an episode without shots (409 episode_has_shots / episode_has_jobs otherwise).', ...cat, response: { status: 204, description: 'removed' } },
    async ({ ctx, params }) => { await removeEpisode(ctx, params.episodeId); return json(204, undefined); });

  r.get('/api/production/shots', { summary: 'Shots of the project in order, or of one episode (`episodeId`); page, pageSize.', ...read, query: ShotListQuery, response: { description: 'a page of shots, in order', schema: o.page(ShotView) } },
    async ({ ctx, query, searchParams }) => {
      const refs = await referencesOfProject(ctx.db, ctx.scope.projectId!);
      return json(200, pageOf(searchParams, await listShots(ctx, query.episodeId), (s) => presentShot(s, refs)));
    });
  r.post('/api/production/shots', { summary: 'Create a shot in an episode (at `position`, default last).', ...shot, body: ShotCreateBody, response: { status: 201, description: 'the shot', schema: ShotView } },
    async ({ ctx, body }) => { const s = await createShot(ctx, body); return json(201, presentShot(s, await referencesOf(ctx.db, s.project_id, s.id))); });
  r.patch('/api/production/shots/:shotId', { summary: 'Change a shot.', ...shot, body: ShotPatchBody, response: { description: 'the shot', schema: ShotView } },
    async ({ ctx, params, body }) => { const s = await changeShot(ctx, params.shotId, body); return json(200, presentShot(s, await referencesOf(ctx.db, s.project_id, s.id))); });
  r.post('/api/production/shots/:shotId/reorder', { summary: 'Move a shot to `position` within its episode.', ...shot, body: ReorderBody, response: { description: 'the shot in its new place', schema: ShotView } },
    async ({ ctx, params, body }) => { const s = await reorderShot(ctx, params.shotId, body.position); return json(200, presentShot(s, await referencesOf(ctx.db, s.project_id, s.id))); });
  r.delete('/api/production/shots/:shotId', { summary: 'Remove a shot without generation jobs (409 shot_has_jobs otherwise).', ...shot, response: { status: 204, description: 'removed' } },
    async ({ ctx, params }) => { await removeShot(ctx, params.shotId); return json(204, undefined); });

}
