// Invoices: access per route, one invoice per organization and period (also under concurrent
// requests), the default period and the generation input. The arithmetic, the lifecycle and the
// ledger have their own files beside this one.
// Prices, currency, cycle, time zone and prefix are set through PATCH .../billing; usage events are
// inserted with SQL (in the service they are written by jobs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { grant, login, makeOrg, makeUser, member } from '../helpers/factories.ts';
import { matrix, runScenarios, type Route } from '../helpers/scenarios.ts';
import { billingPeriod } from '../../src/kernel/periods.ts';
import { setBilling, base, setup } from './invoices-setup.ts';
import { otherWriter } from '../helpers/postgres.ts';

test('access: 401 without a session, 403 permission_denied for ordinary members (and generate/status without billing:manage), 403 organization_forbidden for another organization', async (t) => {
  const { s, tree, owner, generate } = await setup(t);
  const draft = (await generate({ periodStart: '2026-01-01', periodEnd: '2026-02-01' })).body;
  const plain = await member(s, 'org_member', tree);
  const producer = await member(s, 'producer', tree); // usage:view in its workspace, none at organization level
  const admin = await member(s, 'org_admin', tree); // usage:view, no billing:manage
  const org = tree.organizationId;
  const stranger = await member(s, 'org_owner'); // owner of another organization
  const reads: Route[] = [['GET', base(org)], ['GET', `${base(org)}/${draft.id}`], ['GET', `${base(org)}/export`]];
  const writes: Route[] = [['POST', `${base(org)}/generate`, {}], ['POST', `${base(org)}/${draft.id}/status`, { status: 'issued' }]];
  await runScenarios(s, [
    ...matrix([...reads, ...writes], [
      { as: 'no session', status: 401 },
      { as: 'org_member', token: plain.token, status: 403, code: 'permission_denied' },
      { as: 'producer', token: producer.token, status: 403, code: 'permission_denied' },
      { as: 'stranger', token: stranger.token, status: 403, code: 'organization_forbidden' },
    ]),
    ...matrix(reads, [{ as: 'org_admin', token: admin.token, status: 200 }]),
    ...matrix(writes, [{ as: 'org_admin', token: admin.token, status: 403, code: 'permission_denied', details: { permission: 'billing:manage' } }]),
  ]);
  const still = await s.call('GET', `${base(org)}/${draft.id}`, { token: owner.token });
  assert.equal(still.body.status, 'draft'); // nothing the refused calls did changed it
  assert.equal((await s.call('GET', base(org), { token: owner.token })).body.pagination.total, 1);
});

test('another organization\'s invoice under this organization\'s path is 403 organization_forbidden (audited); an unknown id is 404', async (t) => {
  const { s, tree, generate } = await setup(t);
  const other = await makeOrg(s);
  const both = await makeUser(s);
  await grant(s, both.id, 'organization', tree.organizationId, 'org_owner');
  await grant(s, both.id, 'organization', other.id, 'org_owner');
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
  const denied = await s.db.all<{ organization_id: string; metadata: string }>(
    "SELECT organization_id, metadata FROM audit_log WHERE action = 'access.denied' AND target_type = 'invoice' AND target_id = ?", theirs.id);
  assert.equal(denied.length, 2);
  assert.ok(denied.every((d) => d.organization_id === other.id && JSON.parse(d.metadata).reason === 'organization_forbidden'));
  for (const path of [`${base(tree.organizationId)}/ivc_missing`, `${base(tree.organizationId)}/ivc_missing/status`]) {
    const r = await s.call(path.endsWith('status') ? 'POST' : 'GET', path, { token, body: path.endsWith('status') ? { status: 'issued' } : undefined });
    assert.equal(r.status, 404, path);
  }
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
  const count = async (period: string) => (await s.db.get<{ n: number }>('SELECT count(*) AS n FROM invoices WHERE organization_id = ? AND period_start = ?', org, period))!.n;
  assert.equal(await count('2026-06-01T00:00:00.000Z'), 1);
  assert.equal(await count('2026-08-01T00:00:00.000Z'), 1);
  const generated = await s.call('GET', '/api/audit?action=invoice.generated', { token: owner.token });
  assert.equal(generated.body.auditLog.length, 2);
  assert.equal((await s.db.get<{ n: number }>("SELECT count(*) AS n FROM invoice_events WHERE organization_id = ? AND action = 'generated'", org))!.n, 2);
});

test('the unique key decides under real concurrency: another connection inserting the period while this one waits makes generate answer its invoice', async (t) => {
  const { s, tree, generate } = await setup(t);
  const org = tree.organizationId;
  // Another writer (a second process on SQLite, a second connection on PostgreSQL) inserts the
  // period's invoice in a transaction and commits 400 ms later. The server's look-up before its
  // transaction sees nothing yet (WAL snapshot; read committed), its write waits (BEGIN IMMEDIATE; the
  // unique index), and its INSERT then meets the unique key: it reads back and answers the other invoice.
  const other = await otherWriter(s.config, "INSERT INTO invoices (id, organization_id, period_start, period_end, status, currency, tax_rate, due_days, subtotal_minor, tax_minor, total_minor, snapshot, created_at, updated_at) VALUES ('ivc_other_writer', ?, '2026-10-01T00:00:00.000Z', '2026-11-01T00:00:00.000Z', 'draft', 'USD', '0', 30, 0, 0, 0, '{}', '2026-10-01T00:00:00.000Z', '2026-10-01T00:00:00.000Z')", [org], 400);
  const started = performance.now();
  const r = await generate({ periodStart: '2026-10-01', periodEnd: '2026-11-01' });
  assert.ok(performance.now() - started >= 150, 'the generation waited for the other writer\'s lock');
  await other.committed;
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.id, 'ivc_other_writer');
  assert.equal((await s.db.get<{ n: number }>("SELECT count(*) AS n FROM invoices WHERE organization_id = ? AND period_start = '2026-10-01T00:00:00.000Z'", org))!.n, 1);
  assert.equal((await s.db.get<{ n: number }>("SELECT count(*) AS n FROM audit_log WHERE action = 'invoice.generated' AND organization_id = ?", org))!.n, 0);
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
  assert.equal((await s.db.get<{ n: number }>('SELECT count(*) AS n FROM invoices WHERE organization_id = ?', tree.organizationId))!.n, 0);
  assert.equal((await generate({ taxRate: '1', dueDays: 0 })).status, 201);
});
