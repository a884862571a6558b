// SQL of the identity policy: one row (absent = defaults) and the organizations whose members must use
// MFA. The reads go through the read cache: session validation asks for the lifetimes on every request.
import type { Config } from '../../kernel/config.ts';
import type { Db } from '../../db/db.ts';
import { lockClause, type RowRead } from '../../db/dialect.ts';

export interface PolicyRow {
  mfa_required: number;
  password_min_length: number;
  password_breached_check: number;
  session_idle_minutes: number | null;
  session_absolute_hours: number | null;
  updated_at: string | null;
  updated_by: string | null;
}

export const DEFAULT_POLICY: Readonly<PolicyRow> = Object.freeze({
  mfa_required: 0, password_min_length: 12, password_breached_check: 1,
  session_idle_minutes: null, session_absolute_hours: null, updated_at: null, updated_by: null,
});

/**
 * The policy; `read` { forUpdate } for the change computed from it (src/db/dialect.ts RowRead). The
 * lock needs the row: before the first change there is none, and two first changes at once both start
 * from the defaults.
 */
export async function policyRow(db: Db, read?: RowRead): Promise<PolicyRow> {
  return await db.cachedGet<PolicyRow>(
    `SELECT mfa_required, password_min_length, password_breached_check, session_idle_minutes, session_absolute_hours,
            updated_at, updated_by FROM identity_policy WHERE id = 1${lockClause(db, read)}`) ?? DEFAULT_POLICY;
}

export async function savePolicyRow(db: Db, p: PolicyRow): Promise<void> {
  await db.run(
    `INSERT INTO identity_policy (id, mfa_required, password_min_length, password_breached_check, session_idle_minutes,
       session_absolute_hours, updated_at, updated_by) VALUES (1, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (id) DO UPDATE SET mfa_required = excluded.mfa_required, password_min_length = excluded.password_min_length,
       password_breached_check = excluded.password_breached_check, session_idle_minutes = excluded.session_idle_minutes,
       session_absolute_hours = excluded.session_absolute_hours, updated_at = excluded.updated_at, updated_by = excluded.updated_by`,
    p.mfa_required, p.password_min_length, p.password_breached_check, p.session_idle_minutes, p.session_absolute_hours,
    p.updated_at, p.updated_by);
}

export async function mfaOrganizations(db: Db): Promise<string[]> {
  return (await db.cachedAll<{ organization_id: string }>('SELECT organization_id FROM identity_policy_mfa_organizations ORDER BY organization_id'))
    .map((r) => r.organization_id);
}

export async function replaceMfaOrganizations(db: Db, ids: readonly string[], now: string): Promise<void> {
  await db.run('DELETE FROM identity_policy_mfa_organizations');
  for (const id of ids) await db.run('INSERT INTO identity_policy_mfa_organizations (organization_id, created_at) VALUES (?, ?)', id, now);
}

/** True when the policy makes the user use MFA: for everyone, or through an active membership of a listed organization. */
export async function mfaRequiredFor(db: Db, userId: string): Promise<boolean> {
  if ((await policyRow(db)).mfa_required === 1) return true;
  return await db.get<{ x: number }>(
    `SELECT 1 AS x FROM memberships m JOIN identity_policy_mfa_organizations p ON p.organization_id = m.organization_id
      WHERE m.user_id = ? AND m.status = 'active' LIMIT 1`, userId) !== undefined;
}

export interface SessionLifetimes { idleMinutes: number; absoluteHours: number }

/** The session lifetimes in force: the policy's when set, else SVC_SESSION_IDLE_MINUTES / SVC_SESSION_ABSOLUTE_HOURS. */
export async function sessionLifetimes(db: Db, config: Config): Promise<SessionLifetimes> {
  const p = await policyRow(db);
  return {
    idleMinutes: p.session_idle_minutes ?? config.sessionIdleMinutes,
    absoluteHours: p.session_absolute_hours ?? config.sessionAbsoluteHours,
  };
}

export interface PasswordRules { minLength: number; breachedCheck: boolean }

export async function passwordRules(db: Db): Promise<PasswordRules> {
  const p = await policyRow(db);
  return { minLength: p.password_min_length, breachedCheck: p.password_breached_check === 1 };
}
