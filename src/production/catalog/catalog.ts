// The catalog of the current project: series -> seasons -> episodes, with counts and statuses, and
// the changes to it (create, rename or change status, reorder, remove). Positions stay dense 1..n
// within their parent and numbers follow positions; every multi-row change runs in one transaction
// and is audited. Removing a season with episodes, or an episode with shots or with jobs referencing
// its shots, is refused with 409.
import type { Ctx } from '../../directory/context.ts';
import { conflict, notFound, validationFailed } from '../../kernel/errors.ts';
import type { Infer } from '../../kernel/validate.ts';
import { newId } from '../../kernel/ids.ts';
import { record } from '../../platform/audit/service.ts';
import { projectById } from '../../directory/tenancy/store.ts';
import { LOCKS } from '../../directory/locks.ts';
import type { RowRead } from '../../db/dialect.ts';
import { indexEpisode, indexSeasonEpisodes, unindex } from './indexing.ts';
import type { CatalogPatchBody, SeasonCreateBody } from './schema.ts';
import { hasScript } from '../scripts/store.ts';
import type * as o from '../../kernel/view.ts';
import type { ProjectStatus } from '../../directory/tenancy/lifecycle.ts';
import type { CatalogStatus, CatalogView, EpisodeView, SeasonView } from './present.ts';
import {
  childCount, deleteRow, episodeById, episodesOfProject, insertEpisode, insertSeason, jobCountUnder, seasonById, seasonsOfProject,
  seriesOfProject, shotsOfProject, siblingIds, updateEpisode, updateSeason, writeOrder, type EpisodeRow, type Ordered, type SeasonRow,
} from './store.ts';

type Create = Infer<typeof SeasonCreateBody>;
type Patch = Infer<typeof CatalogPatchBody>;

export async function catalog(ctx: Ctx): Promise<o.Out<typeof CatalogView>> {
  const projectId = ctx.scope.projectId!;
  const project = (await projectById(ctx.db, projectId))!;
  const seasons = await seasonsOfProject(ctx.db, projectId);
  const episodes = await episodesOfProject(ctx.db, projectId);
  const shotsByEpisode = new Map<string, Record<string, number>>();
  for (const s of await shotsOfProject(ctx.db, projectId, null)) {
    const counts = shotsByEpisode.get(s.episode_id) ?? {};
    counts[s.status] = (counts[s.status] ?? 0) + 1;
    shotsByEpisode.set(s.episode_id, counts);
  }
  const total = (c: Record<string, number> | undefined) => Object.values(c ?? {}).reduce((a, b) => a + b, 0);
  const presentEpisode = (e: EpisodeRow) => ({
    id: e.id, seasonId: e.season_id, number: e.number, title: e.title, status: e.status as CatalogStatus, position: e.position,
    shotCount: total(shotsByEpisode.get(e.id)), shotStatusCounts: shotsByEpisode.get(e.id) ?? {}, createdAt: e.created_at, updatedAt: e.updated_at,
  });
  const presentSeason = (s: SeasonRow) => {
    const eps = episodes.filter((e) => e.season_id === s.id).map(presentEpisode);
    return {
      id: s.id, seriesId: s.series_id, number: s.number, title: s.title, status: s.status as CatalogStatus, position: s.position,
      episodeCount: eps.length, shotCount: eps.reduce((a, e) => a + e.shotCount, 0), createdAt: s.created_at, updatedAt: s.updated_at,
      episodes: eps,
    };
  };
  return {
    projectId, projectStatus: project.status as ProjectStatus,
    series: (await seriesOfProject(ctx.db, projectId)).map((sr) => {
      const ss = seasons.filter((s) => s.series_id === sr.id).map(presentSeason);
      return {
        id: sr.id, title: sr.title, status: project.status as ProjectStatus, createdAt: sr.created_at,
        seasonCount: ss.length, episodeCount: ss.reduce((a, s) => a + s.episodeCount, 0), shotCount: ss.reduce((a, s) => a + s.shotCount, 0),
        seasons: ss,
      };
    }),
  };
}

export const presentSeasonRow = (s: SeasonRow): o.Out<typeof SeasonView> => ({
  id: s.id, seriesId: s.series_id, number: s.number, title: s.title, status: s.status as CatalogStatus, position: s.position,
  createdAt: s.created_at, updatedAt: s.updated_at,
});
export const presentEpisodeRow = (e: EpisodeRow): o.Out<typeof EpisodeView> => ({
  id: e.id, seasonId: e.season_id, number: e.number, title: e.title, status: e.status as CatalogStatus, position: e.position, createdAt: e.created_at, updatedAt: e.updated_at,
});

/**
 * Takes the current project's catalog key (src/directory/locks.ts): first in every transaction that
 * numbers or places seasons, episodes or shots, before it reads the siblings, so that two such changes
 * never count or order from the same rows (numbers and positions have no unique constraint).
 */
export const lockCatalog = (ctx: Ctx): Promise<void> => ctx.db.lock(LOCKS.catalog(ctx.scope.projectId!));

/** Puts `id` at `position` (clamped to 1..n) among its siblings and rewrites positions 1..n; after lockCatalog. */
export async function placeAt(ctx: Ctx, kind: Ordered, parentId: string, id: string, position: number | undefined): Promise<number> {
  const ids = (await siblingIds(ctx.db, kind, ctx.scope.projectId!, parentId)).filter((x) => x !== id);
  const at = Math.min(Math.max(1, position ?? ids.length + 1), ids.length + 1);
  ids.splice(at - 1, 0, id);
  await writeOrder(ctx.db, kind, ctx.scope.projectId!, ids);
  return at;
}

async function tenant(ctx: Ctx) {
  const p = (await projectById(ctx.db, ctx.scope.projectId!))!;
  return { organization_id: p.organization_id, workspace_id: p.workspace_id, project_id: p.id };
}

export async function createSeason(ctx: Ctx, input: Create): Promise<SeasonRow> {
  return await ctx.db.tx(async () => {
    await lockCatalog(ctx);
    const series = (await seriesOfProject(ctx.db, ctx.scope.projectId!))[0];
    if (!series) throw conflict('project_has_no_series', 'this project has no series to add a season to');
    const now = ctx.now().toISOString();
    const n = (await siblingIds(ctx.db, 'seasons', series.project_id, series.id)).length + 1;
    const id = newId('sea');
    await insertSeason(ctx.db, {
      ...await tenant(ctx), id, series_id: series.id, number: n, title: input.title ?? `Season ${n}`, status: input.status ?? 'draft',
      position: n, created_at: now, updated_at: now,
    });
    await placeAt(ctx, 'seasons', series.id, id, input.position);
    const season = (await seasonById(ctx.db, series.project_id, id))!;
    await record(ctx, { action: 'season.created', targetType: 'season', targetId: id, metadata: { title: season.title, position: season.position } });
    return season;
  });
}

export async function createEpisode(ctx: Ctx, seasonId: string, input: Create): Promise<EpisodeRow> {
  return await ctx.db.tx(async () => {
    await lockCatalog(ctx);
    const season = await getSeason(ctx, seasonId);
    const now = ctx.now().toISOString();
    const n = await childCount(ctx.db, season.project_id, 'episodes', season.id) + 1;
    const id = newId('epi');
    await insertEpisode(ctx.db, {
      ...await tenant(ctx), id, season_id: season.id, number: n, title: input.title ?? `Episode ${n}`, status: input.status ?? 'draft',
      position: n, created_at: now, updated_at: now,
    });
    await placeAt(ctx, 'episodes', season.id, id, input.position);
    await indexSeasonEpisodes(ctx, season.id);
    const episode = (await episodeById(ctx.db, season.project_id, id))!;
    await record(ctx, { action: 'episode.created', targetType: 'episode', targetId: id, metadata: { seasonId, title: episode.title, position: episode.position } });
    return episode;
  });
}

/** The season; `read` { forUpdate } for the change computed from it (src/db/dialect.ts RowRead). */
export async function getSeason(ctx: Ctx, id: string, read?: RowRead): Promise<SeasonRow> {
  const s = await seasonById(ctx.db, ctx.scope.projectId!, id, read);
  if (!s) throw notFound('no such season in this project');
  return s;
}

/** The episode; `read` { forUpdate } for the change computed from it (src/db/dialect.ts RowRead). */
export async function getEpisode(ctx: Ctx, id: string, read?: RowRead): Promise<EpisodeRow> {
  const e = await episodeById(ctx.db, ctx.scope.projectId!, id, read);
  if (!e) throw notFound('no such episode in this project');
  return e;
}

function changes<R extends { title: string; status: string }>(row: R, patch: Patch): Record<string, { from: string; to: string }> {
  if (patch.title === undefined && patch.status === undefined) throw validationFailed({ body: 'name at least one field to change' });
  const out: Record<string, { from: string; to: string }> = {};
  if (patch.title !== undefined && patch.title !== row.title) out.title = { from: row.title, to: patch.title };
  if (patch.status !== undefined && patch.status !== row.status) out.status = { from: row.status, to: patch.status };
  return out;
}

export async function changeSeason(ctx: Ctx, id: string, patch: Patch): Promise<SeasonRow> {
  return await ctx.db.tx(async () => {
    const s = await getSeason(ctx, id, { forUpdate: true });
    const c = changes(s, patch);
    if (Object.keys(c).length === 0) return s;
    const next = { ...s, title: patch.title ?? s.title, status: patch.status ?? s.status, updated_at: ctx.now().toISOString() };
    await updateSeason(ctx.db, next);
    if (c.title) await indexSeasonEpisodes(ctx, id);
    await record(ctx, { action: 'season.updated', targetType: 'season', targetId: id, metadata: { changes: c } });
    return next;
  });
}

export async function changeEpisode(ctx: Ctx, id: string, patch: Patch): Promise<EpisodeRow> {
  return await ctx.db.tx(async () => {
    const e = await getEpisode(ctx, id, { forUpdate: true });
    const c = changes(e, patch);
    if (Object.keys(c).length === 0) return e;
    const next = { ...e, title: patch.title ?? e.title, status: patch.status ?? e.status, updated_at: ctx.now().toISOString() };
    await updateEpisode(ctx.db, next);
    await indexEpisode(ctx, id, c.title !== undefined);
    await record(ctx, { action: 'episode.updated', targetType: 'episode', targetId: id, metadata: { changes: c } });
    return next;
  });
}

export async function reorderSeason(ctx: Ctx, id: string, position: number): Promise<SeasonRow> {
  return await ctx.db.tx(async () => {
    await lockCatalog(ctx);
    const s = await getSeason(ctx, id);
    const at = await placeAt(ctx, 'seasons', s.series_id, id, position);
    if (at !== s.position) await record(ctx, { action: 'season.reordered', targetType: 'season', targetId: id, metadata: { from: s.position, to: at } });
    return await getSeason(ctx, id);
  });
}

export async function reorderEpisode(ctx: Ctx, id: string, position: number): Promise<EpisodeRow> {
  return await ctx.db.tx(async () => {
    await lockCatalog(ctx);
    const e = await getEpisode(ctx, id);
    const at = await placeAt(ctx, 'episodes', e.season_id, id, position);
    if (at !== e.position) await indexSeasonEpisodes(ctx, e.season_id);
    if (at !== e.position) await record(ctx, { action: 'episode.reordered', targetType: 'episode', targetId: id, metadata: { from: e.position, to: at } });
    return await getEpisode(ctx, id);
  });
}

export async function removeSeason(ctx: Ctx, id: string): Promise<void> {
  await ctx.db.tx(async () => {
    await lockCatalog(ctx);
    const s = await getSeason(ctx, id);
    const episodes = await childCount(ctx.db, s.project_id, 'episodes', id);
    if (episodes > 0) throw conflict('season_has_episodes', 'remove or move the episodes of this season first', { episodes });
    await deleteRow(ctx.db, 'seasons', s.project_id, id);
    await writeOrder(ctx.db, 'seasons', s.project_id, await siblingIds(ctx.db, 'seasons', s.project_id, s.series_id));
    await record(ctx, { action: 'season.removed', targetType: 'season', targetId: id, metadata: { title: s.title, position: s.position } });
  });
}

export async function removeEpisode(ctx: Ctx, id: string): Promise<void> {
  await ctx.db.tx(async () => {
    await lockCatalog(ctx);
    const e = await getEpisode(ctx, id);
    const jobs = await jobCountUnder(ctx.db, e.project_id, 'episodes', id);
    const shots = await childCount(ctx.db, e.project_id, 'shots', id);
    if (jobs > 0) throw conflict('episode_has_jobs', 'generation jobs reference shots of this episode', { shots, jobs });
    if (shots > 0) throw conflict('episode_has_shots', 'remove the shots of this episode first', { shots });
    if (await hasScript(ctx.db, e.project_id, id)) throw conflict('episode_has_script', 'the episode has a script; its revisions are kept for good');
    await deleteRow(ctx.db, 'episodes', e.project_id, id);
    await writeOrder(ctx.db, 'episodes', e.project_id, await siblingIds(ctx.db, 'episodes', e.project_id, e.season_id));
    await unindex(ctx, 'episode', id);
    await indexSeasonEpisodes(ctx, e.season_id);
    await record(ctx, { action: 'episode.removed', targetType: 'episode', targetId: id, metadata: { seasonId: e.season_id, title: e.title, position: e.position } });
  });
}
