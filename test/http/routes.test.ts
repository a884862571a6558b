// `svc routes` as a real child process: one line METHOD PATH FILE per route, by path then method;
// --json the same as { method, path, file }. Every operation of the served OpenAPI document is
// listed, and every FILE exists and registers its path as a literal (grepping a path finds it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Sandbox, describe, lines } from '../helpers/cli.ts';
import { startTestServer } from '../helpers/server.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

interface Line { method: string; path: string; file: string }

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

test('svc routes: every route of the served OpenAPI document, its file registering the literal path', async (t) => {
  const sb = new Sandbox(t);
  const [asJson, asText] = await Promise.all([sb.run(['routes', '--json', ...sb.dirs]), sb.run(['routes', ...sb.dirs])]);
  assert.equal(asJson.code, 0, describe(asJson));
  assert.equal(asJson.stderr, '', describe(asJson));
  assert.equal(asText.code, 0, describe(asText));
  assert.equal(asText.stderr, '', describe(asText));
  assert.equal(fs.existsSync(sb.data), false, 'svc routes opens no database');
  const table = JSON.parse(asJson.stdout) as Line[];
  for (const r of table) assert.deepEqual(Object.keys(r), ['method', 'path', 'file']);

  // The text form: the same routes in the same order, three fields a line.
  assert.deepEqual(lines(asText.stdout).map((l) => l.split(/\s+/)), table.map((r) => [r.method, r.path, r.file]));

  // A stable order: by path, then GET, POST, PUT, PATCH, DELETE; no route twice.
  const key = (r: Line) => `${r.path} ${METHODS.indexOf(r.method)}`;
  for (let i = 1; i < table.length; i++) {
    const [a, b] = [table[i - 1], table[i]];
    assert.ok(a.path < b.path || (a.path === b.path && METHODS.indexOf(a.method) < METHODS.indexOf(b.method)), `${key(a)} before ${key(b)}`);
  }

  // Exactly the operations of the served document.
  const s = await startTestServer(t);
  const doc = (await s.call('GET', '/api/openapi.json')).body as { paths: Record<string, Record<string, unknown>> };
  const served = Object.entries(doc.paths).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p.replace(/\{(\w+)\}/g, ':$1')}`));
  assert.deepEqual(table.map((r) => `${r.method} ${r.path}`).sort(), served.sort());
  assert.equal(table.length, s.app.router.routes.length);

  // Every file is in the repository and registers the path as a literal: r.get('/api/...', ...).
  const sources = new Map<string, string>();
  for (const r of table) {
    assert.match(r.file, /^src\/.+\.ts$/, `${r.method} ${r.path}`);
    const file = path.join(ROOT, r.file);
    assert.ok(fs.existsSync(file), `${r.file} exists`);
    if (!sources.has(r.file)) sources.set(r.file, fs.readFileSync(file, 'utf8'));
    const registration = new RegExp(`\\.${r.method.toLowerCase()}\\(\\s*'${escape(r.path)}'`);
    assert.match(sources.get(r.file)!, registration, `${r.file} registers ${r.method} ${r.path} under its literal path`);
  }
});

/**
 * Where a path's routes live: the folder its path names. The most specific rule wins: a
 * `METHOD /path` rule for one route, else the longest path prefix (whole segments). A rule with
 * `why` is a deliberate exception: the path names no folder, or names one in a wing below the code
 * the handler needs (a wing imports only the wings below it), or moving it would close a cycle.
 */
const RULES: { match: string; folder: string; why?: string }[] = [
  { match: '/api/assets', folder: 'src/production/assets/' },
  { match: '/api/audit', folder: 'src/platform/audit/' },
  { match: '/api/auth', folder: 'src/identity/sessions/' },
  { match: '/api/auth/login/mfa', folder: 'src/identity/mfa/' },
  { match: '/api/auth/mfa', folder: 'src/identity/mfa/' },
  { match: '/api/auth/sso', folder: 'src/identity/sso/' },
  { match: '/api/auth/sso/saml', folder: 'src/identity/sso/saml/' },
  { match: '/api/billing', folder: 'src/commercial/billing/' },
  { match: '/api/client', folder: 'src/finishing/client/' },
  { match: '/api/context', folder: 'src/tenancy/' },
  { match: '/api/exports', folder: 'src/finishing/export/' },
  { match: '/api/health', folder: 'src/system/' },
  { match: '/api/invitations', folder: 'src/identity/members/' },
  { match: '/api/jobs', folder: 'src/generation/jobs/' },
  { match: '/api/notification-preferences', folder: 'src/platform/notifications/' },
  { match: '/api/notifications', folder: 'src/platform/notifications/' },
  { match: '/api/openapi.json', folder: 'src/system/' },
  { match: '/api/organizations', folder: 'src/tenancy/' },
  { match: '/api/organizations/:organizationId/billing', folder: 'src/commercial/billing/' },
  { match: '/api/organizations/:organizationId/commercial', folder: 'src/commercial/' },
  { match: '/api/organizations/:organizationId/cost-centers', folder: 'src/commercial/quotas/' },
  { match: '/api/organizations/:organizationId/invitations', folder: 'src/identity/members/' },
  { match: '/api/organizations/:organizationId/invoices', folder: 'src/commercial/invoices/' },
  { match: '/api/organizations/:organizationId/members', folder: 'src/identity/members/' },
  { match: '/api/organizations/:organizationId/quotas', folder: 'src/commercial/quotas/' },
  { match: '/api/organizations/:organizationId/usage', folder: 'src/commercial/usage/' },
  { match: '/api/production/bible', folder: 'src/production/scripts/' },
  { match: '/api/production/catalog', folder: 'src/production/catalog/' },
  { match: '/api/production/deliveries', folder: 'src/finishing/delivery/' },
  { match: '/api/production/episodes', folder: 'src/production/catalog/' },
  { match: '/api/production/graph', folder: 'src/views/' },
  { match: '/api/production/media-artifacts', folder: 'src/generation/media/' },
  { match: '/api/production/qa', folder: 'src/finishing/qa/' },
  { match: '/api/production/reviews', folder: 'src/finishing/review/' },
  { match: '/api/production/script', folder: 'src/production/scripts/' },
  { match: '/api/production/seasons', folder: 'src/production/catalog/' },
  { match: '/api/production/shots', folder: 'src/production/catalog/' },
  { match: 'GET /api/production/shots/:shotId', folder: 'src/views/' },
  { match: '/api/projects', folder: 'src/production/projects/' },
  { match: '/api/projects/:projectId/members', folder: 'src/identity/members/' },
  { match: '/api/search', folder: 'src/production/search/' },
  { match: '/api/system', folder: 'src/system/' },
  { match: '/api/system/api-clients', folder: 'src/identity/api-clients/' },
  { match: '/api/system/feature-flags', folder: 'src/platform/flags/' },
  { match: '/api/system/identity/directory-syncs', folder: 'src/identity/scim/' },
  { match: '/api/system/identity/policy', folder: 'src/identity/policy/' },
  { match: '/api/system/identity/providers', folder: 'src/identity/sso/' },
  { match: '/api/system/notifications', folder: 'src/platform/notifications/' },
  { match: '/api/system/users', folder: 'src/identity/users/' },
  { match: '/api/system/worker', folder: 'src/generation/worker/' },
  { match: '/api/tasks', folder: 'src/production/tasks/' },
  { match: '/api/usage', folder: 'src/commercial/usage/' },
  { match: '/api/work-items', folder: 'src/views/' },
  { match: '/api/workflows', folder: 'src/generation/workflows/' },
  { match: '/api/workspaces/:workspaceId/members', folder: 'src/identity/members/' },
  { match: '/api/workspaces/:workspaceId/projects', folder: 'src/production/projects/' },
  { match: '/scim/v2.0', folder: 'src/identity/scim/' },
  // Deliberate exceptions, one line of reason each.
  { match: 'POST /api/auth/register', folder: 'src/identity/members/', why: 'registering is accepting an invitation (members/invitations.ts); members imports sessions, so the reverse would close a folder cycle' },
  { match: '/api/oauth/token', folder: 'src/identity/api-clients/', why: 'the OAuth 2.0 client-credentials grant exists for API clients; no oauth folder' },
  { match: '/api/adapters/dry-run', folder: 'src/generation/jobs/', why: 'a dry run of a job body (jobs/service.ts); jobs imports connectors (the adapters), so connectors cannot import jobs' },
  { match: '/api/admin/queue', folder: 'src/generation/jobs/', why: 'the organization\'s job queue (jobs/queue.ts); "admin" names no folder' },
  { match: '/api/platform/models', folder: 'src/generation/connectors/', why: 'model connectors are generation\'s; src/platform/ is a lower wing and may not import them' },
  { match: '/api/usage/storage', folder: 'src/production/assets/', why: 'the storage limit and largest files are the assets\' (assets/usage.ts); commercial sits below production' },
  { match: '/api/system/identity', folder: 'src/system/', why: 'the identity overview joins policy, providers and directories of three identity folders (system/identity.ts)' },
  { match: '/api/production/delivery-spec', folder: 'src/finishing/qa/', why: 'names no folder: the spec QA measures against (production/projects/spec.ts); its routes stay with QA' },
];

/** The rule for a route: its `METHOD /path` rule, else the longest prefix of whole segments. */
function ruleFor(method: string, p: string) {
  const exact = RULES.find((r) => r.match === `${method} ${p}`);
  if (exact) return exact;
  return RULES.filter((r) => r.match.startsWith('/') && (p === r.match || p.startsWith(`${r.match}/`)))
    .sort((a, b) => b.match.length - a.match.length)[0];
}

test('route files live in the folder their path names, but for the listed exceptions', async (t) => {
  const s = await startTestServer(t);
  const used = new Set<string>();
  const misplaced: string[] = [];
  for (const r of s.app.router.routes) {
    const rule = ruleFor(r.method, r.pattern);
    assert.ok(rule, `no folder rule for ${r.method} ${r.pattern} (${r.file}): add one to RULES`);
    used.add(rule.match);
    if (!r.file?.startsWith(rule.folder)) misplaced.push(`${r.method} ${r.pattern}: ${r.file}, expected in ${rule.folder} (rule ${rule.match})`);
  }
  assert.deepEqual(misplaced, []);
  assert.deepEqual(RULES.filter((r) => !used.has(r.match)).map((r) => r.match), [], 'every rule serves a route');
  for (const r of RULES.filter((x) => x.why)) assert.ok(r.why!.length <= 160, `one line of reason for ${r.match}`);
});
