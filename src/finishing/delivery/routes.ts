// Deliveries of the current project (delivery:view reads, delivery:approve writes), their client
// links, and the public client side that a link's token opens without an account: the landing page
// (a browser, by Accept) or the JSON manifest, the files, and the export package when the link
// includes it.
import { READ_ACCESS } from '../../directory/tenancy/reads.ts';
import type { IncomingMessage } from 'node:http';
import { json, type Reply, type Router } from '../../http/router.ts';
import { contentReply, fileResponse, isDownload } from '../../http/content.ts';
import { ARTIFACT_MEDIA_TYPES } from '../../media-tools/evidence.ts';
import { serviceOrigin } from '../../identity/scim/admin.ts';
import { AppError } from '../../kernel/errors.ts';
import { clientDeliveryPage, wantsHtml } from '../../http/static.ts';
import { ClientFileQuery, ClientQuery, DeliveryCreateBody, DeliveryListQuery, DeliveryPatchBody, LinkCreateBody, WithdrawBody } from './schema.ts';
import { PACKAGE_FILE_TYPES } from '../export/download.ts';
import * as o from '../../kernel/view.ts';
import {
  ClientManifestView, DeliveryDetailView, DeliveryView, LinkView, NewLinkView, presentDelivery, presentDeliveryDetail, presentLink,
} from './present.ts';
import { approveDelivery, changeDelivery, createDelivery, getDelivery, listDeliveries, withdrawDelivery } from './service.ts';
import {
  accessOfToken, CLIENT_EXPORT_ARCHIVE, CLIENT_EXPORT_FILE, clientExportReply, clientFile, clientManifest, createLink, listLinks, recordDownload,
  revokeLinkOf,
} from './links.ts';
import { itemCounts } from './store.ts';

const BASE = '/api/production/deliveries';
/** The token travels in the URL: never send it on as a Referer. */
const CLIENT_HEADERS = { 'referrer-policy': 'no-referrer' };

const tokenOf = (req: IncomingMessage, query: { token?: string }) => {
  const h = req.headers['x-delivery-token'];
  return typeof h === 'string' && h !== '' ? h : query.token;
};

export function bindDeliveryRoutes(r: Router): void {
  const tags = ['delivery'];
  const view = { tags, scope: 'project' as const, permission: READ_ACCESS.delivery };
  const approve = { tags, scope: 'project' as const, permission: 'delivery:approve' as const };

  r.get(BASE, { ...view, query: DeliveryListQuery, summary: 'Deliveries of the current project, newest first: { items, pagination }; status filter; page, pageSize (default 50, at most 200).',
    response: { description: 'a page of deliveries', schema: o.page(DeliveryView) } },
    ({ ctx, query }) => {
      const { rows, pagination } = listDeliveries(ctx, query);
      const counts = itemCounts(ctx.db, rows.map((d) => d.id));
      return json(200, { items: rows.map((d) => presentDelivery(d, counts.get(d.id) ?? 0)), pagination });
    });

  r.post(BASE, {
    ...approve, body: DeliveryCreateBody, response: { status: 201, description: 'the delivery with its items, verdicts and gaps', schema: DeliveryDetailView },
    summary: 'Create a draft delivery: the newest cut of every episode that has one (default), of episodeIds, or the chosen artifactIds (video, audio, image); each item keeps its SHA-256. 409 nothing_to_deliver when no episode has a cut.',
  }, ({ ctx, body }) => json(201, presentDeliveryDetail(ctx.db, createDelivery(ctx, body))));

  r.get(`${BASE}/:deliveryId`, { ...view, summary: 'A delivery: items with their QA and review verdicts on the item\'s SHA-256, the gaps to approval, ready.',
    response: { description: 'the delivery with its items, verdicts and gaps', schema: DeliveryDetailView } },
    ({ ctx, params }) => json(200, presentDeliveryDetail(ctx.db, getDelivery(ctx, params.deliveryId))));

  r.patch(`${BASE}/:deliveryId`, {
    ...approve, body: DeliveryPatchBody,
    summary: 'Change a draft: title, note, or a new set (episodeIds or artifactIds: version + 1). 409 delivery_not_draft once approved or withdrawn.',
    response: { description: 'the changed delivery', schema: DeliveryDetailView },
  }, ({ ctx, params, body }) => json(200, presentDeliveryDetail(ctx.db, changeDelivery(ctx, params.deliveryId, body))));

  r.post(`${BASE}/:deliveryId/approve`, {
    ...approve,
    summary: 'Approve a draft: every item needs a QA run on its SHA-256 without failing blocking checks and an approved review on it, and its file must still hash to it; else 409 delivery_not_ready with details.gaps.',
    response: { description: 'the approved delivery', schema: DeliveryDetailView },
  }, async ({ ctx, params }) => json(200, presentDeliveryDetail(ctx.db, await approveDelivery(ctx, params.deliveryId))));

  r.post(`${BASE}/:deliveryId/withdraw`, { ...approve, body: WithdrawBody, summary: 'Withdraw a draft or approved delivery (final): its client links stop working.',
    response: { description: 'the withdrawn delivery', schema: DeliveryDetailView } },
    ({ ctx, params, body }) => json(200, presentDeliveryDetail(ctx.db, withdrawDelivery(ctx, params.deliveryId, body.note ?? null))));

  r.post(`${BASE}/:deliveryId/links`, {
    ...approve, body: LinkCreateBody, response: { status: 201, description: 'the link with its token (shown only here) and URL', schema: NewLinkView },
    summary: 'A client link of an approved delivery (409 delivery_not_approved otherwise): expiresInHours 1..2160 (default 168), label, includeExport (default false: also open the delivery\'s export package). The token is answered once and stored hashed; url opens the landing page in a browser and the JSON manifest for API clients.',
  }, ({ ctx, req, params, body }) => {
    const { link, token } = createLink(ctx, params.deliveryId, body);
    const url = `${serviceOrigin(req, ctx.config)}/api/client/delivery?token=${encodeURIComponent(token)}`;
    return json(201, { ...presentLink(link, ctx.now()), token, url });
  });

  r.get(`${BASE}/:deliveryId/links`, {
    ...view, summary: 'The delivery\'s client links, newest first: label, status, expiry, revocation, last use, download count, includeExport; never the token.',
    response: { description: 'the links', schema: o.object({ items: o.array(LinkView) }) },
  },
    ({ ctx, params }) => json(200, { items: listLinks(ctx, params.deliveryId).map((l) => presentLink(l, ctx.now())) }));

  r.post(`${BASE}/:deliveryId/links/:linkId/revoke`, { ...approve, archivedOk: true, summary: 'Revoke a client link (at once; revoking again changes nothing). Allowed on an archived project too: cutting off outside access is never blocked.', response: { description: 'the link, revoked', schema: LinkView } },
    ({ ctx, params }) => json(200, presentLink(revokeLinkOf(ctx, params.deliveryId, params.linkId), ctx.now())));

  const client = { tags: ['client delivery'], auth: 'none' as const, query: ClientQuery };
  r.get('/api/client/delivery', {
    ...client,
    summary: 'Without an account: the approved delivery a link opens (token in ?token= or x-delivery-token). Content negotiation: a request whose Accept names text/html (a browser opening the link) gets the landing page (items, a player, download buttons; 401 page for a link that does not open); any other gets the JSON manifest: title, files with name, size, SHA-256, downloadPath and href (the path with the token), and export (the package, when the link includes it). 401 delivery_link_invalid for an unknown, revoked or expired token, and for every link while the client_delivery_links flag is off for the organization.',
    response: { description: 'the manifest (JSON), or the landing page (text/html) when Accept names text/html', schema: ClientManifestView, type: 'text/html' },
  }, ({ ctx, req, query }) => {
    const token = tokenOf(req, query);
    if (wantsHtml(req.headers)) {
      try {
        accessOfToken(ctx, token);
      } catch (err) {
        if (err instanceof AppError && err.status === 401) return clientDeliveryPage(false);
        throw err;
      }
      return clientDeliveryPage(true);
    }
    return json(200, clientManifest(ctx, accessOfToken(ctx, token), token!), { ...CLIENT_HEADERS, vary: 'accept', 'cache-control': 'no-store' });
  });

  r.get('/api/client/delivery/files/:position', {
    ...client,
    summary: 'Without an account: the approved file at a position (Range, ETag = SHA-256); 410 delivery_file_changed when its bytes no longer hash to the approved SHA-256 (hashed again whenever the file\'s stat changed); 401 as for the manifest; downloads are counted and audited.',
    response: fileResponse(ARTIFACT_MEDIA_TYPES),
  }, async ({ ctx, req, params, query }): Promise<Reply> => {
    const access = accessOfToken(ctx, tokenOf(req, query));
    const f = await clientFile(ctx, access, params.position);
    const reply = contentReply(req, ctx.config.storageDir, {
      storage_path: f.artifact.storage_path, content_sha256: f.item.artifact_sha256, mime_type: f.artifact.mime_type, file_name: f.name,
    });
    const { counts, range } = isDownload(req, reply);
    if (counts) recordDownload(ctx, access, f, range);
    return { ...reply, headers: { ...reply.headers, ...CLIENT_HEADERS } };
  });

  const exportFile = { tags: ['client delivery'], auth: 'none' as const };
  r.get(CLIENT_EXPORT_ARCHIVE, {
    ...exportFile, query: ClientQuery,
    summary: 'Without an account, for a link made with includeExport: the .tar of the delivery\'s export package (Content-Length, ETag = SHA-256, Range, 304). 401 as for the manifest; 404 when the link does not include the export, no package was written or it has no archive; 410 export_file_changed. Counted on the link and audited as export.downloaded.',
    response: { description: 'the archive\'s bytes', type: 'application/x-tar' },
  }, async ({ ctx, req, query }) => {
    const reply = await clientExportReply(ctx, req, accessOfToken(ctx, tokenOf(req, query)), null);
    return { ...reply, headers: { ...reply.headers, ...CLIENT_HEADERS } };
  });

  r.get(CLIENT_EXPORT_FILE, {
    ...exportFile, query: ClientFileQuery,
    summary: 'Without an account, for a link made with includeExport: one file of the export package by its manifest path (?path=). 401 as for the manifest; 404 as for the archive or for a path the manifest does not list; 410 export_file_changed. Counted and audited as the archive.',
    response: { description: 'the file\'s bytes (Content-Type from its extension)', type: PACKAGE_FILE_TYPES },
  }, async ({ ctx, req, query }) => {
    const reply = await clientExportReply(ctx, req, accessOfToken(ctx, tokenOf(req, query)), query.path);
    return { ...reply, headers: { ...reply.headers, ...CLIENT_HEADERS } };
  });
}
