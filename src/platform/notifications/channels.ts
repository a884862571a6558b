// Organization channels (system administrator): a local JSON-lines log (DATA_DIR/notifications/<orgId>.jsonl)
// or a webhook. A webhook's secret is answered once, at creation and on rotation, and is never shown,
// logged or audited afterwards. The allow-list names public destinations (CIDR ranges) an organization's
// webhooks may reach; private and loopback ones need no entry. Every change is audited.
import type { Ctx } from '../../directory/context.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { RowRead } from '../../db/dialect.ts';
import { newId } from '../../kernel/ids.ts';
import { conflict, notFound, validationFailed } from '../../kernel/errors.ts';
import { record } from '../audit/service.ts';
import { organizationById } from '../../directory/tenancy/store.ts';
import { paging } from '../../kernel/validate.ts';
import { pokeDelivery } from './delivery.ts';
import { classifyAddress, parseCidr } from '../../kernel/addresses.ts';
import { urlProblem } from '../../kernel/egress.ts';
import { encryptSecret, newWebhookSecret, secretHint } from './secrets.ts';
import type { NotificationCategory } from './service.ts';
import * as store from './store.ts';
import type { AllowListRow, ChannelRow, OutboxRow } from './store.ts';

export interface ChannelInput {
  organizationId: string;
  kind: 'log' | 'webhook';
  url?: string;
  description?: string;
  enabled?: boolean;
  categories?: NotificationCategory[];
}
export type ChannelPatch = Partial<Pick<ChannelInput, 'url' | 'description' | 'enabled' | 'categories'>>;

async function organizationOrFail(ctx: Ctx, organizationId: string): Promise<void> {
  if (!await organizationById(ctx.db, organizationId)) throw validationFailed({ organizationId: 'names no organization' });
}

function checkUrl(url: string): void {
  const problem = urlProblem(url);
  if (problem) throw validationFailed({ url: problem });
}

const audit = (ctx: Ctx, action: string, c: ChannelRow, metadata: Record<string, unknown> = {}) =>
  record(ctx, {
    action, targetType: 'notification_channel', targetId: c.id, organizationId: c.organization_id, workspaceId: null, projectId: null,
    metadata: { kind: c.kind, ...(c.url ? { host: new URL(c.url).host } : {}), ...metadata },
  });

/** The channel; `read` { forUpdate } for the change computed from it (src/db/dialect.ts RowRead). */
export async function channelOrFail(ctx: Ctx, id: string, read?: RowRead): Promise<ChannelRow> {
  const c = await store.channelById(ctx.db, id, read);
  if (!c) throw notFound('no such notification channel');
  return c;
}

export function listChannels(ctx: Ctx, organizationId: string | null): Promise<ChannelRow[]> {
  return store.channelsOf(ctx.db, organizationId);
}

/** Creates a channel; a webhook gets its secret, answered here once. */
export async function createChannel(ctx: Ctx, input: ChannelInput): Promise<{ channel: ChannelRow; secret: string | null }> {
  await organizationOrFail(ctx, input.organizationId);
  if (input.kind === 'webhook' && !input.url) throw validationFailed({ url: 'is required for a webhook channel' });
  if (input.kind === 'log' && input.url) throw validationFailed({ url: 'is not used by a log channel' });
  if (input.url) checkUrl(input.url);
  const secret = input.kind === 'webhook' ? newWebhookSecret() : null;
  const now = ctx.now().toISOString();
  const channel: ChannelRow = {
    id: newId('nch'), organization_id: input.organizationId, kind: input.kind, url: input.url ?? null,
    description: input.description ?? '', enabled: input.enabled === false ? 0 : 1, categories: JSON.stringify([...new Set(input.categories ?? [])]),
    secret_encrypted: secret ? encryptSecret(ctx.config, secret) : null, secret_hint: secret ? secretHint(secret) : null,
    created_at: now, created_by: ctx.actor.userId, updated_at: now,
  };
  await ctx.db.tx(async () => {
    await store.insertChannel(ctx.db, channel);
    await audit(ctx, 'notification.channel_created', channel, { enabled: channel.enabled === 1, categories: JSON.parse(channel.categories) });
  });
  return { channel, secret };
}

export async function updateChannel(ctx: Ctx, id: string, patch: ChannelPatch): Promise<ChannelRow> {
  return await ctx.db.tx(async () => {
    const before = await channelOrFail(ctx, id, { forUpdate: true });
    if (patch.url !== undefined) {
      if (before.kind === 'log') throw validationFailed({ url: 'is not used by a log channel' });
      checkUrl(patch.url);
    }
    const next: ChannelRow = {
      ...before,
      url: patch.url ?? before.url,
      description: patch.description ?? before.description,
      enabled: patch.enabled === undefined ? before.enabled : patch.enabled ? 1 : 0,
      categories: patch.categories ? JSON.stringify([...new Set(patch.categories)]) : before.categories,
      updated_at: ctx.now().toISOString(),
    };
    await store.updateChannel(ctx.db, next);
    const changed = (['url', 'description', 'enabled', 'categories'] as const).filter((k) => next[k] !== before[k]);
    if (changed.length) await audit(ctx, 'notification.channel_updated', next, { changed, enabled: next.enabled === 1 });
    return next;
  });
}

export async function deleteChannel(ctx: Ctx, id: string): Promise<void> {
  await ctx.db.tx(async () => {
    const c = await channelOrFail(ctx, id);
    await store.deleteChannel(ctx.db, c.organization_id, c.id);
    await audit(ctx, 'notification.channel_deleted', c);
  });
}

/** A new secret (answered once); the old one stops signing at once, pending retries included. */
export async function rotateSecret(ctx: Ctx, id: string): Promise<{ channel: ChannelRow; secret: string }> {
  return await ctx.db.tx(async () => {
    const c = await channelOrFail(ctx, id, { forUpdate: true });
    if (c.kind !== 'webhook') throw conflict('not_a_webhook', 'only webhook channels have a secret');
    const secret = newWebhookSecret();
    const next = { ...c, secret_encrypted: encryptSecret(ctx.config, secret), secret_hint: secretHint(secret), updated_at: ctx.now().toISOString() };
    await store.updateChannel(ctx.db, next);
    await audit(ctx, 'notification.channel_secret_rotated', next);
    return { channel: next, secret };
  });
}

/** Queues a `channel.test` event (category system_notices) for this channel only (409 channel_disabled when off). */
export async function testChannel(ctx: Ctx, id: string): Promise<OutboxRow> {
  const c = await channelOrFail(ctx, id);
  if (!c.enabled) throw conflict('channel_disabled', 'enable the channel first');
  const now = ctx.now().toISOString();
  const eventId = newId('evt');
  const row: OutboxRow = {
    id: newId('msg'), channel_id: c.id, organization_id: c.organization_id, event_id: eventId, category: 'system_notices', type: 'channel.test',
    payload: JSON.stringify({
      type: 'channel.test', timestamp: now,
      data: { eventId, category: 'system_notices', organizationId: c.organization_id, workspaceId: null, projectId: null, subject: 'Test event', body: null, link: null },
    }),
    status: 'pending', attempts: 0, next_attempt_at: now, lease_until: null, last_attempt_at: null, last_status_code: null,
    last_error: null, delivered_at: null, created_at: now,
  };
  await ctx.db.tx(async () => {
    await store.insertOutbox(ctx.db, row);
    await audit(ctx, 'notification.channel_tested', c, { deliveryId: row.id });
  });
  await ctx.afterCommit(() => pokeDelivery(ctx.db));
  return row;
}

export async function channelDeliveries(ctx: Ctx, id: string, status: string | null, searchParams: URLSearchParams) {
  const c = await channelOrFail(ctx, id);
  const { page, pageSize, offset } = paging(searchParams);
  const { rows, total } = await store.deliveriesOf(ctx.db, c.id, status, pageSize, offset);
  return { rows, pagination: { page, pageSize, total } };
}

// ---- allow-list ----

export function listAllowList(ctx: Ctx, organizationId: string | null): Promise<AllowListRow[]> {
  return store.allowListOf(ctx.db, organizationId);
}

export async function addAllowListEntry(ctx: Ctx, input: { organizationId: string; cidr: string; description?: string }): Promise<AllowListRow> {
  await organizationOrFail(ctx, input.organizationId);
  const parsed = parseCidr(input.cidr);
  if (!parsed) throw validationFailed({ cidr: 'must be an IPv4 or IPv6 address or CIDR range (prefix at least /8 or /16)' });
  if (classifyAddress(parsed.address) === 'refused') throw validationFailed({ cidr: 'link-local, metadata and reserved addresses are always refused' });
  return await ctx.db.tx(async () => {
    if (await store.allowListEntry(ctx.db, input.organizationId, parsed.cidr)) throw conflict('allow_list_entry_exists', `${parsed.cidr} is already allowed`);
    const e: AllowListRow = {
      id: newId('nal'), organization_id: input.organizationId, cidr: parsed.cidr, description: input.description ?? '',
      created_at: ctx.now().toISOString(), created_by: ctx.actor.userId,
    };
    try {
      await store.insertAllowListEntry(ctx.db, e);
    } catch (err) {
      // Added by another transaction after the check (PostgreSQL: it commits in between).
      if (isUniqueViolation(err)) throw conflict('allow_list_entry_exists', `${parsed.cidr} is already allowed`);
      throw err;
    }
    await record(ctx, {
      action: 'notification.allow_list_added', targetType: 'notification_allow_list', targetId: e.id,
      organizationId: e.organization_id, workspaceId: null, projectId: null, metadata: { cidr: e.cidr },
    });
    return e;
  });
}

export async function removeAllowListEntry(ctx: Ctx, id: string): Promise<void> {
  await ctx.db.tx(async () => {
    const e = await store.allowListEntryById(ctx.db, id);
    if (!e) throw notFound('no such allow-list entry');
    await store.deleteAllowListEntry(ctx.db, e.organization_id, e.id);
    await record(ctx, {
      action: 'notification.allow_list_removed', targetType: 'notification_allow_list', targetId: e.id,
      organizationId: e.organization_id, workspaceId: null, projectId: null, metadata: { cidr: e.cidr },
    });
  });
}
