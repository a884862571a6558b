// Notifications: notify(ctx, event) computes the recipients, writes one inbox row per recipient whose
// preference for the category is on, and queues one outbox delivery per enabled organization channel
// that takes the category, all in the caller's transaction. The inbox API reads and marks the current
// user's notifications in the current organization and the workspaces and projects they can see.
//
// Recipients (only active users; a notification about a project or workspace goes only to users who
// can see it):
//   - explicit `recipients` (e.g. a task's assignee): exactly those users, dropped when they cannot see
//     the event's scope; the default rule below is not applied;
//   - otherwise, by category, the members who hold a permission in the event's scope (organization,
//     workspace or project; organization owners and admins hold every one):
//       generation_jobs     queue:manage  (producers, owners, admins)
//       review              qa:review     (producers, art directors, reviewers, project editors, owners, admins)
//       delivery            delivery:approve (producers, owners, admins)
//       collaboration_tasks task:manage   (producers, project editors, owners, admins)
//       organization_access organization:members:invite (owners, admins)
//       usage_quota         quota:manage  (owners, admins)
//       system_notices      every member who can see the scope
//     The system administrator identity counts only through memberships here.
// A disabled preference means no row for that user; turning it back on does not back-fill.
import type { Ctx } from '../../directory/context.ts';
import { newId } from '../../kernel/ids.ts';
import { notFound } from '../../kernel/errors.ts';
import { record } from '../audit/service.ts';
import { effectivePermissions, hasPermission, type MembershipRow, type Permission, type ScopeIds } from '../../directory/roles.ts';
import { isOrgAdmin, scopeStillVisible } from '../../directory/tenancy/scope.ts';
import { organizationById, projectById, workspaceById } from '../../directory/tenancy/store.ts';
import type { Db } from '../../db/db.ts';
import { pokeDelivery } from './delivery.ts';
import { pageWindow } from '../../kernel/validate.ts';
import { pageOfLink } from '../../kernel/links.ts';
import {
  countInbox, disabledUsers, enabledChannelsOf, insertNotification, insertOutbox, listInbox, markVisibleRead, namedUserRows,
  organizationMemberRows, preferencesOf, setReadAt, upsertPreference, visibleNotification,
  type CandidateRow, type InboxOwner, type NotificationRow, type Visibility,
} from './store.ts';

export const NOTIFICATION_CATEGORIES = [
  'generation_jobs', 'review', 'delivery', 'collaboration_tasks', 'organization_access', 'usage_quota', 'system_notices',
] as const;
export type NotificationCategory = (typeof NOTIFICATION_CATEGORIES)[number];

export const CATEGORY_LABELS: Record<NotificationCategory, string> = {
  generation_jobs: 'Generation jobs', review: 'Review', delivery: 'Delivery', collaboration_tasks: 'Collaboration tasks',
  organization_access: 'Organization access', usage_quota: 'Usage and quota', system_notices: 'System notices',
};

const DEFAULT_RULE: Record<NotificationCategory, Permission | null> = {
  generation_jobs: 'queue:manage', review: 'qa:review', delivery: 'delivery:approve', collaboration_tasks: 'task:manage',
  organization_access: 'organization:members:invite', usage_quota: 'quota:manage', system_notices: null,
};

export const isCategory = (c: string): c is NotificationCategory => (NOTIFICATION_CATEGORIES as readonly string[]).includes(c);

export interface NotificationEvent {
  category: NotificationCategory;
  /** Dotted event type, e.g. 'task.assigned', 'job.failed'. */
  type: string;
  organizationId: string;
  workspaceId?: string | null;
  projectId?: string | null;
  subject: string;
  body?: string | null;
  /**
   * The console page of the event's object, built by consoleLinks (src/kernel/links.ts), e.g.
   * '/tasks/tsk_...?project=prj_...'; a link that opens no console page is a programming error.
   */
  link?: string | null;
  /** Explicit recipients (user ids); without them the category's default rule applies. */
  recipients?: string[];
}

const TYPE = /^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*$/;
const cut = (s: string | null | undefined, max: number) => (s == null || s === '' ? null : s.length > max ? `${s.slice(0, max - 1)}\u2026` : s);

/** The event's organization, workspace and project, checked against each other (a mismatch is a programming error). */
async function eventScope(db: Db, e: NotificationEvent): Promise<ScopeIds> {
  if (!await organizationById(db, e.organizationId)) throw new Error(`notify: unknown organization ${e.organizationId}`);
  if (e.projectId) {
    const p = await projectById(db, e.projectId);
    if (!p || p.organization_id !== e.organizationId || (e.workspaceId && e.workspaceId !== p.workspace_id)) {
      throw new Error(`notify: project ${e.projectId} is not in the event's organization or workspace`);
    }
    return { organizationId: p.organization_id, workspaceId: p.workspace_id, projectId: p.id };
  }
  if (e.workspaceId) {
    const w = await workspaceById(db, e.workspaceId);
    if (!w || w.organization_id !== e.organizationId) throw new Error(`notify: workspace ${e.workspaceId} is not in organization ${e.organizationId}`);
    return { organizationId: w.organization_id, workspaceId: w.id, projectId: null };
  }
  return { organizationId: e.organizationId, workspaceId: null, projectId: null };
}

function groupByUser(rows: CandidateRow[]): Map<string, { isSystemAdmin: boolean; memberships: MembershipRow[] }> {
  const users = new Map<string, { isSystemAdmin: boolean; memberships: MembershipRow[] }>();
  for (const r of rows) {
    let u = users.get(r.user_id);
    if (!u) users.set(r.user_id, (u = { isSystemAdmin: r.is_system_admin === 1, memberships: [] }));
    if (r.level) u.memberships.push(r as MembershipRow);
  }
  return users;
}

function canSee(isSystemAdmin: boolean, ms: MembershipRow[], s: ScopeIds): boolean {
  const actor = { type: 'user' as const, userId: null, name: '', email: null, isSystemAdmin, sessionId: null, sessionKind: null };
  return scopeStillVisible(actor, ms, s);
}

/** The user ids an event goes to, before preferences (see the rules at the top of this file). */
export async function recipientsOf(db: Db, e: NotificationEvent, scope: ScopeIds): Promise<string[]> {
  const orgId = scope.organizationId!;
  if (e.recipients) {
    const named = groupByUser(await namedUserRows(db, orgId, [...new Set(e.recipients)]));
    return e.recipients.filter((id, i) => e.recipients!.indexOf(id) === i)
      .filter((id) => { const u = named.get(id); return !!u && canSee(u.isSystemAdmin, u.memberships, scope); });
  }
  const rule = DEFAULT_RULE[e.category];
  const out: string[] = [];
  for (const [userId, u] of groupByUser(await organizationMemberRows(db, orgId))) {
    if (!canSee(false, u.memberships, scope)) continue;
    if (rule && !hasPermission(effectivePermissions(false, u.memberships, scope), rule)) continue;
    out.push(userId);
  }
  return out;
}

/**
 * Records an event: inbox rows for the recipients whose preference is on, and one outbox delivery per
 * enabled channel of the organization that takes the category. Runs in the caller's transaction (or
 * its own); the delivery loop is woken after the commit. Returns the number of inbox rows written.
 */
export async function notify(ctx: Ctx, event: NotificationEvent): Promise<number> {
  if (!isCategory(event.category)) throw new Error(`notify: unknown category ${String(event.category)}`);
  if (!TYPE.test(event.type) || event.type.length > 100) throw new Error(`notify: invalid event type ${event.type}`);
  if (event.link && (event.link.length > 2000 || pageOfLink(event.link) === null)) throw new Error(`notify: the link ${event.link} opens no console page`);
  return await ctx.db.tx(async () => {
    const scope = await eventScope(ctx.db, event);
    const eventId = newId('evt');
    const now = ctx.now().toISOString();
    const subject = cut(event.subject, 300) ?? event.type;
    const body = cut(event.body, 4000);
    const link = event.link || null;
    const disabled = await disabledUsers(ctx.db, scope.organizationId!, event.category);
    let written = 0;
    for (const userId of await recipientsOf(ctx.db, event, scope)) {
      if (disabled.has(userId)) continue;
      await insertNotification(ctx.db, {
        id: newId('ntf'), user_id: userId, organization_id: scope.organizationId!, workspace_id: scope.workspaceId, project_id: scope.projectId,
        event_id: eventId, category: event.category, type: event.type, subject, body, link, read_at: null, created_at: now,
      });
      written++;
    }
    const payload = JSON.stringify({
      type: event.type, timestamp: now,
      data: { eventId, category: event.category, ...scope, subject, body, link },
    });
    let queued = 0;
    for (const ch of await enabledChannelsOf(ctx.db, scope.organizationId!)) {
      const cats = JSON.parse(ch.categories) as string[];
      if (cats.length && !cats.includes(event.category)) continue;
      await insertOutbox(ctx.db, {
        id: newId('msg'), channel_id: ch.id, organization_id: ch.organization_id, event_id: eventId, category: event.category, type: event.type,
        payload, status: 'pending', attempts: 0, next_attempt_at: now, lease_until: null, last_attempt_at: null, last_status_code: null,
        last_error: null, delivered_at: null, created_at: now,
      });
      queued++;
    }
    if (queued) await ctx.afterCommit(() => pokeDelivery(ctx.db));
    return written;
  });
}

// ---- the current user's inbox ----

function visibilityOf(ctx: Ctx, organizationId: string): Visibility {
  if (isOrgAdmin(ctx.actor, ctx.memberships, organizationId)) return { all: true };
  const here = ctx.memberships.filter((m) => m.organization_id === organizationId);
  const ws = here.filter((m) => m.level === 'workspace');
  return {
    all: false,
    workspaces: ws.map((m) => m.workspace_id!),
    fullWorkspaces: ws.filter((m) => m.access_mode === 'full' && m.role !== 'project_guest').map((m) => m.workspace_id!),
    projects: here.filter((m) => m.level === 'project').map((m) => m.project_id!),
  };
}

function inboxOf(ctx: Ctx): InboxOwner {
  const organizationId = ctx.scope.organizationId!;
  return { userId: ctx.actor.userId!, organizationId, visibility: visibilityOf(ctx, organizationId) };
}

export interface InboxPage { items: NotificationRow[]; unreadCount: number; total: number; limit: number }

/** limit is clamped to 1..200 (default 50); unreadOnly narrows the list, never unreadCount. */
export async function listNotifications(ctx: Ctx, q: { limit?: number; unreadOnly?: boolean }): Promise<InboxPage> {
  const limit = pageWindow(1, q.limit).pageSize;
  const owner = inboxOf(ctx);
  const unreadOnly = q.unreadOnly === true;
  return {
    items: await listInbox(ctx.db, owner, unreadOnly, limit),
    unreadCount: await countInbox(ctx.db, owner, true),
    total: await countInbox(ctx.db, owner, unreadOnly),
    limit,
  };
}

/** Another user's, another organization's or an invisible workspace's notification is 404. */
export async function setNotificationRead(ctx: Ctx, id: string, read: boolean): Promise<NotificationRow> {
  const owner = inboxOf(ctx);
  return await ctx.db.tx(async () => {
    const n = await visibleNotification(ctx.db, owner, id);
    if (!n) throw notFound('no such notification');
    const readAt = read ? (n.read_at ?? ctx.now().toISOString()) : null;
    if (readAt !== n.read_at) await setReadAt(ctx.db, owner.userId, id, readAt);
    return { ...n, read_at: readAt };
  });
}

export function markAllRead(ctx: Ctx): Promise<number> {
  return markVisibleRead(ctx.db, inboxOf(ctx), ctx.now().toISOString());
}

export interface Preference { category: NotificationCategory; enabled: boolean; updatedAt: string | null }

export async function preferences(ctx: Ctx): Promise<Preference[]> {
  const stored = new Map((await preferencesOf(ctx.db, ctx.actor.userId!, ctx.scope.organizationId!)).map((p) => [p.category, p]));
  return NOTIFICATION_CATEGORIES.map((category) => {
    const p = stored.get(category);
    return { category, enabled: p ? p.enabled === 1 : true, updatedAt: p?.updated_at ?? null };
  });
}

/** Unknown category: 404 (the category is the resource named by the path). */
export async function setPreference(ctx: Ctx, category: string, enabled: boolean): Promise<Preference> {
  if (!isCategory(category)) throw notFound(`no notification category ${category}; categories: ${NOTIFICATION_CATEGORIES.join(', ')}`);
  const now = ctx.now().toISOString();
  const organizationId = ctx.scope.organizationId!;
  await ctx.db.tx(async () => {
    const before = (await preferencesOf(ctx.db, ctx.actor.userId!, organizationId)).find((p) => p.category === category);
    await upsertPreference(ctx.db, { user_id: ctx.actor.userId!, organization_id: organizationId, category, enabled: enabled ? 1 : 0, updated_at: now });
    if ((before ? before.enabled === 1 : true) !== enabled) {
      await record(ctx, {
        action: 'notification.preference_changed', targetType: 'notification_preference', targetId: `${ctx.actor.userId}:${category}`,
        organizationId, workspaceId: null, projectId: null, metadata: { category, enabled },
      });
    }
  });
  return { category, enabled, updatedAt: now };
}
