// Keeps the search index (src/platform/search/index.ts) in step with episodes and shots, inside the
// transaction of each change. Subtitles name the project and the parent, so a rename or a move
// re-indexes the children it shows in.
import type { Ctx } from '../../directory/context.ts';
import { indexDocument, removeDocument } from '../../platform/search/index.ts';
import { projectById } from '../../directory/tenancy/store.ts';
import { episodeById, seasonById, shotsOfProject, siblingIds, type ShotRow } from './store.ts';

async function where(ctx: Ctx) {
  const p = (await projectById(ctx.db, ctx.scope.projectId!))!;
  return { p, base: { organizationId: p.organization_id, workspaceId: p.workspace_id, projectId: p.id } };
}

export async function indexShots(ctx: Ctx, shots: readonly ShotRow[]): Promise<void> {
  const { p, base } = await where(ctx);
  for (const s of shots) {
    const episode = await episodeById(ctx.db, p.id, s.episode_id);
    await indexDocument(ctx.db, {
      ...base, type: 'shot', id: s.id, title: s.title, subtitle: `${p.name} · ${episode?.title ?? ''}`,
      body: [s.scene_id, s.description, s.prompt].filter(Boolean).join('\n'), status: s.status, updatedAt: s.updated_at,
    });
  }
}

export async function indexEpisode(ctx: Ctx, episodeId: string, withShots: boolean): Promise<void> {
  const { p, base } = await where(ctx);
  const e = await episodeById(ctx.db, p.id, episodeId);
  if (!e) return;
  const season = await seasonById(ctx.db, p.id, e.season_id);
  await indexDocument(ctx.db, {
    ...base, type: 'episode', id: e.id, title: e.title, subtitle: `${p.name} · ${season?.title ?? ''}, episode ${e.number}`,
    status: e.status, updatedAt: e.updated_at,
  });
  if (withShots) await indexShots(ctx, await shotsOfProject(ctx.db, p.id, e.id));
}

/** Every episode of a season (numbers or the season's title changed). */
export async function indexSeasonEpisodes(ctx: Ctx, seasonId: string): Promise<void> {
  for (const id of await siblingIds(ctx.db, 'episodes', ctx.scope.projectId!, seasonId)) await indexEpisode(ctx, id, false);
}

export const unindex = (ctx: Ctx, type: 'episode' | 'shot', id: string) => removeDocument(ctx.db, type, id);
