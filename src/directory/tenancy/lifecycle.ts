// The project state machine. draft -> active <-> paused, active -> in_review -> active | paused;
// any state but archived -> archived (refused while jobs are queued, running or blocked);
// archived -> restore -> the state it was archived from.
export const PROJECT_STATUSES = ['draft', 'active', 'paused', 'in_review', 'archived'] as const;
export type ProjectStatus = (typeof PROJECT_STATUSES)[number];
export const LIFECYCLE_ACTIONS = ['pause', 'resume', 'activate', 'submit-review', 'archive', 'restore'] as const;
export type LifecycleAction = (typeof LIFECYCLE_ACTIONS)[number];

const TRANSITIONS: Record<ProjectStatus, Partial<Record<LifecycleAction, ProjectStatus | 'archived_from_status'>>> = {
  draft: { activate: 'active', archive: 'archived' },
  active: { pause: 'paused', 'submit-review': 'in_review', archive: 'archived' },
  paused: { resume: 'active', archive: 'archived' },
  in_review: { activate: 'active', pause: 'paused', archive: 'archived' },
  archived: { restore: 'archived_from_status' },
};

/** Actions allowed from a status, in a stable order. */
export function allowedActions(status: ProjectStatus): LifecycleAction[] {
  return LIFECYCLE_ACTIONS.filter((a) => TRANSITIONS[status][a] !== undefined);
}

/** The next status, or null when the action is not allowed from `status`. */
export function nextStatus(status: ProjectStatus, action: LifecycleAction, archivedFrom: string | null): ProjectStatus | null {
  const to = TRANSITIONS[status][action];
  if (to === undefined) return null;
  return to === 'archived_from_status' ? ((archivedFrom as ProjectStatus | null) ?? 'draft') : to;
}
