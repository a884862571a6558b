// The commercial meters: how much an organization, workspace or project stores, and how many clips
// count toward a month's quota. The one definition of each measure; quotas, usage, billing and
// invoices read them, and uploads and video jobs check against them. They read the tables of the
// wings they measure (asset versions, media artifacts, generation jobs) by SQL only: the meters are
// a read model of commercial's own, so no module of those wings is imported upward.
import type { Db } from '../db/db.ts';
import type { Dialect } from '../db/dialect.ts';

/**
 * Every stored file of organization ?1 with its workspace, project and size: asset versions, and media
 * artifacts with their frame files (a PNG image is its own frame: the same path). The one definition of
 * what is stored; the sums below count each storage path once per organization, workspace or project.
 */
const STORED_FILES = `
  SELECT workspace_id, project_id, storage_path, file_size AS size FROM asset_versions WHERE organization_id = ?1
  UNION ALL SELECT workspace_id, project_id, storage_path, file_size FROM media_artifacts WHERE organization_id = ?1
  UNION ALL SELECT workspace_id, project_id, first_frame_path, first_frame_size FROM media_artifacts WHERE organization_id = ?1 AND first_frame_path IS NOT NULL
  UNION ALL SELECT workspace_id, project_id, last_frame_path, last_frame_size FROM media_artifacts WHERE organization_id = ?1 AND last_frame_path IS NOT NULL`;

/** The distinct stored files per `owner` column (none: per organization), each with its size; `where` narrows the files. */
const distinctFiles = (owner: 'workspace_id' | 'project_id' | null, where = '') => {
  const key = owner ? `${owner}, storage_path` : 'storage_path';
  return `SELECT ${key}, max(size) AS size FROM (${STORED_FILES}) AS s ${where} GROUP BY ${key}`;
};

/** Bytes the organization keeps in storage (uploaded assets and generated media): each distinct stored file counted once. */
export async function organizationStoredBytes(db: Db, organizationId: string): Promise<number> {
  return (await db.get<{ n: number }>(`SELECT coalesce(sum(size), 0) AS n FROM (${distinctFiles(null)}) AS f`, organizationId))!.n;
}

/** Bytes each workspace of the organization stores (workspaces with files only): a file counted once per workspace, in every workspace that stores it. */
export async function storedBytesByWorkspace(db: Db, organizationId: string): Promise<Map<string, number>> {
  return new Map((await db.all<{ w: string; n: number }>(
    `SELECT workspace_id AS w, sum(size) AS n FROM (${distinctFiles('workspace_id')}) AS f GROUP BY workspace_id`, organizationId,
  )).map((r) => [r.w, r.n]));
}

/** Bytes one workspace stores: each distinct stored file of the workspace counted once. */
export const workspaceStoredBytes = async (db: Db, organizationId: string, workspaceId: string): Promise<number> =>
  (await db.get<{ n: number }>(`SELECT coalesce(sum(size), 0) AS n FROM (${distinctFiles('workspace_id', 'WHERE workspace_id = ?2')}) AS f`,
    organizationId, workspaceId))!.n;

/** Bytes one project stores: each distinct stored file of the project counted once. */
export const projectStoredBytes = async (db: Db, organizationId: string, projectId: string): Promise<number> =>
  (await db.get<{ n: number }>(`SELECT coalesce(sum(size), 0) AS n FROM (${distinctFiles('project_id', 'WHERE project_id = ?2')}) AS f`,
    organizationId, projectId))!.n;

/** Bytes and files each project of the organization stores, largest first. */
export interface ProjectUsageRow { project_id: string; project_name: string; workspace_id: string; bytes: number; files: number }

export function projectUsage(db: Db, organizationId: string): Promise<ProjectUsageRow[]> {
  return db.all<ProjectUsageRow>(
    `SELECT f.project_id, p.name AS project_name, p.workspace_id, sum(f.size) AS bytes, count(*) AS files
       FROM (${distinctFiles('project_id')}) f
       JOIN projects p ON p.id = f.project_id AND p.organization_id = ?1
      GROUP BY f.project_id, p.name, p.workspace_id ORDER BY bytes DESC, f.project_id`, organizationId);
}

/**
 * FROM and WHERE of the clip usage events (recorded use) of organization ?1 in [?2, ?3), and of its
 * workspace `ws` (an SQL expression) when given: a range of a covering index (usage_events_org_kind,
 * usage_events_org_workspace_kind; SQLite is told which, see Dialect.indexedBy). Every count of clips
 * a month is made of it.
 */
export const clipEventsOf = (d: Dialect, ws?: string) => (ws === undefined
  ? `FROM usage_events ${d.indexedBy('usage_events_org_kind')}
  WHERE organization_id = ?1 AND kind = 'clip' AND created_at >= ?2 AND created_at < ?3`
  : `FROM usage_events ${d.indexedBy('usage_events_org_workspace_kind')}
  WHERE organization_id = ?1 AND workspace_id = ${ws} AND kind = 'clip' AND created_at >= ?2 AND created_at < ?3`);

/** After every ISO instant: the end of an open window. */
const OPEN_END = '9999-12-31T23:59:59.999Z';

/** Recorded use: the organization's clip usage events from `monthStart` on (the billing PATCH bound). */
export const activeVideoClipsThisMonth = async (db: Db, organizationId: string, monthStart: string) =>
  (await db.get<{ n: number }>(`SELECT count(*) AS n ${clipEventsOf(db.dialect)}`, organizationId, monthStart, OPEN_END))!.n;

/** Video jobs not finished yet (partial index generation_jobs_pending_video): each becomes a clip when it completes. */
const pendingVideo = (d: Dialect) => `SELECT count(*) FROM generation_jobs ${d.indexedBy('generation_jobs_pending_video')}
  WHERE organization_id = ?1 AND kind = 'video' AND status IN ('queued', 'running', 'blocked')`;

/** A scope's clips of a month: recorded (clip usage events) and pending (video jobs not finished yet). */
export interface ClipCounts { recorded: number; pending: number }
export interface ClipsTowardQuota {
  /** recorded + pending: what the quota is checked against. */
  organization: number; workspace: number | null;
  organizationClips: ClipCounts; workspaceClips: ClipCounts | null;
}

/**
 * What the monthly clip quotas are checked against when a video job is created: the clip usage
 * events of [start, end) plus the video jobs not finished yet (queued, running, blocked), for the
 * organization and, when `workspaceId` is given, for that workspace (null otherwise), each also as
 * its recorded and pending counts. One statement of index range counts: usage_events_org_kind,
 * usage_events_org_workspace_kind, generation_jobs_pending_video.
 */
export async function clipsTowardQuota(db: Db, organizationId: string, workspaceId: string | null, start: string, end: string): Promise<ClipsTowardQuota> {
  const r = (await db.get<{ org_recorded: number; org_pending: number; ws_recorded: number | null; ws_pending: number | null }>(
    `SELECT (SELECT count(*) ${clipEventsOf(db.dialect)}) AS org_recorded, (${pendingVideo(db.dialect)}) AS org_pending,
            CASE WHEN CAST(?4 AS TEXT) IS NULL THEN NULL ELSE (SELECT count(*) ${clipEventsOf(db.dialect, '?4')}) END AS ws_recorded,
            CASE WHEN ?4 IS NULL THEN NULL ELSE (${pendingVideo(db.dialect)} AND workspace_id = ?4) END AS ws_pending`,
    organizationId, start, end, workspaceId))!;
  const ws = r.ws_recorded === null || r.ws_pending === null ? null : { recorded: r.ws_recorded, pending: r.ws_pending };
  return {
    organization: r.org_recorded + r.org_pending, workspace: ws && ws.recorded + ws.pending,
    organizationClips: { recorded: r.org_recorded, pending: r.org_pending }, workspaceClips: ws,
  };
}
