// SQL of user accounts.
import type { Db } from '../db/db.ts';

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
  last_login_at: string | null;
  created_at: string;
  updated_at: string;
}

export const normalizeEmail = (email: string): string => email.trim().toLowerCase();

export function insertUser(db: Db, u: UserRow): void {
  db.run(
    `INSERT INTO users (id, email, email_normalized, name, status, is_system_admin, password_hash, password_must_change,
       password_changed_at, last_login_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    u.id, u.email, u.email_normalized, u.name, u.status, u.is_system_admin, u.password_hash, u.password_must_change,
    u.password_changed_at, u.last_login_at, u.created_at, u.updated_at,
  );
}

export function userById(db: Db, id: string): UserRow | undefined {
  return db.cachedGet<UserRow>('SELECT * FROM users WHERE id = ?', id);
}

export function userByEmail(db: Db, email: string): UserRow | undefined {
  return db.get<UserRow>('SELECT * FROM users WHERE email_normalized = ?', normalizeEmail(email));
}

export function setPassword(db: Db, id: string, hash: string, mustChange: boolean, now: string): void {
  db.run('UPDATE users SET password_hash = ?, password_must_change = ?, password_changed_at = ?, updated_at = ? WHERE id = ?',
    hash, mustChange ? 1 : 0, now, now, id);
}

export function setLastLogin(db: Db, id: string, now: string): void {
  db.run('UPDATE users SET last_login_at = ? WHERE id = ?', now, id);
}

export function updateUserStatus(db: Db, id: string, status: 'active' | 'suspended', now: string): void {
  db.run('UPDATE users SET status = ?, updated_at = ? WHERE id = ?', status, now, id);
}
