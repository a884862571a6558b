// SQL of notifications: the inbox, preferences, organization channels, their allow-list and the
// delivery outbox. Every inbox query names its user and organization.
import type { Db } from '../../db/db.ts';
import { lockClause, type Dialect, type RowRead } from '../../db/dialect.ts';
import type { Level, Role } from '../../directory/roles.ts';

export interface NotificationRow {
  id: string; user_id: string; organization_id: string; workspace_id: string | null; project_id: string | null;
  event_id: string; category: string; type: string; subject: string; body: string | null; link: string | null;
  read_at: string | null; created_at: string;
}

export interface PreferenceRow { user_id: string; organization_id: string; category: string; enabled: number; updated_at: string }

export interface ChannelRow {
  id: string; organization_id: string; kind: 'log' | 'webhook'; url: string | null; description: string; enabled: number;
  categories: string; secret_encrypted: string | null; secret_hint: string | null;
  created_at: string; created_by: string | null; updated_at: string;
}

export interface AllowListRow { id: string; organization_id: string; cidr: string; description: string; created_at: string; created_by: string | null }

export interface OutboxRow {
  id: string; channel_id: string; organization_id: string; event_id: string; category: string; type: string; payload: string;
  status: 'pending' | 'delivered' | 'failed'; attempts: number; next_attempt_at: string; lease_until: string | null;
  last_attempt_at: string | null; last_status_code: number | null; last_error: string | null; delivered_at: string | null; created_at: string;
}

// ---- inbox ----

/** Which of the organization's notifications a user may see: all (owners, admins) or by workspace and project. */
export type Visibility =
  | { all: true }
  | { all: false; workspaces: string[]; fullWorkspaces: string[]; projects: string[] };

export interface InboxOwner { userId: string; organizationId: string; visibility: Visibility }

function inboxWhere(d: Dialect, o: InboxOwner, unreadOnly: boolean): { sql: string; params: string[] } {
  let sql = 'user_id = ? AND organization_id = ?';
  const params = [o.userId, o.organizationId];
  const v = o.visibility;
  if (!v.all) {
    const values = d.jsonValues('?');
    sql += ` AND (workspace_id IS NULL OR (workspace_id IN (SELECT value FROM ${values})
      AND (project_id IS NULL OR workspace_id IN (SELECT value FROM ${values}) OR project_id IN (SELECT value FROM ${values}))))`;
    params.push(JSON.stringify(v.workspaces), JSON.stringify(v.fullWorkspaces), JSON.stringify(v.projects));
  }
  if (unreadOnly) sql += ' AND read_at IS NULL';
  return { sql, params };
}

export async function insertNotification(db: Db, n: NotificationRow): Promise<void> {
  await db.run(
    `INSERT INTO notifications (id, user_id, organization_id, workspace_id, project_id, event_id, category, type, subject, body, link, read_at, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    n.id, n.user_id, n.organization_id, n.workspace_id, n.project_id, n.event_id, n.category, n.type, n.subject, n.body, n.link, n.read_at, n.created_at,
  );
}

export async function listInbox(db: Db, o: InboxOwner, unreadOnly: boolean, limit: number): Promise<NotificationRow[]> {
  const w = inboxWhere(db.dialect, o, unreadOnly);
  return await db.all<NotificationRow>(`SELECT * FROM notifications WHERE ${w.sql} ORDER BY created_at DESC, id DESC LIMIT ?`, ...w.params, limit);
}

export async function countInbox(db: Db, o: InboxOwner, unreadOnly: boolean): Promise<number> {
  const w = inboxWhere(db.dialect, o, unreadOnly);
  return (await db.get<{ n: number }>(`SELECT count(*) AS n FROM notifications WHERE ${w.sql}`, ...w.params))!.n;
}

export async function visibleNotification(db: Db, o: InboxOwner, id: string): Promise<NotificationRow | undefined> {
  const w = inboxWhere(db.dialect, o, false);
  return await db.get<NotificationRow>(`SELECT * FROM notifications WHERE id = ? AND ${w.sql}`, id, ...w.params);
}

export async function setReadAt(db: Db, userId: string, id: string, readAt: string | null): Promise<void> {
  await db.run('UPDATE notifications SET read_at = ? WHERE id = ? AND user_id = ?', readAt, id, userId);
}

export async function markVisibleRead(db: Db, o: InboxOwner, readAt: string): Promise<number> {
  const w = inboxWhere(db.dialect, o, true);
  return (await db.run(`UPDATE notifications SET read_at = ? WHERE ${w.sql}`, readAt, ...w.params)).changes;
}

// ---- recipients and preferences ----

export interface CandidateRow {
  user_id: string; is_system_admin: number;
  level: Level | null; role: Role | null; organization_id: string | null; workspace_id: string | null; project_id: string | null;
  access_mode: 'full' | 'project-only' | null;
}

const CANDIDATE_COLUMNS = `u.id AS user_id, u.is_system_admin, m.level, m.role, m.organization_id, m.workspace_id, m.project_id, m.access_mode`;

/** Active users with an active membership in the organization, one row per membership. */
export function organizationMemberRows(db: Db, organizationId: string): Promise<CandidateRow[]> {
  return db.all<CandidateRow>(
    `SELECT ${CANDIDATE_COLUMNS} FROM memberships m JOIN users u ON u.id = m.user_id
      WHERE m.organization_id = ? AND m.status = 'active' AND u.status = 'active' ORDER BY m.created_at, m.id`, organizationId);
}

/** The named active users with their active memberships in the organization (none: a row with null membership). */
export function namedUserRows(db: Db, organizationId: string, userIds: string[]): Promise<CandidateRow[]> {
  return db.all<CandidateRow>(
    `SELECT ${CANDIDATE_COLUMNS} FROM users u
       LEFT JOIN memberships m ON m.user_id = u.id AND m.organization_id = ? AND m.status = 'active'
      WHERE u.status = 'active' AND u.id IN (SELECT value FROM ${db.dialect.jsonValues('?')})`, organizationId, JSON.stringify(userIds));
}

export async function disabledUsers(db: Db, organizationId: string, category: string): Promise<Set<string>> {
  return new Set((await db.all<{ user_id: string }>(
    'SELECT user_id FROM notification_preferences WHERE organization_id = ? AND category = ? AND enabled = 0', organizationId, category,
  )).map((r) => r.user_id));
}

export function preferencesOf(db: Db, userId: string, organizationId: string): Promise<PreferenceRow[]> {
  return db.all<PreferenceRow>('SELECT * FROM notification_preferences WHERE user_id = ? AND organization_id = ?', userId, organizationId);
}

export async function upsertPreference(db: Db, p: PreferenceRow): Promise<void> {
  await db.run(
    `INSERT INTO notification_preferences (user_id, organization_id, category, enabled, updated_at) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (user_id, organization_id, category) DO UPDATE SET enabled = excluded.enabled, updated_at = excluded.updated_at`,
    p.user_id, p.organization_id, p.category, p.enabled, p.updated_at,
  );
}

// ---- channels and allow-list ----

export async function insertChannel(db: Db, c: ChannelRow): Promise<void> {
  await db.run(
    `INSERT INTO notification_channels (id, organization_id, kind, url, description, enabled, categories, secret_encrypted, secret_hint,
       created_at, created_by, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    c.id, c.organization_id, c.kind, c.url, c.description, c.enabled, c.categories, c.secret_encrypted, c.secret_hint,
    c.created_at, c.created_by, c.updated_at,
  );
}

export async function updateChannel(db: Db, c: ChannelRow): Promise<void> {
  await db.run(
    `UPDATE notification_channels SET url = ?, description = ?, enabled = ?, categories = ?, secret_encrypted = ?, secret_hint = ?, updated_at = ?
      WHERE id = ? AND organization_id = ?`,
    c.url, c.description, c.enabled, c.categories, c.secret_encrypted, c.secret_hint, c.updated_at, c.id, c.organization_id,
  );
}

export async function deleteChannel(db: Db, organizationId: string, id: string): Promise<void> {
  await db.run('DELETE FROM notification_channels WHERE id = ? AND organization_id = ?', id, organizationId);
}

export const channelById = (db: Db, id: string, read?: RowRead) =>
  db.get<ChannelRow>(`SELECT * FROM notification_channels WHERE id = ?${lockClause(db, read)}`, id);

export async function channelsOf(db: Db, organizationId: string | null): Promise<ChannelRow[]> {
  return organizationId
    ? await db.all<ChannelRow>('SELECT * FROM notification_channels WHERE organization_id = ? ORDER BY created_at, id', organizationId)
    : await db.all<ChannelRow>('SELECT * FROM notification_channels ORDER BY organization_id, created_at, id');
}

export function enabledChannelsOf(db: Db, organizationId: string): Promise<ChannelRow[]> {
  return db.all<ChannelRow>('SELECT * FROM notification_channels WHERE organization_id = ? AND enabled = 1 ORDER BY created_at, id', organizationId);
}

export async function insertAllowListEntry(db: Db, e: AllowListRow): Promise<void> {
  await db.run('INSERT INTO notification_allow_list (id, organization_id, cidr, description, created_at, created_by) VALUES (?, ?, ?, ?, ?, ?)',
    e.id, e.organization_id, e.cidr, e.description, e.created_at, e.created_by);
}

export const allowListEntryById = (db: Db, id: string) => db.get<AllowListRow>('SELECT * FROM notification_allow_list WHERE id = ?', id);

export function allowListEntry(db: Db, organizationId: string, cidr: string): Promise<AllowListRow | undefined> {
  return db.get<AllowListRow>('SELECT * FROM notification_allow_list WHERE organization_id = ? AND cidr = ?', organizationId, cidr);
}

export async function deleteAllowListEntry(db: Db, organizationId: string, id: string): Promise<void> {
  await db.run('DELETE FROM notification_allow_list WHERE id = ? AND organization_id = ?', id, organizationId);
}

export async function allowListOf(db: Db, organizationId: string | null): Promise<AllowListRow[]> {
  return organizationId
    ? await db.all<AllowListRow>('SELECT * FROM notification_allow_list WHERE organization_id = ? ORDER BY created_at, id', organizationId)
    : await db.all<AllowListRow>('SELECT * FROM notification_allow_list ORDER BY organization_id, created_at, id');
}

// ---- outbox ----

export async function insertOutbox(db: Db, o: OutboxRow): Promise<void> {
  await db.run(
    `INSERT INTO notification_outbox (id, channel_id, organization_id, event_id, category, type, payload, status, attempts, next_attempt_at,
       lease_until, last_attempt_at, last_status_code, last_error, delivered_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    o.id, o.channel_id, o.organization_id, o.event_id, o.category, o.type, o.payload, o.status, o.attempts, o.next_attempt_at,
    o.lease_until, o.last_attempt_at, o.last_status_code, o.last_error, o.delivered_at, o.created_at,
  );
}

export const outboxById = (db: Db, id: string) => db.get<OutboxRow>('SELECT * FROM notification_outbox WHERE id = ?', id);

/**
 * Claims up to `limit` due rows in one statement: pending, due, and not leased (or with a lease that
 * expired because its process died). The lease keeps another process or loop from sending them too;
 * on PostgreSQL the picked rows are locked while claimed (db.dialect.skipLocked), so that two claims at
 * once take different rows.
 */
export async function claimDue(db: Db, now: string, leaseUntil: string, limit: number): Promise<OutboxRow[]> {
  // Materialized once: PostgreSQL could run a locking subquery again and lease more than `limit`.
  const rows = await db.all<OutboxRow>(
    `WITH picked AS MATERIALIZED (
       SELECT id FROM notification_outbox
        WHERE status = 'pending' AND next_attempt_at <= ?2 AND (lease_until IS NULL OR lease_until <= ?2)
        ORDER BY next_attempt_at, id LIMIT ?3${db.dialect.skipLocked})
     UPDATE notification_outbox SET lease_until = ?1 WHERE id IN (SELECT id FROM picked)
     RETURNING *`, leaseUntil, now, limit);
  return rows.sort((a, b) => (a.next_attempt_at < b.next_attempt_at ? -1 : a.next_attempt_at > b.next_attempt_at ? 1 : 0));
}

/** When the next pending row becomes claimable (null: nothing pending). */
export async function nextDueAt(db: Db): Promise<string | null> {
  return (await db.get<{ t: string | null }>(
    "SELECT min(max(next_attempt_at, coalesce(lease_until, ''))) AS t FROM notification_outbox WHERE status = 'pending'"))!.t;
}

export interface AttemptOutcome {
  status: OutboxRow['status']; attempts: number; nextAttemptAt: string; at: string;
  statusCode: number | null; error: string | null; deliveredAt: string | null;
}

export async function finishAttempt(db: Db, id: string, o: AttemptOutcome): Promise<void> {
  await db.run(
    `UPDATE notification_outbox SET status = ?, attempts = ?, next_attempt_at = ?, lease_until = NULL, last_attempt_at = ?,
       last_status_code = ?, last_error = ?, delivered_at = ? WHERE id = ? AND status = 'pending'`,
    o.status, o.attempts, o.nextAttemptAt, o.at, o.statusCode, o.error, o.deliveredAt, id,
  );
}

export async function deliveriesOf(db: Db, channelId: string, status: string | null, limit: number, offset: number): Promise<{ rows: OutboxRow[]; total: number }> {
  const where = status ? 'channel_id = ? AND status = ?' : 'channel_id = ?';
  const params = status ? [channelId, status] : [channelId];
  return {
    rows: await db.all<OutboxRow>(`SELECT * FROM notification_outbox WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`, ...params, limit, offset),
    total: (await db.get<{ n: number }>(`SELECT count(*) AS n FROM notification_outbox WHERE ${where}`, ...params))!.n,
  };
}
