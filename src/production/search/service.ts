// Search inside the session's organization, workspace and visible projects. Terms of three or more
// characters go through the engine's trigram index (any language, CJK included; the search store of
// each engine, store.ts); when every term is shorter (e.g. a two-character Chinese word) a bounded
// substring scan of the most recent documents in scope answers instead. The tenant filter is built
// in SQL from the session, never from input: the pairs (project, type) the caller may open, i.e.
// whose read permission (SEARCH_TYPES[type].read, the same lists as the read routes) it holds in
// that project.
import { mapSeq } from '../../kernel/seq.ts';
import { withScope, type Ctx } from '../../directory/context.ts';
import { scopeForbidden } from '../../kernel/errors.ts';
import { hasPermission } from '../../directory/roles.ts';
import { listProjects } from '../../tenancy/service.ts';
import { projectById, type ProjectRow } from '../../directory/tenancy/store.ts';
import { SEARCH_TYPES, type SearchType } from '../../platform/search/index.ts';
import type { Db } from '../../db/db.ts';
import { DOCUMENT_COLUMNS, type DocumentRow, type SearchStore, type SearchTerms } from './store.ts';
import { SQLITE_SEARCH } from './sqlite-store.ts';
import { POSTGRES_SEARCH } from './postgres-store.ts';

export interface SearchRow {
  type: SearchType; target_id: string; organization_id: string; workspace_id: string | null; project_id: string | null;
  title: string; subtitle: string; status: string; target_tab: string; snippet: string; score: number;
}

/** The search of each engine (store.ts). */
const STORES: Record<Db['engine'], SearchStore> = { sqlite: SQLITE_SEARCH, postgres: POSTGRES_SEARCH };
// Highlight markers inside snippets; present.ts turns them into ranges.
export const MARK_OPEN = '\u0002';
export const MARK_CLOSE = '\u0003';

function terms(q: string): string[] {
  return q.normalize('NFC').split(/\s+/).filter(Boolean).slice(0, 8);
}

const length = (s: string) => [...s].length;

/** The projects the search may reach: the current one, or the visible projects of the current workspace. */
async function projectsInScope(ctx: Ctx, scope: 'workspace' | 'project'): Promise<ProjectRow[]> {
  if (scope === 'project') {
    if (!ctx.scope.projectId) throw scopeForbidden('choose a project first (PATCH /api/context)');
    return [(await projectById(ctx.db, ctx.scope.projectId))!];
  }
  if (!ctx.scope.workspaceId) throw scopeForbidden('choose a workspace first (PATCH /api/context)');
  return await listProjects(ctx, ctx.scope.workspaceId);
}

const TYPES = Object.keys(SEARCH_TYPES) as SearchType[];

/**
 * The [projectId, type] pairs whose hits the caller may see: in each project of the search, the
 * types whose read permission it holds there (its permissions in that project's scope, as the read
 * route would compute them).
 */
export async function readablePairs(ctx: Ctx, scope: 'workspace' | 'project'): Promise<Array<[string, SearchType]>> {
  const pairs: Array<[string, SearchType]> = [];
  for (const p of await projectsInScope(ctx, scope)) {
    const { permissions } = withScope(ctx, { organizationId: p.organization_id, workspaceId: p.workspace_id, projectId: p.id });
    for (const type of TYPES) {
      const read = SEARCH_TYPES[type].read;
      if (read.length === 0 || read.some((x) => hasPermission(permissions, x))) pairs.push([p.id, type]);
    }
  }
  return pairs;
}

export async function search(ctx: Ctx, input: { q: string; scope: 'workspace' | 'project'; limit: number }): Promise<SearchRow[]> {
  const words = terms(input.q.trim());
  if (words.length === 0) return [];
  const store = STORES[ctx.db.engine];
  const query: SearchTerms = {
    organizationId: ctx.scope.organizationId!,
    readable: JSON.stringify(await readablePairs(ctx, input.scope)),
    long: words.filter((w) => length(w) >= 3),
    // Every short term must appear too (a substring test over the document's text).
    short: words.filter((w) => length(w) < 3),
  };
  if (query.long.length > 0) {
    // Rank among the RANK_WINDOW newest matches in scope, then make snippets for the rows kept only.
    const top = (await store.matches(ctx.db, query)).sort((a, b) => a.score - b.score).slice(0, input.limit);
    // One lookup per kept row; the snippet is cut here around the first match. FTS5's snippet()
    // walks every phrase instance of the document: about 3 s for a 10,000-character run of one
    // letter searched for "xxx", a minute or more of blocked event loop for one request. A document
    // removed since the match is left out.
    const rows = await mapSeq(top, async ({ doc_key, score }) => {
      const found = await ctx.db.get<DocumentRow>(`SELECT ${DOCUMENT_COLUMNS} FROM search_documents d WHERE d.doc_key = ?1`, doc_key);
      if (!found) return null;
      const { body, ...r } = found;
      return { ...r, snippet: excerpt(`${r.title} ${r.subtitle} ${body}`, words), score };
    });
    return rows.filter((r) => r !== null);
  }
  // Only short terms: scan the organization's most recent documents (at most SUBSTRING_SCAN_LIMIT),
  // newest first, and stop at `limit` matches.
  const rows = await store.scan(ctx.db, query, input.limit);
  return rows.map(({ body, ...r }) => ({ ...r, snippet: excerpt(`${r.title} ${r.subtitle} ${body}`, query.short), score: 0 }));
}

/**
 * About 24 characters either side of the first place any term occurs (case-insensitively, like the
 * trigram index), the match between the highlight markers; the text's start when none is found.
 * Linear in the text: one literal regular expression.
 */
function excerpt(text: string, terms: string[]): string {
  const found = new RegExp(terms.map((t) => t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'), 'iu').exec(text);
  const at = found ? found.index : 0;
  const len = found ? found[0].length : 0;
  const from = Math.max(0, at - 24);
  const to = Math.min(text.length, at + len + 24);
  const mark = found ? `${MARK_OPEN}${text.slice(at, at + len)}${MARK_CLOSE}` : '';
  return `${from > 0 ? '…' : ''}${text.slice(from, at)}${mark}${text.slice(at + len, to)}${to < text.length ? '…' : ''}`;
}
