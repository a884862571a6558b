// SQL of the production hierarchy (series, seasons, episodes, shots, shot references) and the reads
// of jobs and tasks the production views need. Every statement names the project.
import { forEachSeq } from '../../kernel/seq.ts';
import type { Db } from '../../db/db.ts';
import { lockClause, type RowRead } from '../../db/dialect.ts';

export interface SeriesRow { id: string; organization_id: string; workspace_id: string; project_id: string; title: string; created_at: string }
export interface SeasonRow {
  id: string; organization_id: string; workspace_id: string; project_id: string; series_id: string;
  number: number; title: string; status: string; position: number; created_at: string; updated_at: string;
}
export interface EpisodeRow {
  id: string; organization_id: string; workspace_id: string; project_id: string; season_id: string;
  number: number; title: string; status: string; position: number; created_at: string; updated_at: string;
}
export interface ShotRow {
  id: string; organization_id: string; workspace_id: string; project_id: string; episode_id: string; position: number;
  title: string; scene_id: string | null; description: string; prompt: string; negative_prompt: string;
  duration_target_ms: number | null; aspect_ratio: string; status: string; created_at: string; updated_at: string;
}
export interface JobRow {
  id: string; shot_id: string | null; kind: string; status: string; attempt: number; error: string | null;
  created_at: string; updated_at: string; started_at: string | null; finished_at: string | null;
}

export const seriesOfProject = (db: Db, projectId: string) =>
  db.all<SeriesRow>('SELECT * FROM series WHERE project_id = ? ORDER BY created_at, id', projectId);
export const seasonsOfProject = (db: Db, projectId: string) =>
  db.all<SeasonRow>('SELECT * FROM seasons WHERE project_id = ? ORDER BY series_id, position', projectId);
export const episodesOfProject = (db: Db, projectId: string) =>
  db.all<EpisodeRow>('SELECT * FROM episodes WHERE project_id = ? ORDER BY season_id, position', projectId);
export const seasonById = (db: Db, projectId: string, id: string, read?: RowRead) =>
  db.get<SeasonRow>(`SELECT * FROM seasons WHERE project_id = ? AND id = ?${lockClause(db, read)}`, projectId, id);
export const episodeById = (db: Db, projectId: string, id: string, read?: RowRead) =>
  db.get<EpisodeRow>(`SELECT * FROM episodes WHERE project_id = ? AND id = ?${lockClause(db, read)}`, projectId, id);
export const shotById = (db: Db, projectId: string, id: string, read?: RowRead) =>
  db.get<ShotRow>(`SELECT * FROM shots WHERE project_id = ? AND id = ?${lockClause(db, read)}`, projectId, id);

export function shotsOfProject(db: Db, projectId: string, episodeId: string | null): Promise<ShotRow[]> {
  return db.all<ShotRow>(
    `SELECT s.* FROM shots s JOIN episodes e ON e.id = s.episode_id
      WHERE s.project_id = ?1 AND (s.episode_id = ?2 OR ?2 IS NULL) ORDER BY e.season_id, e.position, s.position`, projectId, episodeId);
}

export async function insertSeason(db: Db, r: SeasonRow): Promise<void> {
  await db.run(`INSERT INTO seasons (id, organization_id, workspace_id, project_id, series_id, number, title, status, position, created_at, updated_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, r.id, r.organization_id, r.workspace_id, r.project_id, r.series_id, r.number, r.title,
  r.status, r.position, r.created_at, r.updated_at);
}

export async function insertEpisode(db: Db, r: EpisodeRow): Promise<void> {
  await db.run(`INSERT INTO episodes (id, organization_id, workspace_id, project_id, season_id, number, title, status, position, created_at, updated_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, r.id, r.organization_id, r.workspace_id, r.project_id, r.season_id, r.number, r.title,
  r.status, r.position, r.created_at, r.updated_at);
}

export async function insertShot(db: Db, r: ShotRow): Promise<void> {
  await db.run(`INSERT INTO shots (id, organization_id, workspace_id, project_id, episode_id, position, title, scene_id, description, prompt,
      negative_prompt, duration_target_ms, aspect_ratio, status, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  r.id, r.organization_id, r.workspace_id, r.project_id, r.episode_id, r.position, r.title, r.scene_id, r.description, r.prompt,
  r.negative_prompt, r.duration_target_ms, r.aspect_ratio, r.status, r.created_at, r.updated_at);
}

export async function updateSeason(db: Db, r: SeasonRow): Promise<void> {
  await db.run('UPDATE seasons SET title = ?, status = ?, updated_at = ? WHERE id = ? AND project_id = ?', r.title, r.status, r.updated_at, r.id, r.project_id);
}

export async function updateEpisode(db: Db, r: EpisodeRow): Promise<void> {
  await db.run('UPDATE episodes SET title = ?, status = ?, updated_at = ? WHERE id = ? AND project_id = ?', r.title, r.status, r.updated_at, r.id, r.project_id);
}

export async function updateShot(db: Db, r: ShotRow): Promise<void> {
  await db.run(`UPDATE shots SET title = ?, scene_id = ?, description = ?, prompt = ?, negative_prompt = ?, duration_target_ms = ?, aspect_ratio = ?,
      status = ?, updated_at = ? WHERE id = ? AND project_id = ?`, r.title, r.scene_id, r.description, r.prompt, r.negative_prompt,
  r.duration_target_ms, r.aspect_ratio, r.status, r.updated_at, r.id, r.project_id);
}

/** The ordered containers: which table a position belongs to and the column naming its parent. */
export const ORDERED = {
  seasons: { table: 'seasons', parent: 'series_id', numbered: true },
  episodes: { table: 'episodes', parent: 'season_id', numbered: true },
  shots: { table: 'shots', parent: 'episode_id', numbered: false },
} as const;
export type Ordered = keyof typeof ORDERED;

export async function siblingIds(db: Db, kind: Ordered, projectId: string, parentId: string): Promise<string[]> {
  const o = ORDERED[kind];
  return (await db.all<{ id: string }>(`SELECT id FROM ${o.table} WHERE project_id = ? AND ${o.parent} = ? ORDER BY position, created_at, id`, projectId, parentId))
    .map((r) => r.id);
}

/** Writes positions 1..n in the given order (and numbers, for seasons and episodes), touching only rows that change. */
export async function writeOrder(db: Db, kind: Ordered, projectId: string, ids: readonly string[]): Promise<void> {
  const o = ORDERED[kind];
  const set = o.numbered ? 'position = ?1, number = ?1' : 'position = ?1';
  await forEachSeq(ids, async (id, i) => {
    await db.run(`UPDATE ${o.table} SET ${set} WHERE id = ?2 AND project_id = ?3 AND (position <> ?1${o.numbered ? ' OR number <> ?1' : ''})`, i + 1, id, projectId);
  });
}

export const deleteRow = (db: Db, kind: Ordered, projectId: string, id: string) =>
  db.run(`DELETE FROM ${ORDERED[kind].table} WHERE id = ? AND project_id = ?`, id, projectId);

export interface RefRow { kind: 'bible' | 'asset'; ref_id: string; shot_id: string }

export const referencesOf = (db: Db, projectId: string, shotId: string) =>
  db.all<RefRow>('SELECT kind, ref_id, shot_id FROM shot_references WHERE project_id = ? AND shot_id = ? ORDER BY kind, position', projectId, shotId);
export const referencesOfProject = (db: Db, projectId: string) =>
  db.all<RefRow>('SELECT kind, ref_id, shot_id FROM shot_references WHERE project_id = ? ORDER BY shot_id, kind, position', projectId);

export async function replaceReferences(db: Db, projectId: string, shotId: string, kind: 'bible' | 'asset', ids: readonly string[]): Promise<void> {
  await db.run('DELETE FROM shot_references WHERE project_id = ? AND shot_id = ? AND kind = ?', projectId, shotId, kind);
  await forEachSeq([...new Set(ids)], async (id, i) => {
    await db.run('INSERT INTO shot_references (shot_id, project_id, kind, ref_id, position) VALUES (?, ?, ?, ?, ?)', shotId, projectId, kind, id, i + 1);
  });
}

export const deleteReferences = (db: Db, projectId: string, shotId: string) =>
  db.run('DELETE FROM shot_references WHERE project_id = ? AND shot_id = ?', projectId, shotId);

const JOB_COLUMNS = 'id, shot_id, kind, status, attempt, error, created_at, updated_at, started_at, finished_at';

/** A shot's generation history, newest first. */
export const jobsOfShot = (db: Db, projectId: string, shotId: string) =>
  db.all<JobRow>(`SELECT ${JOB_COLUMNS} FROM generation_jobs WHERE project_id = ? AND shot_id = ? ORDER BY created_at DESC, id DESC`, projectId, shotId);
export const jobsOfProjectShots = (db: Db, projectId: string) =>
  db.all<JobRow>(`SELECT ${JOB_COLUMNS} FROM generation_jobs WHERE project_id = ? AND shot_id IS NOT NULL ORDER BY created_at DESC, id DESC`, projectId);
export const failedJobsOfProject = (db: Db, projectId: string) =>
  db.all<JobRow>(`SELECT ${JOB_COLUMNS} FROM generation_jobs WHERE project_id = ? AND status = 'failed' ORDER BY updated_at DESC, id DESC`, projectId);

/** Jobs referencing the shots under a season, an episode or one shot, or the episode itself (compose jobs). */
export async function jobCountUnder(db: Db, projectId: string, kind: Ordered, id: string): Promise<number> {
  if (kind === 'shots') return (await db.get<{ n: number }>('SELECT count(*) AS n FROM generation_jobs WHERE project_id = ? AND shot_id = ?', projectId, id))!.n;
  const episodes = kind === 'episodes' ? '?2' : 'SELECT id FROM episodes WHERE project_id = ?1 AND season_id = ?2';
  return (await db.get<{ n: number }>(
    `SELECT count(*) AS n FROM generation_jobs j WHERE j.project_id = ?1
       AND (j.episode_id IN (${episodes}) OR j.shot_id IN (SELECT s.id FROM shots s WHERE s.project_id = ?1 AND s.episode_id IN (${episodes})))`,
    projectId, id))!.n;
}

export const childCount = async (db: Db, projectId: string, kind: 'episodes' | 'shots', parentId: string) =>
  (await db.get<{ n: number }>(`SELECT count(*) AS n FROM ${kind} WHERE project_id = ? AND ${ORDERED[kind].parent} = ?`, projectId, parentId))!.n;

export interface TaskItemRow { id: string; title: string; status: string; priority: string; due_at: string | null; linked_page: string | null; type: string }

export const openTasksOf = (db: Db, projectId: string, userId: string) =>
  db.all<TaskItemRow>(`SELECT id, title, status, priority, due_at, linked_page, type FROM tasks
    WHERE project_id = ? AND assignee_user_id = ? AND status NOT IN ('done', 'cancelled') ORDER BY created_at, id`, projectId, userId);
