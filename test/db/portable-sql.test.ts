// A ratchet for the PostgreSQL port (issue 26): SQLite-only forms in the SQL of src/ may only
// decrease. Every string and template literal of every source file is read with the TypeScript
// parser (comments and code are not SQL) and searched for the forms below; each file's count per form
// must equal the allowance in test/db/sqlite-only.json. A new use fails with its lines; a removed
// one fails too, until the allowance is lowered to match (run with SVC_WRITE_ALLOWANCE=1 to rewrite
// the file from the tree; review the diff: it may only go down).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const ROOT = path.resolve(import.meta.dirname, '../..');
const ALLOWANCE_FILE = path.join(import.meta.dirname, 'sqlite-only.json');

/** SQLite-only SQL, each with the portable form (or the dialect seam) that replaces it. */
const FORMS: Record<string, { re: RegExp; instead: string }> = {
  'rowid': { re: /\b_?rowid_?\b/gi, instead: 'an id column that orders (newId) or RETURNING id' },
  'INSERT OR / REPLACE INTO': { re: /\bINSERT\s+OR\s+\w+|\bREPLACE\s+INTO\b/gi, instead: 'INSERT ... ON CONFLICT' },
  'ifnull()': { re: /\bifnull\s*\(/gi, instead: 'coalesce()' },
  'total()': { re: /\btotal\s*\(/gi, instead: 'CAST(coalesce(sum(x), 0) AS DOUBLE PRECISION)' },
  'sum(condition)': { re: /\bsum\s*\([^()]*?(?:[=<>]|\bIS\b|\bIN\b|\bLIKE\b)[^()]*\)/gi, instead: 'count(*) FILTER (WHERE condition)' },
  'LIMIT -1': { re: /\bLIMIT\s+-1\b/gi, instead: 'a large LIMIT, or none' },
  'COLLATE NOCASE': { re: /\bCOLLATE\s+NOCASE\b/gi, instead: 'lower(x)' },
  'IS NOT ?': { re: /\bIS\s+NOT\s+\?/gi, instead: 'IS DISTINCT FROM ?' },
  'WHERE 1': { re: /\bWHERE\s+1\b(?!\s*[=<>])/gi, instead: 'WHERE 1 = 1' },
  'json functions': { re: /\bjson(?:_each|_extract|_group_array|_group_object|_array|_object|_insert|_set|_remove|_type|_valid)?\(/gi, instead: 'the dialect seam (src/db)' },
  'date functions': { re: /\b(?:datetime|strftime|julianday|unixepoch)\s*\(/gi, instead: 'ISO text compared as text, or values computed in TypeScript' },
  'INDEXED BY': { re: /\bINDEXED\s+BY\b/gi, instead: 'db.dialect.indexedBy(index)' },
  'GLOB / REGEXP': { re: /\b(?:GLOB|REGEXP)\b/g, instead: 'LIKE' },
  'FTS (MATCH, bm25, fts5)': { re: /\b\w+ MATCH \?|\bbm25\s*\(|\bfts5\b/g, instead: 'the search store of each engine' },
  'PRAGMA / sqlite_ names': { re: /\bPRAGMA\b|\bsqlite_\w+/gi, instead: 'the engine (src/db) or the operations of each engine' },
};

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...sourceFiles(p));
    else if (e.name.endsWith('.ts')) out.push(p);
  }
  return out;
}

/** The text of every string and template literal of a file, with the line each starts on. */
function literals(file: string): Array<{ text: string; line: number }> {
  const text = fs.readFileSync(file, 'utf8');
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const out: Array<{ text: string; line: number }> = [];
  const visit = (node: ts.Node): void => {
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) {
      out.push({ text: node.text, line: sf.getLineAndCharacterOfPosition(node.getStart()).line + 1 });
    } else if (ts.isTemplateExpression(node)) {
      // The parts around ${...} read as one statement, each substitution a blank.
      const parts = [node.head.text, ...node.templateSpans.map((s) => s.literal.text)];
      out.push({ text: parts.join(' ? '), line: sf.getLineAndCharacterOfPosition(node.getStart()).line + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

type Counts = Record<string, Record<string, number>>;

function scan(): { counts: Counts; where: Record<string, Record<string, number[]>> } {
  const counts: Counts = {};
  const where: Record<string, Record<string, number[]>> = {};
  for (const file of sourceFiles(path.join(ROOT, 'src')).sort()) {
    const rel = path.relative(ROOT, file);
    for (const lit of literals(file)) {
      for (const [name, form] of Object.entries(FORMS)) {
        const n = lit.text.match(form.re)?.length ?? 0;
        if (n === 0) continue;
        ((counts[rel] ??= {})[name] ??= 0);
        counts[rel][name] += n;
        ((where[rel] ??= {})[name] ??= []).push(lit.line);
      }
    }
  }
  return { counts, where };
}

test('SQLite-only SQL in src/ never grows: each file\'s uses per form match test/db/sqlite-only.json', () => {
  const { counts, where } = scan();
  if (process.env.SVC_WRITE_ALLOWANCE === '1') fs.writeFileSync(ALLOWANCE_FILE, JSON.stringify(counts, null, 2) + '\n');
  const allowed = JSON.parse(fs.readFileSync(ALLOWANCE_FILE, 'utf8')) as Counts;
  const grown: string[] = [];
  const shrunk: string[] = [];
  for (const file of new Set([...Object.keys(counts), ...Object.keys(allowed)])) {
    for (const name of new Set([...Object.keys(counts[file] ?? {}), ...Object.keys(allowed[file] ?? {})])) {
      const now = counts[file]?.[name] ?? 0;
      const may = allowed[file]?.[name] ?? 0;
      if (now > may) grown.push(`${file} (lines ${where[file][name].join(', ')}): ${name} ${now} > ${may}; write ${FORMS[name]?.instead ?? 'a portable form'}`);
      else if (now < may) shrunk.push(`${file}: ${name} ${now} < ${may}`);
    }
  }
  assert.deepEqual(grown, [], 'new SQLite-only SQL (see the portable form named)');
  assert.deepEqual(shrunk, [], 'fewer SQLite-only uses than allowed: lower test/db/sqlite-only.json (SVC_WRITE_ALLOWANCE=1)');
});

test('the forms are found where they are and not in look-alikes', () => {
  const hits = (name: string, sql: string) => sql.match(FORMS[name].re)?.length ?? 0;
  assert.equal(hits('rowid', 'ORDER BY created_at, rowid'), 1);
  assert.equal(hits('rowid', 'SELECT row_id, rowidx FROM t'), 0);
  assert.equal(hits('sum(condition)', "SELECT sum(status = 'queued'), sum(bytes) FROM t"), 1);
  assert.equal(hits('WHERE 1', 'SELECT * FROM t WHERE 1 ORDER BY id'), 1);
  assert.equal(hits('WHERE 1', 'SELECT * FROM t WHERE 1 = 1'), 0);
  assert.equal(hits('json functions', "SELECT value FROM json_each(?) WHERE json_extract(x, '$.a')"), 2);
  assert.equal(hits('json functions', 'SELECT jsonify(x)'), 0);
  assert.equal(hits('json functions', 'json (default): an array'), 0);
  assert.equal(hits('FTS (MATCH, bm25, fts5)', 'WHERE search_fts MATCH ?1 ORDER BY bm25(search_fts)'), 2);
  assert.equal(hits('FTS (MATCH, bm25, fts5)', 'the bytes no longer match the recorded hash'), 0);
  assert.equal(hits('IS NOT ?', 'WHERE id IS NOT ? AND x IS NOT NULL'), 1);
});
