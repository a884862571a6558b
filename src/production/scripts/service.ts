// Script (one per episode) and story bible (one per project): revisioned documents. Every save and
// every restore inserts a new immutable revision n+1 (author, time, full content, SHA-256) in one
// transaction with its audit record; a save names the revision it started from (baseRevision or
// If-Match) and a stale one is 409 revision_conflict naming the current revision. Nothing is ever
// overwritten. Revision 0 is the empty document before the first save.
import { filterSeq, forEachSeq } from '../../kernel/seq.ts';
import type { Ctx } from '../../directory/context.ts';
import { conflict, notFound, validationFailed } from '../../kernel/errors.ts';
import { newId, sha256Hex } from '../../kernel/ids.ts';
import { record } from '../../platform/audit/service.ts';
import { projectById } from '../../directory/tenancy/store.ts';
import { LOCKS } from '../../directory/locks.ts';
import { indexDocument } from '../../platform/search/index.ts';
import {
  EMPTY_BIBLE, EMPTY_SCRIPT, lineCount, normalizeBible, normalizeScript, type BibleContent, type ScriptContent,
} from './content.ts';
import type { BibleSave, ScriptSave } from './schema.ts';
import { assetInProject } from '../assets/store.ts';
import {
  currentRevision, episodeInProject, insertRevision, revisionAt, revisionPage, type DocKind, type RevisionRow,
} from './store.ts';

/** One revisioned document: an episode's script or the project's bible. */
export interface Doc {
  kind: DocKind;
  organizationId: string; workspaceId: string; projectId: string;
  /** The episode id for a script, the project id for the bible. */
  documentId: string;
  /** The episode's title (scripts), for the search index. */
  title?: string;
}

export async function scriptDoc(ctx: Ctx, episodeId: string): Promise<Doc> {
  const e = await episodeInProject(ctx.db, ctx.scope.projectId!, episodeId);
  if (!e) throw notFound('no such episode in this project');
  return { kind: 'script', organizationId: e.organization_id, workspaceId: e.workspace_id, projectId: e.project_id, documentId: e.id, title: e.title };
}

export async function bibleDoc(ctx: Ctx): Promise<Doc> {
  const p = (await projectById(ctx.db, ctx.scope.projectId!))!;
  return { kind: 'bible', organizationId: p.organization_id, workspaceId: p.workspace_id, projectId: p.id, documentId: p.id };
}

export const current = (ctx: Ctx, doc: Doc): Promise<RevisionRow | undefined> => currentRevision(ctx.db, doc.kind, doc.projectId, doc.documentId);

export async function revision(ctx: Ctx, doc: Doc, n: number): Promise<RevisionRow> {
  const row = await revisionAt(ctx.db, doc.kind, doc.projectId, doc.documentId, n);
  if (!row) throw notFound(`no revision ${n} of this ${doc.kind}`);
  return row;
}

export async function listRevisions(ctx: Ctx, doc: Doc, page: { page: number; pageSize: number; offset: number }) {
  const { rows, total } = await revisionPage(ctx.db, doc.kind, doc.projectId, doc.documentId, page.pageSize, page.offset);
  return { rows, pagination: { page: page.page, pageSize: page.pageSize, total } };
}

/** The base revision from the body or an If-Match header ("3", W/"3" or 3); both must agree. */
export function baseRevisionOf(body: number | undefined, ifMatch: string | undefined): number {
  let header: number | undefined;
  if (ifMatch !== undefined) {
    const m = /^\s*(?:W\/)?"?(\d{1,9})"?\s*$/.exec(ifMatch);
    if (!m) throw validationFailed({ 'If-Match': 'must be a revision number, e.g. "3"' });
    header = Number(m[1]);
  }
  if (body === undefined && header === undefined) throw validationFailed({ baseRevision: 'is required (or send If-Match: "<revision>")' });
  if (body !== undefined && header !== undefined && body !== header) throw validationFailed({ baseRevision: 'differs from If-Match' });
  return (body ?? header)!;
}

const itemCount = (doc: Doc, content: ScriptContent | BibleContent) =>
  doc.kind === 'script' ? (content as ScriptContent).scenes.length : (content as BibleContent).entries.length;

/** Appends revision n+1 if `base` is the current revision (409 revision_conflict otherwise), with its audit record. */
async function append(ctx: Ctx, doc: Doc, base: number, content: ScriptContent | BibleContent, restoredFrom: number | null): Promise<RevisionRow> {
  return await ctx.db.tx(async () => {
    // The document's key before reading its current revision (src/directory/locks.ts): of two saves
    // on the same base, the second reads the first's revision and is refused as a stale base.
    await ctx.db.lock(LOCKS.document(doc.documentId));
    const cur = (await current(ctx, doc))?.revision ?? 0;
    if (base !== cur) {
      throw conflict('revision_conflict', `the ${doc.kind} is at revision ${cur}, not ${base}; reload it, reapply your change and save on revision ${cur}`, {
        currentRevision: cur, baseRevision: base,
      });
    }
    const text = JSON.stringify(content);
    const row: RevisionRow = {
      id: newId(doc.kind === 'script' ? 'scr' : 'bbr'), organization_id: doc.organizationId, workspace_id: doc.workspaceId,
      project_id: doc.projectId, document_id: doc.documentId, revision: cur + 1, restored_from: restoredFrom,
      author_user_id: ctx.actor.userId, author_name: ctx.actor.name, created_at: ctx.now().toISOString(),
      content: text, content_sha256: sha256Hex(text), item_count: itemCount(doc, content),
    };
    await insertRevision(ctx.db, doc.kind, row);
    const counts = doc.kind === 'script'
      ? { scenes: row.item_count, lines: lineCount(content as ScriptContent) } : { entries: row.item_count };
    await record(ctx, {
      action: `${doc.kind}.${restoredFrom === null ? 'saved' : 'restored'}`,
      targetType: doc.kind, targetId: doc.documentId,
      organizationId: doc.organizationId, workspaceId: doc.workspaceId, projectId: doc.projectId,
      metadata: { revision: row.revision, baseRevision: base, ...(restoredFrom === null ? {} : { restoredFrom }), contentSha256: row.content_sha256, ...counts },
    });
    if (doc.kind === 'script') await indexScript(ctx, doc, row, content as ScriptContent);
    return row;
  });
}

/** The script's search document (display text only): headings, speakers and lines of the current revision. */
async function indexScript(ctx: Ctx, doc: Doc, row: RevisionRow, content: ScriptContent): Promise<void> {
  const body = content.scenes.flatMap((s) => [s.heading, ...s.lines.map((l) => (l.character ? `${l.character}: ${l.text}` : l.text))]).join('\n');
  await indexDocument(ctx.db, {
    type: 'script', id: doc.documentId, organizationId: doc.organizationId, workspaceId: doc.workspaceId, projectId: doc.projectId,
    title: `${doc.title ?? 'Episode'} (script)`, subtitle: `Revision ${row.revision}, ${row.item_count} scenes`, body, updatedAt: row.created_at,
  });
}

export const saveScript = (ctx: Ctx, doc: Doc, base: number, scenes: ScriptSave['scenes']) => append(ctx, doc, base, normalizeScript(scenes), null);
/** Saves the bible; every referenceAssetIds entry must name an asset of the project (422 otherwise). */
export async function saveBible(ctx: Ctx, doc: Doc, base: number, entries: BibleSave['entries']): Promise<RevisionRow> {
  const fields: Record<string, string> = {};
  await forEachSeq(entries, async (e, i) => {
    const missing = await filterSeq((e.referenceAssetIds ?? []), async (id) => !await assetInProject(ctx.db, doc.projectId, id));
    if (missing.length) fields[`entries[${i}].referenceAssetIds`] = `names assets not in this project: ${missing.join(', ')}`;
  });
  if (Object.keys(fields).length) throw validationFailed(fields);
  return await append(ctx, doc, base, normalizeBible(entries), null);
}

/** Makes revision n current again as a new revision (restoredFrom = n). */
export async function restore(ctx: Ctx, doc: Doc, n: number, base: number): Promise<RevisionRow> {
  const old = await revision(ctx, doc, n);
  return await append(ctx, doc, base, JSON.parse(old.content) as ScriptContent | BibleContent, n);
}

async function contentAt(ctx: Ctx, doc: Doc, n: number): Promise<ScriptContent | BibleContent> {
  if (n === 0) return doc.kind === 'script' ? EMPTY_SCRIPT : EMPTY_BIBLE;
  return JSON.parse((await revision(ctx, doc, n)).content) as ScriptContent | BibleContent;
}

/**
 * Diff of two revisions; `to` defaults to the current one, `from` to the one before `to` (0: the empty document).
 * `differ` is the document's own: diffScript or diffBible.
 */
export async function diff<C extends ScriptContent | BibleContent, T>(ctx: Ctx, doc: Doc, q: { from?: number; to?: number }, differ: (a: C, b: C) => T) {
  const to = q.to ?? (await current(ctx, doc))?.revision ?? 0;
  const from = q.from ?? Math.max(0, to - 1);
  const a = await contentAt(ctx, doc, from) as C;
  const b = await contentAt(ctx, doc, to) as C;
  return { from, to, ...differ(a, b) };
}
