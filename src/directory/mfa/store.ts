// SQL of TOTP factors, recovery codes and MFA challenges. Secrets are ciphertext, codes and tokens
// SHA-256 hashes: nothing here can be replayed from a copy of the database.
import type { Db } from '../../db/db.ts';

export interface FactorRow {
  user_id: string;
  status: 'pending' | 'enabled';
  secret_enc: Uint8Array;
  key_id: string;
  last_used_step: number | null;
  last_used_at: string | null;
  created_at: string;
  enabled_at: string | null;
  updated_at: string;
}

export interface ChallengeRow {
  id: string;
  token_hash: string;
  user_id: string;
  purpose: 'login' | 'enrollment';
  session_kind: 'bearer' | 'browser';
  method: string;
  failed_attempts: number;
  created_at: string;
  expires_at: string;
  locked_at: string | null;
  consumed_at: string | null;
  ip: string | null;
}

export function factorOf(db: Db, userId: string): Promise<FactorRow | undefined> {
  return db.get<FactorRow>('SELECT * FROM mfa_factors WHERE user_id = ?', userId);
}

/** A new pending factor, replacing a pending one (never an enabled one: callers check first). */
export async function putPendingFactor(db: Db, userId: string, secretEnc: Buffer, keyId: string, now: string): Promise<void> {
  await db.run(
    `INSERT INTO mfa_factors (user_id, status, secret_enc, key_id, last_used_step, last_used_at, created_at, enabled_at, updated_at)
     VALUES (?, 'pending', ?, ?, NULL, NULL, ?, NULL, ?)
     ON CONFLICT (user_id) DO UPDATE SET status = 'pending', secret_enc = excluded.secret_enc, key_id = excluded.key_id,
       last_used_step = NULL, last_used_at = NULL, created_at = excluded.created_at, enabled_at = NULL, updated_at = excluded.updated_at
     WHERE mfa_factors.status = 'pending'`,
    userId, secretEnc, keyId, now, now);
}

export async function enableFactor(db: Db, userId: string, step: number, now: string): Promise<void> {
  await db.run(`UPDATE mfa_factors SET status = 'enabled', last_used_step = ?, last_used_at = ?, enabled_at = ?, updated_at = ?
           WHERE user_id = ? AND status = 'pending'`, step, now, now, now, userId);
  await db.run('UPDATE users SET mfa_enabled = 1, updated_at = ? WHERE id = ?', now, userId);
}

/** Records the step of an accepted code; 0 changes when a concurrent use got there first. */
export async function markStepUsed(db: Db, userId: string, step: number, now: string): Promise<number> {
  return (await db.run(`UPDATE mfa_factors SET last_used_step = ?, last_used_at = ?, updated_at = ?
                  WHERE user_id = ? AND (last_used_step IS NULL OR last_used_step < ?)`, step, now, now, userId, step)).changes;
}

export async function touchFactorUse(db: Db, userId: string, now: string): Promise<void> {
  await db.run('UPDATE mfa_factors SET last_used_at = ?, updated_at = ? WHERE user_id = ?', now, now, userId);
}

export async function deletePendingFactor(db: Db, userId: string): Promise<number> {
  return (await db.run("DELETE FROM mfa_factors WHERE user_id = ? AND status = 'pending'", userId)).changes;
}

/** Removes the factor and the recovery codes, and clears users.mfa_enabled. */
export async function deleteMfa(db: Db, userId: string, now: string): Promise<{ factor: boolean; recoveryCodes: number }> {
  const factor = (await db.run('DELETE FROM mfa_factors WHERE user_id = ?', userId)).changes > 0;
  const recoveryCodes = (await db.run('DELETE FROM mfa_recovery_codes WHERE user_id = ?', userId)).changes;
  await db.run('UPDATE users SET mfa_enabled = 0, updated_at = ? WHERE id = ?', now, userId);
  return { factor, recoveryCodes };
}

export async function replaceRecoveryCodes(db: Db, userId: string, codes: Array<{ id: string; hash: string }>, now: string): Promise<void> {
  await db.run('DELETE FROM mfa_recovery_codes WHERE user_id = ?', userId);
  for (const c of codes) {
    await db.run('INSERT INTO mfa_recovery_codes (id, user_id, code_hash, created_at, used_at) VALUES (?, ?, ?, ?, NULL)', c.id, userId, c.hash, now);
  }
}

/** Spends an unused recovery code; false when there is none with that hash. */
export async function useRecoveryCode(db: Db, userId: string, hash: string, now: string): Promise<boolean> {
  return (await db.run('UPDATE mfa_recovery_codes SET used_at = ? WHERE user_id = ? AND code_hash = ? AND used_at IS NULL', now, userId, hash)).changes === 1;
}

export async function recoveryCodesLeft(db: Db, userId: string): Promise<number> {
  return (await db.get<{ n: number }>('SELECT count(*) AS n FROM mfa_recovery_codes WHERE user_id = ? AND used_at IS NULL', userId))!.n;
}

export async function insertChallenge(db: Db, c: ChallengeRow): Promise<void> {
  await db.run(
    `INSERT INTO mfa_challenges (id, token_hash, user_id, purpose, session_kind, method, failed_attempts, created_at, expires_at,
       locked_at, consumed_at, ip) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    c.id, c.token_hash, c.user_id, c.purpose, c.session_kind, c.method, c.failed_attempts, c.created_at, c.expires_at,
    c.locked_at, c.consumed_at, c.ip);
}

export function challengeByTokenHash(db: Db, tokenHash: string): Promise<ChallengeRow | undefined> {
  return db.get<ChallengeRow>('SELECT * FROM mfa_challenges WHERE token_hash = ?', tokenHash);
}

/** Counts a wrong code; locks the challenge when it reaches `lockAt`. Returns the new count. */
export async function failChallenge(db: Db, id: string, lockAt: number, now: string): Promise<number> {
  await db.run(
    `UPDATE mfa_challenges SET failed_attempts = failed_attempts + 1,
       locked_at = CASE WHEN failed_attempts + 1 >= ? THEN ? ELSE locked_at END
     WHERE id = ?`, lockAt, now, id);
  return (await db.get<{ failed_attempts: number }>('SELECT failed_attempts FROM mfa_challenges WHERE id = ?', id))?.failed_attempts ?? lockAt;
}

/** Marks the challenge used; false when it was used (or locked) meanwhile. */
/** True while a challenge is neither used nor locked (read inside the redeeming transaction). */
export async function challengeOpen(db: Db, id: string): Promise<boolean> {
  return await db.get('SELECT 1 AS x FROM mfa_challenges WHERE id = ? AND consumed_at IS NULL AND locked_at IS NULL', id) !== undefined;
}

export async function consumeChallenge(db: Db, id: string, now: string): Promise<boolean> {
  return (await db.run('UPDATE mfa_challenges SET consumed_at = ? WHERE id = ? AND consumed_at IS NULL AND locked_at IS NULL', now, id)).changes === 1;
}

/** Removes challenges that expired before `before` (kept a while for the throttle and for audit detail). */
export async function deleteOldChallenges(db: Db, before: string): Promise<void> {
  await db.run('DELETE FROM mfa_challenges WHERE expires_at < ?', before);
}

/** Open challenges of a user are void once MFA changes under them (reset, disable). */
export async function voidChallengesOf(db: Db, userId: string, now: string): Promise<void> {
  await db.run('UPDATE mfa_challenges SET consumed_at = ? WHERE user_id = ? AND consumed_at IS NULL', now, userId);
}
