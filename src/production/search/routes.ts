// GET /api/search
import { json, type Router } from '../../http/router.ts';
import * as v from '../../kernel/validate.ts';
import * as o from '../../kernel/view.ts';
import { SearchResultView, presentResult } from './present.ts';
import { search } from './service.ts';

const SearchQuery = v.object({
  q: v.optional(v.string({ max: 200, trim: false })),
  scope: v.optional(v.oneOf(['workspace', 'project'] as const)),
  limit: v.optional(v.int({ description: 'default 20, clamped to 1..100' })),
}, { allowUnknown: true });

export function bindSearchRoutes(router: Router): void {
  const r = router.module(import.meta.url);
  r.get('/api/search', {
    summary: 'Search projects, episodes, scripts, shots, assets, tasks, jobs and deliveries of the visible projects of the current workspace (scope=workspace, default) or of the current project (scope=project); a hit only where the caller holds the read permission of its kind in its project (as the route that opens it: jobs need job:create or queue:manage, deliveries delivery:view, ...). Empty q answers [].',
    tags: ['search'], scope: 'workspace', query: SearchQuery, response: { description: 'an array of results, best first', schema: o.array(SearchResultView) },
  }, async ({ ctx, query }) => json(200, (await search(ctx, {
    q: query.q ?? '', scope: query.scope ?? 'workspace', limit: Math.min(100, Math.max(1, query.limit ?? 20)),
  })).map(presentResult)));
}
