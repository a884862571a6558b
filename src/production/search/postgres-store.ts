// Search on PostgreSQL: search_fts holds each document's title, subtitle and body under a pg_trgm
// GIN index per column (kept in step by triggers; schema.pg.sql). A term is a regular expression
// (`~`) that matches it literally in any case, so the index narrows the candidates and the match
// itself is exact. The database's character type is C (schema.pg.sql refuses others), where ILIKE
// and lower() fold ASCII only and pg_trgm takes only ASCII letters and digits for word characters;
// the expression therefore spells the case variants of every character out ([éÉ], [σΣς]), and a
// term without ASCII letters or digits (CJK) gives the index nothing to narrow with: it is found by
// a scan (of search_fts or of the organization's documents, as the planner picks), as surely, more
// slowly.
//
// The score follows FTS5's bm25 (k1 1.2, b 0.75, hits weighted 5, 2 and 1 in title, subtitle and
// body, the document's length in trigrams), with these differences, so the order may differ from
// SQLite's among documents of close scores: every term weighs the same (FTS5 weighs a term by its
// rarity over the whole table, which would cost a count of its matches here), and the average length
// is that of the ranked documents, not of the whole table. Hits are counted without overlap ("aaa"
// occurs once in "aaaaa", where FTS5 counts three phrase instances).
import { RANK_WINDOW, SUBSTRING_SCAN_LIMIT, DOCUMENT_COLUMNS, shortTermsFilter, type DocumentRow, type SearchStore, type SearchTerms } from './store.ts';

/** The readable [projectId, type] pairs of parameter ?2, as rows for `(d.project_id, d.type) IN (...)`. */
const READABLE = 'SELECT pair ->> 0, pair ->> 1 FROM jsonb_array_elements(CAST(?2 AS jsonb)) AS p(pair)';

// bm25's parameters as FTS5 sets them, and the weights search asks for (title, subtitle, body).
const K1 = 1.2;
const B = 0.75;
const WEIGHTS = [5, 2, 1] as const;

/** A text can't hold U+0000 on PostgreSQL (it refuses it as a parameter): no document has it. */
const unmatchable = (q: SearchTerms) => [...q.long, ...q.short].some((w) => w.includes('\u0000'));

export const POSTGRES_SEARCH: SearchStore = {
  async matches(db, q) {
    if (unmatchable(q)) return [];
    const { organizationId, readable, long, short } = q;
    const term = (i: number) => `?${i + 3}`;
    const holds = long.map((_, i) => ` AND (f.title ~ ${term(i)} OR f.subtitle ~ ${term(i)} OR f.body ~ ${term(i)})`).join('');
    const hits = long.map((_, i) => `, regexp_count(f.title, ${term(i)}) AS t${i}, regexp_count(f.subtitle, ${term(i)}) AS s${i}, regexp_count(f.body, ${term(i)}) AS b${i}`).join('');
    // The window first (newest first by rid, which an upsert keeps, as SQLite's rowid), then the
    // hits of the rows kept only.
    const rows = await db.all<Record<string, number> & { doc_key: string }>(
      `SELECT w.doc_key, char_length(f.title) AS title_len, char_length(f.subtitle) AS subtitle_len, char_length(f.body) AS body_len${hits}
         FROM (SELECT d.rid, d.doc_key FROM search_documents d JOIN search_fts f ON f.rid = d.rid
                WHERE d.organization_id = ?1 AND (d.project_id, d.type) IN (${READABLE})${holds}${shortTermsFilter(short, long.length + 3)}
                ORDER BY d.rid DESC LIMIT ${RANK_WINDOW}) w
         JOIN search_fts f ON f.rid = w.rid
        ORDER BY w.rid DESC`,
      organizationId, readable, ...long.map(termPattern), ...short,
    );
    // FTS5 counts a column of n characters as n - 2 trigrams.
    const size = (r: Record<string, number>) => ['title_len', 'subtitle_len', 'body_len'].reduce((n, c) => n + Math.max(0, r[c] - 2), 0);
    const average = Math.max(1, rows.reduce((n, r) => n + size(r), 0) / Math.max(1, rows.length));
    return rows.map((r) => {
      const norm = K1 * (1 - B + (B * size(r)) / average);
      let score = 0;
      for (let i = 0; i < long.length; i++) {
        const f = WEIGHTS[0] * r[`t${i}`] + WEIGHTS[1] * r[`s${i}`] + WEIGHTS[2] * r[`b${i}`];
        score += (f * (K1 + 1)) / (f + norm);
      }
      return { doc_key: r.doc_key, score: -score };
    });
  },

  async scan(db, q, limit) {
    if (unmatchable(q)) return [];
    const { organizationId, readable, short } = q;
    // As SQLite's scan: most recent first, ties the newest document first (rid, as SQLite's rowid
    // in its index on (organization_id, updated_at)); the outer ORDER BY keeps the subquery's order,
    // which PostgreSQL does not promise otherwise.
    return await db.all<DocumentRow>(
      `SELECT ${DOCUMENT_COLUMNS}
         FROM (SELECT * FROM search_documents WHERE organization_id = ?1 ORDER BY updated_at DESC, rid DESC LIMIT ${SUBSTRING_SCAN_LIMIT}) d
        WHERE (d.project_id, d.type) IN (${READABLE})${shortTermsFilter(short, 3)}
        ORDER BY d.updated_at DESC, d.rid DESC
        LIMIT ?${short.length + 3}`,
      organizationId, readable, ...short, limit,
    );
  },
};

// Characters that stand for themselves in a PostgreSQL regular expression only when escaped.
const SPECIAL = /[\\^$.|?*+()[\]{}]/;

/**
 * The regular expression that matches `term` literally, each character with a case variant as the
 * bracket of its case class, as FTS5's trigram tokenizer folds case. FTS5 folds by the Unicode
 * tables of its build; the classes here come from JavaScript's (newer) ones, so they hold every
 * FTS5 class, some with more members (Georgian Mtavruli with Mkhedruli, Cyrillic with the old forms
 * of U+1C80..U+1C88) and some more classes (letters added to Unicode since).
 */
export function termPattern(term: string): string {
  const table = caseClasses();
  let out = '';
  for (const c of term) {
    const members = table.get(c);
    out += members ? `[${members}]` : SPECIAL.test(c) ? `\\${c}` : c;
  }
  return out;
}

const single = (s: string) => [...s].length === 1;

/** The lower case of the upper case of `c`, where each is one character: equal for the characters of one case class, and some more. */
function roundTrip(c: string): string {
  const upper = c.toUpperCase();
  const base = single(upper) ? upper : c;
  const lower = base.toLowerCase();
  return single(lower) ? lower : base;
}

/** Whether `a` and `b` fold to the same character (Unicode's simple case folding, as /a/iu matches). */
const sameFold = (a: string, b: string) => new RegExp(`^\\u{${a.codePointAt(0)!.toString(16)}}$`, 'iu').test(b);

let classes: Map<string, string> | undefined;

/**
 * Each character that case mapping changes, with all the characters of its case class (itself
 * included): those of the same simple case folding. Built once, on the first search (a tenth of a
 * second or so): the characters are grouped by roundTrip(), then each group is split by folding
 * (which takes the dotless ı out of I and i, as FTS5 does). No cased character lies beyond U+1FFFF.
 */
function caseClasses(): Map<string, string> {
  if (classes) return classes;
  const cased = /\p{Changes_When_Casemapped}/u;
  const groups = new Map<string, Set<string>>();
  for (let cp = 0; cp <= 0x1ffff; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    const c = String.fromCodePoint(cp);
    if (!cased.test(c)) continue;
    const key = roundTrip(c);
    let members = groups.get(key);
    if (!members) groups.set(key, members = new Set([key]));
    members.add(c);
  }
  classes = new Map();
  for (const group of groups.values()) {
    const split: string[][] = [];
    for (const c of group) {
      // A pair is one class (a letter and its other case); only larger groups may hold several.
      const found = group.size < 3 ? split[0] : split.find((members) => sameFold(members[0], c));
      if (found) found.push(c);
      else split.push([c]);
    }
    for (const members of split) {
      if (members.length < 2) continue;
      const joined = members.join('');
      for (const c of members) classes.set(c, joined);
    }
  }
  return classes;
}
