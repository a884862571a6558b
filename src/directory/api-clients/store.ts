// SQL of API clients (service accounts) and their access tokens (schema 9: api_clients,
// api_client_tokens). Secrets are only ever stored as SHA-256, access tokens as their keyed hash
// (src/directory/sessions/token-hash.ts).
import type { Db } from '../../db/db.ts';

export interface ApiClientRow {
  id: string; organization_id: string; workspace_id: string | null; project_id: string | null; name: string;
  /** JSON array of permissions. */
  permissions: string; secret_hash: string; secret_hint: string; status: 'active' | 'revoked';
  created_by: string | null; created_at: string; rotated_at: string | null; revoked_at: string | null; revoked_by: string | null;
  last_used_at: string | null;
}

/** An access token with its client, as authentication reads it. */
export interface ApiClientTokenRow extends ApiClientRow { token_expires_at: string }

export async function insertApiClient(db: Db, c: ApiClientRow): Promise<void> {
  await db.run(
    `INSERT INTO api_clients (id, organization_id, workspace_id, project_id, name, permissions, secret_hash, secret_hint, status,
       created_by, created_at, rotated_at, revoked_at, revoked_by, last_used_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    c.id, c.organization_id, c.workspace_id, c.project_id, c.name, c.permissions, c.secret_hash, c.secret_hint, c.status,
    c.created_by, c.created_at, c.rotated_at, c.revoked_at, c.revoked_by, c.last_used_at,
  );
}

export const apiClientById = (db: Db, id: string) => db.get<ApiClientRow>('SELECT * FROM api_clients WHERE id = ?', id);

export function listApiClients(db: Db, organizationId: string | null, status: string | null): Promise<ApiClientRow[]> {
  return db.all<ApiClientRow>(
    `SELECT * FROM api_clients WHERE (organization_id = ?1 OR ?1 IS NULL) AND (status = ?2 OR ?2 IS NULL)
      ORDER BY created_at, id`, organizationId, status);
}

export async function setApiClientSecret(db: Db, c: Pick<ApiClientRow, 'id' | 'organization_id'>, hash: string, hint: string, now: string): Promise<void> {
  await db.run('UPDATE api_clients SET secret_hash = ?, secret_hint = ?, rotated_at = ? WHERE id = ? AND organization_id = ?',
    hash, hint, now, c.id, c.organization_id);
}

export async function revokeApiClientRow(db: Db, c: Pick<ApiClientRow, 'id' | 'organization_id'>, now: string, by: string | null): Promise<void> {
  await db.run("UPDATE api_clients SET status = 'revoked', revoked_at = ?, revoked_by = ? WHERE id = ? AND organization_id = ?",
    now, by, c.id, c.organization_id);
}

export async function touchApiClient(db: Db, id: string, now: string): Promise<void> {
  await db.run('UPDATE api_clients SET last_used_at = ? WHERE id = ?', now, id);
}

export async function insertApiClientToken(db: Db, t: { token_hash: string; client_id: string; expires_at: string; created_at: string }): Promise<void> {
  await db.run('INSERT INTO api_client_tokens (token_hash, client_id, expires_at, created_at) VALUES (?, ?, ?, ?)',
    t.token_hash, t.client_id, t.expires_at, t.created_at);
}

/** Every token of the client (rotation, revocation). */
export async function deleteApiClientTokens(db: Db, clientId: string): Promise<number> {
  return (await db.run('DELETE FROM api_client_tokens WHERE client_id = ?', clientId)).changes;
}

export async function deleteExpiredApiClientTokens(db: Db, clientId: string, now: string): Promise<void> {
  await db.run('DELETE FROM api_client_tokens WHERE client_id = ? AND expires_at <= ?', clientId, now);
}

/** The token's client (any status; the caller decides), through the read cache like sessions. */
export function apiClientByTokenHash(db: Db, tokenHash: string): Promise<ApiClientTokenRow | undefined> {
  return db.cachedGet<ApiClientTokenRow>(
    `SELECT c.*, t.expires_at AS token_expires_at FROM api_client_tokens t JOIN api_clients c ON c.id = t.client_id
      WHERE t.token_hash = ?`, tokenHash);
}
