// Invoices: access per route, the arithmetic of drafts with hand-computed totals in USD, JPY and KWD
// (rounding once per line, tax once on the unrounded sum), one invoice per organization and period
// (also under concurrent requests), every status transition, gap-free numbers per organization,
// the ledger's filters and its streamed export.
// Prices, currency, cycle, time zone and prefix are set through PATCH .../billing; usage events are
// inserted with SQL (in the service they are written by jobs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { grant, login, makeOrg, makeProject, makeTree, makeUser, makeWorkspace, member } from '../helpers/factories.ts';
import { createJob, jobWorld, waitJob } from '../helpers/jobs.ts';
import { newId } from '../../src/kernel/ids.ts';
import { billingPeriod } from '../../src/kernel/periods.ts';

const STATUSES = ['draft', 'issued', 'paid', 'overdue', 'void'] as const;
type Status = (typeof STATUSES)[number];

/** PATCH /api/organizations/:organizationId/billing (prices as decimal strings in the major unit). */
async function setBilling(s: TestServer, token: string, organizationId: string, body: Record<string, unknown>): Promise<void> {
  const r = await s.call('PATCH', `/api/organizations/${organizationId}/billing`, { token, body });
  assert.equal(r.status, 200, r.text);
}

interface Usage { kind?: string; unit?: string; quantity?: number; costE4: number; unitPriceE4?: number; at: string; currency?: string }

/** Usage events as the jobs write them: on the workspace's cost center, with a unique key and their unit price (default cost / quantity). */
function addUsage(s: TestServer, organizationId: string, workspaceId: string, u: Usage, times = 1): void {
  for (let i = 0; i < times; i++) {
    const id = newId('use');
    s.db.run(
      `INSERT INTO usage_events (id, organization_id, workspace_id, kind, unit, quantity, unit_price_e4, estimated_cost_e4, currency, cost_center_id,
         metadata, created_at, event_key)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, (SELECT id FROM cost_centers WHERE workspace_id = ?), '{}', ?, ?)`,
      id, organizationId, workspaceId, u.kind ?? 'clip', u.unit ?? 'clip', u.quantity ?? 1, u.unitPriceE4 ?? u.costE4 / (u.quantity ?? 1), u.costE4,
      u.currency ?? 'USD', workspaceId, u.at, `test:${id}`);
  }
}

const base = (orgId: string) => `/api/organizations/${orgId}/invoices`;

async function setup(t: any) {
  const s = await startTestServer(t);
  const tree = makeTree(s);
  const owner = await member(s, 'org_owner', tree);
  const generate = (body: Record<string, unknown> = {}, token = owner.token, orgId = tree.organizationId) =>
    s.call('POST', `${base(orgId)}/generate`, { token, body });
  const setStatus = (invoiceId: string, status: string, token = owner.token, note?: string, orgId = tree.organizationId) =>
    s.call('POST', `${base(orgId)}/${invoiceId}/status`, { token, body: { status, ...(note ? { note } : {}) } });
  return { s, tree, owner, generate, setStatus };
}

const lineOf = (inv: any, kind: string, workspaceId?: string | null, unit?: string) =>
  inv.lines.find((l: any) => l.kind === kind && (workspaceId === undefined || l.workspaceId === workspaceId) && (unit === undefined || l.unit === unit));

test('access: 401 without a session, 403 permission_denied for ordinary members (and generate/status without billing:manage), 403 organization_forbidden for another organization', async (t) => {
  const { s, tree, owner, generate } = await setup(t);
  const draft = (await generate({ periodStart: '2026-01-01', periodEnd: '2026-02-01' })).body;
  const plain = await member(s, 'org_member', tree);
  const producer = await member(s, 'producer', tree); // usage:view in its workspace, none at organization level
  const admin = await member(s, 'org_admin', tree); // usage:view, no billing:manage
  const org = tree.organizationId;
  const routes: Array<[string, string, unknown?]> = [
    ['GET', base(org)], ['GET', `${base(org)}/${draft.id}`], ['GET', `${base(org)}/export`],
    ['POST', `${base(org)}/generate`, {}], ['POST', `${base(org)}/${draft.id}/status`, { status: 'issued' }],
  ];
  for (const [method, path, body] of routes) {
    assert.equal((await s.call(method, path, { body })).status, 401, `${method} ${path}`);
    for (const who of [plain, producer]) {
      const r = await s.call(method, path, { token: who.token, body });
      assert.equal(r.status, 403, `${method} ${path}`);
      assert.equal(r.body.error.code, 'permission_denied');
    }
  }
  for (const [method, path] of routes.slice(0, 3)) assert.equal((await s.call(method, path, { token: admin.token })).status, 200, `${method} ${path} admin`);
  for (const [method, path, body] of routes.slice(3)) {
    const r = await s.call(method, path, { token: admin.token, body });
    assert.equal(r.status, 403, `${method} ${path} admin`);
    assert.equal(r.body.error.code, 'permission_denied');
    assert.equal(r.body.error.details.permission, 'billing:manage');
  }
  const stranger = await member(s, 'org_owner'); // owner of another organization
  for (const [method, path, body] of routes) {
    const r = await s.call(method, path, { token: stranger.token, body });
    assert.equal(r.status, 403, `${method} ${path} stranger`);
    assert.equal(r.body.error.code, 'organization_forbidden');
  }
  const still = await s.call('GET', `${base(org)}/${draft.id}`, { token: owner.token });
  assert.equal(still.body.status, 'draft'); // nothing the refused calls did changed it
  assert.equal((await s.call('GET', base(org), { token: owner.token })).body.pagination.total, 1);
});

test('another organization\'s invoice under this organization\'s path is 403 organization_forbidden (audited); an unknown id is 404', async (t) => {
  const { s, tree, generate } = await setup(t);
  const other = makeOrg(s);
  const both = await makeUser(s);
  grant(s, both.id, 'organization', tree.organizationId, 'org_owner');
  grant(s, both.id, 'organization', other.id, 'org_owner');
  const token = await login(s, both);
  const theirs = (await generate({ periodStart: '2026-01-01', periodEnd: '2026-02-01' }, token, other.id)).body;
  for (const [method, path, body] of [
    ['GET', `${base(tree.organizationId)}/${theirs.id}`, undefined],
    ['POST', `${base(tree.organizationId)}/${theirs.id}/status`, { status: 'issued' }],
  ] as const) {
    const r = await s.call(method, path, { token, body });
    assert.equal(r.status, 403, `${method} ${path}`);
    assert.equal(r.body.error.code, 'organization_forbidden');
  }
  const own = await s.call('GET', `${base(other.id)}/${theirs.id}`, { token });
  assert.equal(own.status, 200);
  assert.equal(own.body.status, 'draft'); // the refused status change did nothing
  const denied = s.db.all<{ organization_id: string; metadata: string }>(
    "SELECT organization_id, metadata FROM audit_log WHERE action = 'access.denied' AND target_type = 'invoice' AND target_id = ?", theirs.id);
  assert.equal(denied.length, 2);
  assert.ok(denied.every((d) => d.organization_id === other.id && JSON.parse(d.metadata).reason === 'organization_forbidden'));
  for (const path of [`${base(tree.organizationId)}/ivc_missing`, `${base(tree.organizationId)}/ivc_missing/status`]) {
    const r = await s.call(path.endsWith('status') ? 'POST' : 'GET', path, { token, body: path.endsWith('status') ? { status: 'issued' } : undefined });
    assert.equal(r.status, 404, path);
  }
});

test('USD: tax once on the unrounded sum: three lines whose taxes each round up while their sum rounds down', async (t) => {
  const { s, tree, owner, generate } = await setup(t);
  const org = tree.organizationId;
  const w1 = tree.workspaceId;
  const w2 = makeWorkspace(s, org).id;
  await setBilling(s, owner.token, org, { currency: 'USD', baseFee: '49.00', seatUnitPrice: '0', storageUnitPrice: '0' });
  // W1 clips: 7 x USD 0.0143 (14,300 e4) = 100,100 e4 = 10.01 cents -> line 10 cents; the first at the period's start (inclusive)
  addUsage(s, org, w1, { costE4: 14_300, at: '2026-03-01T00:00:00.000Z' });
  addUsage(s, org, w1, { costE4: 14_300, at: '2026-03-10T12:00:00.000Z' }, 6);
  // W2 clips: 3 x USD 0.0333 (33,300 e4) = 99,900 e4 = 9.99 cents -> 10 cents
  addUsage(s, org, w2, { costE4: 33_300, at: '2026-03-31T23:59:59.999Z' }, 3);
  // W1 voice: 40 seconds for 100,000 e4 (2,500 e4 = 0.25 cents = USD 0.0025 a second) = 10 cents exactly
  addUsage(s, org, w1, { kind: 'voice', unit: 'second', quantity: 40, costE4: 100_000, at: '2026-03-05T00:00:00.000Z' });
  // outside: before the start, at the end (exclusive), and another organization's usage in the period
  addUsage(s, org, w1, { costE4: 9_990_000, at: '2026-02-28T23:59:59.999Z' });
  addUsage(s, org, w1, { costE4: 9_990_000, at: '2026-04-01T00:00:00.000Z' });
  const elsewhere = makeTree(s);
  addUsage(s, elsewhere.organizationId, elsewhere.workspaceId, { costE4: 9_990_000, at: '2026-03-15T00:00:00.000Z' });

  const r = await generate({ periodStart: '2026-03-01', periodEnd: '2026-04-01', taxRate: '0.07', dueDays: 14 });
  assert.equal(r.status, 201, r.text);
  const inv = r.body;
  assert.equal(inv.status, 'draft');
  assert.equal(inv.number, null);
  assert.deepEqual([inv.periodStart, inv.periodEnd], ['2026-03-01T00:00:00.000Z', '2026-04-01T00:00:00.000Z']); // UTC organization
  assert.deepEqual([inv.currency, inv.taxRate, inv.dueDays], ['USD', '0.07', 14]);
  // base fee 4900 + seats (1 member x 0) + storage (2 workspaces x 0) + 10 + 10 + 10 = 4930 cents
  assert.deepEqual(inv.lines.map((l: any) => l.kind), ['base_fee', 'seats', 'storage', 'storage', 'usage', 'usage', 'usage']);
  assert.deepEqual(lineOf(inv, 'base_fee'), {
    ...lineOf(inv, 'base_fee'), quantity: '1', unitPrice: '49.00', amount: '49.00', amountExact: '49',
  });
  const a = lineOf(inv, 'usage', w1, 'clip');
  assert.deepEqual([a.quantity, a.unitPrice, a.amountExact, a.amount, a.costCenterId], ['7', '0.0143', '0.1001', '0.10', `cc_${w1.slice(4)}`]);
  const b = lineOf(inv, 'usage', w2, 'clip');
  assert.deepEqual([b.quantity, b.unitPrice, b.amountExact, b.amount], ['3', '0.0333', '0.0999', '0.10']);
  const c = lineOf(inv, 'usage', w1, 'second');
  assert.deepEqual([c.quantity, c.unitPrice, c.amountExact, c.amount], ['40', '0.0025', '0.1', '0.10']);
  // Taxed line by line at 7%: 343 (base fee) + 0.7007 -> 1 + 0.6993 -> 1 + 0.7 -> 1 = 346 cents.
  // Taxed once: exact sum 4900 + 10.01 + 9.99 + 10 = 4930.00 cents x 0.07 = 345.1 -> 345 cents.
  assert.equal(inv.subtotal, '49.30');
  assert.equal(inv.tax, '3.45');
  assert.equal(inv.total, '52.75'); // 4930 + 345 = 5275 cents
  assert.equal(inv.snapshot.exactSubtotal, '49.3');
  assert.equal(inv.snapshot.taxRate, '0.07');
  assert.deepEqual(inv.snapshot.plan, { ...inv.snapshot.plan, currency: 'USD', baseFee: '49.00', billingCycle: 'monthly' });
  assert.equal(inv.snapshot.seats.activeMembers, 1);
  assert.equal(inv.snapshot.costCenters.length, 2);
  assert.deepEqual(inv.events.map((e: any) => [e.action, e.fromStatus, e.toStatus]), [['generated', null, 'draft']]);
  const audit = await s.call('GET', `/api/audit?action=invoice.generated&targetId=${inv.id}`, { token: owner.token });
  assert.equal(audit.body.auditLog.length, 1);
  assert.deepEqual(audit.body.auditLog[0].metadata, { ...audit.body.auditLog[0].metadata, subtotal: '49.30', tax: '3.45', total: '52.75', lines: 7 });
});

test('JPY: no decimals; a half yen rounds up once per line; storage priced per GiB from exact bytes', async (t) => {
  const { s, tree, owner, generate } = await setup(t);
  const org = tree.organizationId;
  const w1 = tree.workspaceId;
  const w2 = makeWorkspace(s, org).id;
  await member(s, 'org_admin', tree);
  await member(s, 'org_member', tree);
  // base fee JPY 10,000; a seat JPY 1,500 (15,000,000 e4); storage JPY 1,000,000 a GiB (10^10 e4)
  await setBilling(s, owner.token, org, { currency: 'JPY', baseFee: '10000', seatUnitPrice: '1500', storageUnitPrice: '1000000' });
  // 1,024 bytes stored in W1's project, uploaded through the API
  const asset = await s.call('POST', '/api/assets', { token: owner.token, body: { kind: 'image', name: 'kib' } });
  const up = await s.call('POST', `/api/assets/${asset.body.id}/versions/upload?fileName=kib.bin`, {
    token: owner.token, raw: Buffer.alloc(1024, 7), headers: { 'content-type': 'application/octet-stream' },
  });
  assert.equal(up.status, 201, up.text);
  // W1 clips: 3 x JPY 12.5 (125,000 e4) = 37.5 yen -> 38
  addUsage(s, org, w1, { costE4: 125_000, at: '2026-05-20T10:00:00.000Z', currency: 'JPY' }, 3);
  // an event recorded in another currency is not billed in yen; the snapshot names it
  addUsage(s, org, w1, { costE4: 125_000, at: '2026-05-20T10:00:00.000Z', currency: 'USD' });

  const inv = (await generate({ periodStart: '2026-05-01', periodEnd: '2026-06-01', taxRate: '0.1' })).body;
  assert.equal(inv.currency, 'JPY');
  assert.deepEqual(inv.lines.map((l: any) => l.kind), ['base_fee', 'seats', 'storage', 'storage', 'usage']);
  const seats = lineOf(inv, 'seats');
  // 3 active members (owner, admin, member) x JPY 1,500 = 4,500
  assert.deepEqual([seats.quantity, seats.unitPrice, seats.amount], ['3', '1500', '4500']);
  // 1,024 bytes = 1/2^20 GiB = 0.00000095367431640625 GiB x 1,000,000 = 0.95367431640625 yen -> 1
  const st1 = lineOf(inv, 'storage', w1);
  assert.deepEqual([st1.quantity, st1.unit, st1.unitPrice, st1.amountExact, st1.amount], ['0.00000095367431640625', 'GiB', '1000000', '0.95367431640625', '1']);
  const st2 = lineOf(inv, 'storage', w2);
  assert.deepEqual([st2.quantity, st2.amount], ['0', '0']);
  const use = lineOf(inv, 'usage', w1, 'clip');
  assert.deepEqual([use.quantity, use.unitPrice, use.amountExact, use.amount], ['3', '12.5', '37.5', '38']);
  // subtotal of rounded lines: 10,000 + 4,500 + 1 + 0 + 38 = 14,539
  // tax: 10% of the exact sum 10,000 + 4,500 + 0.95367431640625 + 0 + 37.5 = 14,538.45367431640625 -> 1,453.845367... -> 1,454
  // total: 14,539 + 1,454 = 15,993
  assert.deepEqual([inv.subtotal, inv.tax, inv.total], ['14539', '1454', '15993']);
  assert.equal(inv.snapshot.exactSubtotal, '14538.45367431640625');
  assert.deepEqual(inv.snapshot.storage.find((x: any) => x.workspaceId === w1), { workspaceId: w1, workspaceName: inv.snapshot.storage[0].workspaceName, costCenterId: `cc_${w1.slice(4)}`, bytes: 1024, gib: '0.00000095367431640625' });
  // 125,000 e4 = 12.5 cents, rounded once like every usage estimate
  assert.deepEqual(inv.snapshot.usageInOtherCurrencies, [{ currency: 'USD', kind: 'clip', unit: 'clip', events: 1, estimatedCost: '0.13' }]);
  assert.equal(inv.snapshot.seats.activeMembers, 3);
});

test('KWD: three decimals; the subtotal is the sum of rounded lines and the tax comes from the unrounded one', async (t) => {
  const { s, tree, owner, generate } = await setup(t);
  const org = tree.organizationId;
  const w1 = tree.workspaceId;
  const w2 = makeWorkspace(s, org).id;
  await member(s, 'org_admin', tree);
  // a seat KWD 1.2345 = 1,234.5 fils = 12,345,000 e4
  await setBilling(s, owner.token, org, { currency: 'KWD', seatUnitPrice: '1.2345' });
  // W1 clips: 4 x 2.6 fils (26,000 e4) = 10.4 fils -> 10
  addUsage(s, org, w1, { costE4: 26_000, at: '2026-01-02T00:00:00.000Z', currency: 'KWD' }, 4);
  // W2 clips: 2 x 5.2 fils (52,000 e4) = 10.4 fils -> 10
  addUsage(s, org, w2, { costE4: 52_000, at: '2026-01-03T00:00:00.000Z', currency: 'KWD' }, 2);
  // W1 voice: 13 seconds at 0.8 fils (8,000 e4) = 104,000 e4 = 10.4 fils -> 10
  addUsage(s, org, w1, { kind: 'voice', unit: 'second', quantity: 13, costE4: 104_000, at: '2026-01-04T00:00:00.000Z', currency: 'KWD' });

  const inv = (await generate({ periodStart: '2026-01-01', periodEnd: '2026-02-01', taxRate: '0.05' })).body;
  const seats = lineOf(inv, 'seats');
  // 2 members x 1,234.5 fils = 2,469 fils exactly
  assert.deepEqual([seats.quantity, seats.unitPrice, seats.amountExact, seats.amount], ['2', '1.2345', '2.469', '2.469']);
  const a = lineOf(inv, 'usage', w1, 'clip');
  assert.deepEqual([a.quantity, a.unitPrice, a.amountExact, a.amount], ['4', '0.0026', '0.0104', '0.010']);
  const v = lineOf(inv, 'usage', w1, 'second');
  assert.deepEqual([v.quantity, v.unitPrice, v.amountExact, v.amount], ['13', '0.0008', '0.0104', '0.010']);
  assert.equal(lineOf(inv, 'usage', w2, 'clip').amount, '0.010');
  // subtotal: 2,469 + 10 + 10 + 10 = 2,499 fils = 2.499 (the exact sum is 2,500.2 fils)
  // tax: 5% of 2,500.2 = 125.01 -> 125 fils (line by line: 123.45 -> 123 and 3 x 0.52 -> 1 would make 126)
  // total: 2,499 + 125 = 2,624 fils
  assert.deepEqual([inv.subtotal, inv.tax, inv.total], ['2.499', '0.125', '2.624']);
  assert.equal(inv.snapshot.exactSubtotal, '2.5002');
});

test('one invoice per organization and period: a repeat, also two concurrent requests, returns the original unchanged', async (t) => {
  const { s, tree, owner, generate } = await setup(t);
  const org = tree.organizationId;
  await setBilling(s, owner.token, org, { seatUnitPrice: '1.00' });
  const first = await generate({ periodStart: '2026-06-01', periodEnd: '2026-07-01', taxRate: '0.2' });
  assert.equal(first.status, 201);
  assert.equal(first.body.total, '1.20');
  await setBilling(s, owner.token, org, { seatUnitPrice: '5.00' });
  await member(s, 'org_admin', tree);
  const again = await generate({ periodStart: '2026-06-01T00:00:00Z', periodEnd: '2026-07-01T00:00:00.000Z', taxRate: '0', dueDays: 3 });
  assert.equal(again.status, 200);
  assert.deepEqual(again.body, first.body); // same id, amounts, tax rate, lines and events
  const [x, y] = await Promise.all([
    generate({ periodStart: '2026-08-01', periodEnd: '2026-09-01' }),
    generate({ periodStart: '2026-08-01', periodEnd: '2026-09-01', taxRate: '0.5' }),
  ]);
  assert.deepEqual([x.status, y.status].sort(), [200, 201]);
  assert.equal(x.body.id, y.body.id);
  assert.deepEqual(x.body, y.body);
  const count = (period: string) => s.db.get<{ n: number }>('SELECT count(*) AS n FROM invoices WHERE organization_id = ? AND period_start = ?', org, period)!.n;
  assert.equal(count('2026-06-01T00:00:00.000Z'), 1);
  assert.equal(count('2026-08-01T00:00:00.000Z'), 1);
  const generated = await s.call('GET', '/api/audit?action=invoice.generated', { token: owner.token });
  assert.equal(generated.body.auditLog.length, 2);
  assert.equal(s.db.get<{ n: number }>("SELECT count(*) AS n FROM invoice_events WHERE organization_id = ? AND action = 'generated'", org)!.n, 2);
});

test('the unique key decides under real concurrency: another connection inserting the period while this one waits makes generate answer its invoice', async (t) => {
  const { s, tree, generate } = await setup(t);
  const org = tree.organizationId;
  // A second process takes the write lock, inserts the period's invoice and commits 400 ms later. The
  // server's look-up before its transaction sees nothing yet (WAL snapshot), its BEGIN IMMEDIATE waits,
  // and its INSERT then meets the unique key: it reads back and answers the other invoice.
  const child = spawn(process.execPath, ['-e', `
    const { DatabaseSync } = require('node:sqlite');
    const db = new DatabaseSync(process.argv[1]);
    db.exec('PRAGMA busy_timeout = 5000');
    db.exec('BEGIN IMMEDIATE');
    db.prepare("INSERT INTO invoices (id, organization_id, period_start, period_end, status, currency, tax_rate, due_days, subtotal_minor, tax_minor, total_minor, snapshot, created_at, updated_at) VALUES ('ivc_other_writer', ?, '2026-10-01T00:00:00.000Z', '2026-11-01T00:00:00.000Z', 'draft', 'USD', '0', 30, 0, 0, 0, '{}', '2026-10-01T00:00:00.000Z', '2026-10-01T00:00:00.000Z')").run(process.argv[2]);
    process.stdout.write('locked\\n');
    setTimeout(() => { db.exec('COMMIT'); db.close(); }, 400);
  `, s.config.dbPath, org], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = once(child, 'exit');
  await once(child.stdout!, 'data');
  const started = performance.now();
  const r = await generate({ periodStart: '2026-10-01', periodEnd: '2026-11-01' });
  assert.ok(performance.now() - started >= 150, 'the generation waited for the other writer\'s lock');
  assert.deepEqual(await exited, [0, null]);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.id, 'ivc_other_writer');
  assert.equal(s.db.get<{ n: number }>("SELECT count(*) AS n FROM invoices WHERE organization_id = ? AND period_start = '2026-10-01T00:00:00.000Z'", org)!.n, 1);
  assert.equal(s.db.get<{ n: number }>("SELECT count(*) AS n FROM audit_log WHERE action = 'invoice.generated' AND organization_id = ?", org)!.n, 0);
});

test('periods: the default is the billing cycle\'s current period in the organization\'s time zone; dates are local midnights', async (t) => {
  const { s, tree, owner, generate } = await setup(t);
  const org = tree.organizationId;
  await setBilling(s, owner.token, org, { timeZone: 'America/New_York', billingCycle: 'quarterly' });
  const now = billingPeriod('quarterly', 'America/New_York', new Date());
  const dflt = await generate();
  assert.equal(dflt.status, 201, dflt.text);
  assert.deepEqual([dflt.body.periodStart, dflt.body.periodEnd], [now.start.toISOString(), now.end.toISOString()]);
  assert.deepEqual([dflt.body.taxRate, dflt.body.tax, dflt.body.dueDays], ['0', '0.00', 30]);
  // March 2026 in New York: Mar 1 00:00 EST = 05:00Z .. Apr 1 00:00 EDT = 04:00Z
  const march = await generate({ periodStart: '2026-03-01', periodEnd: '2026-04-01' });
  assert.deepEqual([march.body.periodStart, march.body.periodEnd], ['2026-03-01T05:00:00.000Z', '2026-04-01T04:00:00.000Z']);
  assert.equal(march.body.snapshot.period.timeZone, 'America/New_York');
  // the same instants written as instants with offsets are the same period
  const same = await generate({ periodStart: '2026-03-01T00:00:00-05:00', periodEnd: '2026-04-01T00:00:00-04:00' });
  assert.equal(same.status, 200);
  assert.equal(same.body.id, march.body.id);
  // a full year (2025 in New York, before both) is allowed
  assert.equal((await generate({ periodStart: '2025-01-01', periodEnd: '2026-01-01' })).status, 201);
});

test('generation input: paired bounds, order, one year at most, tax rate and due days; 422 writes nothing', async (t) => {
  const { s, tree, generate } = await setup(t);
  const cases: Array<[Record<string, unknown>, string[]]> = [
    [{ periodStart: '2026-01-01' }, ['periodEnd']],
    [{ periodEnd: '2026-02-01' }, ['periodStart']],
    [{ periodStart: '2026-02-30', periodEnd: '2026-03-01' }, ['periodStart']],
    [{ periodStart: '2026-01-01T00:00:00', periodEnd: 'tomorrow' }, ['periodEnd', 'periodStart']], // an instant needs Z or an offset
    [{ periodStart: '2026-02-01', periodEnd: '2026-02-01' }, ['periodEnd']],
    [{ periodStart: '2026-03-01', periodEnd: '2026-02-01' }, ['periodEnd']],
    [{ periodStart: '2026-01-01', periodEnd: '2027-01-01T00:00:00.001Z' }, ['periodEnd']],
    [{ taxRate: '1.5' }, ['taxRate']],
    [{ taxRate: '0.1234567' }, ['taxRate']],
    [{ taxRate: '-0.1' }, ['taxRate']],
    [{ taxRate: 0.1 }, ['taxRate']], // a number: rates are decimal strings
    [{ dueDays: 366 }, ['dueDays']],
    [{ dueDays: -1, extra: true }, ['dueDays', 'extra']],
  ];
  for (const [body, fields] of cases) {
    const r = await generate(body);
    assert.equal(r.status, 422, JSON.stringify(body));
    assert.equal(r.body.error.code, 'validation_failed');
    assert.deepEqual(Object.keys(r.body.error.details.fields).sort(), fields, JSON.stringify(body));
  }
  assert.equal(s.db.get<{ n: number }>('SELECT count(*) AS n FROM invoices WHERE organization_id = ?', tree.organizationId)!.n, 0);
  assert.equal((await generate({ taxRate: '1', dueDays: 0 })).status, 201);
});

let day = 0;
/** An invoice of its own (one-day) period brought to `state` through the allowed moves. */
async function invoiceIn(ctx: Awaited<ReturnType<typeof setup>>, state: Status, orgId = ctx.tree.organizationId, token = ctx.owner.token) {
  const n = ++day;
  const start = new Date(Date.UTC(2030, 0, n)).toISOString().slice(0, 10);
  const end = new Date(Date.UTC(2030, 0, n + 1)).toISOString().slice(0, 10);
  const r = await ctx.generate({ periodStart: start, periodEnd: end }, token, orgId);
  assert.equal(r.status, 201, r.text);
  const path: Record<Status, Status[]> = { draft: [], issued: ['issued'], paid: ['issued', 'paid'], overdue: ['issued', 'overdue'], void: ['issued', 'void'] };
  for (const step of path[state]) assert.equal((await ctx.setStatus(r.body.id, step, token, undefined, orgId)).status, 200);
  return r.body.id as string;
}

test('every status transition: the five allowed ones, 409 invalid_transition for the others and 409 invoice_final from paid and void', async (t) => {
  const ctx = await setup(t);
  const { s, tree, owner, setStatus } = ctx;
  const detail = async (id: string) => (await s.call('GET', `${base(tree.organizationId)}/${id}`, { token: owner.token })).body;
  const allowed = new Set(['draft>issued', 'issued>paid', 'issued>overdue', 'issued>void', 'overdue>paid']);
  for (const from of STATUSES) {
    for (const to of STATUSES) {
      const id = await invoiceIn(ctx, from);
      const before = await detail(id);
      const r = await setStatus(id, to, owner.token, `to ${to}`);
      if (allowed.has(`${from}>${to}`)) {
        assert.equal(r.status, 200, `${from} -> ${to}: ${r.text}`);
        assert.equal(r.body.status, to);
        assert.deepEqual(r.body.events.at(-1), { ...r.body.events.at(-1), action: 'status_changed', fromStatus: from, toStatus: to, note: `to ${to}`, actorUserId: owner.user.id });
        assert.equal(r.body.events.length, before.events.length + 1);
        if (to === 'issued') {
          assert.match(r.body.number, /^INV-\d{6}$/);
          assert.equal(r.body.issuedAt, r.body.updatedAt);
          assert.equal(Date.parse(r.body.dueAt) - Date.parse(r.body.issuedAt), 30 * 86_400_000); // due days default 30
        } else {
          assert.equal(r.body.number, before.number);
          assert.equal(r.body.issuedAt, before.issuedAt);
        }
        assert.equal(r.body.paidAt !== null, to === 'paid');
        assert.equal(r.body.voidedAt !== null, to === 'void');
        assert.deepEqual([r.body.total, r.body.lines], [before.total, before.lines]); // amounts never change
      } else {
        assert.equal(r.status, 409, `${from} -> ${to}`);
        assert.equal(r.body.error.code, from === 'paid' || from === 'void' ? 'invoice_final' : 'invalid_transition', `${from} -> ${to}`);
        assert.deepEqual(await detail(id), before, `${from} -> ${to} changed nothing`);
      }
    }
  }
  const audited = s.db.all<{ metadata: string }>("SELECT metadata FROM audit_log WHERE action = 'invoice.status_changed' AND organization_id = ?", tree.organizationId);
  // 5 allowed attempts + the moves that set up the 25 invoices (issued 5 x 1, paid, overdue and void 5 x 2 each)
  assert.equal(audited.length, 5 + 5 + 30);
  assert.ok(audited.some((a) => { const m = JSON.parse(a.metadata); return m.from === 'overdue' && m.to === 'paid' && /^INV-\d{6}$/.test(m.number); }));
  const bad = await setStatus(await invoiceIn(ctx, 'draft'), 'archived');
  assert.equal(bad.status, 422);
  assert.deepEqual(Object.keys(bad.body.error.details.fields), ['status']);
});

test('numbers: prefix + 6 digits per organization, taken at issue, gap-free with interleaved issuing, drafts and voids', async (t) => {
  const ctx = await setup(t);
  const { s, tree, setStatus } = ctx;
  const a = tree.organizationId;
  const other = makeTree(s);
  const b = other.organizationId;
  const bOwner = await member(s, 'org_owner', other);
  await setBilling(s, bOwner.token, b, { invoicePrefix: 'ACME-' });
  const issue = async (org: string, id: string) => {
    const r = await setStatus(id, 'issued', org === a ? ctx.owner.token : bOwner.token, undefined, org);
    assert.equal(r.status, 200, r.text);
    return r.body.number as string;
  };
  const [a1, a2, a3, a4] = [await invoiceIn(ctx, 'draft'), await invoiceIn(ctx, 'draft'), await invoiceIn(ctx, 'draft'), await invoiceIn(ctx, 'draft')];
  const [b1, b2] = [await invoiceIn(ctx, 'draft', b, bOwner.token), await invoiceIn(ctx, 'draft', b, bOwner.token)];
  assert.equal(await issue(a, a1), 'INV-000001');
  assert.equal(await issue(b, b1), 'ACME-000001');
  assert.equal((await setStatus(a1, 'void')).body.number, 'INV-000001'); // a void invoice keeps its number
  // a2 stays a draft: it takes no number
  assert.equal(await issue(a, a3), 'INV-000002');
  assert.equal(await issue(b, b2), 'ACME-000002');
  assert.equal(await issue(a, a4), 'INV-000003');
  const refused = await setStatus(a3, 'issued');
  assert.equal(refused.status, 409); // a refused move takes no number
  assert.equal(await issue(a, a2), 'INV-000004');
  const numbers = (org: string) => s.db.all<{ number: string }>('SELECT number FROM invoices WHERE organization_id = ? AND number IS NOT NULL ORDER BY number', org).map((r) => r.number);
  assert.deepEqual(numbers(a), ['INV-000001', 'INV-000002', 'INV-000003', 'INV-000004']);
  assert.deepEqual(numbers(b), ['ACME-000001', 'ACME-000002']);
  assert.equal(s.db.get<{ n: number }>('SELECT next_invoice_number AS n FROM billing_accounts WHERE organization_id = ?', a)!.n, 5);
  // concurrent issuing of two drafts still gives two consecutive numbers
  const [c1, c2] = [await invoiceIn(ctx, 'draft'), await invoiceIn(ctx, 'draft')];
  const both = await Promise.all([setStatus(c1, 'issued'), setStatus(c2, 'issued')]);
  assert.deepEqual(both.map((r) => r.body.number).sort(), ['INV-000005', 'INV-000006']);
});

test('ledger: status and query filters, pagination, detail; export as JSON with lines and as CSV, streamed as an attachment', async (t) => {
  const ctx = await setup(t);
  const { s, tree, owner } = ctx;
  const org = tree.organizationId;
  await setBilling(s, owner.token, org, { seatUnitPrice: '12.345' }); // 1 seat x 1,234.5 cents -> 1,235
  const d1 = await invoiceIn(ctx, 'draft');
  const i1 = await invoiceIn(ctx, 'issued'); // INV-000001
  const p1 = await invoiceIn(ctx, 'paid'); // INV-000002
  const list = (q = '') => s.call('GET', `${base(org)}${q}`, { token: owner.token });
  const all = await list();
  assert.equal(all.status, 200);
  assert.deepEqual(all.body.pagination, { page: 1, pageSize: 50, total: 3 });
  assert.deepEqual(all.body.items.map((x: any) => x.id), [p1, i1, d1]); // newest period first
  assert.equal(all.body.items[0].lines, undefined);
  assert.deepEqual([all.body.items[0].subtotal, all.body.items[0].total, all.body.items[0].currency], ['12.35', '12.35', 'USD']);
  assert.deepEqual((await list('?status=draft')).body.items.map((x: any) => x.id), [d1]);
  assert.deepEqual((await list('?query=000002')).body.items.map((x: any) => x.id), [p1]);
  assert.deepEqual((await list('?query=inv-')).body.items.map((x: any) => x.id), [p1, i1]); // case-insensitive
  assert.deepEqual((await list(`?query=${i1.slice(-10)}`)).body.items.map((x: any) => x.id), [i1]);
  assert.deepEqual((await list('?query=%25')).body.items, []); // % is a character, not a wildcard
  const page2 = await list('?page=2&pageSize=2');
  assert.deepEqual(page2.body.pagination, { page: 2, pageSize: 2, total: 3 });
  assert.deepEqual(page2.body.items.map((x: any) => x.id), [d1]);
  assert.equal((await list('?status=late')).status, 422);

  const json = await s.call('GET', `${base(org)}/export?status=issued`, { token: owner.token });
  assert.equal(json.status, 200);
  assert.match(json.headers.get('content-type')!, /^application\/json/);
  assert.match(json.headers.get('content-disposition')!, /^attachment; filename="invoices-.*\.json"$/);
  const exported = JSON.parse(json.text);
  assert.deepEqual(exported.map((x: any) => x.id), [i1]);
  assert.deepEqual(exported[0].lines.map((l: any) => [l.kind, l.amount]), [['seats', '12.35'], ['storage', '0.00']]);
  const csv = await s.call('GET', `${base(org)}/export?format=csv`, { token: owner.token });
  assert.match(csv.headers.get('content-type')!, /^text\/csv/);
  const rows = csv.text.trimEnd().split('\r\n');
  assert.equal(rows[0], 'id,number,status,periodStart,periodEnd,currency,taxRate,subtotal,tax,total,dueDays,createdAt,issuedAt,dueAt,paidAt,voidedAt');
  assert.equal(rows.length, 4);
  assert.deepEqual(rows[1].split(',').slice(0, 3), [p1, 'INV-000002', 'paid']);
  assert.deepEqual(rows[3].split(',').slice(0, 3), [d1, '', 'draft']);
  assert.equal(JSON.parse((await s.call('GET', `${base(org)}/export?query=nothing`, { token: owner.token })).text).length, 0);
  assert.equal((await s.call('GET', `${base(org)}/export?format=xml`, { token: owner.token })).status, 422);
});

test('periods never overlap: 409 invoice_period_overlap naming the invoice; billing cycle and time zone are locked while an invoice is not void', async (t) => {
  const { s, tree, owner, generate, setStatus } = await setup(t);
  const org = tree.organizationId;
  await setBilling(s, owner.token, org, { baseFee: '10.00' });
  const count = () => s.db.get<{ n: number }>('SELECT count(*) AS n FROM invoices WHERE organization_id = ?', org)!.n;
  const nov = await generate({ periodStart: '2026-11-01', periodEnd: '2026-12-01' }); // UTC organization
  assert.equal(nov.status, 201, nov.text);
  const novRef = { id: nov.body.id, number: null, status: 'draft', periodStart: '2026-11-01T00:00:00.000Z', periodEnd: '2026-12-01T00:00:00.000Z' };

  // The review's repro, step by step: another zone or cycle would draw periods across November. Both are refused.
  const account = s.db.get('SELECT * FROM billing_accounts WHERE organization_id = ?', org);
  for (const [body, code, requested, current] of [
    [{ timeZone: 'Pacific/Kiritimati' }, 'time_zone_locked', 'Pacific/Kiritimati', 'UTC'],
    [{ billingCycle: 'annual' }, 'billing_cycle_locked', 'annual', 'monthly'],
    [{ billingCycle: 'quarterly', planName: 'Bigger' }, 'billing_cycle_locked', 'quarterly', 'monthly'],
  ] as const) {
    const r = await s.call('PATCH', `/api/organizations/${org}/billing`, { token: owner.token, body });
    assert.equal(r.status, 409, r.text);
    assert.equal(r.body.error.code, code);
    assert.deepEqual(r.body.error.details, { requested, current, invoice: novRef });
  }
  assert.deepEqual(s.db.get('SELECT * FROM billing_accounts WHERE organization_id = ?', org), account, 'the refused PATCHes changed nothing');
  assert.equal(s.db.get<any>('SELECT time_zone FROM organizations WHERE id = ?', org)!.time_zone, 'UTC');
  assert.equal((await s.call('PATCH', `/api/organizations/${org}/billing`, { token: owner.token, body: { planName: 'Other', timeZone: 'UTC' } })).status, 200,
    'the same zone is no change');

  // The same period again is the original (200), before any overlap check.
  const again = await generate({ periodStart: '2026-11-01T00:00:00Z', periodEnd: '2026-12-01T00:00:00Z', taxRate: '0.5' });
  assert.equal(again.status, 200);
  assert.equal(again.body.id, nov.body.id);
  // A day inside, a period straddling its start or its end, a year around it: refused, each naming November.
  for (const [periodStart, periodEnd] of [
    ['2026-11-15', '2026-11-16'], ['2026-10-15', '2026-11-15'], ['2026-11-30T23:59:59.999Z', '2026-12-15'], ['2026-06-01', '2027-06-01'],
    ['2026-11-01T00:00:00+14:00', '2026-12-01T00:00:00+14:00'], // November in Kiritimati (UTC+14): 14 hours before the UTC one
  ]) {
    const r = await generate({ periodStart, periodEnd });
    assert.equal(r.status, 409, `${periodStart} ${periodEnd}: ${r.text}`);
    assert.equal(r.body.error.code, 'invoice_period_overlap');
    assert.deepEqual(r.body.error.details.invoice, novRef);
    assert.ok(r.body.error.details.periodStart && r.body.error.details.periodEnd);
    assert.match(r.body.error.message, /overlaps invoice ivc_/);
  }
  assert.equal(count(), 1, 'the refusals wrote nothing');
  assert.equal(s.db.get<{ n: number }>("SELECT count(*) AS n FROM audit_log WHERE action = 'invoice.generated' AND organization_id = ?", org)!.n, 1);
  // Half-open periods: the month before ends where November starts.
  const oct = await generate({ periodStart: '2026-10-01', periodEnd: '2026-11-01' });
  assert.equal(oct.status, 201, oct.text);

  // An issued invoice names its number; a void one neither overlaps nor locks.
  assert.equal((await setStatus(nov.body.id, 'issued')).status, 200);
  const day = await generate({ periodStart: '2026-11-15', periodEnd: '2026-11-16' });
  assert.deepEqual(day.body.error.details.invoice, { ...novRef, number: 'INV-000001', status: 'issued' });
  for (const id of [nov.body.id, oct.body.id]) {
    if (id === oct.body.id) assert.equal((await setStatus(id, 'issued')).status, 200);
    assert.equal((await setStatus(id, 'void')).status, 200);
  }
  const moved = await s.call('PATCH', `/api/organizations/${org}/billing`, { token: owner.token, body: { timeZone: 'Pacific/Kiritimati' } });
  assert.equal(moved.status, 200, moved.text);
  const kiri = await generate({ periodStart: '2026-11-01', periodEnd: '2026-12-01' }); // Kiritimati is UTC+14
  assert.equal(kiri.status, 201, kiri.text);
  assert.deepEqual([kiri.body.periodStart, kiri.body.periodEnd], ['2026-10-31T10:00:00.000Z', '2026-11-30T10:00:00.000Z']);
  assert.equal(kiri.body.snapshot.period.timeZone, 'Pacific/Kiritimati');
  const inside = await generate({ periodStart: '2026-11-15', periodEnd: '2026-11-16' });
  assert.equal(inside.status, 409);
  assert.equal(inside.body.error.details.invoice.id, kiri.body.id);
  // The unique key still holds a void invoice's exact period: a repeat returns it (200), void.
  const voided = await generate({ periodStart: '2026-10-01T00:00:00Z', periodEnd: '2026-11-01T00:00:00Z' });
  assert.deepEqual([voided.status, voided.body.id, voided.body.status], [200, oct.body.id, 'void']);
  assert.equal(count(), 3);
});

test('storage lines: a file stored by two projects of one workspace is billed once; a workspace is billed for each file it stores', async (t) => {
  const { s, tree, owner, generate } = await setup(t);
  const org = tree.organizationId;
  const w1 = tree.workspaceId;
  const p2 = makeProject(s, w1).id;
  const w2 = makeWorkspace(s, org).id;
  const p3 = makeProject(s, w2).id;
  await setBilling(s, owner.token, org, { storageUnitPrice: '1000' }); // USD 1,000 a GiB
  const content = Buffer.alloc(1024, 9);
  const uploadInto = async (projectId: string) => {
    assert.equal((await s.call('PATCH', '/api/context', { token: owner.token, body: { projectId } })).status, 200);
    const asset = await s.call('POST', '/api/assets', { token: owner.token, body: { kind: 'image', name: 'shared' } });
    assert.equal(asset.status, 201, asset.text);
    const up = await s.call('POST', `/api/assets/${asset.body.id}/versions/upload?fileName=shared.bin`, {
      token: owner.token, raw: content, headers: { 'content-type': 'application/octet-stream' },
    });
    assert.equal(up.status, 201, up.text);
  };
  await uploadInto(tree.projectId);
  await uploadInto(p2); // the same bytes in another project of the same workspace: one stored file
  await uploadInto(p3); // and in another workspace
  const paths = s.db.all<{ project_id: string; storage_path: string }>('SELECT project_id, storage_path FROM asset_versions WHERE organization_id = ?', org);
  assert.equal(paths.length, 3);
  assert.equal(new Set(paths.map((p) => p.storage_path)).size, 1, 'content-addressed: one path');

  const inv = (await generate({ periodStart: '2026-01-01', periodEnd: '2026-02-01' })).body;
  // 1,024 bytes = 0.00000095367431640625 GiB x USD 1,000 = 0.095367431640625 cents... x 100 = USD 0.00095367431640625
  const st1 = lineOf(inv, 'storage', w1);
  assert.deepEqual([st1.quantity, st1.amountExact, st1.amount], ['0.00000095367431640625', '0.00095367431640625', '0.00']);
  assert.equal(st1.description.endsWith('(1024 bytes)'), true);
  assert.equal(lineOf(inv, 'storage', w2).quantity, '0.00000095367431640625');
  assert.deepEqual(inv.snapshot.storage.map((w: any) => [w.workspaceId, w.bytes]).sort(), [[w1, 1024], [w2, 1024]].sort());
  // The same figures as the commercial view's workspace quotas.
  const view = (await s.call('GET', `/api/organizations/${org}/commercial`, { token: owner.token })).body;
  assert.deepEqual(view.workspaceQuotas.map((q: any) => [q.workspaceId, q.usedStorageBytes]).sort(), [[w1, 1024], [w2, 1024]].sort());
  assert.equal(view.usageThisMonth.storageBytes, 1024, 'the organization stores it once');
});

test('usage lines multiply out: quantity x the unit price the events were recorded at = amountExact, also when the price does not divide the cost', async (t) => {
  const { s, tree, owner, generate } = await setup(t);
  const org = tree.organizationId;
  const w1 = tree.workspaceId;
  await setBilling(s, owner.token, org, { seatUnitPrice: '0' });
  // 0.7 seconds at USD 0.012345 a second (12,345 e4): 8,641.5 e4, recorded rounded as 8,642. Twice.
  addUsage(s, org, w1, { kind: 'voice', unit: 'second', quantity: 0.7, unitPriceE4: 12_345, costE4: 8_642, at: '2026-02-10T00:00:00.000Z' }, 2);
  // The same kind at another recorded price is its own line.
  addUsage(s, org, w1, { kind: 'voice', unit: 'second', quantity: 3, unitPriceE4: 3_333, costE4: 9_999, at: '2026-02-11T00:00:00.000Z' });
  const inv = (await generate({ periodStart: '2026-02-01', periodEnd: '2026-03-01' })).body;
  const voice = inv.lines.filter((l: any) => l.unit === 'second');
  // Lines by recorded unit price: 3 x USD 0.003333 = 0.009999; 1.4 x 0.012345 = 0.017283 (cost / quantity would have
  // said 8,642 / 0.7 = 12,345.71 -> 0.012346 a second, and the line would have been the costs' 0.017284).
  assert.deepEqual(voice.map((l: any) => [l.quantity, l.unitPrice, l.amountExact, l.amount]), [
    ['3', '0.003333', '0.009999', '0.01'],
    ['1.4', '0.012345', '0.017283', '0.02'],
  ]);
  const decimal = (text: string) => {
    const [whole, frac = ''] = text.split('.');
    return { num: BigInt(whole + frac), den: 10n ** BigInt(frac.length) };
  };
  for (const l of voice) {
    const q = decimal(l.quantity);
    const p = decimal(l.unitPrice);
    const a = decimal(l.amountExact);
    assert.equal(q.num * p.num * a.den, a.num * q.den * p.den, `${l.quantity} x ${l.unitPrice} = ${l.amountExact}`);
  }
});

test('a completed video job records its clip at the account\'s clip price (unit_price_e4), and the invoice line multiplies out', async (t) => {
  const { s, token, tree, id } = await jobWorld(t);
  const org = tree.organizationId;
  await setBilling(s, token, org, { clipUnitPrice: '0.0143' });
  for (let i = 0; i < 2; i++) {
    const job = await createJob(s, token, { kind: 'video', connectorId: id, prompt: `clip ${i}` });
    await waitJob(s, token, job.id, ['completed']);
  }
  const events = s.db.all<{ unit_price_e4: number; estimated_cost_e4: number; quantity: number }>(
    "SELECT unit_price_e4, estimated_cost_e4, quantity FROM usage_events WHERE organization_id = ? AND kind = 'clip'", org);
  assert.deepEqual(events.map((e) => ({ ...e })), [1, 2].map(() => ({ unit_price_e4: 14_300, estimated_cost_e4: 14_300, quantity: 1 })));
  const r = await s.call('POST', `${base(org)}/generate`, { token, body: {} });
  assert.equal(r.status, 201, r.text);
  const clip = lineOf(r.body, 'usage', tree.workspaceId, 'clip');
  assert.deepEqual([clip.quantity, clip.unitPrice, clip.amountExact, clip.amount], ['2', '0.0143', '0.0286', '0.03']);
});

test('invoices are immutable in the database: a direct SQL rewrite of a line, the snapshot, an amount or the number aborts; deleting too', async (t) => {
  const { s, tree, owner, generate, setStatus } = await setup(t);
  const org = tree.organizationId;
  await setBilling(s, owner.token, org, { seatUnitPrice: '2.50' });
  const inv = (await generate({ periodStart: '2026-04-01', periodEnd: '2026-05-01' })).body;
  assert.equal((await setStatus(inv.id, 'issued')).status, 200);
  const before = (await s.call('GET', `${base(org)}/${inv.id}`, { token: owner.token })).body;
  for (const [sql, message] of [
    ['UPDATE invoice_lines SET amount_minor = 0 WHERE invoice_id = ?', /invoice lines are immutable/],
    ["UPDATE invoice_lines SET description = 'free' WHERE invoice_id = ?", /invoice lines are immutable/],
    ['DELETE FROM invoice_lines WHERE invoice_id = ?', /invoice lines are immutable/],
    ["UPDATE invoices SET snapshot = '{}' WHERE id = ?", /an invoice snapshot is immutable/],
    ['UPDATE invoices SET total_minor = 1, subtotal_minor = 1 WHERE id = ?', /an invoice snapshot is immutable/],
    ["UPDATE invoices SET period_end = '2026-06-01T00:00:00.000Z' WHERE id = ?", /an invoice snapshot is immutable/],
    ["UPDATE invoices SET number = 'INV-999999' WHERE id = ?", /an invoice number is given once/],
    ['UPDATE invoices SET number = NULL WHERE id = ?', /an invoice number is given once/],
    ['DELETE FROM invoices WHERE id = ?', /invoices are never deleted/],
  ] as const) {
    assert.throws(() => s.db.run(sql, inv.id), message, sql);
  }
  const after = (await s.call('GET', `${base(org)}/${inv.id}`, { token: owner.token })).body;
  assert.deepEqual(after, before);
  assert.equal(after.number, 'INV-000001');
  // The status still moves (through the service).
  assert.equal((await setStatus(inv.id, 'paid')).status, 200);
});
