// SQL of user accounts, and the queries of global user governance.
import type { Db } from '../../db/db.ts';
import { lockClause, type RowRead } from '../../db/dialect.ts';
import { likePattern } from '../../db/like.ts';
import { deleteMfa, voidChallengesOf } from '../mfa/store.ts';

export interface UserRow {
  id: string;
  email: string;
  email_normalized: string;
  name: string;
  status: 'active' | 'suspended';
  is_system_admin: number;
  password_hash: string | null;
  password_must_change: number;
  password_changed_at: string | null;
  mfa_enabled: number;
  last_login_at: string | null;
  created_at: string;
  updated_at: string;
}

export const normalizeEmail = (email: string): string => email.trim().toLowerCase();

export async function insertUser(db: Db, u: UserRow): Promise<void> {
  await db.run(
    `INSERT INTO users (id, email, email_normalized, name, status, is_system_admin, password_hash, password_must_change,
       password_changed_at, mfa_enabled, last_login_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    u.id, u.email, u.email_normalized, u.name, u.status, u.is_system_admin, u.password_hash, u.password_must_change,
    u.password_changed_at, u.mfa_enabled, u.last_login_at, u.created_at, u.updated_at,
  );
}

/** The account; `read` { forUpdate } for the change computed from it (inside a transaction, where nothing is cached). */
export function userById(db: Db, id: string, read?: RowRead): Promise<UserRow | undefined> {
  return db.cachedGet<UserRow>(`SELECT * FROM users WHERE id = ?${lockClause(db, read)}`, id);
}

export function userByEmail(db: Db, email: string): Promise<UserRow | undefined> {
  return db.get<UserRow>('SELECT * FROM users WHERE email_normalized = ?', normalizeEmail(email));
}

export async function setPassword(db: Db, id: string, hash: string, mustChange: boolean, now: string): Promise<void> {
  await db.run('UPDATE users SET password_hash = ?, password_must_change = ?, password_changed_at = ?, updated_at = ? WHERE id = ?',
    hash, mustChange ? 1 : 0, now, now, id);
}

export async function setLastLogin(db: Db, id: string, now: string): Promise<void> {
  await db.run('UPDATE users SET last_login_at = ? WHERE id = ?', now, id);
}

export async function updateUserStatus(db: Db, id: string, status: 'active' | 'suspended', now: string): Promise<void> {
  await db.run('UPDATE users SET status = ?, updated_at = ? WHERE id = ?', status, now, id);
}

export async function setSystemAdmin(db: Db, id: string, isSystemAdmin: boolean, now: string): Promise<void> {
  await db.run('UPDATE users SET is_system_admin = ?, updated_at = ? WHERE id = ?', isSystemAdmin ? 1 : 0, now, id);
}

/** Turns MFA off: the TOTP factor (enabled or pending) and the recovery codes are deleted, open MFA challenges voided, users.mfa_enabled cleared. */
export async function clearMfa(db: Db, id: string, now: string): Promise<void> {
  await deleteMfa(db, id, now);
  await voidChallengesOf(db, id, now);
}

export interface UserFilter { query?: string; status?: 'active' | 'suspended'; limit: number; offset: number }

/**
 * One page of users, by e-mail address, and how many match in all. `query` is a substring of the
 * e-mail address or the name, ignoring the case of ASCII letters (other letters match exactly: Dialect.likeAnyCase).
 */
export async function listUsers(db: Db, f: UserFilter): Promise<{ rows: UserRow[]; total: number }> {
  const pattern = f.query ? likePattern(f.query) : null;
  const like = db.dialect.likeAnyCase;
  const where = `WHERE (email_normalized ${like} ?1 ESCAPE '\\' OR name ${like} ?1 ESCAPE '\\' OR ?1 IS NULL)
      AND (status = ?2 OR ?2 IS NULL)`;
  const params = [pattern, f.status ?? null] as const;
  const rows = await db.all<UserRow>(`SELECT * FROM users ${where} ORDER BY email_normalized, id LIMIT ?3 OFFSET ?4`, ...params, f.limit, f.offset);
  const total = (await db.get<{ n: number }>(`SELECT count(*) AS n FROM users ${where}`, ...params))!.n;
  return { rows, total };
}

/** Active accounts holding the system administrator identity, `exceptId` left out. */
export async function countActiveSystemAdmins(db: Db, exceptId: string): Promise<number> {
  return (await db.get<{ n: number }>(
    "SELECT count(*) AS n FROM users WHERE is_system_admin = 1 AND status = 'active' AND id <> ?", exceptId))!.n;
}

/**
 * Organizations in which the user holds an active org_owner membership and no other active
 * account does: suspending the user would leave them without an owner.
 */
export async function organizationsOwnedOnlyBy(db: Db, userId: string): Promise<string[]> {
  return (await db.all<{ organization_id: string }>(
    `SELECT m.organization_id FROM memberships m
      WHERE m.user_id = ?1 AND m.level = 'organization' AND m.role = 'org_owner' AND m.status = 'active'
        AND NOT EXISTS (SELECT 1 FROM memberships o JOIN users u ON u.id = o.user_id
                         WHERE o.organization_id = m.organization_id AND o.level = 'organization' AND o.role = 'org_owner'
                           AND o.status = 'active' AND o.user_id <> ?1 AND u.status = 'active')
      ORDER BY m.created_at, m.id`, userId)).map((r) => r.organization_id);
}
