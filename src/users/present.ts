// User rows as the API shows them: never a password hash.
import type { UserRow } from './store.ts';

export function presentUser(u: UserRow) {
  return {
    id: u.id,
    email: u.email,
    name: u.name,
    status: u.status,
    isSystemAdmin: u.is_system_admin === 1,
    passwordChangeRequired: u.password_must_change === 1,
    lastLoginAt: u.last_login_at,
    createdAt: u.created_at,
  };
}
