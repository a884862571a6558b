// Revisions as the API shows them. A document never saved is revision 0 with no author and empty content.
import { EMPTY_BIBLE, EMPTY_SCRIPT } from './content.ts';
import type { Doc } from './service.ts';
import type { RevisionRow, RevisionSummaryRow } from './store.ts';

function head(doc: Doc, r: RevisionSummaryRow | undefined) {
  return {
    projectId: doc.projectId,
    ...(doc.kind === 'script' ? { episodeId: doc.documentId } : {}),
    revision: r?.revision ?? 0,
    restoredFrom: r?.restored_from ?? null,
    author: r ? { userId: r.author_user_id, name: r.author_name } : null,
    createdAt: r?.created_at ?? null,
    contentSha256: r?.content_sha256 ?? null,
    [doc.kind === 'script' ? 'sceneCount' : 'entryCount']: r?.item_count ?? 0,
  };
}

/** A revision without its content (lists). */
export const presentRevisionSummary = (doc: Doc) => (r: RevisionSummaryRow) => head(doc, r);

/** A revision with its full content: `scenes` for a script, `entries` for the bible. */
export function presentRevision(doc: Doc, r: RevisionRow | undefined) {
  const content = r ? JSON.parse(r.content) : doc.kind === 'script' ? EMPTY_SCRIPT : EMPTY_BIBLE;
  return { ...head(doc, r), ...content };
}

/** ETag of a document's current revision: its number, quoted (If-Match takes it back). */
export const etag = (r: { revision: number } | undefined) => ({ etag: `"${r?.revision ?? 0}"` });
