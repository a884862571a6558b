// The system administrator's SCIM directories: /api/system/identity/directory-syncs. The bearer
// token is in the answers of create and rotate-token only.
import type { IncomingMessage } from 'node:http';
import type { Config } from '../../kernel/config.ts';
import { json, type Router } from '../../http/router.ts';
import { pageOf } from '../../kernel/validate.ts';
import { mapSeq } from '../../kernel/seq.ts';
import { requestOrigin } from '../../http/request.ts';
import { createDirectory, directoryOrFail, listDirectoriesOf, rotateDirectoryToken, updateDirectoryFields } from './directories.ts';
import * as o from '../../kernel/view.ts';
import { DirectoryView, DirectoryWithTokenView, presentDirectory } from './present.ts';
import { DirectoryCreateBody, DirectoryListQuery, DirectoryPatchBody } from './schema.ts';
import { directoryUserCounts, type DirectoryRow } from './store.ts';
import type { Ctx } from '../../directory/context.ts';

/** The service's base URL for links: SVC_PUBLIC_URL, else the origin the client used. */
export const serviceOrigin = (req: IncomingMessage, config: Config): string => config.publicUrl || requestOrigin(req, config) || '';

export function bindDirectoryRoutes(router: Router): void {
  const r = router.module(import.meta.url);
  const sys = { tags: ['system', 'identity', 'scim'], systemAdmin: true, scope: 'none' as const };
  const show = (ctx: Ctx, req: IncomingMessage) => async (d: DirectoryRow) => presentDirectory(d, await directoryUserCounts(ctx.db, d.id), serviceOrigin(req, ctx.config));

  r.get('/api/system/identity/directory-syncs', { ...sys, summary: 'SCIM directories (filter organizationId), paged; never a token, only its hint.', query: DirectoryListQuery, response: { description: 'a page of directories', schema: o.page(DirectoryView) } },
    async ({ ctx, req, query, searchParams }) => {
      const page = pageOf(searchParams, await listDirectoriesOf(ctx, query.organizationId ?? null), (d) => d);
      return json(200, { ...page, items: await mapSeq(page.items, show(ctx, req)) });
    });

  r.post('/api/system/identity/directory-syncs', { ...sys, summary: 'Create a SCIM 2.0 directory bound to one organization: { directory, token }. The bearer token (scim_...) is answered here once and stored as SHA-256.', body: DirectoryCreateBody, response: { status: 201, description: '{ directory, token }', schema: DirectoryWithTokenView } },
    async ({ ctx, req, body }) => {
      const { directory, token } = await createDirectory(ctx, body);
      return json(201, { directory: await show(ctx, req)(directory), token });
    });

  r.get('/api/system/identity/directory-syncs/:directoryId', { ...sys, summary: 'One SCIM directory (never its token).', response: { description: 'the directory', schema: DirectoryView } },
    async ({ ctx, req, params }) => json(200, await show(ctx, req)(await directoryOrFail(ctx, params.directoryId))));

  r.patch('/api/system/identity/directory-syncs/:directoryId', { ...sys, summary: 'Rename, change the default role and workspace (for users provisioned from now on) or set status active or disabled (disabled: its SCIM requests are 403).', body: DirectoryPatchBody, response: { description: 'the directory', schema: DirectoryView } },
    async ({ ctx, req, params, body }) => json(200, await show(ctx, req)(await updateDirectoryFields(ctx, params.directoryId, body))));

  r.post('/api/system/identity/directory-syncs/:directoryId/rotate-token', { ...sys, summary: 'A new bearer token, answered once: { directory, token }; the old token is refused (401) at once.', response: { description: '{ directory, token }', schema: DirectoryWithTokenView } },
    async ({ ctx, req, params }) => {
      const { directory, token } = await rotateDirectoryToken(ctx, params.directoryId);
      return json(200, { directory: await show(ctx, req)(directory), token });
    });
}
