// The read models' shapes: a shot with its generation history and media, the production graph, and
// work items. Each joins records of several wings, so it lives above them.
import * as o from '../kernel/view.ts';
import { JOB_STATUSES, type JobStatus } from '../generation/jobs/store.ts';
import { MediaArtifactView } from '../generation/media/present.ts';
import { ShotView } from '../production/catalog/present.ts';
import type { JobRow } from '../production/catalog/store.ts';

export const ShotJobView = o.named('ShotJob', o.object({
  id: o.text(), shotId: o.nullable(o.text()), kind: o.text({ description: 'the work kind (video, image, tts, ...) or compose' }),
  status: o.oneOf(JOB_STATUSES), attempt: o.int(), error: o.nullable(o.text()),
  createdAt: o.time(), updatedAt: o.time(), startedAt: o.nullable(o.time()), finishedAt: o.nullable(o.time()),
}, 'a generation job in a shot\'s history'));

export const presentJob = (j: JobRow): o.Out<typeof ShotJobView> => ({
  id: j.id, shotId: j.shot_id, kind: j.kind, status: j.status as JobStatus, attempt: j.attempt, error: j.error,
  createdAt: j.created_at, updatedAt: j.updated_at, startedAt: j.started_at, finishedAt: j.finished_at,
});

export const ShotDetailView = o.named('ShotDetail', o.extend(ShotView, {
  generationHistory: o.array(ShotJobView, 'newest first'),
  latestMedia: o.array(MediaArtifactView, 'newest first, at most 10; empty without qa:review or delivery:view'),
}));

export const ProductionGraphView = o.named('ProductionGraph', o.object({
  projectId: o.text(),
  nodes: o.array(o.object({
    id: o.text({ description: 'the record\'s id; a scene is scene:<episodeId>:<sceneId>' }),
    type: o.oneOf(['series', 'season', 'episode', 'scene', 'shot', 'job', 'asset'] as const),
    label: o.text(), status: o.text(), refId: o.text({ description: 'the id of the record the node stands for (the sceneId for a scene)' }),
  })),
  edges: o.array(o.object({
    from: o.text(), to: o.text(), kind: o.oneOf(['contains', 'generated_by', 'references', 'continuity'] as const),
    continuity: o.optional(o.object({
      fromArtifactId: o.text(), toArtifactId: o.text(), score: o.number(), metrics: o.record(o.number()),
      stored: o.bool('false when measured now (the shots became neighbours after their videos were registered)'),
    }, 'continuity edges only (for holders of qa:review or delivery:view): how the last frame of one shot\'s video matches the first of the next')),
  })),
}));

export const WorkItemView = o.named('WorkItem', o.object({
  kind: o.oneOf(['task', 'failed_job', 'shot_without_media'] as const),
  id: o.text({ description: 'the task, job or shot' }), title: o.text(), status: o.text(), priority: o.text(), dueAt: o.nullable(o.time()),
  targetTab: o.oneOf(['tasks', 'queue', 'shots'] as const), link: o.text({ description: 'the console page that opens it (relative)' }),
}));
