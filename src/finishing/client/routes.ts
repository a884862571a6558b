// The client's side of a delivery link, without an account: the manifest or landing page, the
// approved files, and the export package when the link includes it (src/finishing/client/access.ts).
import type { IncomingMessage } from 'node:http';
import { json, type Reply, type Router } from '../../http/router.ts';
import { fileResponse } from '../../http/content.ts';
import { clientDeliveryPage, WEB_DIR, wantsHtml } from '../../http/static.ts';
import type { ObjectStore } from '../../kernel/storage/store.ts';
import { ARTIFACT_MEDIA_TYPES } from '../../media-tools/evidence.ts';
import { AppError } from '../../kernel/errors.ts';
import { ClientFileQuery, ClientQuery } from '../delivery/schema.ts';
import { ClientManifestView } from '../delivery/present.ts';
import { deliveryReply, DOWNLOAD_REDIRECT } from '../delivery/serve.ts';
import { PACKAGE_FILE_TYPES } from '../export/download.ts';
import { accessOfToken, clientExportReply, clientFile, clientManifest, recordDownload } from './access.ts';

/** The origin the store's signed URLs point at (the files' redirects on s3), for the landing page's policy; none on local. */
async function signedUrlOrigins(store: ObjectStore): Promise<string[]> {
  const url = await store.signedUrl('exports/origin');
  return url ? [new URL(url).origin] : [];
}

/** The token travels in the URL: never send it on as a Referer. */
const CLIENT_HEADERS = { 'referrer-policy': 'no-referrer' };

const tokenOf = (req: IncomingMessage, query: { token?: string }) => {
  const h = req.headers['x-delivery-token'];
  return typeof h === 'string' && h !== '' ? h : query.token;
};

export function bindClientRoutes(router: Router): void {
  const r = router.module(import.meta.url);
  const client = { tags: ['client delivery'], auth: 'none' as const, query: ClientQuery };
  r.get('/api/client/delivery', {
    ...client,
    summary: 'Without an account: the approved delivery a link opens (token in ?token= or x-delivery-token). Content negotiation: a request whose Accept names text/html (a browser opening the link) gets the landing page (items, a player, download buttons; 401 page for a link that does not open); any other gets the JSON manifest: title, files with name, size, SHA-256, downloadPath and href (the path with the token), and export (the package, when the link includes it). 401 delivery_link_invalid for an unknown, revoked or expired token, and for every link while the client_delivery_links flag is off for the organization.',
    response: { description: 'the manifest (JSON), or the landing page (text/html) when Accept names text/html', schema: ClientManifestView, type: 'text/html' },
  }, async ({ ctx, req, query }) => {
    const token = tokenOf(req, query);
    if (wantsHtml(req.headers)) {
      try {
        await accessOfToken(ctx, token);
      } catch (err) {
        if (err instanceof AppError && err.status === 401) return clientDeliveryPage(false);
        throw err;
      }
      return clientDeliveryPage(true, WEB_DIR, await signedUrlOrigins(ctx.storage));
    }
    return json(200, await clientManifest(ctx, await accessOfToken(ctx, token), token!), { ...CLIENT_HEADERS, vary: 'accept', 'cache-control': 'no-store' });
  });

  r.get('/api/client/delivery/files/:position', {
    ...client,
    summary: 'Without an account: the approved file at a position (Range, ETag = SHA-256); 410 delivery_file_changed when its bytes no longer hash to the approved SHA-256 (hashed again whenever the file\'s stat changed); 401 as for the manifest; downloads are counted and audited.',
    response: { ...fileResponse(ARTIFACT_MEDIA_TYPES), redirect: DOWNLOAD_REDIRECT },
  }, async ({ ctx, req, params, query }): Promise<Reply> => {
    const access = await accessOfToken(ctx, tokenOf(req, query));
    const f = await clientFile(ctx, access, params.position);
    const { reply, counts, range } = await deliveryReply(req, ctx.storage, {
      storage_path: f.artifact.storage_path, content_sha256: f.item.artifact_sha256, mime_type: f.artifact.mime_type, file_name: f.name,
    });
    if (counts) await recordDownload(ctx, access, f, range);
    return { ...reply, headers: { ...reply.headers, ...CLIENT_HEADERS } };
  });

  const exportFile = { tags: ['client delivery'], auth: 'none' as const };
  r.get('/api/client/delivery/export/archive', {
    ...exportFile, query: ClientQuery,
    summary: 'Without an account, for a link made with includeExport: the .tar of the delivery\'s export package (Content-Length, ETag = SHA-256, Range, 304). 401 as for the manifest; 404 when the link does not include the export, no package was written or it has no archive; 410 export_file_changed. Counted on the link and audited as export.downloaded.',
    response: { description: 'the archive\'s bytes', type: 'application/x-tar', redirect: DOWNLOAD_REDIRECT },
  }, async ({ ctx, req, query }) => {
    const reply = await clientExportReply(ctx, req, await accessOfToken(ctx, tokenOf(req, query)), null);
    return { ...reply, headers: { ...reply.headers, ...CLIENT_HEADERS } };
  });

  r.get('/api/client/delivery/export/file', {
    ...exportFile, query: ClientFileQuery,
    summary: 'Without an account, for a link made with includeExport: one file of the export package by its manifest path (?path=). 401 as for the manifest; 404 as for the archive or for a path the manifest does not list; 410 export_file_changed. Counted and audited as the archive.',
    response: { description: 'the file\'s bytes (Content-Type from its extension)', type: PACKAGE_FILE_TYPES, redirect: DOWNLOAD_REDIRECT },
  }, async ({ ctx, req, query }) => {
    const reply = await clientExportReply(ctx, req, await accessOfToken(ctx, tokenOf(req, query)), query.path);
    return { ...reply, headers: { ...reply.headers, ...CLIENT_HEADERS } };
  });
}
