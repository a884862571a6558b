// The documentation holds together: the README stays short, every relative link of README.md and
// docs/*.md opens an existing file (and heading, when it names an anchor), and every source file the
// pages name exists.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '../..');
const PAGES = ['README.md', ...fs.readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
const read = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8');
/**
 * Pages the pages already link that another change of #23 writes (the architecture page). A link to
 * one is accepted while it is absent and checked like any other, anchors included, once it exists;
 * drop the entry when it has landed.
 */
const PENDING = new Set<string>();

/** The text outside fenced code blocks. */
function prose(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```/gm, '');
}

/**
 * GitHub's anchors of a page's headings (lower case, punctuation dropped, spaces to hyphens, repeats
 * numbered) and the ids of its `<a id="...">` anchors.
 */
export function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of prose(markdown).matchAll(/^#{1,6} (.+)$/gm)) {
    const base = m[1].trim().toLowerCase().replace(/[^\p{L}\p{N}_\- ]/gu, '').replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const m of prose(markdown).matchAll(/<a id="([^"]+)"><\/a>/g)) out.add(m[1]);
  return out;
}

test('README.md has at most 200 lines', () => {
  const lines = read('README.md').split('\n');
  if (lines.at(-1) === '') lines.pop();
  assert.ok(lines.length <= 200, `README.md has ${lines.length} lines`);
});

test('every relative link of README.md and docs/*.md opens an existing file and heading', () => {
  const broken: string[] = [];
  for (const page of PAGES) {
    for (const m of prose(read(page)).matchAll(/\]\(([^)\s]+)\)/g)) {
      const href = m[1];
      if (/^[a-z][a-z0-9+.-]*:/i.test(href)) continue; // https:, mailto:
      const [file, anchor] = href.split('#') as [string, string | undefined];
      const target = file === '' ? page : path.posix.normalize(path.posix.join(path.posix.dirname(page), file));
      if (!fs.existsSync(path.join(ROOT, target))) {
        if (PENDING.has(target)) continue;
        broken.push(`${page}: ${href} (no file ${target})`);
        continue;
      }
      if (anchor !== undefined && target.endsWith('.md') && !anchors(read(target)).has(anchor)) broken.push(`${page}: ${href} (no heading #${anchor} in ${target})`);
    }
  }
  assert.deepEqual(broken, []);
});

test('every source path README.md and docs/*.md name exists', () => {
  const missing: string[] = [];
  for (const page of PAGES) {
    for (const m of read(page).matchAll(/`((?:src|tools|test|web|bench)\/[\w./*-]*)/g)) {
      const p = m[1];
      if (p.includes('*') || /NNNN/.test(p)) continue; // patterns, not files
      if (!fs.existsSync(path.join(ROOT, p))) missing.push(`${page}: ${p}`);
    }
  }
  assert.deepEqual(missing, []);
});

/** Every file under `dir` whose name ends with `suffix`, relative to the repository. */
function filesUnder(dir: string, suffix: string): string[] {
  return (fs.readdirSync(path.join(ROOT, dir), { recursive: true }) as string[]).filter((f) => f.endsWith(suffix)).map((f) => path.join(dir, f));
}

test('files stay small: no file of src/ over 400 lines, no test file over 600 (docs/architecture.md)', () => {
  const over = (files: string[], limit: number) =>
    files.map((f) => [f, read(f).split('\n').length - 1] as const).filter(([, n]) => n > limit).map(([f, n]) => `${f}: ${n} lines`);
  assert.deepEqual([...over(filesUnder('src', '.ts'), 400), ...over(filesUnder('test', '.test.ts'), 600)], []);
});
