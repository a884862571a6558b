// Projects: creation with their starter hierarchy, changes, and the lifecycle state machine.
import type { Ctx } from '../../directory/context.ts';
import { AppError, conflict, notFound } from '../../kernel/errors.ts';
import { newId } from '../../kernel/ids.ts';
import type { RowRead } from '../../db/dialect.ts';
import { record } from '../../platform/audit/service.ts';
import { indexDocument } from '../../platform/search/index.ts';
import { insertProject, projectById, workspaceById, type ProjectRow } from '../../directory/tenancy/store.ts';
import { allowedActions, nextStatus, type LifecycleAction, type ProjectStatus } from '../../directory/tenancy/lifecycle.ts';
import { activeJobCount, insertSeries, updateProjectFields, updateProjectStatus } from './store.ts';
import { insertEpisode, insertSeason, insertShot } from '../catalog/store.ts';

/**
 * Creates a draft project with, in the same transaction, one series, its first season, a pilot
 * episode and one starter shot.
 */
export async function createProject(ctx: Ctx, workspaceId: string, input: { name: string; templateId?: string }): Promise<ProjectRow> {
  const ws = await workspaceById(ctx.db, workspaceId);
  if (!ws) throw notFound('no such workspace');
  const now = ctx.now().toISOString();
  const p: ProjectRow = {
    id: newId('prj'), organization_id: ws.organization_id, workspace_id: ws.id, name: input.name, status: 'draft',
    template_id: input.templateId ?? null, created_at: now, created_by: ctx.actor.userId, updated_at: now,
    archived_at: null, archived_by: null, archived_from_status: null,
  };
  const tenant = { organization_id: p.organization_id, workspace_id: p.workspace_id, project_id: p.id };
  await ctx.db.tx(async () => {
    await insertProject(ctx.db, p);
    const seriesId = newId('ser');
    const seasonId = newId('sea');
    const episodeId = newId('epi');
    await insertSeries(ctx.db, { ...tenant, id: seriesId, title: p.name, created_at: now });
    await insertSeason(ctx.db, { ...tenant, id: seasonId, series_id: seriesId, number: 1, title: 'Season 1', status: 'draft', position: 1, created_at: now, updated_at: now });
    await insertEpisode(ctx.db, { ...tenant, id: episodeId, season_id: seasonId, number: 1, title: 'Pilot', status: 'draft', position: 1, created_at: now, updated_at: now });
    const shotId = newId('sht');
    await insertShot(ctx.db, {
      ...tenant, id: shotId, episode_id: episodeId, position: 1, title: 'Shot 1', scene_id: null, description: '', prompt: '',
      negative_prompt: '', duration_target_ms: null, aspect_ratio: '9:16', status: 'draft', created_at: now, updated_at: now,
    });
    await indexProject(ctx, p);
    const where = { organizationId: p.organization_id, workspaceId: p.workspace_id, projectId: p.id, updatedAt: now };
    await indexDocument(ctx.db, { ...where, type: 'episode', id: episodeId, title: 'Pilot', subtitle: `${p.name} · Season 1, episode 1`, status: 'draft' });
    await indexDocument(ctx.db, { ...where, type: 'shot', id: shotId, title: 'Shot 1', subtitle: `${p.name} · Pilot`, status: 'draft' });
    await record(ctx, {
      action: 'project.created', targetType: 'project', targetId: p.id, organizationId: p.organization_id,
      workspaceId: p.workspace_id, projectId: p.id, metadata: { name: p.name, templateId: p.template_id },
    });
  });
  return p;
}

async function indexProject(ctx: Ctx, p: ProjectRow): Promise<void> {
  await indexDocument(ctx.db, {
    type: 'project', id: p.id, organizationId: p.organization_id, workspaceId: p.workspace_id, projectId: p.id,
    title: p.name, subtitle: p.template_id ? `template ${p.template_id}` : '', status: p.status, updatedAt: p.updated_at,
  });
}

/** The project; `read` { forUpdate } for the change computed from it (src/db/dialect.ts RowRead). */
async function loadProject(ctx: Ctx, projectId: string, read?: RowRead): Promise<ProjectRow> {
  const p = await projectById(ctx.db, projectId, read);
  if (!p) throw notFound('no such project');
  return p;
}

export async function updateProject(ctx: Ctx, projectId: string, input: { name?: string; templateId?: string | null }): Promise<ProjectRow> {
  return await ctx.db.tx(async () => {
    const p = await loadProject(ctx, projectId, { forUpdate: true });
    const next = { ...p, name: input.name ?? p.name, template_id: input.templateId !== undefined ? input.templateId : p.template_id, updated_at: ctx.now().toISOString() };
    await updateProjectFields(ctx.db, next);
    await indexProject(ctx, next);
    await record(ctx, {
      action: 'project.updated', targetType: 'project', targetId: p.id,
      metadata: { before: { name: p.name, templateId: p.template_id }, after: { name: next.name, templateId: next.template_id } },
    });
    return next;
  });
}

/** Applies one lifecycle action; 409 invalid_transition names the allowed ones. */
export async function changeLifecycle(ctx: Ctx, projectId: string, action: LifecycleAction): Promise<ProjectRow> {
  return await ctx.db.tx(async () => {
    const p = await loadProject(ctx, projectId, { forUpdate: true });
    const from = p.status as ProjectStatus;
    const to = nextStatus(from, action, p.archived_from_status);
    if (!to) {
      throw conflict('invalid_transition', `cannot ${action} a project that is ${from}; allowed: ${allowedActions(from).join(', ') || 'none'}`,
        { status: from, action, allowedActions: allowedActions(from) });
    }
    if (action === 'archive') {
      const active = await activeJobCount(ctx.db, p.id);
      if (active > 0) {
        throw new AppError(409, 'project_has_active_jobs', `${active} job(s) are queued, running or blocked; cancel or finish them before archiving`, { activeJobs: active });
      }
    }
    const now = ctx.now().toISOString();
    const next: ProjectRow = action === 'archive'
      ? { ...p, status: to, updated_at: now, archived_at: now, archived_by: ctx.actor.userId, archived_from_status: from }
      : action === 'restore'
        ? { ...p, status: to, updated_at: now, archived_at: null, archived_by: null, archived_from_status: null }
        : { ...p, status: to, updated_at: now };
    await updateProjectStatus(ctx.db, next);
    await indexProject(ctx, next);
    await record(ctx, {
      action: action === 'archive' ? 'project.archived' : action === 'restore' ? 'project.restored' : 'project.lifecycle',
      targetType: 'project', targetId: p.id, metadata: { action, from, to },
    });
    return next;
  });
}
