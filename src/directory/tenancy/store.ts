// SQL of organizations, workspaces, projects and memberships. Every query names its tenant.
import type { Db } from '../../db/db.ts';
import { lockClause, type RowRead } from '../../db/dialect.ts';
import type { Level, MembershipRow, Role } from '../roles.ts';

export interface OrganizationRow { id: string; name: string; time_zone: string; created_at: string; created_by: string | null }
export interface WorkspaceRow { id: string; organization_id: string; name: string; created_at: string; created_by: string | null }
export interface ProjectRow {
  id: string; organization_id: string; workspace_id: string; name: string; status: string; template_id: string | null;
  created_at: string; created_by: string | null; updated_at: string;
  archived_at: string | null; archived_by: string | null; archived_from_status: string | null;
}
export interface FullMembershipRow extends MembershipRow {
  id: string; user_id: string; scope_id: string; status: 'active' | 'inactive'; created_at: string; created_by: string | null;
}

export async function insertOrganization(db: Db, o: OrganizationRow): Promise<void> {
  await db.run('INSERT INTO organizations (id, name, time_zone, created_at, created_by) VALUES (?, ?, ?, ?, ?)',
    o.id, o.name, o.time_zone, o.created_at, o.created_by);
}

export async function insertWorkspace(db: Db, w: WorkspaceRow): Promise<void> {
  await db.run('INSERT INTO workspaces (id, organization_id, name, created_at, created_by) VALUES (?, ?, ?, ?, ?)',
    w.id, w.organization_id, w.name, w.created_at, w.created_by);
}

export async function insertProject(db: Db, p: ProjectRow): Promise<void> {
  await db.run(
    `INSERT INTO projects (id, organization_id, workspace_id, name, status, template_id, created_at, created_by, updated_at,
       archived_at, archived_by, archived_from_status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    p.id, p.organization_id, p.workspace_id, p.name, p.status, p.template_id, p.created_at, p.created_by, p.updated_at,
    p.archived_at, p.archived_by, p.archived_from_status,
  );
}

export async function insertMembership(db: Db, m: FullMembershipRow): Promise<void> {
  await db.run(
    `INSERT INTO memberships (id, user_id, level, scope_id, organization_id, workspace_id, project_id, role, access_mode,
       status, created_at, created_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    m.id, m.user_id, m.level, m.scope_id, m.organization_id, m.workspace_id, m.project_id, m.role, m.access_mode,
    m.status, m.created_at, m.created_by,
  );
}

export const organizationById = (db: Db, id: string) => db.cachedGet<OrganizationRow>('SELECT * FROM organizations WHERE id = ?', id);
export const workspaceById = (db: Db, id: string) => db.cachedGet<WorkspaceRow>('SELECT * FROM workspaces WHERE id = ?', id);
/** The project; `read` { forUpdate } for the change computed from it (inside a transaction, where nothing is cached). */
export const projectById = (db: Db, id: string, read?: RowRead) =>
  db.cachedGet<ProjectRow>(`SELECT * FROM projects WHERE id = ?${lockClause(db, read)}`, id);

/** Active memberships of a user, oldest first (the order that decides a new session's scope). */
export function membershipsOfUser(db: Db, userId: string): Promise<FullMembershipRow[]> {
  return db.cachedAll<FullMembershipRow>(
    "SELECT * FROM memberships WHERE user_id = ? AND status = 'active' ORDER BY created_at, id", userId);
}

export function membershipAt(db: Db, userId: string, level: Level, scopeId: string): Promise<FullMembershipRow | undefined> {
  return db.get<FullMembershipRow>('SELECT * FROM memberships WHERE user_id = ? AND level = ? AND scope_id = ?', userId, level, scopeId);
}

export async function setMembershipRole(db: Db, id: string, role: Role, accessMode: 'full' | 'project-only'): Promise<void> {
  await db.run("UPDATE memberships SET role = ?, access_mode = ?, status = 'active' WHERE id = ?", role, accessMode, id);
}

export function allOrganizations(db: Db): Promise<OrganizationRow[]> {
  return db.all<OrganizationRow>('SELECT * FROM organizations ORDER BY created_at, id');
}

export async function organizationsByIds(db: Db, ids: string[]): Promise<OrganizationRow[]> {
  if (ids.length === 0) return [];
  return await db.all<OrganizationRow>(
    `SELECT * FROM organizations WHERE id IN (SELECT value FROM ${db.dialect.jsonValues('?')}) ORDER BY created_at, id`, JSON.stringify(ids));
}

export function workspacesOfOrganization(db: Db, organizationId: string): Promise<WorkspaceRow[]> {
  return db.cachedAll<WorkspaceRow>('SELECT * FROM workspaces WHERE organization_id = ? ORDER BY created_at, id', organizationId);
}

export function projectsOfWorkspace(db: Db, organizationId: string, workspaceId: string): Promise<ProjectRow[]> {
  return db.cachedAll<ProjectRow>(
    'SELECT * FROM projects WHERE organization_id = ? AND workspace_id = ? ORDER BY created_at, id', organizationId, workspaceId);
}

export interface NamedMembership {
  level: Level; role: Role; access_mode: string;
  organization_id: string; organization_name: string;
  workspace_id: string | null; workspace_name: string | null;
  project_id: string | null; project_name: string | null;
}

export function namedMembershipsOfUser(db: Db, userId: string): Promise<NamedMembership[]> {
  return db.cachedAll<NamedMembership>(
    `SELECT m.level, m.role, m.access_mode, m.organization_id, o.name AS organization_name,
            m.workspace_id, w.name AS workspace_name, m.project_id, p.name AS project_name
       FROM memberships m
       JOIN organizations o ON o.id = m.organization_id
       LEFT JOIN workspaces w ON w.id = m.workspace_id
       LEFT JOIN projects p ON p.id = m.project_id
      WHERE m.user_id = ? AND m.status = 'active'
      ORDER BY m.created_at, m.id`, userId);
}

export async function activeOwnerCount(db: Db, organizationId: string): Promise<number> {
  return (await db.get<{ n: number }>(
    `SELECT count(*) AS n FROM memberships m JOIN users u ON u.id = m.user_id
      WHERE m.organization_id = ? AND m.level = 'organization' AND m.role = 'org_owner' AND m.status = 'active' AND u.status = 'active'`,
    organizationId))!.n;
}
