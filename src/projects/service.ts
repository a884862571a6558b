// Projects: creation with their starter hierarchy, changes, and the lifecycle state machine.
import type { Ctx } from '../context.ts';
import { AppError, conflict, notFound } from '../http/errors.ts';
import { newId } from '../lib/ids.ts';
import { record } from '../audit/service.ts';
import { insertProject, projectById, workspaceById, type ProjectRow } from '../tenancy/store.ts';
import { allowedActions, nextStatus, type LifecycleAction, type ProjectStatus } from './lifecycle.ts';
import {
  activeJobCount, insertEpisode, insertSeason, insertSeries, insertShot, updateProjectFields, updateProjectStatus,
} from './store.ts';

/**
 * Creates a draft project with, in the same transaction, one series, its first season, a pilot
 * episode and one starter shot.
 */
export function createProject(ctx: Ctx, workspaceId: string, input: { name: string; templateId?: string }): ProjectRow {
  const ws = workspaceById(ctx.db, workspaceId);
  if (!ws) throw notFound('no such workspace');
  const now = ctx.now().toISOString();
  const p: ProjectRow = {
    id: newId('prj'), organization_id: ws.organization_id, workspace_id: ws.id, name: input.name, status: 'draft',
    template_id: input.templateId ?? null, created_at: now, created_by: ctx.actor.userId, updated_at: now,
    archived_at: null, archived_by: null, archived_from_status: null,
  };
  const tenant = { organization_id: p.organization_id, workspace_id: p.workspace_id, project_id: p.id };
  ctx.db.tx(() => {
    insertProject(ctx.db, p);
    const seriesId = newId('ser');
    const seasonId = newId('sea');
    const episodeId = newId('epi');
    insertSeries(ctx.db, { ...tenant, id: seriesId, title: p.name, created_at: now });
    insertSeason(ctx.db, { ...tenant, id: seasonId, series_id: seriesId, number: 1, title: 'Season 1', position: 1, created_at: now });
    insertEpisode(ctx.db, { ...tenant, id: episodeId, season_id: seasonId, number: 1, title: 'Pilot', position: 1, created_at: now });
    insertShot(ctx.db, { ...tenant, id: newId('sht'), episode_id: episodeId, position: 1, title: 'Shot 1', created_at: now });
    record(ctx, {
      action: 'project.created', targetType: 'project', targetId: p.id, organizationId: p.organization_id,
      workspaceId: p.workspace_id, projectId: p.id, metadata: { name: p.name, templateId: p.template_id },
    });
  });
  return p;
}

function loadProject(ctx: Ctx, projectId: string): ProjectRow {
  const p = projectById(ctx.db, projectId);
  if (!p) throw notFound('no such project');
  return p;
}

export function updateProject(ctx: Ctx, projectId: string, input: { name?: string; templateId?: string | null }): ProjectRow {
  return ctx.db.tx(() => {
    const p = loadProject(ctx, projectId);
    const next = { ...p, name: input.name ?? p.name, template_id: input.templateId !== undefined ? input.templateId : p.template_id, updated_at: ctx.now().toISOString() };
    updateProjectFields(ctx.db, next);
    record(ctx, {
      action: 'project.updated', targetType: 'project', targetId: p.id,
      metadata: { before: { name: p.name, templateId: p.template_id }, after: { name: next.name, templateId: next.template_id } },
    });
    return next;
  });
}

/** Applies one lifecycle action; 409 invalid_transition names the allowed ones. */
export function changeLifecycle(ctx: Ctx, projectId: string, action: LifecycleAction): ProjectRow {
  return ctx.db.tx(() => {
    const p = loadProject(ctx, projectId);
    const from = p.status as ProjectStatus;
    const to = nextStatus(from, action, p.archived_from_status);
    if (!to) {
      throw conflict('invalid_transition', `cannot ${action} a project that is ${from}; allowed: ${allowedActions(from).join(', ') || 'none'}`,
        { status: from, action, allowedActions: allowedActions(from) });
    }
    if (action === 'archive') {
      const active = activeJobCount(ctx.db, p.id);
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
    updateProjectStatus(ctx.db, next);
    record(ctx, {
      action: action === 'archive' ? 'project.archived' : action === 'restore' ? 'project.restored' : 'project.lifecycle',
      targetType: 'project', targetId: p.id, metadata: { action, from, to },
    });
    return next;
  });
}
