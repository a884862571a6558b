// SQL of single sign-on: identity providers, one-time flow states, one-time login tickets (bound to the
// browser of their flow by the flow cookie's hash) and the identities providers vouch for. Flow states and tickets are found by the SHA-256 of their handle and
// taken with one atomic statement (single use, unexpired): a flow state is deleted as it is read
// (DELETE ... RETURNING), a ticket is marked used (UPDATE ... RETURNING).
import type { Db } from '../../db/db.ts';
import { lockClause, type RowRead } from '../../db/dialect.ts';

export interface ProviderRow {
  id: string; kind: 'oidc' | 'saml'; name: string; organization_id: string; workspace_id: string | null; default_role: string;
  status: 'active' | 'disabled'; config: string; created_by: string | null; created_at: string; updated_at: string;
  probed_at: string | null; probe_status: 'ok' | 'failed' | null; probe_detail: string | null;
}

export function providerById(db: Db, id: string, read?: RowRead): Promise<ProviderRow | undefined> {
  return db.get<ProviderRow>(`SELECT * FROM identity_providers WHERE id = ?${lockClause(db, read)}`, id);
}

/** The provider, when it exists, is of this kind and is active (the sign-in routes' one test). */
export const activeOfKind = (p: ProviderRow | undefined | null, kind: ProviderRow['kind']): p is ProviderRow =>
  p != null && p.kind === kind && p.status === 'active';

export function listProviders(db: Db, f: { organizationId?: string | null; status?: 'active' | 'disabled' } = {}): Promise<ProviderRow[]> {
  return db.all<ProviderRow>(
    `SELECT * FROM identity_providers WHERE (organization_id = ?1 OR ?1 IS NULL) AND (status = ?2 OR ?2 IS NULL)
      ORDER BY lower(name), id`, f.organizationId ?? null, f.status ?? null);
}

/** The id of a provider (any organization) whose clientSecretRef or idpCertRef names `variable`, if any. */
export async function providerReadingVariable(db: Db, variable: string): Promise<string | undefined> {
  const d = db.dialect;
  return (await db.get<{ id: string }>(
    `SELECT id FROM identity_providers
      WHERE ${d.jsonText('config', 'clientSecretRef')} = ?1 OR ${d.jsonText('config', 'idpCertRef')} = ?1 LIMIT 1`, variable))?.id;
}

export async function insertProvider(db: Db, p: ProviderRow): Promise<void> {
  await db.run(
    `INSERT INTO identity_providers (id, kind, name, organization_id, workspace_id, default_role, status, config, created_by,
       created_at, updated_at, probed_at, probe_status, probe_detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    p.id, p.kind, p.name, p.organization_id, p.workspace_id, p.default_role, p.status, p.config, p.created_by,
    p.created_at, p.updated_at, p.probed_at, p.probe_status, p.probe_detail);
}

/** Name, binding, role, status and configuration (kind and organization are fixed). */
export async function updateProvider(db: Db, p: ProviderRow): Promise<void> {
  await db.run(
    `UPDATE identity_providers SET name = ?, workspace_id = ?, default_role = ?, status = ?, config = ?, updated_at = ?,
       probed_at = ?, probe_status = ?, probe_detail = ? WHERE id = ?`,
    p.name, p.workspace_id, p.default_role, p.status, p.config, p.updated_at, p.probed_at, p.probe_status, p.probe_detail, p.id);
}

export async function setProbeResult(db: Db, id: string, at: string, status: 'ok' | 'failed', detail: string): Promise<void> {
  await db.run('UPDATE identity_providers SET probed_at = ?, probe_status = ?, probe_detail = ? WHERE id = ?', at, status, detail, id);
}

export async function identityCounts(db: Db): Promise<Map<string, number>> {
  const rows = await db.all<{ provider_id: string; n: number }>('SELECT provider_id, count(*) AS n FROM sso_identities GROUP BY provider_id');
  return new Map(rows.map((r) => [r.provider_id, r.n]));
}

// Flow states ------------------------------------------------------------------------------------

export interface FlowStateRow {
  handle_hash: string; provider_id: string; kind: 'oidc' | 'saml'; payload: string; created_at: string; expires_at: string;
}

export async function insertFlowState(db: Db, s: FlowStateRow): Promise<void> {
  await db.run('INSERT INTO sso_states (handle_hash, provider_id, kind, payload, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)',
    s.handle_hash, s.provider_id, s.kind, s.payload, s.created_at, s.expires_at);
}

/**
 * Deletes the state of that kind and returns it, in one statement (single use: a second take finds
 * nothing); undefined when unknown, of another kind (left in place), or expired (deleted all the same).
 */
export async function takeFlowStateRow(db: Db, handleHash: string, kind: 'oidc' | 'saml', now: string): Promise<Pick<FlowStateRow, 'provider_id' | 'kind' | 'payload'> | undefined> {
  const row = await db.get<Pick<FlowStateRow, 'provider_id' | 'kind' | 'payload' | 'expires_at'>>(
    'DELETE FROM sso_states WHERE handle_hash = ?1 AND kind = ?2 RETURNING provider_id, kind, payload, expires_at', handleHash, kind);
  if (!row || row.expires_at <= now) return undefined;
  return { provider_id: row.provider_id, kind: row.kind, payload: row.payload };
}

/** Forgets flow states that expired at or before `now` (they can no longer be used), and states marked used. */
export async function purgeExpiredStates(db: Db, now: string): Promise<void> {
  await db.run('DELETE FROM sso_states WHERE expires_at <= ?', now);
}

/** Forgets tickets that expired before `before` (they can no longer be used). */
export async function purgeExpiredTickets(db: Db, before: string): Promise<void> {
  await db.run('DELETE FROM sso_tickets WHERE expires_at < ?', before);
}

// Tickets ----------------------------------------------------------------------------------------

/** `browser_hash`: the SHA-256 of the flow cookie of the browser the ticket was issued to (null: not bound). */
export interface TicketRow {
  ticket_hash: string; user_id: string; provider_id: string; return_to: string | null; created_at: string; expires_at: string; used_at: string | null;
  browser_hash: string | null;
}

export async function insertTicket(db: Db, t: TicketRow): Promise<void> {
  await db.run('INSERT INTO sso_tickets (ticket_hash, user_id, provider_id, return_to, created_at, expires_at, used_at, browser_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    t.ticket_hash, t.user_id, t.provider_id, t.return_to, t.created_at, t.expires_at, t.used_at, t.browser_hash);
}

/** Marks the ticket used and returns it, in one statement; undefined when unknown, used or expired. */
export function takeTicketRow(db: Db, ticketHash: string, now: string): Promise<TicketRow | undefined> {
  return db.get<TicketRow>(
    'UPDATE sso_tickets SET used_at = ?2 WHERE ticket_hash = ?1 AND used_at IS NULL AND expires_at > ?2 RETURNING *', ticketHash, now);
}

// Identities -------------------------------------------------------------------------------------

export interface SsoIdentityRow {
  provider_id: string; subject: string; user_id: string; email: string | null; created_at: string; last_login_at: string | null;
}

export function identityBySubject(db: Db, providerId: string, subject: string): Promise<SsoIdentityRow | undefined> {
  return db.get<SsoIdentityRow>('SELECT * FROM sso_identities WHERE provider_id = ? AND subject = ?', providerId, subject);
}

export async function insertIdentity(db: Db, i: SsoIdentityRow): Promise<void> {
  await db.run('INSERT INTO sso_identities (provider_id, subject, user_id, email, created_at, last_login_at) VALUES (?, ?, ?, ?, ?, ?)',
    i.provider_id, i.subject, i.user_id, i.email, i.created_at, i.last_login_at);
}

export async function touchIdentity(db: Db, providerId: string, subject: string, email: string | null, at: string): Promise<void> {
  await db.run('UPDATE sso_identities SET last_login_at = ?, email = coalesce(?, email) WHERE provider_id = ? AND subject = ?', at, email, providerId, subject);
}
