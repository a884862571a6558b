// SQL of member lists, removals and invitations. Every statement names its organization.
import type { Db } from '../../db/db.ts';
import { lockClause, type RowRead } from '../../db/dialect.ts';
import type { Level } from '../../directory/roles.ts';

export interface MemberRow {
  user_id: string; email: string; name: string; user_status: string; last_login_at: string | null;
  level: Level; role: string; access_mode: string; status: string; created_at: string;
  workspace_id: string | null; project_id: string | null;
}

const MEMBER_COLUMNS = `m.user_id, u.email, u.name, u.status AS user_status, u.last_login_at, m.level, m.role, m.access_mode,
  m.status, m.created_at, m.workspace_id, m.project_id`;

export function membershipsInOrganization(db: Db, organizationId: string): Promise<MemberRow[]> {
  return db.all<MemberRow>(
    `SELECT ${MEMBER_COLUMNS} FROM memberships m JOIN users u ON u.id = m.user_id
      WHERE m.organization_id = ? ORDER BY u.email_normalized, m.level, m.created_at, m.id`, organizationId);
}

export function membershipsAtScope(db: Db, organizationId: string, level: Level, scopeId: string): Promise<MemberRow[]> {
  return db.all<MemberRow>(
    `SELECT ${MEMBER_COLUMNS} FROM memberships m JOIN users u ON u.id = m.user_id
      WHERE m.organization_id = ? AND m.level = ? AND m.scope_id = ? ORDER BY u.email_normalized`, organizationId, level, scopeId);
}

/** Deletes a user's memberships in an organization at or below a scope; returns how many. */
export async function deleteMemberships(db: Db, organizationId: string, userId: string, where: { workspaceId?: string; projectId?: string }): Promise<number> {
  if (where.projectId) {
    return (await db.run("DELETE FROM memberships WHERE organization_id = ? AND user_id = ? AND level = 'project' AND project_id = ?",
      organizationId, userId, where.projectId)).changes;
  }
  if (where.workspaceId) {
    return (await db.run("DELETE FROM memberships WHERE organization_id = ? AND user_id = ? AND level IN ('workspace', 'project') AND workspace_id = ?",
      organizationId, userId, where.workspaceId)).changes;
  }
  return (await db.run('DELETE FROM memberships WHERE organization_id = ? AND user_id = ?', organizationId, userId)).changes;
}

export interface InvitationRow {
  id: string; organization_id: string; workspace_id: string | null; project_id: string | null;
  email: string; email_normalized: string; role: string; status: 'pending' | 'accepted' | 'revoked' | 'expired';
  token_hash: string | null; token_hint: string | null; expires_at: string; invited_by: string | null;
  created_at: string; updated_at: string; accepted_at: string | null; accepted_by: string | null;
  revoked_at: string | null; revoked_by: string | null;
}

export async function insertInvitation(db: Db, r: InvitationRow): Promise<void> {
  await db.run(
    `INSERT INTO invitations (id, organization_id, workspace_id, project_id, email, email_normalized, role, status, token_hash,
       token_hint, expires_at, invited_by, created_at, updated_at, accepted_at, accepted_by, revoked_at, revoked_by)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    r.id, r.organization_id, r.workspace_id, r.project_id, r.email, r.email_normalized, r.role, r.status, r.token_hash,
    r.token_hint, r.expires_at, r.invited_by, r.created_at, r.updated_at, r.accepted_at, r.accepted_by, r.revoked_at, r.revoked_by,
  );
}

export function invitationById(db: Db, organizationId: string, id: string, read?: RowRead): Promise<InvitationRow | undefined> {
  return db.get<InvitationRow>(`SELECT * FROM invitations WHERE organization_id = ? AND id = ?${lockClause(db, read)}`, organizationId, id);
}

export function invitationByTokenHash(db: Db, tokenHash: string, read?: RowRead): Promise<InvitationRow | undefined> {
  return db.get<InvitationRow>(`SELECT * FROM invitations WHERE token_hash = ?${lockClause(db, read)}`, tokenHash);
}

export function pendingInvitationFor(db: Db, organizationId: string, emailNormalized: string): Promise<InvitationRow | undefined> {
  return db.get<InvitationRow>("SELECT * FROM invitations WHERE organization_id = ? AND email_normalized = ? AND status = 'pending'",
    organizationId, emailNormalized);
}

export function invitationsOf(db: Db, organizationId: string, status: string | null): Promise<InvitationRow[]> {
  return db.all<InvitationRow>(
    'SELECT * FROM invitations WHERE organization_id = ? AND (status = ?2 OR ?2 IS NULL) ORDER BY created_at DESC, id', organizationId, status);
}

export async function setInvitationToken(db: Db, id: string, tokenHash: string, hint: string, expiresAt: string, now: string): Promise<void> {
  await db.run("UPDATE invitations SET status = 'pending', token_hash = ?, token_hint = ?, expires_at = ?, updated_at = ? WHERE id = ?",
    tokenHash, hint, expiresAt, now, id);
}

export async function closeInvitation(db: Db, id: string, status: 'accepted' | 'revoked' | 'expired', by: string | null, now: string): Promise<void> {
  await db.run(
    `UPDATE invitations SET status = ?1, token_hash = CASE WHEN ?1 = 'expired' THEN token_hash ELSE NULL END, updated_at = ?3,
       accepted_at = CASE WHEN ?1 = 'accepted' THEN ?3 ELSE accepted_at END, accepted_by = CASE WHEN ?1 = 'accepted' THEN ?2 ELSE accepted_by END,
       revoked_at = CASE WHEN ?1 = 'revoked' THEN ?3 ELSE revoked_at END, revoked_by = CASE WHEN ?1 = 'revoked' THEN ?2 ELSE revoked_by END
     WHERE id = ?4`, status, by, now, id);
}
