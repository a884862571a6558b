// What each engine does its own way in search: finding the documents in scope that hold every term,
// with a relevance score, and the bounded scan that answers queries of short terms only. SQLite
// answers from its FTS5 trigram index (sqlite-store.ts), PostgreSQL from its pg_trgm indexes
// (postgres-store.ts); service.ts picks the store of db.engine and does the rest the same way on
// both: the tenant filter's pairs, the order by score, the lookup of the rows kept and the snippets.
import type { Db } from '../../db/db.ts';
import type { SearchType } from '../../platform/search/index.ts';

/** Matches ranked at most for one query (the newest ones in scope). */
export const RANK_WINDOW = 500;
/** Documents scanned at most by the short-term fallback. */
export const SUBSTRING_SCAN_LIMIT = 20_000;

/** One query as the stores take it; every term is NFC and holds no white space. */
export interface SearchTerms {
  organizationId: string;
  /** The JSON array of the [projectId, type] pairs whose documents the caller may see. */
  readable: string;
  /** Terms of three characters or more: each occurs in one field (title, subtitle or body), in any case. */
  long: string[];
  /** Shorter terms: each occurs in the document's text as written (a case-sensitive substring test). */
  short: string[];
}

/** A document as the search shows it, with its text. */
export interface DocumentRow {
  type: SearchType; target_id: string; organization_id: string; workspace_id: string | null; project_id: string | null;
  title: string; subtitle: string; status: string; target_tab: string; body: string;
}

export interface SearchStore {
  /**
   * The RANK_WINDOW newest documents (first indexed last) in scope that hold every term (`long` is
   * not empty), newest first, each with its score: lower is better (bm25, title over subtitle over
   * body).
   */
  matches(db: Db, q: SearchTerms): Promise<Array<{ doc_key: string; score: number }>>;
  /**
   * Only short terms: among the organization's SUBSTRING_SCAN_LIMIT most recently updated documents,
   * the first `limit` in scope that hold every term, most recently updated first.
   */
  scan(db: Db, q: SearchTerms, limit: number): Promise<DocumentRow[]>;
}

/**
 * The condition that every short term occurs in the text of document `d` (title, subtitle and body
 * joined by spaces), its parameters numbered from `first`. Portable: PostgreSQL has instr() too
 * (schema.pg.sql), and both compare code points, case-sensitively.
 */
export function shortTermsFilter(short: string[], first: number): string {
  return short.map((_, i) => ` AND instr(d.title || ' ' || d.subtitle || ' ' || d.body, ?${first + i}) > 0`).join('');
}

/** The columns of a DocumentRow, read from `d`. */
export const DOCUMENT_COLUMNS = 'd.type, d.target_id, d.organization_id, d.workspace_id, d.project_id, d.title, d.subtitle, d.status, d.target_tab, d.body';
