// Client delivery links, the producer's side: a token shown once and stored as its SHA-256 only,
// with an expiry and revocation (delivery:approve). What a link opens: src/finishing/client/access.ts.
import { requireFeature } from '../../platform/flags/flags.ts';
import type { Ctx } from '../../directory/context.ts';
import { conflict, notFound } from '../../kernel/errors.ts';
import { issueSecret, newId } from '../../kernel/ids.ts';
import { record } from '../../platform/audit/service.ts';
import { LINK_HOURS, type LinkCreate } from './schema.ts';
import { getDelivery } from './service.ts';
import { insertLink, linkOfDelivery, linksOfDelivery, revokeLink, type DeliveryLinkRow } from './store.ts';

export async function createLink(ctx: Ctx, deliveryId: string, input: LinkCreate): Promise<{ link: DeliveryLinkRow; token: string }> {
  return await ctx.db.tx(async () => {
    const d = await getDelivery(ctx, deliveryId);
    if (d.status !== 'approved') throw conflict('delivery_not_approved', `the delivery is ${d.status}; links are made for an approved delivery`, { status: d.status });
    await requireFeature(ctx.db, 'client_delivery_links', d.organization_id);
    const secret = issueSecret('dlk_');
    const now = ctx.now();
    const link: DeliveryLinkRow = {
      id: newId('dll'), delivery_id: d.id, organization_id: d.organization_id, token_hash: secret.hash, label: input.label ?? null,
      expires_at: new Date(now.getTime() + (input.expiresInHours ?? LINK_HOURS.default) * 3_600_000).toISOString(),
      revoked_at: null, revoked_by: null, created_by: ctx.actor.userId, created_at: now.toISOString(), last_used_at: null, download_count: 0,
      allow_export: input.includeExport ? 1 : 0,
    };
    await insertLink(ctx.db, link);
    await record(ctx, { action: 'delivery.link_created', targetType: 'delivery', targetId: d.id, metadata: { linkId: link.id, label: link.label, expiresAt: link.expires_at, includeExport: link.allow_export === 1 } });
    return { link, token: secret.token };
  });
}

export async function listLinks(ctx: Ctx, deliveryId: string): Promise<DeliveryLinkRow[]> {
  return await linksOfDelivery(ctx.db, (await getDelivery(ctx, deliveryId)).id);
}

/** Revokes a link; revoking a revoked link changes nothing. */
export async function revokeLinkOf(ctx: Ctx, deliveryId: string, linkId: string): Promise<DeliveryLinkRow> {
  return await ctx.db.tx(async () => {
    const d = await getDelivery(ctx, deliveryId);
    const link = await linkOfDelivery(ctx.db, d.id, linkId);
    if (!link) throw notFound('no such link of this delivery');
    if (link.revoked_at) return link;
    const at = ctx.now().toISOString();
    await revokeLink(ctx.db, link.id, at, ctx.actor.userId);
    await record(ctx, { action: 'delivery.link_revoked', targetType: 'delivery', targetId: d.id, metadata: { linkId: link.id, label: link.label } });
    return { ...link, revoked_at: at, revoked_by: ctx.actor.userId };
  });
}
