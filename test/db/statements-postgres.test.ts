// The stores' statements that SQLite and PostgreSQL spell differently (db.dialect) or that only run
// alike with care (JSON, LIKE's case, rounding, NULL order, ties, a parameter's type), run on both
// engines over the same seeded rows of a migrated database: each answer must be the one expected, on
// SQLite and on PostgreSQL. The real store functions are called; the rows are seeded with plain SQL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Db } from '../../src/db/db.ts';
import { migrate } from '../../src/db/migrate.ts';
import type { RowCursor } from '../../src/db/cursor.ts';
import { LocalStore } from '../../src/kernel/storage/local.ts';
import { usageByBucket } from '../../src/commercial/trend.ts';
import {
  costCenterByIdOrCode, eachUsageCombo, namesOf, openUsageCursor, pageUsage, resolveQuery, scopeSums, usageWhere, windowSums, type UsageCombo,
} from '../../src/commercial/usage/store.ts';
import type { Where } from '../../src/platform/audit/store.ts';
import { openInvoiceCursor, pageInvoices, usageGroups } from '../../src/commercial/invoices/store.ts';
import { quotaWarningsView } from '../../src/commercial/quotas/service.ts';
import { billingAccountEventsOf } from '../../src/directory/plan/account.ts';
import { ALL_ROWS } from '../../src/db/page.ts';
import { listScimUsers } from '../../src/identity/scim/store.ts';
import { listProviders, providerReadingVariable } from '../../src/identity/sso/store.ts';
import { invitationsOf } from '../../src/identity/members/store.ts';
import { gatesOfRuns, stepsOfRuns, templateWithKey } from '../../src/generation/workflows/store.ts';
import { requeueJob } from '../../src/generation/jobs/store.ts';
import { gateCandidates } from '../../src/finishing/qa/gates.ts';
import { itemCounts } from '../../src/finishing/delivery/store.ts';
import { largestFiles } from '../../src/production/assets/store.ts';
import { openTasksOf } from '../../src/production/catalog/store.ts';
import { tasksOfProject } from '../../src/production/tasks/store.ts';
import { countInbox, listInbox, namedUserRows, type InboxOwner } from '../../src/platform/notifications/store.ts';
import { organizationsByIds } from '../../src/directory/tenancy/store.ts';
import { listUsers } from '../../src/directory/users/store.ts';
import { liveSessionsOfUser } from '../../src/directory/sessions/store.ts';
import { protectionOf } from '../../src/system/storage-rules.ts';
import { migrationItems } from '../../src/system/storage-migrate.ts';
import { tempDir } from '../helpers/server.ts';
import { ENGINES } from '../helpers/postgres.ts';

const at = (minute: number) => new Date(Date.UTC(2026, 2, 10, 12, minute)).toISOString();
const MARCH = { start: '2026-03-01T00:00:00.000Z', end: '2026-04-01T00:00:00.000Z' };

/** INSERT of one row (the columns its object names). */
async function put(db: Db, table: string, row: Record<string, string | number | null>): Promise<void> {
  const cols = Object.keys(row);
  await db.run(`INSERT INTO ${table} (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')})`, ...Object.values(row));
}

const user = (id: string, name: string, email: string) => ({
  id, email, email_normalized: email.toLowerCase(), name, status: 'active', is_system_admin: 0, password_hash: null, password_must_change: 0,
  password_changed_at: null, mfa_enabled: 0, last_login_at: null, created_at: at(0), updated_at: at(0),
});
const usage = (id: string, o: Record<string, string | number | null>) => ({
  id, organization_id: 'org_a', workspace_id: null, project_id: null, actor_user_id: null, currency: 'USD', cost_center_id: null,
  job_id: null, metadata: '{}', event_key: id, ...o,
});
const invoice = (id: string, org: string, month: number, status: string, number: string | null) => ({
  id, organization_id: org, period_start: `2026-0${month}-01T00:00:00.000Z`, period_end: `2026-0${month + 1}-01T00:00:00.000Z`, status, number,
  currency: 'USD', tax_rate: '0', due_days: 30, subtotal_minor: 100, tax_minor: 0, total_minor: 100, snapshot: '{}', created_by: null,
  created_at: at(month), updated_at: at(month), issued_at: null, due_at: null, paid_at: null, voided_at: null,
});
const job = (id: string, status: string, output: string | null) => ({
  id, organization_id: 'org_a', workspace_id: 'ws_a', project_id: 'prj_1', kind: 'image', status, priority: 0, attempt: 1, max_attempts: 3,
  input: '{}', output, created_at: at(4), updated_at: at(4),
});
const artifact = (id: string, jobId: string, minute: number) => ({
  id, organization_id: 'org_a', workspace_id: 'ws_a', project_id: 'prj_1', job_id: jobId, kind: 'image', source: 'generation',
  storage_path: `media/${id}.png`, file_name: `${id}.png`, mime_type: 'image/png', file_size: 100, content_sha256: id.padEnd(64, '0'),
  has_video: 0, has_audio: 0, created_at: at(minute),
});
const GATES = JSON.stringify([{ key: 'zeta', label: 'Z', blocking: true }, { key: 'alpha', label: 'A', blocking: false }]);

/** The same rows on either engine: two organizations, their people, usage, invoices, identity, a workflow run, files. */
async function seed(db: Db): Promise<void> {
  for (const [id, minute] of [['org_a', 0], ['org_b', 1]] as const) {
    await put(db, 'organizations', { id, name: id, time_zone: 'UTC', created_at: at(minute), created_by: null });
  }
  await put(db, 'users', user('usr_1', 'Ann', 'ann@example.com'));
  await put(db, 'users', user('usr_2', 'Bob', 'bob@example.com'));
  await put(db, 'users', user('usr_3', 'Émile', 'emile@example.com'));
  await put(db, 'workspaces', { id: 'ws_a', organization_id: 'org_a', name: 'Alpha', created_at: at(0), created_by: null });
  await put(db, 'workspaces', { id: 'ws_b', organization_id: 'org_a', name: 'beta', created_at: at(0), created_by: null });
  for (const [id, ws, name] of [['prj_1', 'ws_a', 'Pilot'], ['prj_2', 'ws_b', 'Second']]) {
    await put(db, 'projects', { id, organization_id: 'org_a', workspace_id: ws, name, status: 'active', created_at: at(0), updated_at: at(0) });
  }
  await put(db, 'memberships', {
    id: 'mem_1', user_id: 'usr_1', level: 'organization', scope_id: 'org_a', organization_id: 'org_a', role: 'org_owner', access_mode: 'full',
    status: 'active', created_at: at(0),
  });
  await put(db, 'cost_centers', { id: 'cc_1', organization_id: 'org_a', workspace_id: 'ws_a', code: 'CC-1', name: 'Marketing', created_at: at(0), updated_at: at(0) });
  await put(db, 'cost_centers', { id: 'cc_2', organization_id: 'org_a', workspace_id: null, code: 'ops', name: 'Operations', created_at: at(0), updated_at: at(0) });

  // Usage: two clips in the same millisecond (a tie broken by insertion), text-to-speech quantities whose
  // millionths end in exactly .5 (rounded half away from zero: 3 and 5, not 2 and 4), a storage day after.
  const clip = { workspace_id: 'ws_a', project_id: 'prj_1', kind: 'clip', unit: 'clips', quantity: 1, unit_price_e4: 10000, estimated_cost_e4: 10000, cost_center_id: 'cc_1', created_at: at(1) };
  await put(db, 'usage_events', usage('ue_1', { ...clip, actor_user_id: 'usr_1', metadata: '{"note":"Intro"}' }));
  await put(db, 'usage_events', usage('ue_2', { ...clip, actor_user_id: 'usr_2' }));
  const tts = { workspace_id: 'ws_b', project_id: 'prj_2', kind: 'tts', unit: 'Characters', unit_price_e4: 1000000 };
  await put(db, 'usage_events', usage('ue_3', { ...tts, actor_user_id: 'usr_1', quantity: 0.0000025, estimated_cost_e4: 3, metadata: '{"voice":"ALTO"}', created_at: at(2) }));
  await put(db, 'usage_events', usage('ue_4', { ...tts, actor_user_id: 'usr_2', quantity: 0.0000045, estimated_cost_e4: 5, created_at: at(3) }));
  await put(db, 'usage_events', usage('ue_5', {
    kind: 'storage', unit: 'GB-month', quantity: 2.0000005, unit_price_e4: 10, estimated_cost_e4: 20, cost_center_id: 'cc_2', created_at: '2026-03-11T00:30:00.000Z',
  }));
  await put(db, 'usage_events', usage('ue_9', { organization_id: 'org_b', kind: 'clip', unit: 'clips', quantity: 1, estimated_cost_e4: 1, created_at: at(1) }));

  for (const [i, [ws, threshold]] of [['', 80], ['ws_a', 80], ['', 100]].entries()) {
    await put(db, 'quota_warnings', { organization_id: 'org_a', workspace_id: ws, metric: 'clips', period: '2026-03', threshold, used: 9, quota: 10, created_at: at(i) });
  }
  for (const id of ['bae_1', 'bae_2']) {
    await put(db, 'billing_account_events', { id, organization_id: 'org_a', changed: '[]', before: '{}', after: '{}', created_at: at(1) });
  }
  await put(db, 'invoices', invoice('inv_1', 'org_a', 1, 'issued', 'INV-0001'));
  await put(db, 'invoices', invoice('inv_2', 'org_a', 2, 'draft', null));
  await put(db, 'invoices', invoice('inv_3', 'org_a', 3, 'issued', 'INV-0002'));
  await put(db, 'invoices', invoice('inv_9', 'org_b', 1, 'issued', 'INV-0001'));

  await put(db, 'scim_directories', {
    id: 'dir_1', organization_id: 'org_a', name: 'Okta', default_role: 'org_member', token_hash: 'h', token_hint: 'x', created_at: at(0), updated_at: at(0),
  });
  const emails: Array<[string, string, string]> = [
    ['usr_1', 'ann', '[{"value":"Ann@Example.com","primary":true}]'],
    ['usr_2', 'bob', '[{"value":"bob@work.example"},{"value":"BOB@home.example"}]'],
    ['usr_3', 'emile', '[]'],
  ];
  for (const [i, [userId, name, list]] of emails.entries()) {
    await put(db, 'scim_users', {
      directory_id: 'dir_1', user_id: userId, organization_id: 'org_a', user_name: name, user_name_key: name, display_name: name, emails: list,
      created_at: at(i), updated_at: at(i),
    });
  }
  const provider = (id: string, kind: string, name: string, config: object) => ({
    id, kind, name, organization_id: 'org_a', default_role: 'org_member', config: JSON.stringify(config), created_at: at(0), updated_at: at(0),
  });
  await put(db, 'identity_providers', provider('idp_1', 'oidc', 'Okta', { issuer: 'https://idp.example', clientSecretRef: 'SVC_OIDC_SECRET' }));
  await put(db, 'identity_providers', provider('idp_2', 'saml', 'adfs', { idpCertRef: 'SVC_SAML_CERT' }));

  // A workflow: one template key in three scopes, a run of two completed jobs (one with a file of more
  // than 2^31 bytes), gates inserted in the template's order (zeta before alpha), and a queued job.
  const template = (id: string, scope: string, org: string | null, ws: string | null) => ({
    id, scope, organization_id: org, workspace_id: ws, template_key: 'intro', version: 1, created_at: at(0), updated_at: at(0),
  });
  for (const t of [template('tpl_g', 'global', null, null), template('tpl_o', 'organization', 'org_a', null), template('tpl_w', 'workspace', 'org_a', 'ws_a')]) {
    await put(db, 'workflow_templates', t);
    await put(db, 'workflow_template_versions', {
      template_id: t.id, version: 1, name: t.id, category: 'video', status: 'active', description: '', steps: '[]', gates: GATES, created_at: at(0),
    });
  }
  await put(db, 'generation_jobs', job('job_1', 'completed', JSON.stringify({
    files: [{ path: 'outputs/job_1/a.png', sha256: 'a'.repeat(64), fileSize: 12 }, { path: 'outputs/job_1/b.png', sha256: 'b'.repeat(64), fileSize: 7 }],
  })));
  await put(db, 'generation_jobs', job('job_2', 'completed', JSON.stringify({ files: [{ path: 'outputs/job_2/c.wav', sha256: 'c'.repeat(64), fileSize: 3_000_000_000 }] })));
  await put(db, 'generation_jobs', job('job_3', 'queued', null));
  await put(db, 'generation_jobs', { ...job('job_4', 'failed', null), attempt: 3 });
  await put(db, 'generation_jobs', { ...job('job_5', 'cancelled', null), attempt: 1 });
  await put(db, 'workflow_runs', {
    id: 'run_1', organization_id: 'org_a', workspace_id: 'ws_a', project_id: 'prj_1', template_id: 'tpl_o', template_version: 1, mode: 'queue',
    priority: 0, approve_external: 0, created_at: at(5),
  });
  await put(db, 'workflow_run_gates', { run_id: 'run_1', gate_key: 'zeta', label: 'Z', blocking: 1 });
  await put(db, 'workflow_run_gates', { run_id: 'run_1', gate_key: 'alpha', label: 'A', blocking: 0 });
  for (const [position, jobId] of [[1, 'job_1'], [2, 'job_2']] as const) {
    await put(db, 'workflow_run_steps', { run_id: 'run_1', position, step_key: `s${position}`, label: `S${position}`, job_kind: 'image', job_id: jobId, preview: '{}', blockers: '[]' });
  }
  await put(db, 'media_artifacts', artifact('art_1', 'job_1', 6));
  await put(db, 'media_artifacts', artifact('art_2', 'job_2', 7));
  await put(db, 'media_artifacts', artifact('art_3', 'job_1', 8));

  for (const [id, n] of [['del_1', 2], ['del_2', 1]] as const) {
    await put(db, 'deliveries', { id, organization_id: 'org_a', workspace_id: 'ws_a', project_id: 'prj_1', title: id, created_at: at(8), updated_at: at(8) });
    for (let p = 1; p <= n; p++) {
      await put(db, 'delivery_items', { delivery_id: id, position: p, artifact_id: `art_${id === 'del_1' ? p : 3}`, artifact_sha256: 'x' });
    }
  }
  await put(db, 'assets', {
    id: 'ast_1', organization_id: 'org_a', workspace_id: 'ws_a', project_id: 'prj_1', kind: 'image', name: 'Logo', tags: '[]', status: 'active',
    created_at: at(1), updated_at: at(1),
  });
  for (const [id, number, file, size] of [['ver_1', 1, 'a', 10], ['ver_2', 2, 'a', 10], ['ver_3', 3, 'b', 50]] as const) {
    await put(db, 'asset_versions', {
      id, asset_id: 'ast_1', organization_id: 'org_a', workspace_id: 'ws_a', project_id: 'prj_1', number, file_name: file, mime_type: 'image/png',
      file_size: size, content_sha256: id.padEnd(64, '0'), storage_path: `assets/org_a/${file}`, status: 'ok', created_at: at(number),
    });
  }

  const note = (id: string, ws: string | null, project: string | null, minute: number) => ({
    id, user_id: 'usr_1', organization_id: 'org_a', workspace_id: ws, project_id: project, event_id: `evt_${id}`, category: 'jobs', type: 't',
    subject: id, created_at: at(minute),
  });
  await put(db, 'notifications', note('ntf_1', null, null, 1));
  await put(db, 'notifications', note('ntf_2', 'ws_a', null, 2));
  await put(db, 'notifications', note('ntf_3', 'ws_b', 'prj_2', 3));
  await put(db, 'notifications', note('ntf_4', 'ws_a', 'prj_1', 3));

  // Ties on created_at: broken by id, as insertion order.
  for (const id of ['tsk_1', 'tsk_2']) {
    await put(db, 'tasks', {
      id, organization_id: 'org_a', workspace_id: 'ws_a', project_id: 'prj_1', title: id, type: 'general', priority: 'normal', status: 'todo',
      assignee_user_id: 'usr_1', created_at: at(1), updated_at: at(1),
    });
  }
  for (const id of ['inv_a', 'inv_b']) {
    await put(db, 'invitations', {
      id, organization_id: 'org_a', email: `${id}@example.com`, email_normalized: `${id}@example.com`, role: 'org_member', status: 'pending',
      expires_at: at(59), created_at: at(1), updated_at: at(1),
    });
  }
  for (const id of ['ses_1', 'ses_2']) {
    await put(db, 'sessions', { id, token_hash: id, user_id: 'usr_1', kind: 'browser', created_at: at(1), last_seen_at: at(1), expires_at: at(59) });
  }
}

/** Plain data of a store's answer: objects with the plain prototype (node:sqlite's rows have none), maps and sets as sorted arrays. */
function plain(v: unknown): unknown {
  if (v instanceof Map) return [...v.entries()].map(plain).sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));
  if (v instanceof Set) return [...v].map(plain).sort();
  if (Array.isArray(v)) return v.map(plain);
  if (v && typeof v === 'object' && !(v instanceof Uint8Array)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  return v;
}

async function drain<R>(c: RowCursor<R>): Promise<R[]> {
  const out: R[] = [];
  try {
    for (let r = await c.rows.next(); !r.done; r = await c.rows.next()) out.push(r.value);
  } finally {
    c.close();
  }
  return out;
}


test('the stores\' statements answer alike on SQLite and PostgreSQL', async (t) => {
  const dbs: Record<string, Db> = {};
  for (const [engine, open] of Object.entries(ENGINES)) {
    dbs[engine] = await open(t);
    await migrate(dbs[engine]);
    await seed(dbs[engine]);
  }
  /** Runs `read` on each engine: both answers must be `expected`. */
  const check = (name: string, read: (db: Db) => Promise<unknown>, expected: unknown) => t.test(name, async () => {
    for (const [engine, db] of Object.entries(dbs)) assert.deepEqual(plain(await read(db)), plain(expected), engine);
  });
  const ids = (rows: Array<{ id: string }>) => rows.map((r) => r.id);

  await check('usage groups of invoices round millionths half away from zero and put NULL codes and names first', async (db) => await usageGroups(db, 'org_a', MARCH.start, MARCH.end), [
    { cost_center_id: null, workspace_id: 'ws_b', kind: 'tts', unit: 'Characters', currency: 'USD', unit_price_e4: 1000000n, quantity_e6: 8n, cost_e4: 8n, events: 2, cost_center_code: null, workspace_name: 'beta' },
    { cost_center_id: 'cc_1', workspace_id: 'ws_a', kind: 'clip', unit: 'clips', currency: 'USD', unit_price_e4: 10000n, quantity_e6: 2000000n, cost_e4: 20000n, events: 2, cost_center_code: 'CC-1', workspace_name: 'Alpha' },
    { cost_center_id: 'cc_2', workspace_id: null, kind: 'storage', unit: 'GB-month', currency: 'USD', unit_price_e4: 10n, quantity_e6: 2000001n, cost_e4: 20n, events: 1, cost_center_code: 'ops', workspace_name: null },
  ]);
  await check('the invoice search ignores the case of ASCII letters and takes _ literally', async (db) => {
    const page = (query: string) => pageInvoices(db, 'org_a', { query }, 10, 0);
    const [dash, underscore, none] = [await page('inv-'), await page('INV_'), await page('inv%')];
    const exported = await drain(openInvoiceCursor(db, 'org_a', { query: 'inv-' }, true));
    return { dash: [ids(dash.rows), dash.total], underscore: [ids(underscore.rows), underscore.total], none: none.total, exported: exported.map((r) => [r.id, r.lines]) };
  }, { dash: [['inv_3', 'inv_1'], 2], underscore: [['inv_3', 'inv_2', 'inv_1'], 3], none: 0, exported: [['inv_3', []], ['inv_1', []]] });

  await check('every row is read with ALL_ROWS as the LIMIT (SQLite\'s LIMIT -1 is an error on PostgreSQL)', async (db) => ({
    warnings: (await quotaWarningsView(db, 'org_a', ALL_ROWS)).map((w) => [w.workspaceId, w.threshold]),
    latest: (await quotaWarningsView(db, 'org_a', 1)).length,
    events: ids(await billingAccountEventsOf(db, 'org_a')),
  }), { warnings: [[null, 100], ['ws_a', 80], [null, 80]], latest: 1, events: ['bae_2', 'bae_1'] });

  const query = async (db: Db) => usageWhere(db.dialect, { organizationId: 'org_a', from: MARCH.start, to: null, query: await resolveQuery(db, 'org_a', 'al') });
  await check('a usage query term matches names and metadata in any ASCII case, values through JSON lists', async (db) => ({
    char: await resolveQuery(db, 'org_a', 'CHAR'), al: await resolveQuery(db, 'org_a', 'al'),
  }), {
    char: { like: '%CHAR%', kinds: [], units: ['Characters'], projectIds: [], workspaceIds: [], costCenterIds: [] },
    al: { like: '%al%', kinds: [], units: [], projectIds: [], workspaceIds: ['ws_a'], costCenterIds: [] },
  });
  await check('a usage page is newest first, ties by insertion, with names; the export reads the same order', async (db) => {
    const w = await query(db);
    const page = await pageUsage(db, w, 10, 0);
    return { page: page.map((r) => [r.id, r.workspace_name, r.project_name, r.actor_name, r.cost_center_code]), second: ids(await pageUsage(db, w, 1, 1)), exported: ids(await drain(openUsageCursor(db, w))) };
  }, {
    page: [['ue_3', 'beta', 'Second', 'Ann', null], ['ue_2', 'Alpha', 'Pilot', 'Bob', 'CC-1'], ['ue_1', 'Alpha', 'Pilot', 'Ann', 'CC-1']], second: ['ue_2'], exported: ['ue_3', 'ue_2', 'ue_1'],
  });
  await check('usage combinations, window sums and scope sums keep counts as numbers and costs as bigint', async (db) => {
    const all = usageWhere(db.dialect, { organizationId: 'org_a', from: MARCH.start, to: null });
    const byKey = (c: { kind: string; u: string | null }) => `${c.kind} ${c.u}`;
    const combos = async (d: Db, w: Where) => {
      const out: UsageCombo[] = [];
      await eachUsageCombo(d, w, (c) => { out.push(c); });
      return out;
    };
    return {
      combos: (await combos(db, all)).sort((a, b) => (byKey(a) < byKey(b) ? -1 : 1)).map((c) => [c.kind, c.u, c.n, c.e4]),
      kinds: (await windowSums(db, 'org_a', 'kind', MARCH.start, null, 100))!.map((s) => [s.value, s.n, s.q, s.e4]),
      workspaces: (await windowSums(db, 'org_a', 'workspace_id', MARCH.start, MARCH.end, 100))!.map((s) => [s.value, s.n]),
      units: (await windowSums(db, 'org_a', 'unit', MARCH.start, null, 100))!.map((s) => [s.value, s.n, s.e4]),
      sums: (await scopeSums(db, { organizationId: 'org_a', workspaceId: 'ws_a', projectId: null }, MARCH.start, MARCH.end)),
    };
  }, {
    combos: [['clip', 'usr_1', 1, 10000n], ['clip', 'usr_2', 1, 10000n], ['storage', null, 1, 20n], ['tts', 'usr_1', 1, 3n], ['tts', 'usr_2', 1, 5n]],
    kinds: [['clip', 2, 0, 0n], ['storage', 1, 0, 0n], ['tts', 2, 0, 0n]],
    workspaces: [[null, 1], ['ws_a', 2], ['ws_b', 2]],
    units: [['Characters', 2, 8n], ['GB-month', 1, 20n], ['clips', 2, 20000n]],
    sums: [{ kind: 'clip', unit: 'clips', events: 2, quantity: 2, e4: 20000n }],
  });
  await check('names and cost centers are found by id lists and by id or code', async (db) => ({
    names: await namesOf(db, 'org_a', 'workspaces', ['ws_b', 'ws_a', 'ws_x']), users: await namesOf(db, 'org_a', 'users', ['usr_3']),
    ops: await costCenterByIdOrCode(db, 'org_a', 'ops'), cc1: await costCenterByIdOrCode(db, 'org_a', 'cc_1'),
  }), {
    names: new Map([['ws_a', { id: 'ws_a', name: 'Alpha' }], ['ws_b', { id: 'ws_b', name: 'beta' }]]), users: new Map([['usr_3', { id: 'usr_3', name: 'Émile' }]]),
    ops: { id: 'cc_2' }, cc1: { id: 'cc_1' },
  });
  await check('the trend sums each local day (and unit) from a JSON list of buckets', async (db) => {
    const day = (d: number) => ({ label: `2026-03-${d}`, start: new Date(Date.UTC(2026, 2, d)), end: new Date(Date.UTC(2026, 2, d + 1)) });
    const until = new Date(Date.UTC(2026, 2, 12));
    const round = (rows: Array<{ units: number }>) => rows.map((r) => ({ ...r, units: Math.round(r.units * 1e9) / 1e9 }));
    return { days: round(await usageByBucket(db, 'org_a', [day(10), day(11)], until)), units: round(await usageByBucket(db, 'org_a', [day(10), day(11)], until, true)) };
  }, {
    days: [
      { label: '2026-03-10', unit: null, events: 4, clips: 2, units: 2.000007, e4: 20008n },
      { label: '2026-03-11', unit: null, events: 1, clips: 0, units: 2.0000005, e4: 20n },
    ],
    units: [
      { label: '2026-03-10', unit: 'Characters', events: 2, clips: 0, units: 0.000007, e4: 8n },
      { label: '2026-03-10', unit: 'clips', events: 2, clips: 2, units: 2, e4: 20000n },
      { label: '2026-03-11', unit: 'GB-month', events: 1, clips: 0, units: 2.0000005, e4: 20n },
    ],
  });

  await check('SCIM filters on e-mail addresses read the JSON list of each user', async (db) => {
    const list = async (attribute: 'emails.value' | 'displayName', op: 'eq' | 'sw' | 'co', value: string) => {
      const r = await listScimUsers(db, 'dir_1', { attribute, op, value }, 0, 10);
      return [r.rows.map((u) => u.user_id), r.total];
    };
    return [await list('emails.value', 'eq', 'bob@home.example'), await list('emails.value', 'sw', 'ann@'), await list('emails.value', 'co', 'example'), await list('displayName', 'sw', 'b')];
  }, [[['usr_2'], 1], [['usr_1'], 1], [['usr_1', 'usr_2'], 2], [['usr_2'], 1]]);
  await check('identity providers are found by a variable their JSON configuration names, and listed by name in any case', async (db) => ({
    cert: await providerReadingVariable(db, 'SVC_SAML_CERT'), secret: await providerReadingVariable(db, 'SVC_OIDC_SECRET'),
    issuer: await providerReadingVariable(db, 'https://idp.example'), listed: ids(await listProviders(db, { organizationId: 'org_a' })),
  }), { cert: 'idp_2', secret: 'idp_1', issuer: undefined, listed: ['idp_2', 'idp_1'] });

  await check('a template key is found in its scope, a null organization or workspace matching null', async (db) => [
    (await templateWithKey(db, 'global', null, null, 'intro'))?.id, (await templateWithKey(db, 'organization', 'org_a', null, 'intro'))?.id,
    (await templateWithKey(db, 'workspace', 'org_a', 'ws_a', 'intro'))?.id, (await templateWithKey(db, 'organization', 'org_b', null, 'intro'))?.id,
    (await templateWithKey(db, 'workspace', 'org_a', 'ws_b', 'intro'))?.id,
  ], ['tpl_g', 'tpl_o', 'tpl_w', undefined, undefined]);
  await check('a run\'s steps by position and gates in the template\'s order; QA candidates with their artifacts by step', async (db) => ({
    steps: (await stepsOfRuns(db, ['run_1'])).map((s) => [s.position, s.job_id, s.job_status]),
    gates: (await gatesOfRuns(db, ['run_1', 'run_x'])).map((g) => [g.gate_key, g.blocking, g.status]),
    gateRow: Object.keys((await gatesOfRuns(db, ['run_1']))[0]).sort(),
    candidates: await gateCandidates(db, 'prj_1'),
  }), {
    steps: [[1, 'job_1', 'completed'], [2, 'job_2', 'completed']],
    gates: [['zeta', 1, 'pending'], ['alpha', 0, 'pending']],
    gateRow: ['blocking', 'decided_at', 'decided_by', 'gate_key', 'label', 'note', 'qa_run_id', 'run_id', 'status'],
    candidates: [{ id: 'run_1', artifactIds: ['art_1', 'art_3', 'art_2'] }],
  });
  await check('stored files: the paths job outputs name (JSON) are kept and moved with their hash and size', async (db) => ({
    protection: await protectionOf(db),
    items: (await migrationItems(db, new LocalStore(tempDir(t)))).filter((i) => i.key.startsWith('outputs/')),
  }), {
    protection: {
      paths: new Set(['assets/org_a/a', 'assets/org_a/b', 'media/art_1.png', 'media/art_2.png', 'media/art_3.png', 'outputs/job_1/a.png', 'outputs/job_1/b.png', 'outputs/job_2/c.wav']),
      activeJobs: new Set(['job_3']),
    },
    items: [
      { key: 'outputs/job_1/a.png', sha256: 'a'.repeat(64), size: 12 }, { key: 'outputs/job_1/b.png', sha256: 'b'.repeat(64), size: 7 },
      { key: 'outputs/job_2/c.wav', sha256: 'c'.repeat(64), size: 3_000_000_000 },
    ],
  });
  await check('lists by JSON id lists: delivery item counts, largest files, organizations, notification recipients', async (db) => ({
    items: await itemCounts(db, ['del_1', 'del_2', 'del_x']),
    files: (await largestFiles(db, 'org_a', ['prj_1', 'prj_2'], 10)).map((f) => [f.id, f.file_size, f.asset_name]),
    organizations: ids(await organizationsByIds(db, ['org_b', 'org_a', 'org_x'])),
    recipients: (await namedUserRows(db, 'org_a', ['usr_2', 'usr_1'])).sort((a, b) => (a.user_id < b.user_id ? -1 : 1)),
  }), {
    items: new Map([['del_1', 2], ['del_2', 1]]),
    files: [['ver_3', 50, 'Logo'], ['ver_2', 10, 'Logo']],
    organizations: ['org_a', 'org_b'],
    recipients: [
      { user_id: 'usr_1', is_system_admin: 0, level: 'organization', role: 'org_owner', organization_id: 'org_a', workspace_id: null, project_id: null, access_mode: 'full' },
      { user_id: 'usr_2', is_system_admin: 0, level: null, role: null, organization_id: null, workspace_id: null, project_id: null, access_mode: null },
    ],
  });
  await check('the inbox shows what the workspace and project lists let a member see', async (db) => {
    const owner: InboxOwner = { userId: 'usr_1', organizationId: 'org_a', visibility: { all: false, workspaces: ['ws_a', 'ws_b'], fullWorkspaces: ['ws_a'], projects: [] } };
    return { list: ids(await listInbox(db, owner, false, 10)), count: await countInbox(db, owner, true) };
  }, { list: ['ntf_4', 'ntf_2', 'ntf_1'], count: 3 });
  await check('the user search ignores the case of ASCII letters only', async (db) => {
    const search = async (q: string) => { const r = await listUsers(db, { query: q, limit: 10, offset: 0 }); return [ids(r.rows), r.total]; };
    return [await search('BOB'), await search('émile'), await search('Émile'), await search('%')];
  }, [[['usr_2'], 1], [[], 0], [['usr_3'], 1], [[], 0]]);
  await check('ties on created_at come in insertion order, as SQLite\'s sort kept them: by id', async (db) => ({
    tasks: ids((await tasksOfProject(db, 'prj_1', { status: null, assignee: null, limit: 10, offset: 0 })).rows),
    open: ids(await openTasksOf(db, 'prj_1', 'usr_1')),
    invitations: ids(await invitationsOf(db, 'org_a', null)),
    sessions: ids(await liveSessionsOfUser(db, 'usr_1', at(2), at(0))),
  }), { tasks: ['tsk_1', 'tsk_2'], open: ['tsk_1', 'tsk_2'], invitations: ['inv_a', 'inv_b'], sessions: ['ses_1', 'ses_2'] });
  // Last: it changes the jobs other checks read.
  await check('a requeued job keeps the larger of its attempts allowed and its attempts plus the extra ones (scalar max)', async (db) => [
    (await requeueJob(db, 'job_4', 2, false, at(9)))?.max_attempts, (await requeueJob(db, 'job_5', 1, true, at(9)))?.max_attempts,
    (await requeueJob(db, 'job_1', 1, false, at(9)))?.max_attempts,
  ], [5, 3, undefined]);
});
