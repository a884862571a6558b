// The production graph of the current project: series -> season -> episode -> scene -> shot -> job,
// and (for those who may see media evidence: qa:review, delivery:view) continuity edges between
// consecutive shots' videos.
// Scenes come from the shots' sceneId (one scene node per episode and sceneId); a shot without a
// scene hangs from its episode. Assets a shot refers to are nodes too. Every node has a status;
// edges are `contains`, `generated_by` or `references` (shot -> asset).
import { forEachSeq, mapSeq } from '../kernel/seq.ts';
import type { Ctx } from '../directory/context.ts';
import { projectById } from '../directory/tenancy/store.ts';
import {
  episodesOfProject, jobsOfProjectShots, referencesOfProject, seasonsOfProject, seriesOfProject, shotsOfProject, type ShotRow,
} from '../production/catalog/store.ts';
import { chosenVideoOfShot, continuityBetween } from '../generation/media/store.ts';
import { measureContinuity } from '../generation/media/register.ts';
import { canSeeMedia } from '../generation/media/present.ts';
import { assetInProject } from '../production/assets/store.ts';

export interface GraphNode { id: string; type: 'series' | 'season' | 'episode' | 'scene' | 'shot' | 'job' | 'asset'; label: string; status: string; refId: string }
export interface GraphEdge {
  from: string; to: string; kind: 'contains' | 'generated_by' | 'references' | 'continuity';
  /** continuity edges (shot -> next shot): how the last frame of one video matches the first of the next. */
  continuity?: { fromArtifactId: string; toArtifactId: string; score: number; metrics: Record<string, number>; stored: boolean };
}

const SHOT_ORDER = ['draft', 'ready', 'generating', 'review', 'approved'];

export async function productionGraph(ctx: Ctx): Promise<{ projectId: string; nodes: GraphNode[]; edges: GraphEdge[] }> {
  const projectId = ctx.scope.projectId!;
  const project = (await projectById(ctx.db, projectId))!;
  const nodes: GraphNode[] = [];
  const edges: GraphEdge[] = [];
  const contains = (from: string, to: string) => edges.push({ from, to, kind: 'contains' });
  for (const s of await seriesOfProject(ctx.db, projectId)) nodes.push({ id: s.id, type: 'series', label: s.title, status: project.status, refId: s.id });
  for (const s of await seasonsOfProject(ctx.db, projectId)) {
    nodes.push({ id: s.id, type: 'season', label: s.title, status: s.status, refId: s.id });
    contains(s.series_id, s.id);
  }
  for (const e of await episodesOfProject(ctx.db, projectId)) {
    nodes.push({ id: e.id, type: 'episode', label: e.title, status: e.status, refId: e.id });
    contains(e.season_id, e.id);
  }
  const scenes = new Map<string, GraphNode>();
  const shots = await shotsOfProject(ctx.db, projectId, null);
  for (const sh of shots) {
    let parent = sh.episode_id;
    if (sh.scene_id) {
      const sceneNodeId = `scene:${sh.episode_id}:${sh.scene_id}`;
      let scene = scenes.get(sceneNodeId);
      if (!scene) {
        scene = { id: sceneNodeId, type: 'scene', label: sh.scene_id, status: sh.status, refId: sh.scene_id };
        scenes.set(sceneNodeId, scene);
        nodes.push(scene);
        contains(sh.episode_id, sceneNodeId);
      } else if (SHOT_ORDER.indexOf(sh.status) < SHOT_ORDER.indexOf(scene.status)) {
        scene.status = sh.status; // a scene is as far along as its least advanced shot
      }
      parent = sceneNodeId;
    }
    nodes.push({ id: sh.id, type: 'shot', label: sh.title, status: sh.status, refId: sh.id });
    contains(parent, sh.id);
  }
  const assets = new Set<string>();
  for (const ref of await referencesOfProject(ctx.db, projectId)) {
    if (ref.kind !== 'asset') continue;
    const a = await assetInProject(ctx.db, projectId, ref.ref_id);
    if (!a) continue;
    if (!assets.has(a.id)) {
      assets.add(a.id);
      nodes.push({ id: a.id, type: 'asset', label: a.name, status: a.status, refId: a.id });
    }
    edges.push({ from: ref.shot_id, to: a.id, kind: 'references' });
  }
  for (const j of await jobsOfProjectShots(ctx.db, projectId)) {
    nodes.push({ id: j.id, type: 'job', label: j.kind, status: j.status, refId: j.id });
    edges.push({ from: j.shot_id!, to: j.id, kind: 'generated_by' });
  }
  if (canSeeMedia(ctx)) edges.push(...await continuityEdges(ctx, projectId, shots));
  return { projectId, nodes, edges };
}

/**
 * Between consecutive shots of an episode whose chosen videos are known: the continuity measured
 * when they were registered, or (after a reorder made them neighbours) measured now from the
 * stored frame signatures (`stored: false`).
 */
async function continuityEdges(ctx: Ctx, projectId: string, shots: ShotRow[]): Promise<GraphEdge[]> {
  const edges: GraphEdge[] = [];
  const chosen = new Map((await mapSeq(shots, async (s) => [s.id, await chosenVideoOfShot(ctx.db, projectId, s.id)])));
  await forEachSeq(shots, async (s, i) => {
    const next = shots[i + 1];
    const from = chosen.get(s.id);
    const to = next && next.episode_id === s.episode_id ? chosen.get(next.id) : undefined;
    if (!from || !to) return;
    const row = await continuityBetween(ctx.db, projectId, from.id, to.id);
    const measured = row ? { score: row.score, metrics: JSON.parse(row.metrics) as Record<string, number> } : measureContinuity(from, to);
    if (!measured) return;
    edges.push({
      from: s.id, to: next.id, kind: 'continuity',
      continuity: { fromArtifactId: from.id, toArtifactId: to.id, score: measured.score, metrics: measured.metrics, stored: row !== undefined },
    });
  });
  return edges;
}
