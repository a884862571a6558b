// SQL of SCIM directories and the users they provision, and the membership status switch of
// (de)provisioning. Every statement names its directory or organization.
import type { Db } from '../../db/db.ts';
import { lockClause, perDialect, type RowRead } from '../../db/dialect.ts';
import type { UserFilter } from './filter.ts';

export interface DirectoryRow {
  id: string; organization_id: string; name: string; default_workspace_id: string | null; default_role: string;
  status: 'active' | 'disabled'; token_hash: string; token_hint: string; token_rotated_at: string | null;
  created_by: string | null; created_at: string; updated_at: string;
}

export interface ScimUserRow {
  directory_id: string; user_id: string; organization_id: string; user_name: string; user_name_key: string;
  external_id: string | null; given_name: string | null; family_name: string | null; formatted_name: string | null;
  display_name: string | null; emails: string; active: number; owns_account: number; created_at: string; updated_at: string;
}

export async function insertDirectory(db: Db, d: DirectoryRow): Promise<void> {
  await db.run(
    `INSERT INTO scim_directories (id, organization_id, name, default_workspace_id, default_role, status, token_hash, token_hint,
       token_rotated_at, created_by, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    d.id, d.organization_id, d.name, d.default_workspace_id, d.default_role, d.status, d.token_hash, d.token_hint,
    d.token_rotated_at, d.created_by, d.created_at, d.updated_at,
  );
}

export async function updateDirectory(db: Db, d: DirectoryRow): Promise<void> {
  await db.run(
    `UPDATE scim_directories SET name = ?, default_workspace_id = ?, default_role = ?, status = ?, token_hash = ?, token_hint = ?,
       token_rotated_at = ?, updated_at = ? WHERE id = ? AND organization_id = ?`,
    d.name, d.default_workspace_id, d.default_role, d.status, d.token_hash, d.token_hint, d.token_rotated_at, d.updated_at,
    d.id, d.organization_id,
  );
}

export const directoryById = (db: Db, id: string, read?: RowRead) =>
  db.get<DirectoryRow>(`SELECT * FROM scim_directories WHERE id = ?${lockClause(db, read)}`, id);
export const directoryByTokenHash = (db: Db, hash: string) => db.get<DirectoryRow>('SELECT * FROM scim_directories WHERE token_hash = ?', hash);

export function listDirectories(db: Db, organizationId: string | null): Promise<DirectoryRow[]> {
  return db.all<DirectoryRow>(
    'SELECT * FROM scim_directories WHERE (organization_id = ?1 OR ?1 IS NULL) ORDER BY created_at, id', organizationId);
}

export async function directoryUserCounts(db: Db, directoryId: string): Promise<{ total: number; active: number }> {
  return (await db.get<{ total: number; active: number }>(
    'SELECT count(*) AS total, coalesce(sum(active), 0) AS active FROM scim_users WHERE directory_id = ?', directoryId))!;
}

export async function insertScimUser(db: Db, u: ScimUserRow): Promise<void> {
  await db.run(
    `INSERT INTO scim_users (directory_id, user_id, organization_id, user_name, user_name_key, external_id, given_name, family_name,
       formatted_name, display_name, emails, active, owns_account, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    u.directory_id, u.user_id, u.organization_id, u.user_name, u.user_name_key, u.external_id, u.given_name, u.family_name,
    u.formatted_name, u.display_name, u.emails, u.active, u.owns_account, u.created_at, u.updated_at,
  );
}

export async function updateScimUser(db: Db, u: ScimUserRow): Promise<void> {
  await db.run(
    `UPDATE scim_users SET user_name = ?, user_name_key = ?, external_id = ?, given_name = ?, family_name = ?, formatted_name = ?,
       display_name = ?, emails = ?, active = ?, updated_at = ? WHERE directory_id = ? AND user_id = ?`,
    u.user_name, u.user_name_key, u.external_id, u.given_name, u.family_name, u.formatted_name, u.display_name, u.emails,
    u.active, u.updated_at, u.directory_id, u.user_id,
  );
}

export async function deleteScimUser(db: Db, directoryId: string, userId: string): Promise<void> {
  await db.run('DELETE FROM scim_users WHERE directory_id = ? AND user_id = ?', directoryId, userId);
}

export const scimUser = (db: Db, directoryId: string, userId: string, read?: RowRead) =>
  db.get<ScimUserRow>(`SELECT * FROM scim_users WHERE directory_id = ? AND user_id = ?${lockClause(db, read)}`, directoryId, userId);

export const scimUserByName = (db: Db, directoryId: string, userNameKey: string) =>
  db.get<ScimUserRow>('SELECT * FROM scim_users WHERE directory_id = ? AND user_name_key = ?', directoryId, userNameKey);

export const scimUserByExternalId = (db: Db, directoryId: string, externalId: string) =>
  db.get<ScimUserRow>('SELECT * FROM scim_users WHERE directory_id = ? AND external_id = ?', directoryId, externalId);

/** The link of a user in an organization, whichever of its directories made it. */
export const scimLinkInOrganization = (db: Db, organizationId: string, userId: string) =>
  db.get<ScimUserRow>('SELECT * FROM scim_users WHERE organization_id = ? AND user_id = ?', organizationId, userId);

/**
 * The condition of each supported filter, by attribute and operator: fixed SQL with one `?` for
 * the value (never the filter's text). eq, sw and co on strings; instr() = 1 is "starts with". Made
 * per dialect: the e-mail conditions walk the JSON array of e-mail addresses.
 */
const filterSql = perDialect((d): Record<UserFilter['attribute'], Record<UserFilter['op'], string>> => {
  const email = `lower(${d.jsonText('e.value', 'value')})`;
  const anyEmail = (test: string) => `EXISTS (SELECT 1 FROM ${d.jsonEach('emails', 'e')} WHERE ${test})`;
  return {
    userName: { eq: 'user_name_key = ?', sw: 'instr(user_name_key, ?) = 1', co: 'instr(user_name_key, ?) > 0' },
    externalId: { eq: 'external_id = ?', sw: 'instr(external_id, ?) = 1', co: 'instr(external_id, ?) > 0' },
    id: { eq: 'user_id = ?', sw: 'instr(user_id, ?) = 1', co: 'instr(user_id, ?) > 0' },
    displayName: { eq: 'lower(display_name) = ?', sw: 'instr(lower(display_name), ?) = 1', co: 'instr(lower(display_name), ?) > 0' },
    'emails.value': { eq: anyEmail(`${email} = ?`), sw: anyEmail(`instr(${email}, ?) = 1`), co: anyEmail(`instr(${email}, ?) > 0`) },
  };
});

/** One page of a directory's users (oldest first) and how many match in all. */
export async function listScimUsers(db: Db, directoryId: string, filter: UserFilter | null, offset: number, limit: number): Promise<{ rows: ScimUserRow[]; total: number }> {
  // No stored text holds U+0000 (PostgreSQL's text cannot, and asText refuses it): such a value matches nothing.
  if (filter?.value.includes('\u0000')) return { rows: [], total: 0 };
  const where = filter ? `directory_id = ? AND ${filterSql(db.dialect)[filter.attribute][filter.op]}` : 'directory_id = ?';
  const params = filter ? [directoryId, filter.value] : [directoryId];
  const total = (await db.get<{ n: number }>(`SELECT count(*) AS n FROM scim_users WHERE ${where}`, ...params))!.n;
  const rows = limit === 0 ? [] : await db.all<ScimUserRow>(
    `SELECT * FROM scim_users WHERE ${where} ORDER BY created_at, user_id LIMIT ? OFFSET ?`, ...params, limit, offset);
  return { rows, total };
}

/**
 * Sets every membership of a user in one organization (organization, workspace and project level)
 * from one status to the other; returns how many changed. Deprovisioning makes them inactive
 * (they stop granting access and seats) and reprovisioning restores them as they were.
 */
export async function switchMemberships(db: Db, organizationId: string, userId: string, from: 'active' | 'inactive', to: 'active' | 'inactive'): Promise<number> {
  return (await db.run('UPDATE memberships SET status = ? WHERE organization_id = ? AND user_id = ? AND status = ?',
    to, organizationId, userId, from)).changes;
}

/** A directory-owned account follows the directory's name and e-mail address. */
export async function setAccountIdentity(db: Db, userId: string, email: string, emailNormalized: string, name: string, now: string): Promise<void> {
  await db.run('UPDATE users SET email = ?, email_normalized = ?, name = ?, updated_at = ? WHERE id = ?', email, emailNormalized, name, now, userId);
}
