// Deliveries of the current project (delivery:view reads, delivery:approve writes) and their client
// links. What a link's token opens without an account is src/finishing/client/routes.ts.
import { READ_ACCESS } from '../../directory/tenancy/reads.ts';
import { json, type Router } from '../../http/router.ts';
import { serviceOrigin } from '../../identity/scim/admin.ts';
import { DeliveryCreateBody, DeliveryListQuery, DeliveryPatchBody, LinkCreateBody, WithdrawBody } from './schema.ts';
import * as o from '../../kernel/view.ts';
import {
  DeliveryDetailView, DeliveryView, LinkView, NewLinkView, presentDelivery, presentDeliveryDetail, presentLink,
} from './present.ts';
import { approveDelivery, changeDelivery, createDelivery, getDelivery, listDeliveries, withdrawDelivery } from './service.ts';
import { createLink, listLinks, revokeLinkOf } from './links.ts';
import { itemCounts } from './store.ts';

export function bindDeliveryRoutes(router: Router): void {
  const r = router.module(import.meta.url);
  const tags = ['delivery'];
  const view = { tags, scope: 'project' as const, permission: READ_ACCESS.delivery };
  const approve = { tags, scope: 'project' as const, permission: 'delivery:approve' as const };

  r.get('/api/production/deliveries', { ...view, query: DeliveryListQuery, summary: 'Deliveries of the current project, newest first: { items, pagination }; status filter; page, pageSize (default 50, at most 200).',
    response: { description: 'a page of deliveries', schema: o.page(DeliveryView) } },
    async ({ ctx, query }) => {
      const { rows, pagination } = await listDeliveries(ctx, query);
      const counts = await itemCounts(ctx.db, rows.map((d) => d.id));
      return json(200, { items: rows.map((d) => presentDelivery(d, counts.get(d.id) ?? 0)), pagination });
    });

  r.post('/api/production/deliveries', {
    ...approve, body: DeliveryCreateBody, response: { status: 201, description: 'the delivery with its items, verdicts and gaps', schema: DeliveryDetailView },
    summary: 'Create a draft delivery: the newest cut of every episode that has one (default), of episodeIds, or the chosen artifactIds (video, audio, image); each item keeps its SHA-256. 409 nothing_to_deliver when no episode has a cut.',
  }, async ({ ctx, body }) => json(201, await presentDeliveryDetail(ctx.db, await createDelivery(ctx, body))));

  r.get('/api/production/deliveries/:deliveryId', { ...view, summary: 'A delivery: items with their QA and review verdicts on the item\'s SHA-256, the gaps to approval, ready.',
    response: { description: 'the delivery with its items, verdicts and gaps', schema: DeliveryDetailView } },
    async ({ ctx, params }) => json(200, await presentDeliveryDetail(ctx.db, await getDelivery(ctx, params.deliveryId))));

  r.patch('/api/production/deliveries/:deliveryId', {
    ...approve, body: DeliveryPatchBody,
    summary: 'Change a draft: title, note, or a new set (episodeIds or artifactIds: version + 1). 409 delivery_not_draft once approved or withdrawn.',
    response: { description: 'the changed delivery', schema: DeliveryDetailView },
  }, async ({ ctx, params, body }) => json(200, await presentDeliveryDetail(ctx.db, await changeDelivery(ctx, params.deliveryId, body))));

  r.post('/api/production/deliveries/:deliveryId/approve', {
    ...approve,
    summary: 'Approve a draft: every item needs a QA run on its SHA-256 without failing blocking checks and an approved review on it, and its file must still hash to it; else 409 delivery_not_ready with details.gaps.',
    response: { description: 'the approved delivery', schema: DeliveryDetailView },
  }, async ({ ctx, params }) => json(200, await presentDeliveryDetail(ctx.db, await approveDelivery(ctx, params.deliveryId))));

  r.post('/api/production/deliveries/:deliveryId/withdraw', { ...approve, body: WithdrawBody, summary: 'Withdraw a draft or approved delivery (final): its client links stop working.',
    response: { description: 'the withdrawn delivery', schema: DeliveryDetailView } },
    async ({ ctx, params, body }) => json(200, await presentDeliveryDetail(ctx.db, await withdrawDelivery(ctx, params.deliveryId, body.note ?? null))));

  r.post('/api/production/deliveries/:deliveryId/links', {
    ...approve, body: LinkCreateBody, response: { status: 201, description: 'the link with its token (shown only here) and URL', schema: NewLinkView },
    summary: 'A client link of an approved delivery (409 delivery_not_approved otherwise): expiresInHours 1..2160 (default 168), label, includeExport (default false: also open the delivery\'s export package). The token is answered once and stored hashed; url opens the landing page in a browser and the JSON manifest for API clients.',
  }, async ({ ctx, req, params, body }) => {
    const { link, token } = await createLink(ctx, params.deliveryId, body);
    const url = `${serviceOrigin(req, ctx.config)}/api/client/delivery?token=${encodeURIComponent(token)}`;
    return json(201, { ...presentLink(link, ctx.now()), token, url });
  });

  r.get('/api/production/deliveries/:deliveryId/links', {
    ...view, summary: 'The delivery\'s client links, newest first: label, status, expiry, revocation, last use, download count, includeExport; never the token.',
    response: { description: 'the links', schema: o.object({ items: o.array(LinkView) }) },
  },
    async ({ ctx, params }) => json(200, { items: (await listLinks(ctx, params.deliveryId)).map((l) => presentLink(l, ctx.now())) }));

  r.post('/api/production/deliveries/:deliveryId/links/:linkId/revoke', { ...approve, archivedOk: true, summary: 'Revoke a client link (at once; revoking again changes nothing). Allowed on an archived project too: cutting off outside access is never blocked.', response: { description: 'the link, revoked', schema: LinkView } },
    async ({ ctx, params }) => json(200, presentLink(await revokeLinkOf(ctx, params.deliveryId, params.linkId), ctx.now())));
}
