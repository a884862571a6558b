// Revisions as the API shows them. A document never saved is revision 0 with no author and empty content.
import * as o from '../../kernel/view.ts';
import { EMPTY_BIBLE, EMPTY_SCRIPT, type BibleContent, type ScriptContent } from './content.ts';
import { ENTRY_KINDS, LINE_KINDS } from './schema.ts';
import type { Doc } from './service.ts';
import type { RevisionRow, RevisionSummaryRow } from './store.ts';

export const ScriptLineView = o.named('ScriptLine', o.object({
  id: o.text(), kind: o.oneOf(LINE_KINDS), character: o.nullable(o.text({ description: 'the speaker of a dialogue line; null otherwise' })), text: o.text(),
}));
export const ScriptSceneView = o.named('ScriptScene', o.object({
  id: o.text(), heading: o.text(), location: o.text(), timeOfDay: o.text(), lines: o.array(ScriptLineView),
}));
export const BibleEntryView = o.named('BibleEntry', o.object({
  id: o.text(), kind: o.oneOf(ENTRY_KINDS), name: o.text(), description: o.text(),
  attributes: o.record(o.text()), referenceAssetIds: o.array(o.text(), 'assets of the project'),
}));

const headShape = {
  projectId: o.text(),
  revision: o.int('0 before the first save'),
  restoredFrom: o.nullable(o.int('the revision this one restored, if it is a restore')),
  author: o.nullable(o.object({ userId: o.nullable(o.text()), name: o.text() }, 'who saved it (null for revision 0)')),
  createdAt: o.nullable(o.time()),
  contentSha256: o.nullable(o.text({ description: 'SHA-256 of the content\'s JSON text' })),
};
export const ScriptRevisionSummaryView = o.named('ScriptRevisionSummary', o.object({ ...headShape, episodeId: o.text(), sceneCount: o.int() }, 'a script revision without its content'));
export const ScriptRevisionView = o.named('ScriptRevision', o.extend(ScriptRevisionSummaryView, { scenes: o.array(ScriptSceneView) }, 'a script revision with its content'));
export const BibleRevisionSummaryView = o.named('BibleRevisionSummary', o.object({ ...headShape, entryCount: o.int() }, 'a story bible revision without its content'));
export const BibleRevisionView = o.named('BibleRevision', o.extend(BibleRevisionSummaryView, { entries: o.array(BibleEntryView) }, 'a story bible revision with its content'));

const head = (r: RevisionSummaryRow | undefined) => ({
  revision: r?.revision ?? 0,
  restoredFrom: r?.restored_from ?? null,
  author: r ? { userId: r.author_user_id, name: r.author_name } : null,
  createdAt: r?.created_at ?? null,
  contentSha256: r?.content_sha256 ?? null,
});

/** A script revision without its content (lists). */
export const presentScriptSummary = (doc: Doc) => (r: RevisionSummaryRow | undefined): o.Out<typeof ScriptRevisionSummaryView> =>
  ({ projectId: doc.projectId, episodeId: doc.documentId, ...head(r), sceneCount: r?.item_count ?? 0 });

/** A bible revision without its content (lists). */
export const presentBibleSummary = (doc: Doc) => (r: RevisionSummaryRow | undefined): o.Out<typeof BibleRevisionSummaryView> =>
  ({ projectId: doc.projectId, ...head(r), entryCount: r?.item_count ?? 0 });

/** A script revision with its scenes. */
export const presentScriptRevision = (doc: Doc, r: RevisionRow | undefined): o.Out<typeof ScriptRevisionView> =>
  ({ ...presentScriptSummary(doc)(r), ...(r ? JSON.parse(r.content) as ScriptContent : EMPTY_SCRIPT) });

/** A bible revision with its entries. */
export const presentBibleRevision = (doc: Doc, r: RevisionRow | undefined): o.Out<typeof BibleRevisionView> =>
  ({ ...presentBibleSummary(doc)(r), ...(r ? JSON.parse(r.content) as BibleContent : EMPTY_BIBLE) });

const FieldChangeView = o.named('RevisionFieldChange', o.object({ from: o.anything(), to: o.anything() }, 'a field\'s value in the older and the newer revision'));
const ItemChangeShape = {
  id: o.text(), position: o.int('0-based, in the newer revision'), fields: o.record(FieldChangeView, 'the changed fields'),
  moved: o.bool('true when the item left the longest run of items that kept their order'),
};
const ItemChangeView = o.named('RevisionItemChange', o.object(ItemChangeShape));
const positioned = <S extends Record<string, o.AnyView>>(v: o.ObjectView<S>) => o.extend(v, { position: o.int('0-based, in the newer (added) or older (removed) revision') });
const listDiff = <S extends Record<string, o.AnyView>>(item: o.ObjectView<S>) =>
  o.object({ added: o.array(positioned(item)), removed: o.array(positioned(item)), changed: o.array(ItemChangeView) });

export const ScriptDiffView = o.named('ScriptDiff', o.object({
  from: o.int(), to: o.int(),
  scenes: o.object({
    added: o.array(positioned(ScriptSceneView)), removed: o.array(positioned(ScriptSceneView)),
    changed: o.array(o.object({ ...ItemChangeShape, heading: o.text(), lines: listDiff(ScriptLineView) }, 'a scene in both revisions whose fields, order or lines changed')),
  }),
  summary: o.object({ scenesAdded: o.int(), scenesRemoved: o.int(), scenesChanged: o.int(), linesAdded: o.int(), linesRemoved: o.int(), linesChanged: o.int() }),
}));

export const BibleDiffView = o.named('BibleDiff', o.object({
  from: o.int(), to: o.int(), entries: listDiff(BibleEntryView),
  summary: o.object({ entriesAdded: o.int(), entriesRemoved: o.int(), entriesChanged: o.int() }),
}));

/** ETag of a document's current revision: its number, quoted (If-Match takes it back). */
export const etag = (r: { revision: number } | undefined) => ({ etag: `"${r?.revision ?? 0}"` });
