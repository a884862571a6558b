// The served OpenAPI document is something a client team can build on: Redocly's recommended lint
// passes with no error and no warning, and openapi-typescript turns it into types with which a small
// client program type-checks under `strict` — and fails to when it misuses an answer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { startTestServer, tempDir } from '../helpers/server.ts';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');
const bin = (rel: string) => path.join(ROOT, 'node_modules', rel);
const QUIET = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' };

async function servedDocument(t: import('node:test').TestContext): Promise<{ dir: string; file: string }> {
  const s = await startTestServer(t);
  const r = await s.call('GET', '/api/openapi.json');
  assert.equal(r.status, 200);
  const dir = tempDir(t);
  const file = path.join(dir, 'openapi.json');
  fs.writeFileSync(file, r.text);
  return { dir, file };
}

test('Redocly lint (recommended rules): 0 errors and 0 warnings', async (t) => {
  const { dir } = await servedDocument(t);
  // The three redirect-only operations (SSO start, the OIDC callback and the SAML assertion consumer
  // answer 302 by design) are the only exceptions, named one by one in the repository's ignore file.
  fs.copyFileSync(path.join(ROOT, '.redocly.lint-ignore.yaml'), path.join(dir, '.redocly.lint-ignore.yaml'));
  const out = await run(process.execPath, [bin('@redocly/cli/bin/cli.js'), 'lint', 'openapi.json', '--format=json'], { cwd: dir, env: QUIET, maxBuffer: 64 << 20 })
    .catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? '' }));
  const report = JSON.parse(out.stdout) as { totals: { errors: number; warnings: number; ignored: number }; problems: { ruleId: string; message: string; location: { pointer?: string }[] }[] };
  const listed = report.problems.map((p) => `${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`).join('\n');
  assert.equal(report.totals.errors, 0, listed);
  assert.equal(report.totals.warnings, 0, listed);
  assert.ok(report.totals.ignored <= 3, `only the three redirect-only operations may be ignored (${report.totals.ignored})`);
});

/** A client program written against the generated types: every answer it reads is typed. */
const PROGRAM = `
import type { components, paths } from './api.ts';

type Json<P extends keyof paths, M extends keyof paths[P], S extends number> =
  paths[P][M] extends { responses: { [K in S]: { content: { 'application/json': infer B } } } } ? B : never;
type IsNever<T> = [T] extends [never] ? true : false;

type Project = components['schemas']['Project'];
type ProjectPage = Json<'/api/workspaces/{workspaceId}/projects', 'get', 200>;
type Created = Json<'/api/workspaces/{workspaceId}/projects', 'post', 201>;

const typed: [IsNever<ProjectPage>, IsNever<Created>] = [false, false];

export async function firstProjectName(base: string, token: string, workspaceId: string): Promise<string | undefined> {
  const res = await fetch(\`\${base}/api/workspaces/\${workspaceId}/projects\`, { headers: { authorization: \`Bearer \${token}\` } });
  const page = (await res.json()) as ProjectPage;
  const total: number = page.pagination.total;
  const first: Project | undefined = page.items[0];
  const archived: string | null | undefined = first?.archivedAt;
  void total; void archived; void typed;
  return first?.name;
}

export function statusOf(p: Created): 'draft' | 'active' | 'paused' | 'in_review' | 'archived' {
  return p.status;
}

type Tasks = Json<'/api/tasks', 'get', 200>;
type Delivery = Json<'/api/production/deliveries/{deliveryId}', 'get', 200>;
export const firstTaskTitle = (page: Tasks): string | undefined => page.items[0]?.title;
export const approvedHashes = (d: Delivery): string[] => d.items.map((i) => i.sha256);
`;

/** The same program misusing answers: each line must be a type error. */
const MISUSES = [
  'export const a = (p: components[\'schemas\'][\'Project\']): number => p.name;',
  'export const b = (p: components[\'schemas\'][\'Project\']) => p.noSuchField;',
  'export const c = (p: components[\'schemas\'][\'Project\']): string => p.archivedAt;',
  'export const d = (t: components[\'schemas\'][\'Task\']): number => t.title;',
];

/** Type-checks the files in one compiler run; the errors it reports, by file. */
async function typeCheck(dir: string, files: Record<string, string>): Promise<Map<string, string>> {
  for (const [name, source] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), source);
  const args = [bin('typescript/bin/tsc'), '--noEmit', '--strict', '--target', 'es2022', '--module', 'nodenext', '--moduleResolution', 'nodenext',
    '--allowImportingTsExtensions', '--lib', 'es2022,dom', '--types', 'node', '--typeRoots', bin('@types'), '--skipLibCheck', '--pretty', 'false', ...Object.keys(files)];
  const output = await run(process.execPath, args, { cwd: dir, maxBuffer: 64 << 20 }).then((r) => r.stdout, (err: Error & { stdout?: string }) => err.stdout ?? String(err));
  const said = new Map<string, string>();
  for (const line of output.split('\n')) {
    const file = /^([\w.-]+\.ts)\(\d+,\d+\): error TS\d+/.exec(line)?.[1];
    if (file) said.set(file, `${said.get(file) ?? ''}${line}\n`);
  }
  return said;
}

test('a TypeScript client generated by openapi-typescript types every answer it reads', async (t) => {
  const { dir, file } = await servedDocument(t);
  await run(process.execPath, [bin('openapi-typescript/bin/cli.js'), file, '-o', path.join(dir, 'api.ts')], { env: QUIET, maxBuffer: 64 << 20 });
  const generated = fs.readFileSync(path.join(dir, 'api.ts'), 'utf8');
  assert.match(generated, /Project: \{/);
  fs.writeFileSync(path.join(dir, 'package.json'), '{ "type": "module" }');
  const misuses = Object.fromEntries(MISUSES.map((line, i) => [`misuse${i}.ts`, `import type { components } from './api.ts';\n${line}\n`]));
  const said = await typeCheck(dir, { 'client.ts': PROGRAM, ...misuses });
  assert.equal(said.get('client.ts'), undefined, 'the client program type-checks');
  assert.equal(said.get('api.ts'), undefined, 'the generated types type-check');
  for (const [name, source] of Object.entries(misuses)) assert.ok(said.has(name), `a misuse type-checks: ${source}`);
});
