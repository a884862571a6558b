// The role -> permission matrix of the contract, in one place. Everything that asks "may this user
// do X here" ends in effectivePermissions() below.
export const PERMISSIONS = [
  'script:read', 'script:edit', 'asset:edit', 'voice:edit', 'job:create', 'queue:manage', 'project:create',
  'workflow:manage', 'qa:review', 'delivery:view', 'delivery:approve', 'usage:view', 'billing:manage',
  'quota:manage', 'audit:view', 'model:manage', 'task:view', 'task:manage', 'task:complete',
  'organization:members:invite',
] as const;
export type BasePermission = (typeof PERMISSIONS)[number];
/** system:settings:* is the system administrator's family (system:settings:read, ...). */
export type Permission = BasePermission | `system:settings:${string}`;
export const SYSTEM_SETTINGS_ALL = 'system:settings:*';

export const ORG_ROLES = ['org_owner', 'org_admin', 'org_member'] as const;
export const WORKSPACE_ROLES = ['producer', 'writer', 'art_director', 'voice_editor', 'reviewer', 'project_guest'] as const;
export const PROJECT_ROLES = ['project_editor', 'project_viewer'] as const;
export type OrgRole = (typeof ORG_ROLES)[number];
export type WorkspaceRole = (typeof WORKSPACE_ROLES)[number];
export type ProjectRole = (typeof PROJECT_ROLES)[number];
export type Role = OrgRole | WorkspaceRole | ProjectRole;
export type Level = 'organization' | 'workspace' | 'project';

export const ROLE_LEVEL: Record<Role, Level> = {
  org_owner: 'organization', org_admin: 'organization', org_member: 'organization',
  producer: 'workspace', writer: 'workspace', art_director: 'workspace', voice_editor: 'workspace',
  reviewer: 'workspace', project_guest: 'workspace',
  project_editor: 'project', project_viewer: 'project',
};

const split = (s: string) => s.split(' ') as BasePermission[];

export const ROLE_PERMISSIONS: Record<Role, readonly BasePermission[]> = {
  org_owner: PERMISSIONS,
  org_admin: PERMISSIONS.filter((p) => p !== 'billing:manage'),
  org_member: [],
  producer: split('script:read script:edit asset:edit voice:edit job:create queue:manage project:create workflow:manage qa:review delivery:view delivery:approve usage:view task:view task:manage task:complete audit:view'),
  writer: split('script:read script:edit task:view task:complete'),
  art_director: split('script:read asset:edit job:create qa:review task:view task:complete'),
  voice_editor: split('script:read voice:edit job:create task:view task:complete'),
  reviewer: split('script:read qa:review delivery:view task:view task:complete'),
  project_guest: [],
  project_editor: split('script:read script:edit asset:edit voice:edit job:create qa:review delivery:view task:view task:manage task:complete'),
  project_viewer: split('script:read delivery:view task:view'),
};

export interface MembershipRow {
  level: Level;
  role: Role;
  organization_id: string;
  workspace_id: string | null;
  project_id: string | null;
  access_mode: 'full' | 'project-only';
}

export interface ScopeIds { organizationId: string | null; workspaceId: string | null; projectId: string | null }

const ALL_WITH_SYSTEM: readonly Permission[] = Object.freeze([...PERMISSIONS, SYSTEM_SETTINGS_ALL as Permission]);
/** Memberships arrays are shared and frozen by the read cache, so results can be kept per array and scope. */
const memo = new WeakMap<readonly MembershipRow[], Map<string, readonly Permission[]>>();

/**
 * The permissions a user holds in a scope, from the memberships that apply to it:
 * the organization role (org_owner/org_admin act as producer everywhere), the workspace role
 * (when a workspace is in scope) and the project role (when a project is in scope).
 * At organization level only organization roles count.
 */
export function effectivePermissions(isSystemAdmin: boolean, memberships: readonly MembershipRow[], scope: ScopeIds): readonly Permission[] {
  if (isSystemAdmin) return ALL_WITH_SYSTEM;
  const key = `${scope.organizationId}/${scope.workspaceId}/${scope.projectId}`;
  let perScope = memo.get(memberships);
  const hit = perScope?.get(key);
  if (hit) return hit;
  const out = new Set<BasePermission>();
  for (const m of memberships) {
    if (m.organization_id !== scope.organizationId) continue;
    if (m.level === 'organization'
      || (m.level === 'workspace' && scope.workspaceId && m.workspace_id === scope.workspaceId)
      || (m.level === 'project' && scope.projectId && m.project_id === scope.projectId)) {
      for (const p of ROLE_PERMISSIONS[m.role]) out.add(p);
    }
  }
  const result = Object.freeze(PERMISSIONS.filter((p) => out.has(p)));
  if (!perScope) memo.set(memberships, (perScope = new Map<string, readonly Permission[]>()));
  perScope.set(key, result);
  return result;
}

export function hasPermission(perms: readonly string[], wanted: Permission): boolean {
  if (perms.includes(wanted)) return true;
  return wanted.startsWith('system:settings:') && perms.includes(SYSTEM_SETTINGS_ALL);
}
