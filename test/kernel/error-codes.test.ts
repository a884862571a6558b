// The error catalogue (src/kernel/error-codes.ts) stays the whole truth: docs/errors.md is generated
// from it, every code in it is used somewhere in src/, and no error code in src/ escapes it. The
// type-check already refuses an uncatalogued code given to AppError, its factories or CliError; this
// scan catches what a type cannot see: an error body built by hand, a code in an object literal,
// a throw site whose status the catalogue does not list for its code, and a console page branching
// on a code the service does not answer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ERROR_AREAS, ERROR_CODES, HTTP_ERROR_CODES, isErrorCode, type ErrorEntry } from '../../src/kernel/error-codes.ts';
import { ERRORS_DOC, renderErrorsDoc } from '../../tools/docs/errors.ts';
import { startTestServer } from '../helpers/server.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CATALOGUE = 'src/kernel/error-codes.ts';

function sources(dir: string): string[] {
  return fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((d) => {
    const rel = `${dir}/${d.name}`;
    if (d.isDirectory()) return sources(rel);
    return d.name.endsWith('.ts') ? [rel] : [];
  });
}
const SRC = new Map(
  sources('src')
    .filter((f) => f !== CATALOGUE)
    .map((f) => [f, fs.readFileSync(path.join(ROOT, f), 'utf8')]),
);
const entries = Object.entries(ERROR_CODES) as [string, ErrorEntry][];
const lineOf = (text: string, index: number) => text.slice(0, index).split('\n').length;

/**
 * Codes of other vocabularies than the error body's, which `code: '...'` literals in src/ may also
 * name: the queue's and the worker's alerts (GET /api/jobs/queue, /api/system/worker, the health
 * check), a workflow run's blockers, and the failure codes a job records in its own error field.
 * A new one is listed here on purpose; an error body code belongs in the catalogue.
 */
const OTHER_VOCABULARIES = new Set([
  // alerts
  'blocked_jobs',
  'external_jobs_waiting',
  'jobs_not_claimable',
  'oldest_waiting',
  'worker_not_running',
  'worker_paused',
  'worker_stale',
  // workflow run blockers (besides error codes they share)
  'runs_by_person',
  'shot_videos_missing',
  'waits_for_step',
  // a job's failure codes
  'job_aborted',
  'runner_error',
  'media_unreadable',
  'media_undecodable',
]);

test('docs/errors.md is generated from the catalogue (npm run docs:errors)', async () => {
  const current = fs.existsSync(ERRORS_DOC) ? fs.readFileSync(ERRORS_DOC, 'utf8') : '';
  assert.equal(current, await renderErrorsDoc(), 'docs/errors.md is stale: run npm run docs:errors');
  for (const [code] of entries) assert.match(current, new RegExp(`^\\| \`${code}\` +\\|`, 'm'), `${code} missing from docs/errors.md`);
});

test('npm run docs:errors -- --check passes on the committed page', () => {
  const out = execFileSync(process.execPath, [path.join(ROOT, 'tools/docs/errors.ts'), '--check'], { encoding: 'utf8' });
  assert.equal(out, '');
});

test('every catalogue entry is well formed', () => {
  for (const [code, e] of entries) {
    assert.match(code, /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/, `${code}: snake_case`);
    assert.ok(Object.hasOwn(ERROR_AREAS, e.area), `${code}: area ${e.area}`);
    for (const s of e.status) assert.ok(Number.isInteger(s) && s >= 400 && s <= 599, `${code}: status ${s}`);
    assert.equal(e.status.length === 0, e.area === 'cli', `${code}: only the command line's own codes have no HTTP status`);
    assert.ok(e.meaning.length >= 20 && !e.meaning.includes('\n'), `${code}: a one-line meaning`);
  }
});

test('every catalogued code is used in src/ (unused codes are removed)', () => {
  const unused = entries.map(([code]) => code).filter((code) => ![...SRC.values()].some((text) => text.includes(`'${code}'`)));
  assert.deepEqual(unused, [], 'codes in the catalogue that no source file names');
});

test('no error code in src/ escapes the catalogue, and every throw site has a catalogued status', () => {
  const problems: string[] = [];
  const sites: [RegExp, (m: RegExpExecArray) => number | null][] = [
    [/new AppError\(\s*(\d{3}),\s*'([^']*)'/g, (m) => Number(m[1])],
    [/\bforbidden\(\s*'([^']*)'/g, () => 403],
    [/\bconflict\(\s*'([^']*)'/g, () => 409],
    [/new CliError\(\s*'([^']*)'/g, () => null],
    [/\bssoFailure\([^;]*?,\s*(\d{3}),\s*'([^']*)'/g, (m) => Number(m[1])],
    [/\bchallengeError\(\s*(\d{3}),\s*'([^']*)'/g, (m) => Number(m[1])],
    [/\[(\d{3}), '([^']*)', /g, (m) => Number(m[1])],
  ];
  let found = 0;
  for (const [file, text] of SRC) {
    for (const [re, statusOf] of sites) {
      for (const m of text.matchAll(re)) {
        const code = m[m.length - 1];
        const where = `${file}:${lineOf(text, m.index)}`;
        found++;
        if (!isErrorCode(code)) {
          problems.push(`${where}: ${code} is not catalogued`);
          continue;
        }
        const status = statusOf(m);
        const listed = ERROR_CODES[code].status as readonly number[];
        if (status !== null && !listed.includes(status)) problems.push(`${where}: ${code} answered ${status}, the catalogue says ${listed.join(', ')}`);
      }
    }
    // An error body is built only by AppError.body() and the command line's failureOf().
    if (!['src/kernel/errors.ts', 'src/cli/errors.ts', 'src/http/openapi.ts'].includes(file)) {
      for (const m of text.matchAll(/\berror:\s*\{\s*code\b/g)) problems.push(`${file}:${lineOf(text, m.index)}: an error body built by hand`);
    }
    for (const m of text.matchAll(/\bcode(?:\s*===?|\s*!==?|:)\s*'([a-z][a-z0-9_]*)'/g)) {
      if (!isErrorCode(m[1]) && !OTHER_VOCABULARIES.has(m[1])) problems.push(`${file}:${lineOf(text, m.index)}: code ${m[1]} is not catalogued`);
    }
  }
  assert.deepEqual(problems, []);
  assert.ok(found > 150, `the scan saw ${found} throw sites; has the way errors are raised changed?`);
});

test("the served OpenAPI document lists every HTTP error code in the error body's enum", async (t) => {
  const s = await startTestServer(t);
  const r = await s.call('GET', '/api/openapi.json');
  assert.equal(r.status, 200);
  const code = r.body.components.schemas.Error.properties.error.properties.code as { enum: string[]; description: string };
  assert.deepEqual(code.enum, [...HTTP_ERROR_CODES]);
  assert.deepEqual(
    code.enum,
    entries
      .filter(([, e]) => e.status.length > 0)
      .map(([c]) => c)
      .sort(),
  );
  assert.match(code.description, /docs\/errors\.md/);
});

test('the console branches only on catalogued codes (or on the codes it makes itself)', () => {
  const dir = path.join(ROOT, 'web/assets');
  const files = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.js'))
    .map((f) => [`web/assets/${f}`, fs.readFileSync(path.join(dir, f), 'utf8')] as const);
  const own = new Set(files.flatMap(([, text]) => [...text.matchAll(/new ApiError\([^,]+,\s*'([a-z_]+)'/g)].map((m) => m[1])));
  const problems: string[] = [];
  let found = 0;
  for (const [file, text] of files) {
    const named = [
      ...[...text.matchAll(/(?<!typeof [\w.]*)\bcode\s*[!=]==\s*'([a-z][a-z0-9_]*)'/g)].map((m) => ({ code: m[1], index: m.index })),
      // the keys of a message table: const MESSAGES = /** ... */ ({ code: 'text', ... })
      ...[...text.matchAll(/const \w*MESSAGES = [^(]*\(\{([^}]*)\}\)/g)].flatMap((m) =>
        [...m[1].matchAll(/^\s*([a-z][a-z0-9_]*):/gm)].map((k) => ({ code: k[1], index: m.index })),
      ),
    ];
    for (const { code, index } of named) {
      found++;
      if (!isErrorCode(code) && !own.has(code)) problems.push(`${file}:${lineOf(text, index)}: ${code} is not catalogued`);
    }
  }
  assert.deepEqual(problems, []);
  assert.ok(found >= 10, `the scan saw ${found} codes in the console`);
});
