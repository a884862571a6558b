// Shots and jobs as the production API shows them.
import type { JobRow, RefRow, ShotRow } from './store.ts';

export const presentShot = (s: ShotRow, refs: readonly RefRow[]) => ({
  id: s.id, organizationId: s.organization_id, workspaceId: s.workspace_id, projectId: s.project_id, episodeId: s.episode_id,
  position: s.position, title: s.title, sceneId: s.scene_id, description: s.description, prompt: s.prompt, negativePrompt: s.negative_prompt,
  durationTargetMs: s.duration_target_ms, aspectRatio: s.aspect_ratio, status: s.status,
  bibleEntryIds: refs.filter((r) => r.shot_id === s.id && r.kind === 'bible').map((r) => r.ref_id),
  assetIds: refs.filter((r) => r.shot_id === s.id && r.kind === 'asset').map((r) => r.ref_id),
  createdAt: s.created_at, updatedAt: s.updated_at,
});

export const presentJob = (j: JobRow) => ({
  id: j.id, shotId: j.shot_id, kind: j.kind, status: j.status, attempt: j.attempt, error: j.error,
  createdAt: j.created_at, updatedAt: j.updated_at, startedAt: j.started_at, finishedAt: j.finished_at,
});
