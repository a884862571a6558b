// The current user's to-do list in the current project, computed on every read, never stored:
// tasks assigned to them that are not done or cancelled (everyone); failed generation jobs of the
// project (holders of queue:manage or job:create); shots to generate (holders of job:create, who can
// generate them): shots not approved whose chosen video (the newest generated one) does not exist yet
// or has not passed QA (no QA run checked it at its current bytes, or a blocking check failed). A
// shot whose video passed QA is no longer one (its status moved on to review: shot-status.ts).
// Sorted by priority, then due date, then kind.
// Each item's link opens its console page (a task's linkedPage when that is a console page, else the task's).
import type { Ctx } from '../directory/context.ts';
import { hasPermission } from '../directory/roles.ts';
import { chosenVideoOfShot } from '../generation/media/store.ts';
import { qaVerdictOf } from '../finishing/qa/verdict.ts';
import { failedJobsOfProject, openTasksOf, shotsOfProject } from '../production/catalog/store.ts';
import { consoleLinks, pageOfLink } from '../kernel/links.ts';

export interface WorkItem {
  kind: 'task' | 'failed_job' | 'shot_without_media';
  id: string; title: string; status: string; priority: string; dueAt: string | null;
  targetTab: 'tasks' | 'queue' | 'shots'; link: string;
}

const PRIORITY = ['urgent', 'high', 'normal', 'low'];

/** The shot's chosen video exists and its newest QA run at these bytes failed no blocking check. */
async function videoPassedQa(ctx: Ctx, projectId: string, shotId: string): Promise<boolean> {
  const video = await chosenVideoOfShot(ctx.db, projectId, shotId);
  const verdict = video ? await qaVerdictOf(ctx.db, projectId, video.id, video.content_sha256) : null;
  return verdict !== null && verdict.failing.length === 0;
}
const KIND = ['task', 'failed_job', 'shot_without_media'];

export async function workItems(ctx: Ctx): Promise<WorkItem[]> {
  const projectId = ctx.scope.projectId!;
  const items: WorkItem[] = [];
  if (ctx.actor.userId) {
    for (const t of await openTasksOf(ctx.db, projectId, ctx.actor.userId)) {
      items.push({
        kind: 'task', id: t.id, title: t.title, status: t.status, priority: t.priority, dueAt: t.due_at, targetTab: 'tasks',
        link: t.linked_page && pageOfLink(t.linked_page) ? t.linked_page : consoleLinks.task({ id: t.id, projectId }),
      });
    }
  }
  if (hasPermission(ctx.permissions, 'queue:manage') || hasPermission(ctx.permissions, 'job:create')) {
    for (const j of await failedJobsOfProject(ctx.db, projectId)) {
      items.push({
        kind: 'failed_job', id: j.id, title: `Failed ${j.kind} job${j.error ? `: ${j.error.slice(0, 120)}` : ''}`, status: j.status,
        priority: 'high', dueAt: null, targetTab: 'queue', link: consoleLinks.job({ id: j.id, projectId }),
      });
    }
  }
  if (hasPermission(ctx.permissions, 'job:create')) {
    for (const s of await shotsOfProject(ctx.db, projectId, null)) {
      if (s.status === 'approved' || await videoPassedQa(ctx, projectId, s.id)) continue;
      items.push({ kind: 'shot_without_media', id: s.id, title: s.title, status: s.status, priority: 'normal', dueAt: null, targetTab: 'shots', link: consoleLinks.shot({ id: s.id, projectId }) });
    }
  }
  const rank = (i: WorkItem) => PRIORITY.indexOf(i.priority);
  return items.sort((a, b) => rank(a) - rank(b)
    || (a.dueAt === b.dueAt ? 0 : a.dueAt === null ? 1 : b.dueAt === null ? -1 : a.dueAt < b.dueAt ? -1 : 1)
    || KIND.indexOf(a.kind) - KIND.indexOf(b.kind));
}
