// Search on SQLite: the FTS5 table search_fts (tokenize='trigram', content_rowid the documents'
// rowid, kept in step by triggers; schema.sql) finds terms of three characters or more in any
// language, CJK included, folding case over Unicode; bm25() ranks.
import { RANK_WINDOW, SUBSTRING_SCAN_LIMIT, DOCUMENT_COLUMNS, shortTermsFilter, type DocumentRow, type SearchStore } from './store.ts';

export const SQLITE_SEARCH: SearchStore = {
  async matches(db, { organizationId, readable, long, short }) {
    const match = long.map((w) => `"${w.replace(/"/g, '""')}"`).join(' AND ');
    // The index streams matches newest first (by rowid), so the work stays bounded however common
    // the term; bm25 weighs title over subtitle over body.
    return await db.all<{ doc_key: string; score: number }>(
      `SELECT d.doc_key AS doc_key, bm25(search_fts, 5.0, 2.0, 1.0) AS score
         FROM search_fts JOIN search_documents d ON d.rowid = search_fts.rowid
        WHERE search_fts MATCH ?1 AND d.organization_id = ?2 AND (d.project_id, d.type) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?3))${shortTermsFilter(short, 4)}
        ORDER BY search_fts.rowid DESC LIMIT ${RANK_WINDOW}`,
      match, organizationId, readable, ...short,
    );
  },

  async scan(db, { organizationId, readable, short }, limit) {
    // The organization's index on (organization_id, updated_at) gives the most recent first (ties
    // newest rowid first) and the scan stops at `limit` matches.
    return await db.all<DocumentRow>(
      `SELECT ${DOCUMENT_COLUMNS}
         FROM (SELECT * FROM search_documents WHERE organization_id = ?1 ORDER BY updated_at DESC LIMIT ${SUBSTRING_SCAN_LIMIT}) d
        WHERE (d.project_id, d.type) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?2))${shortTermsFilter(short, 3)}
        LIMIT ?${short.length + 3}`,
      organizationId, readable, ...short, limit,
    );
  },
};
