// Who may open each kind of production object: a person (or API client) holding one of these
// permissions in the object's project; an empty list means anyone who can see the project. The read
// routes of each domain declare exactly these lists, and search (src/platform/search/index.ts) shows a hit
// only under the same rule, so that a search never reveals what its route would refuse.
import type { Permission } from '../roles.ts';

export type ReadKind = 'project' | 'episode' | 'script' | 'shot' | 'asset' | 'task' | 'job' | 'delivery';

const list = (...p: Permission[]): Permission[] => Object.freeze(p) as Permission[];

export const READ_ACCESS: Readonly<Record<ReadKind, Permission[]>> = Object.freeze({
  /** GET /api/projects/:projectId: whoever sees the project. */
  project: list(),
  /** The catalog and graph (GET /api/production/catalog, /graph). */
  episode: list('script:read'),
  /** GET /api/production/script/:episodeId, the bible and revisions. */
  script: list('script:read'),
  /** GET /api/production/shots[/:shotId]. */
  shot: list('script:read'),
  /** GET /api/assets[/:assetId[/content]]. */
  asset: list('script:read', 'delivery:view', 'asset:edit', 'voice:edit'),
  /** GET /api/tasks[/:taskId]. */
  task: list('task:view'),
  /** GET /api/jobs[/:jobId]. */
  job: list('job:create', 'queue:manage'),
  /** GET /api/production/deliveries[/:deliveryId]. */
  delivery: list('delivery:view'),
});
