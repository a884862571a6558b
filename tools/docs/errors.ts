// docs/errors.md from the error catalogue (src/kernel/error-codes.ts): `npm run docs:errors` writes it,
// `npm run docs:errors -- --check` exits 1 when the file differs. test/kernel/error-codes.test.ts fails on
// a stale file, so a code added, changed or removed in the catalogue is regenerated in the same commit.
// The page goes through Prettier with the repository's settings, so the formatter's check agrees with it.
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as prettier from 'prettier';
import { ERROR_AREAS, ERROR_CODES, type ErrorArea, type ErrorEntry } from '../../src/kernel/error-codes.ts';

export const ERRORS_DOC = fileURLToPath(new URL('../../docs/errors.md', import.meta.url));

const cell = (s: string) => s.replace(/\|/g, '\\|');

/** The page, from the catalogue alone: one table per area, codes in alphabetical order. */
export async function renderErrorsDoc(): Promise<string> {
  const entries = Object.entries(ERROR_CODES) as [string, ErrorEntry][];
  const out = [
    '<!-- Generated from src/kernel/error-codes.ts by `npm run docs:errors`; do not edit by hand. -->',
    '# Error codes',
    '',
    'Every error the service answers has the body `{ "error": { "code", "message", "details"? } }`',
    '(`svc ... --json` prints the same body on a failure). The `code` is one of those below; it is',
    "stable, unlike the message, which is for people. `details` carries what the code's line names.",
    'Clients should branch on the status first and on the code when they need to tell cases apart.',
    '',
    "SCIM routes (`/scim/...`) answer in SCIM's own error shape (RFC 7644 section 3.12, a `scimType`",
    'instead of a code); see [security](security.md). The codes come from `src/kernel/error-codes.ts`:',
    'a code that is not catalogued there does not type-check.',
    '',
    `${entries.length} codes:`,
    '',
  ];
  const areas = (Object.entries(ERROR_AREAS) as [ErrorArea, string][])
    .map(([area, title]) => ({ area, title, rows: entries.filter(([, e]) => e.area === area).sort(([a], [b]) => a.localeCompare(b)) }))
    .filter((a) => a.rows.length > 0);
  for (const { area, title } of areas) out.push(`- [${title}](#${area})`);
  for (const { area, title, rows } of areas) {
    out.push('', `<a id="${area}"></a>`, `## ${title}`, '', '| Code | Status | Meaning |', '| --- | --- | --- |');
    for (const [code, e] of rows) {
      out.push(`| \`${code}\` | ${e.status.length ? e.status.join(', ') : '(CLI)'} | ${cell(e.meaning)} |`);
    }
  }
  const options = await prettier.resolveConfig(ERRORS_DOC);
  return prettier.format(`${out.join('\n')}\n`, { ...options, filepath: ERRORS_DOC });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === fs.realpathSync(process.argv[1])) {
  const text = await renderErrorsDoc();
  if (process.argv.includes('--check')) {
    const current = fs.existsSync(ERRORS_DOC) ? fs.readFileSync(ERRORS_DOC, 'utf8') : '';
    if (current !== text) {
      console.error('docs/errors.md is stale: run npm run docs:errors');
      process.exit(1);
    }
  } else {
    fs.writeFileSync(ERRORS_DOC, text);
    console.log(`wrote ${ERRORS_DOC}`);
  }
}
