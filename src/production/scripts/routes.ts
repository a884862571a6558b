// Script of each episode (/api/production/script/episodes/:episodeId...) and story bible of the
// current project (/api/production/bible...): current document, save with optimistic concurrency,
// revisions list and read, diff, restore.
import { READ_ACCESS } from '../../directory/tenancy/reads.ts';
import type { IncomingMessage } from 'node:http';
import { defineRoute as def, json, type Router } from '../../http/router.ts';
import { validationFailed } from '../../kernel/errors.ts';
import { PageQuery, paging } from '../../kernel/validate.ts';
import type { Ctx } from '../../directory/context.ts';
import { BibleSaveBody, DiffQuery, RestoreBody, ScriptSaveBody } from './schema.ts';
import * as o from '../../kernel/view.ts';
import {
  BibleDiffView, BibleRevisionSummaryView, BibleRevisionView, ScriptDiffView, ScriptRevisionSummaryView, ScriptRevisionView, etag,
  presentBibleRevision, presentBibleSummary, presentScriptRevision, presentScriptSummary,
} from './present.ts';
import { diffBible, diffScript } from './diff.ts';
import type { RevisionRow, RevisionSummaryRow } from './store.ts';
import type { BibleContent, ScriptContent } from './content.ts';
import {
  baseRevisionOf, bibleDoc, current, diff, listRevisions, restore, revision, saveBible, saveScript, scriptDoc, type Doc,
} from './service.ts';

const ifMatch = (req: IncomingMessage) => (typeof req.headers['if-match'] === 'string' ? req.headers['if-match'] : undefined);

function revisionParam(raw: string): number {
  if (!/^\d{1,9}$/.test(raw) || Number(raw) < 1) throw validationFailed({ revision: 'must be a revision number from 1' });
  return Number(raw);
}

/** How one kind of document is shown: its views, presenters and differ. */
interface DocViews<S, F, C extends ScriptContent | BibleContent, D> {
  summary: o.View<S>; full: o.View<F>; diff: o.View<D>;
  presentSummary: (doc: Doc) => (r: RevisionSummaryRow) => S;
  present: (doc: Doc, r: RevisionRow | undefined) => F;
  differ: (a: C, b: C) => D extends { from: number; to: number } ? Omit<D, 'from' | 'to'> : never;
}

const SCRIPT = {
  summary: ScriptRevisionSummaryView, full: ScriptRevisionView, diff: ScriptDiffView,
  presentSummary: presentScriptSummary, present: presentScriptRevision, differ: diffScript,
};
const BIBLE = {
  summary: BibleRevisionSummaryView, full: BibleRevisionView, diff: BibleDiffView,
  presentSummary: presentBibleSummary, present: presentBibleRevision, differ: diffBible,
};

/** The routes shared by both documents (the document found by `doc`): list, read, diff, restore. */
function revisionRoutes<S, F, C extends ScriptContent | BibleContent, D>(
  what: string, doc: (ctx: Ctx, params: Record<string, string>) => Promise<Doc>, edit: 'script:edit' | 'asset:edit', k: DocViews<S, F, C, D>,
) {
  const tags = ['production'];
  const read = { tags, scope: 'project' as const, permission: READ_ACCESS.script };
  return {
    revisions: def({ summary: `Revisions of the ${what}, newest first, without content (page, pageSize).`, ...read, query: PageQuery, response: { description: 'a page of revisions, newest first', schema: o.page(k.summary) } }, async ({ ctx, params, searchParams }) => {
      const d = await doc(ctx, params);
      const { rows, pagination } = await listRevisions(ctx, d, paging(searchParams));
      return json(200, { items: rows.map(k.presentSummary(d)), pagination });
    }),
    revision: def({ summary: `One revision of the ${what} with its full content.`, ...read, response: { description: 'the revision', schema: k.full } }, async ({ ctx, params }) => {
      const d = await doc(ctx, params);
      return json(200, k.present(d, await revision(ctx, d, revisionParam(params.revision))));
    }),
    diff: def({
      summary: `Diff of two revisions of the ${what} (from, to; 0 is the empty document), matched by ids: added, removed, changed with field changes and moved flags.`,
      ...read, query: DiffQuery, response: { description: 'the diff', schema: k.diff },
    }, async ({ ctx, params, query }) => json(200, await diff(ctx, await doc(ctx, params), query, k.differ) as D)),
    restore: def({
      summary: `Make an older revision of the ${what} current again, as a new revision (baseRevision or If-Match; stale: 409 revision_conflict).`,
      tags, scope: 'project', permission: edit, body: RestoreBody, response: { status: 201, description: 'the new revision', schema: k.full },
    }, async ({ ctx, params, body, req }) => {
      const d = await doc(ctx, params);
      const row = await restore(ctx, d, revisionParam(params.revision), baseRevisionOf(body.baseRevision, ifMatch(req)));
      return json(201, k.present(d, row), etag(row));
    }),
  };
}

export function bindScriptRoutes(router: Router): void {
  const r = router.module(import.meta.url);
  const tags = ['production'];
  const scriptOf = (ctx: Ctx, params: Record<string, string>) => scriptDoc(ctx, params.episodeId);
  r.get('/api/production/script/episodes/:episodeId', { summary: 'The current script of an episode of the current project (revision 0 and no scenes before the first save); ETag is the revision.', tags, scope: 'project', permission: READ_ACCESS.script, response: { description: 'the current revision', schema: ScriptRevisionView } }, async ({ ctx, params }) => {
    const d = await scriptOf(ctx, params);
    const row = await current(ctx, d);
    return json(200, presentScriptRevision(d, row), etag(row));
  });
  r.put('/api/production/script/episodes/:episodeId', {
    summary: 'Save the script as a new revision: { baseRevision, scenes } (or If-Match: "<revision>"); a stale base is 409 revision_conflict.',
    tags, scope: 'project', permission: 'script:edit', body: ScriptSaveBody, response: { description: 'the new revision', schema: ScriptRevisionView },
  }, async ({ ctx, params, body, req }) => {
    const d = await scriptOf(ctx, params);
    const row = await saveScript(ctx, d, baseRevisionOf(body.baseRevision, ifMatch(req)), body.scenes);
    return json(200, presentScriptRevision(d, row), etag(row));
  });
  const script = revisionRoutes('episode\'s script', scriptOf, 'script:edit', SCRIPT);
  r.get('/api/production/script/episodes/:episodeId/revisions', ...script.revisions);
  r.get('/api/production/script/episodes/:episodeId/revisions/:revision', ...script.revision);
  r.get('/api/production/script/episodes/:episodeId/diff', ...script.diff);
  r.post('/api/production/script/episodes/:episodeId/revisions/:revision/restore', ...script.restore);

  r.get('/api/production/bible', { summary: 'The story bible of the current project (revision 0 and no entries before the first save); ETag is the revision.', tags, scope: 'project', permission: READ_ACCESS.script, response: { description: 'the current revision', schema: BibleRevisionView } }, async ({ ctx }) => {
    const d = await bibleDoc(ctx);
    const row = await current(ctx, d);
    return json(200, presentBibleRevision(d, row), etag(row));
  });
  r.put('/api/production/bible', {
    summary: 'Save the story bible as a new revision: { baseRevision, entries } (or If-Match); a stale base is 409 revision_conflict.',
    tags, scope: 'project', permission: 'asset:edit', body: BibleSaveBody, response: { description: 'the new revision', schema: BibleRevisionView },
  }, async ({ ctx, body, req }) => {
    const d = await bibleDoc(ctx);
    const row = await saveBible(ctx, d, baseRevisionOf(body.baseRevision, ifMatch(req)), body.entries);
    return json(200, presentBibleRevision(d, row), etag(row));
  });
  const bible = revisionRoutes('story bible', (ctx) => bibleDoc(ctx), 'asset:edit', BIBLE);
  r.get('/api/production/bible/revisions', ...bible.revisions);
  r.get('/api/production/bible/revisions/:revision', ...bible.revision);
  r.get('/api/production/bible/diff', ...bible.diff);
  r.post('/api/production/bible/revisions/:revision/restore', ...bible.restore);
}
