// SQL of sessions. A session row holds the SHA-256 of its token, never the token.
import type { Db } from '../../db/db.ts';

export interface SessionRow {
  id: string;
  token_hash: string;
  user_id: string;
  kind: 'bearer' | 'browser';
  created_at: string;
  last_seen_at: string;
  expires_at: string;
  revoked_at: string | null;
  revoked_reason: string | null;
  ip: string | null;
  user_agent: string | null;
  organization_id: string | null;
  workspace_id: string | null;
  project_id: string | null;
}

export interface SessionWithUser extends SessionRow {
  user_name: string;
  user_email: string;
  user_status: 'active' | 'suspended';
  user_is_system_admin: number;
  user_password_must_change: number;
}

export async function insertSession(db: Db, s: SessionRow): Promise<void> {
  await db.run(
    `INSERT INTO sessions (id, token_hash, user_id, kind, created_at, last_seen_at, expires_at, revoked_at, revoked_reason,
       ip, user_agent, organization_id, workspace_id, project_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    s.id, s.token_hash, s.user_id, s.kind, s.created_at, s.last_seen_at, s.expires_at, s.revoked_at, s.revoked_reason,
    s.ip, s.user_agent, s.organization_id, s.workspace_id, s.project_id,
  );
}

/** The session of a token (through the read cache: revocations write, so they empty it). */
export function sessionByTokenHash(db: Db, tokenHash: string): Promise<SessionWithUser | undefined> {
  return db.cachedGet<SessionWithUser>(
    `SELECT s.*, u.name AS user_name, u.email AS user_email, u.status AS user_status,
            u.is_system_admin AS user_is_system_admin, u.password_must_change AS user_password_must_change
       FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.token_hash = ?`, tokenHash);
}

export async function touchSession(db: Db, id: string, now: string): Promise<void> {
  await db.run('UPDATE sessions SET last_seen_at = ? WHERE id = ?', now, id);
}

export async function setSessionScope(db: Db, id: string, org: string | null, ws: string | null, project: string | null): Promise<void> {
  await db.run('UPDATE sessions SET organization_id = ?, workspace_id = ?, project_id = ? WHERE id = ?', org, ws, project, id);
}

export async function revokeSessionById(db: Db, userId: string, id: string, now: string, reason: string): Promise<number> {
  return (await db.run('UPDATE sessions SET revoked_at = ?, revoked_reason = ? WHERE id = ? AND user_id = ? AND revoked_at IS NULL',
    now, reason, id, userId)).changes;
}

/** Revokes every live session of a user except `exceptId`; returns how many. */
export async function revokeUserSessions(db: Db, userId: string, now: string, reason: string, exceptId: string | null = null): Promise<number> {
  return (await db.run(
    'UPDATE sessions SET revoked_at = ?, revoked_reason = ? WHERE user_id = ? AND revoked_at IS NULL AND id IS DISTINCT FROM ?',
    now, reason, userId, exceptId)).changes;
}

/** Sessions neither revoked, past their absolute expiry, idle since before `idleCutoff`, nor created before `createdAfter`. */
export function liveSessionsOfUser(db: Db, userId: string, now: string, idleCutoff: string, createdAfter = ''): Promise<SessionRow[]> {
  return db.all<SessionRow>(
    `SELECT * FROM sessions WHERE user_id = ? AND revoked_at IS NULL AND expires_at > ? AND last_seen_at > ? AND created_at > ?
      ORDER BY created_at DESC, id`, userId, now, idleCutoff, createdAfter);
}

export function sessionOfUser(db: Db, userId: string, id: string): Promise<SessionRow | undefined> {
  return db.get<SessionRow>('SELECT * FROM sessions WHERE id = ? AND user_id = ?', id, userId);
}
