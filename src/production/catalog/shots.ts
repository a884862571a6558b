// Shots of the current project: per episode, ordered (positions dense 1..n), with scene link,
// texts, duration target, aspect ratio, status and references to bible entries and assets. A shot
// with generation jobs cannot be removed (409 shot_has_jobs). Every change is audited.
import { filterSeq } from '../../kernel/seq.ts';
import type { Ctx } from '../../directory/context.ts';
import { conflict, notFound, validationFailed } from '../../kernel/errors.ts';
import type { Infer } from '../../kernel/validate.ts';
import { newId } from '../../kernel/ids.ts';
import type { RowRead } from '../../db/dialect.ts';
import { record } from '../../platform/audit/service.ts';
import { projectById } from '../../directory/tenancy/store.ts';
import { getEpisode, lockCatalog, placeAt } from './catalog.ts';
import { indexShots, unindex } from './indexing.ts';
import type { ShotCreateBody, ShotPatchBody } from './schema.ts';
import { currentRevision } from '../scripts/store.ts';
import { assetInProject } from '../assets/store.ts';
import {
  deleteReferences, deleteRow, episodeById, insertShot, jobCountUnder, replaceReferences, shotById, shotsOfProject, siblingIds,
  updateShot, writeOrder, type ShotRow,
} from './store.ts';

type Create = Infer<typeof ShotCreateBody>;
type Patch = Infer<typeof ShotPatchBody>;

const COLUMNS = {
  title: 'title', sceneId: 'scene_id', description: 'description', prompt: 'prompt', negativePrompt: 'negative_prompt',
  durationTargetMs: 'duration_target_ms', aspectRatio: 'aspect_ratio', status: 'status',
} as const satisfies Partial<Record<keyof Patch, keyof ShotRow>>;
type ColumnField = keyof typeof COLUMNS;

export async function listShots(ctx: Ctx, episodeId: string | undefined): Promise<ShotRow[]> {
  if (episodeId !== undefined && !await episodeById(ctx.db, ctx.scope.projectId!, episodeId)) throw notFound('no such episode in this project');
  return await shotsOfProject(ctx.db, ctx.scope.projectId!, episodeId ?? null);
}

/** The shot; `read` { forUpdate } for the change computed from it (src/db/dialect.ts RowRead). */
export async function getShot(ctx: Ctx, id: string, read?: RowRead): Promise<ShotRow> {
  const s = await shotById(ctx.db, ctx.scope.projectId!, id, read);
  if (!s) throw notFound('no such shot in this project');
  return s;
}

/** Shots refer to entries of the project's current story bible and to the project's assets; other ids are 422. */
async function writeReferences(ctx: Ctx, shotId: string, input: Patch): Promise<void> {
  const projectId = ctx.scope.projectId!;
  const fields: Record<string, string> = {};
  if (input.bibleEntryIds?.length) {
    const bible = await currentRevision(ctx.db, 'bible', projectId, projectId);
    const known = new Set(bible ? (JSON.parse(bible.content) as { entries: Array<{ id: string }> }).entries.map((e) => e.id) : []);
    const unknown = input.bibleEntryIds.filter((id) => !known.has(id));
    if (unknown.length) fields.bibleEntryIds = `names entries not in the current story bible: ${unknown.join(', ')}`;
  }
  const missing = await filterSeq((input.assetIds ?? []), async (id) => !await assetInProject(ctx.db, projectId, id));
  if (missing.length) fields.assetIds = `names assets not in this project: ${missing.join(', ')}`;
  if (Object.keys(fields).length) throw validationFailed(fields);
  if (input.bibleEntryIds !== undefined) await replaceReferences(ctx.db, projectId, shotId, 'bible', input.bibleEntryIds);
  if (input.assetIds !== undefined) await replaceReferences(ctx.db, projectId, shotId, 'asset', input.assetIds);
}

export async function createShot(ctx: Ctx, input: Create): Promise<ShotRow> {
  return await ctx.db.tx(async () => {
    await lockCatalog(ctx);
    let episode;
    try {
      episode = await getEpisode(ctx, input.episodeId);
    } catch {
      throw validationFailed({ episodeId: 'names no episode of this project' });
    }
    const p = (await projectById(ctx.db, episode.project_id))!;
    const now = ctx.now().toISOString();
    const n = (await siblingIds(ctx.db, 'shots', p.id, episode.id)).length + 1;
    const shot: ShotRow = {
      id: newId('sht'), organization_id: p.organization_id, workspace_id: p.workspace_id, project_id: p.id, episode_id: episode.id,
      position: n, title: input.title ?? `Shot ${n}`, scene_id: input.sceneId ?? null, description: input.description ?? '',
      prompt: input.prompt ?? '', negative_prompt: input.negativePrompt ?? '', duration_target_ms: input.durationTargetMs ?? null,
      aspect_ratio: input.aspectRatio ?? '9:16', status: input.status ?? 'draft', created_at: now, updated_at: now,
    };
    await insertShot(ctx.db, shot);
    await placeAt(ctx, 'shots', episode.id, shot.id, input.position);
    await writeReferences(ctx, shot.id, input);
    const saved = await getShot(ctx, shot.id);
    await indexShots(ctx, [saved]);
    await record(ctx, { action: 'shot.created', targetType: 'shot', targetId: shot.id, metadata: { episodeId: episode.id, title: saved.title, position: saved.position } });
    return saved;
  });
}

export async function changeShot(ctx: Ctx, id: string, patch: Patch): Promise<ShotRow> {
  const given = (Object.keys(patch) as Array<keyof Patch>).filter((k) => patch[k] !== undefined);
  if (given.length === 0) throw validationFailed({ body: 'name at least one field to change' });
  return await ctx.db.tx(async () => {
    const shot = await getShot(ctx, id, { forUpdate: true });
    const next: ShotRow = { ...shot, updated_at: ctx.now().toISOString() };
    const changes: Record<string, unknown> = {};
    for (const k of given) {
      if (!(k in COLUMNS)) continue;
      const column = COLUMNS[k as ColumnField];
      const value = patch[k as ColumnField];
      if (next[column] === value) continue;
      const long = k === 'description' || k === 'prompt' || k === 'negativePrompt';
      changes[k] = long ? { from: '(text)', to: '(text)' } : { from: shot[column], to: value };
      (next as unknown as Record<string, unknown>)[column] = value;
    }
    if (patch.bibleEntryIds !== undefined) changes.bibleEntryIds = patch.bibleEntryIds;
    if (patch.assetIds !== undefined) changes.assetIds = patch.assetIds;
    if (Object.keys(changes).length === 0) return shot;
    await updateShot(ctx.db, next);
    await writeReferences(ctx, id, patch);
    await indexShots(ctx, [next]);
    await record(ctx, { action: changes.status ? 'shot.status_changed' : 'shot.updated', targetType: 'shot', targetId: id, metadata: { changes } });
    return next;
  });
}

export async function reorderShot(ctx: Ctx, id: string, position: number): Promise<ShotRow> {
  return await ctx.db.tx(async () => {
    await lockCatalog(ctx);
    const s = await getShot(ctx, id);
    const at = await placeAt(ctx, 'shots', s.episode_id, id, position);
    if (at !== s.position) await record(ctx, { action: 'shot.reordered', targetType: 'shot', targetId: id, metadata: { episodeId: s.episode_id, from: s.position, to: at } });
    return await getShot(ctx, id);
  });
}

export async function removeShot(ctx: Ctx, id: string): Promise<void> {
  await ctx.db.tx(async () => {
    await lockCatalog(ctx);
    const s = await getShot(ctx, id);
    const jobs = await jobCountUnder(ctx.db, s.project_id, 'shots', id);
    if (jobs > 0) throw conflict('shot_has_jobs', 'generation jobs reference this shot; it keeps their history', { jobs });
    await deleteReferences(ctx.db, s.project_id, id);
    await deleteRow(ctx.db, 'shots', s.project_id, id);
    await unindex(ctx, 'shot', id);
    await writeOrder(ctx.db, 'shots', s.project_id, await siblingIds(ctx.db, 'shots', s.project_id, s.episode_id));
    await record(ctx, { action: 'shot.removed', targetType: 'shot', targetId: id, metadata: { episodeId: s.episode_id, title: s.title, position: s.position } });
  });
}
