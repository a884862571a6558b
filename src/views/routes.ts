// Read models over the production of the current project: a shot with its generation history and
// latest media, the production graph, and the current user's work items. Same access as the
// production reads (script:read; work items also task:view); media evidence only for qa:review or
// delivery:view.
import { mapSeq } from '../kernel/seq.ts';
import { READ_ACCESS } from '../directory/tenancy/reads.ts';
import { json, type Router } from '../http/router.ts';
import * as o from '../kernel/view.ts';
import { pageOf } from '../kernel/validate.ts';
import { artifactsOfProject } from '../generation/media/store.ts';
import { canSeeMedia, presentArtifact } from '../generation/media/present.ts';
import { presentShot } from '../production/catalog/present.ts';
import { getShot } from '../production/catalog/shots.ts';
import { jobsOfShot, referencesOf } from '../production/catalog/store.ts';
import { productionGraph } from './graph.ts';
import { ProductionGraphView, ShotDetailView, WorkItemView, presentJob } from './present.ts';
import { workItems } from './workitems.ts';

export function bindViewRoutes(router: Router): void {
  const r = router.module(import.meta.url);
  const tags = ['production'];
  const read = { tags, scope: 'project', permission: READ_ACCESS.shot } as const;

  r.get('/api/production/shots/:shotId', { summary: 'A shot with its generation history (newest first) and latest media artifacts (newest first, at most 10; empty without qa:review or delivery:view).', ...read, response: { description: 'the shot with its history and media', schema: ShotDetailView } }, async ({ ctx, params }) => {
    const s = await getShot(ctx, params.shotId);
    return json(200, {
      ...presentShot(s, await referencesOf(ctx.db, s.project_id, s.id)),
      generationHistory: (await jobsOfShot(ctx.db, s.project_id, s.id)).map(presentJob),
      // Media evidence is for those who review or deliver it (qa:review, delivery:view).
      latestMedia: canSeeMedia(ctx)
        ? (await mapSeq(await artifactsOfProject(ctx.db, s.project_id, { shotId: s.id, jobId: null, episodeId: null, kind: null, limit: 10 }), (a) => presentArtifact(ctx.db, a)))
        : [],
    });
  });

  r.get('/api/production/graph', { summary: 'Nodes and edges series -> season -> episode -> scene -> shot -> job, with statuses.', ...read, response: { description: 'the graph', schema: ProductionGraphView } },
    async ({ ctx }) => json(200, await productionGraph(ctx)));
  r.get('/api/work-items', {
    summary: 'The current user\'s derived to-do list in the current project: assigned open tasks, failed jobs, shots without media.',
    tags, scope: 'project', permission: ['script:read', 'task:view'], response: { description: 'a page of work items, most urgent first', schema: o.page(WorkItemView) },
  }, async ({ ctx, searchParams }) => json(200, pageOf(searchParams, await workItems(ctx), (i) => i)));
}
