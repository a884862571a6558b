// Billing account PATCH (every refusal changes nothing), the commercial view and its export, and the
// 31-day usage trend per local day of the organization's time zone (across DST changes).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { login, makeTree, makeUser, makeWorkspace, member, type Tree } from '../helpers/factories.ts';
import { newId } from '../../src/kernel/ids.ts';
import { localDate } from '../../src/kernel/periods.ts';
import { usageTrend } from '../../src/commercial/trend.ts';
import { formatE4Amount } from '../../src/kernel/money.ts';

const billing = (orgId: string) => `/api/organizations/${orgId}/billing`;
const commercial = (orgId: string) => `/api/organizations/${orgId}/commercial`;
const DAY = 86_400_000;

/** Usage events have no write API (jobs record clips when they complete): seeded as the worker writes them. */
async function seedUsage(s: TestServer, tree: Pick<Tree, 'organizationId' | 'workspaceId'>, at: Date | string, o: { kind?: string; quantity?: number; e4?: number } = {}) {
  await s.db.run(
    `INSERT INTO usage_events (id, organization_id, workspace_id, project_id, actor_user_id, kind, unit, quantity, estimated_cost_e4, currency,
       cost_center_id, job_id, metadata, created_at, event_key)
     VALUES (?, ?, ?, NULL, NULL, ?, ?, ?, ?, 'USD', (SELECT id FROM cost_centers WHERE workspace_id = ?), NULL, '{}', ?, ?)`,
    newId('use'), tree.organizationId, tree.workspaceId, o.kind ?? 'clip', o.kind ?? 'clip', o.quantity ?? 1, o.e4 ?? 0, tree.workspaceId,
    typeof at === 'string' ? at : at.toISOString(), newId('key'));
}

/** Everything a billing PATCH may write: the account, the organization's time zone, account events and audit records. */
async function snapshot(s: TestServer, orgId: string) {
  return {
    account: await s.db.get('SELECT * FROM billing_accounts WHERE organization_id = ?', orgId),
    timeZone: await s.db.get('SELECT time_zone FROM organizations WHERE id = ?', orgId),
    events: await s.db.all('SELECT * FROM billing_account_events WHERE organization_id = ?', orgId),
    audit: (await s.db.get('SELECT count(*) AS n FROM audit_log'))!.n,
  };
}

async function owned(s: TestServer) {
  const tree = await makeTree(s);
  const owner = await member(s, 'org_owner', tree);
  return { tree, owner };
}

test('PATCH billing: 401 without a session, 403 for admins, producers, members and another organization; owners and the system administrator pass', async (t) => {
  const s = await startTestServer(t);
  const { tree, owner } = await owned(s);
  const path = billing(tree.organizationId);
  const body = { planName: 'Studio Pro' };
  assert.equal((await s.call('PATCH', path, { body })).status, 401);
  for (const role of ['org_admin', 'producer', 'org_member'] as const) {
    const r = await s.call('PATCH', path, { token: (await member(s, role, tree)).token, body });
    assert.equal(r.status, 403, role);
    assert.equal(r.body.error.code, 'permission_denied', role);
  }
  const foreign = await member(s, 'org_owner');
  const cross = await s.call('PATCH', path, { token: foreign.token, body });
  assert.equal(cross.status, 403);
  assert.equal(cross.body.error.code, 'organization_forbidden');
  assert.equal((await s.db.get<any>('SELECT count(*) AS n FROM billing_account_events'))!.n, 0);
  const ok = await s.call('PATCH', path, { token: owner.token, body });
  assert.equal(ok.status, 200, ok.text);
  assert.equal(ok.body.planName, 'Studio Pro');
  const admin = await makeUser(s, { systemAdmin: true });
  const bySystem = await s.call('PATCH', path, { token: await login(s, admin), body: { planName: 'Studio Max' } });
  assert.equal(bySystem.status, 200, bySystem.text);
});

test('an accepted change answers the account, writes one account event and one audit record with before and after; an unchanged PATCH writes nothing', async (t) => {
  const s = await startTestServer(t);
  const { tree, owner } = await owned(s);
  const path = billing(tree.organizationId);
  const r = await s.call('PATCH', path, {
    token: owner.token,
    body: {
      planName: 'Studio Pro', billingCycle: 'quarterly', currency: 'KWD', baseFee: '12.5', seatUnitPrice: 3, storageUnitPrice: '0.0125',
      clipUnitPrice: '0.0000001', seatLimit: 30, storageGb: 250.5, monthlyClipQuota: 2000, quotaWarningPercent: 90, localRunnerOnly: true,
      cloudConnectorsRequireApproval: false, invoicePrefix: 'ACME/2026-', timeZone: 'Asia/Tokyo',
    },
  });
  assert.equal(r.status, 200, r.text);
  const expected = {
    organizationId: tree.organizationId, planName: 'Studio Pro', billingCycle: 'quarterly', currency: 'KWD', baseFee: '12.500', seatUnitPrice: '3.000',
    storageUnitPrice: '0.0125', clipUnitPrice: '0.0000001', seatLimit: 30, storageGb: 250.5, monthlyClipQuota: 2000, quotaWarningPercent: 90,
    localRunnerOnly: true, cloudConnectorsRequireApproval: false, invoicePrefix: 'ACME/2026-', timeZone: 'Asia/Tokyo', nextInvoiceNumber: 1,
  };
  const { createdAt, updatedAt, ...shown } = r.body;
  assert.deepEqual(shown, expected);
  assert.ok(updatedAt > createdAt);
  const row = (await s.db.get<any>('SELECT * FROM billing_accounts WHERE organization_id = ?', tree.organizationId))!;
  assert.deepEqual([row.base_fee_minor, row.seat_unit_price_e4, row.storage_unit_price_e4, row.clip_unit_price_e4], [12_500, 30_000_000, 125_000, 1]);
  assert.equal((await s.call('GET', `/api/organizations/${tree.organizationId}`, { token: owner.token })).body.timeZone, 'Asia/Tokyo');

  const events = await s.db.all<any>('SELECT * FROM billing_account_events WHERE organization_id = ?', tree.organizationId);
  assert.equal(events.length, 1);
  const changed = ['planName', 'billingCycle', 'currency', 'baseFee', 'seatUnitPrice', 'storageUnitPrice', 'clipUnitPrice', 'seatLimit', 'storageGb',
    'monthlyClipQuota', 'quotaWarningPercent', 'localRunnerOnly', 'cloudConnectorsRequireApproval', 'invoicePrefix', 'timeZone'];
  assert.deepEqual(JSON.parse(events[0].changed), changed);
  const before = JSON.parse(events[0].before);
  assert.deepEqual(before, {
    planName: 'Studio', billingCycle: 'monthly', currency: 'USD', baseFee: '0.00', seatUnitPrice: '0.00', storageUnitPrice: '0.00', clipUnitPrice: '0.00',
    seatLimit: 25, storageGb: 100, monthlyClipQuota: 1000, quotaWarningPercent: 80, localRunnerOnly: false, cloudConnectorsRequireApproval: true,
    invoicePrefix: 'INV-', timeZone: 'UTC',
  });
  const { organizationId: _o, nextInvoiceNumber: _n, ...settings } = expected;
  assert.deepEqual(JSON.parse(events[0].after), settings);
  assert.equal(events[0].actor_user_id, owner.user.id);
  const audits = await s.db.all<any>("SELECT * FROM audit_log WHERE action = 'billing.account.updated'");
  assert.equal(audits.length, 1);
  assert.equal(audits[0].organization_id, tree.organizationId);
  assert.deepEqual(JSON.parse(audits[0].metadata), { changed, before, after: settings });

  // The same values again, and an empty body: nothing changes, nothing is written.
  const unchanged = await snapshot(s, tree.organizationId);
  for (const body of [{ baseFee: '12.500', seatLimit: 30, timeZone: 'Asia/Tokyo' }, {}]) {
    const again = await s.call('PATCH', path, { token: owner.token, body });
    assert.equal(again.status, 200, again.text);
    assert.equal(again.body.updatedAt, updatedAt);
  }
  assert.deepEqual(await snapshot(s, tree.organizationId), unchanged);

  // A second change: one more event, only the changed field named.
  const second = await s.call('PATCH', path, { token: owner.token, body: { seatLimit: 31, planName: 'Studio Pro' } });
  assert.equal(second.status, 200);
  const later = await s.db.all<any>('SELECT * FROM billing_account_events WHERE organization_id = ? AND id <> ?', tree.organizationId, events[0].id);
  assert.equal(later.length, 1);
  assert.deepEqual(JSON.parse(later[0].changed), ['seatLimit']);
  assert.equal((await s.db.get<any>("SELECT count(*) AS n FROM audit_log WHERE action = 'billing.account.updated'"))!.n, 2);
});

test('each refused billing PATCH answers its code and changes nothing', async (t) => {
  const s = await startTestServer(t);
  const { tree, owner } = await owned(s);
  const orgId = tree.organizationId;
  const path = billing(orgId);
  const producer = await member(s, 'producer', tree);
  await member(s, 'writer', tree);
  for (const email of ['a@example.test', 'b@example.test']) {
    const inv = await s.call('POST', `/api/organizations/${orgId}/invitations`, { token: owner.token, body: { email, role: 'org_member' } });
    assert.equal(inv.status, 201, inv.text);
  }
  // Storage: one uploaded file.
  const asset = await s.call('POST', '/api/assets', { token: producer.token, body: { kind: 'image', name: 'still' } });
  assert.equal(asset.status, 201, asset.text);
  const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), crypto.randomBytes(3000)]);
  const up = await s.call('POST', `/api/assets/${asset.body.id}/versions/upload?fileName=still.png`, {
    token: producer.token, raw: png, headers: { 'content-type': 'application/octet-stream' },
  });
  assert.equal(up.status, 201, up.text);
  // Clips: three this month (UTC organization), one in the month before (not counted).
  const now = new Date();
  for (let i = 0; i < 3; i++) await seedUsage(s, tree, now);
  await seedUsage(s, tree, new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1) - 1000));
  // A workspace's own limits within the plan, set through the quota API.
  const quotaId = `wq_${tree.workspaceId.slice(4)}`;
  const q = await s.call('PATCH', `/api/organizations/${orgId}/quotas/${quotaId}`, { token: owner.token, body: { monthlyClipQuota: 500, storageGb: 50 } });
  assert.equal(q.status, 200, q.text);

  const refusals: Array<[Record<string, unknown>, number, string, Record<string, unknown>?]> = [
    // 2 members (owner, producer, writer = 3 active) + 2 pending invitations = 5 reserved.
    [{ seatLimit: 4 }, 409, 'seat_limit_below_reserved', { requested: 4, minimum: 5, activeMembers: 3, pendingInvitations: 2 }],
    [{ monthlyClipQuota: 2 }, 409, 'clip_quota_below_usage', { requested: 2, minimum: 3 }],
    [{ storageGb: 0 }, 409, 'storage_below_usage', { requested: 0, usedBytes: png.length }],
    [{ monthlyClipQuota: 499 }, 409, 'quota_above_plan', { requested: 499, minimum: 500, field: 'monthlyClipQuota', quotaId, workspaceId: tree.workspaceId }],
    [{ storageGb: 49.5 }, 409, 'quota_above_plan', { requested: 49.5, minimum: 50, field: 'storageGb', quotaId }],
    [{ currency: 'EUR' }, 409, 'currency_locked', { requested: 'EUR', current: 'USD', usageEvents: true, invoices: false }],
    // A refusal anywhere refuses the whole PATCH.
    [{ planName: 'Bigger', seatLimit: 1 }, 409, 'seat_limit_below_reserved'],
    [{ billingCycle: 'weekly', seatLimit: -1, baseFee: '1.234', clipUnitPrice: '0.0000001', invoicePrefix: 'inv', quotaWarningPercent: 0, timeZone: 'Mars/Base', extra: 1 },
      422, 'validation_failed'],
    [{ currency: 'XXX' }, 422, 'validation_failed'],
    [{ seatUnitPrice: '-1' }, 422, 'validation_failed'],
    [{ baseFee: '1000000001' }, 422, 'validation_failed'],
  ];
  const before = await snapshot(s, orgId);
  for (const [body, status, code, details] of refusals) {
    const r = await s.call('PATCH', path, { token: owner.token, body });
    assert.equal(r.status, status, `${JSON.stringify(body)}: ${r.text}`);
    assert.equal(r.body.error.code, code);
    for (const [k, v] of Object.entries(details ?? {})) assert.deepEqual(r.body.error.details[k], v, `${code} ${k}`);
    assert.deepEqual(await snapshot(s, orgId), before, `${JSON.stringify(body)} changed nothing`);
  }
  const storage = await s.call('PATCH', path, { token: owner.token, body: { storageGb: 0 } });
  assert.ok(storage.body.error.details.minimum > 0 && storage.body.error.details.minimum * 2 ** 30 >= png.length);
  const bad = await s.call('PATCH', path, { token: owner.token, body: refusals[7][0] });
  assert.deepEqual(Object.keys(bad.body.error.details.fields).sort(),
    ['billingCycle', 'extra', 'invoicePrefix', 'quotaWarningPercent', 'seatLimit'].sort(), 'shape errors first, all of them');
  const decimals = await s.call('PATCH', path, { token: owner.token, body: { baseFee: '1.234', clipUnitPrice: '0.0000001', timeZone: 'Mars/Base' } });
  assert.deepEqual(Object.keys(decimals.body.error.details.fields).sort(), ['baseFee', 'clipUnitPrice', 'timeZone']);

  // At the bounds: accepted.
  for (const body of [{ seatLimit: 5 }, { monthlyClipQuota: 500 }, { storageGb: 50 }]) {
    const r = await s.call('PATCH', path, { token: owner.token, body });
    assert.equal(r.status, 200, `${JSON.stringify(body)}: ${r.text}`);
  }
  assert.equal((await s.db.get<any>('SELECT count(*) AS n FROM billing_account_events WHERE organization_id = ?', orgId))!.n, 3);
});

test('changing the currency keeps amounts by value: one the new currency cannot hold (JPY: 0 decimals, prices 4) is 422; allowed until usage or an invoice exists', async (t) => {
  const s = await startTestServer(t);
  const { tree, owner } = await owned(s);
  const path = billing(tree.organizationId);
  assert.equal((await s.call('PATCH', path, { token: owner.token, body: { baseFee: '12.50', clipUnitPrice: '0.00125' } })).status, 200);
  const before = await snapshot(s, tree.organizationId);
  const r = await s.call('PATCH', path, { token: owner.token, body: { currency: 'JPY' } });
  assert.equal(r.status, 422);
  assert.deepEqual(Object.keys(r.body.error.details.fields).sort(), ['baseFee', 'clipUnitPrice']);
  assert.deepEqual(await snapshot(s, tree.organizationId), before);
  const eur = await s.call('PATCH', path, { token: owner.token, body: { currency: 'EUR' } });
  assert.equal(eur.status, 200, eur.text);
  assert.deepEqual([eur.body.currency, eur.body.baseFee, eur.body.clipUnitPrice], ['EUR', '12.50', '0.00125']);
  const jpy = await s.call('PATCH', path, { token: owner.token, body: { currency: 'JPY', baseFee: '1500', clipUnitPrice: '2' } });
  assert.equal(jpy.status, 200, jpy.text);
  assert.deepEqual([jpy.body.baseFee, jpy.body.clipUnitPrice, jpy.body.seatUnitPrice], ['1500', '2', '0']);
  // An invoice (no usage yet) locks the currency too; its events join the billing history.
  const generated = await s.call('POST', `/api/organizations/${tree.organizationId}/invoices/generate`, { token: owner.token, body: {} });
  assert.equal(generated.status, 201, generated.text);
  const locked = await snapshot(s, tree.organizationId);
  const refused = await s.call('PATCH', path, { token: owner.token, body: { currency: 'USD' } });
  assert.equal(refused.status, 409);
  assert.equal(refused.body.error.code, 'currency_locked');
  assert.deepEqual(refused.body.error.details, { requested: 'USD', current: 'JPY', usageEvents: false, invoices: true });
  assert.deepEqual(await snapshot(s, tree.organizationId), locked);
  const history = (await s.call('GET', commercial(tree.organizationId), { token: owner.token })).body.billingHistory;
  assert.equal(history[0].kind, 'invoice');
  assert.equal(history[0].invoiceId, generated.body.id);
  assert.deepEqual(history.slice(1).map((h: any) => h.kind), ['account', 'account', 'account']);
});

test('GET commercial and its export: 401, 403 for producers, members and another organization; owners, admins and the system administrator read it', async (t) => {
  const s = await startTestServer(t);
  const { tree, owner } = await owned(s);
  const admin = await member(s, 'org_admin', tree);
  const foreign = await member(s, 'org_owner');
  const sys = await makeUser(s, { systemAdmin: true });
  for (const path of [commercial(tree.organizationId), `${commercial(tree.organizationId)}/export`]) {
    assert.equal((await s.call('GET', path)).status, 401);
    for (const role of ['producer', 'org_member'] as const) {
      const r = await s.call('GET', path, { token: (await member(s, role, tree)).token });
      assert.equal(r.status, 403, `${role} ${path}`);
      assert.equal(r.body.error.code, 'permission_denied');
    }
    const cross = await s.call('GET', path, { token: foreign.token });
    assert.equal(cross.status, 403);
    assert.equal(cross.body.error.code, 'organization_forbidden');
    for (const token of [owner.token, admin.token, await login(s, sys)]) assert.equal((await s.call('GET', path, { token })).status, 200, path);
  }
  const exp = await s.call('GET', `${commercial(tree.organizationId)}/export`, { token: owner.token });
  assert.match(exp.headers.get('content-type')!, /^application\/json/);
  assert.equal(exp.headers.get('content-disposition'), `attachment; filename="commercial-${tree.organizationId}-${localDate(new Date(), 'UTC')}.json"`);
});

test('the commercial view\'s numbers on a small seeded set; the export adds every event, usage by month and invoices', async (t) => {
  const s = await startTestServer(t);
  const { tree, owner } = await owned(s);
  const orgId = tree.organizationId;
  const other = await makeWorkspace(s, orgId, 'B-side');
  await member(s, 'writer', tree);
  const inv = await s.call('POST', `/api/organizations/${orgId}/invitations`, { token: owner.token, body: { email: 'c@example.test', role: 'org_member' } });
  assert.equal(inv.status, 201);
  const tz = 'Asia/Kolkata';
  assert.equal((await s.call('PATCH', billing(orgId), { token: owner.token, body: { seatLimit: 10, clipUnitPrice: '0.0125', timeZone: tz } })).status, 200);
  // A budget of USD 0.10 on the first workspace's cost center (through its API).
  const cc = (workspaceId: string) => `cc_${workspaceId.slice(4)}`;
  const budget = await s.call('PATCH', `/api/organizations/${orgId}/cost-centers/${cc(tree.workspaceId)}`, { token: owner.token, body: { budget: '0.10' } });
  assert.equal(budget.status, 200, budget.text);
  // Now: three clips of 1.25 cents (3.75 cents, rounded once: 0.04) in two workspaces; two days ago two
  // renders of half a cent (0.01 for the day); 29 days ago one; 40 days ago one (outside the window).
  const now = Date.now();
  const seeded = [
    { ws: tree.workspaceId, ms: now - 1000, kind: 'clip', quantity: 1, e4: 12_500 },
    { ws: tree.workspaceId, ms: now - 1000, kind: 'clip', quantity: 1, e4: 12_500 },
    { ws: other.id, ms: now - 1000, kind: 'clip', quantity: 1, e4: 12_500 },
    { ws: tree.workspaceId, ms: now - 2 * DAY, kind: 'render', quantity: 2.5, e4: 5000 },
    { ws: tree.workspaceId, ms: now - 2 * DAY, kind: 'render', quantity: 2.5, e4: 5000 },
    { ws: tree.workspaceId, ms: now - 29 * DAY, kind: 'clip', quantity: 1, e4: 10_000 },
    { ws: tree.workspaceId, ms: now - 40 * DAY, kind: 'clip', quantity: 1, e4: 10_000 },
  ];
  for (const e of seeded) await seedUsage(s, { organizationId: orgId, workspaceId: e.ws }, new Date(e.ms), { kind: e.kind, quantity: e.quantity, e4: e.e4 });
  await seedUsage(s, await makeTree(s), new Date(now - 1000), { e4: 99_999 }); // another organization's

  const r = await s.call('GET', commercial(orgId), { token: owner.token });
  assert.equal(r.status, 200, r.text);
  const v = r.body;
  assert.deepEqual(v.organization, { id: orgId, name: v.organization.name, timeZone: tz });
  assert.equal(v.account.clipUnitPrice, '0.0125');
  assert.equal(v.account.timeZone, tz);
  assert.deepEqual(v.seats, { limit: 10, activeMembers: 2, pendingInvitations: 1, reserved: 3, available: 7 });
  assert.equal(v.workspaceQuotas.length, 2);
  assert.ok(Array.isArray(v.quotaWarnings));

  const at = (ms: number) => localDate(new Date(ms), tz);
  // Cost centers: this billing period (monthly, the local month in Kolkata) of each workspace, summed
  // exactly and rounded once; the split by cost center and workspace only where there are events.
  const inPeriod = seeded.filter((e) => at(e.ms).slice(0, 7) === at(now).slice(0, 7));
  const of = (ws: string) => inPeriod.filter((e) => e.ws === ws);
  const e4Of = (ws: string) => of(ws).reduce((sum, e) => sum + e.e4, 0);
  const code = (ws: string) => `WS-${ws.slice(-8).toUpperCase()}`;
  const byCode = [tree.workspaceId, other.id].sort((x, y) => (code(x) < code(y) ? -1 : 1));
  assert.deepEqual(v.costCenters, byCode.map((ws) => ({
    id: cc(ws), code: code(ws), name: ws === other.id ? 'B-side' : v.costCenters.find((c: any) => c.id === cc(ws)).name, workspaceId: ws,
    budget: ws === other.id ? null : '0.10', currency: 'USD', spent: formatE4Amount(BigInt(e4Of(ws)), 'USD'), events: of(ws).length,
    budgetUsedRatio: ws === other.id ? null : e4Of(ws) / 100_000, // spent / USD 0.10 (10 cents = 100,000 e4)
  })));
  assert.equal(v.costCenters.find((c: any) => c.workspaceId === other.id).spent, '0.01', 'one clip of 1.25 cents');
  assert.deepEqual(v.costCenterDetail, byCode.filter((ws) => of(ws).length > 0).map((ws) => ({
    costCenterId: cc(ws), code: code(ws), workspaceId: ws, workspaceName: v.costCenters.find((c: any) => c.id === cc(ws)).name,
    events: of(ws).length, units: of(ws).reduce((sum, e) => sum + e.quantity, 0), estimatedCost: formatE4Amount(BigInt(e4Of(ws)), 'USD'),
  })));
  const monthEvents = [now - 1000, now - 1000, now - 1000, now - 2 * DAY, now - 2 * DAY, now - 29 * DAY, now - 40 * DAY]
    .filter((ms) => at(ms).slice(0, 7) === at(now).slice(0, 7));
  assert.equal(v.usageThisMonth.month, at(now).slice(0, 7));
  assert.equal(v.usageThisMonth.events, monthEvents.length);
  assert.equal(v.usageThisMonth.clips, monthEvents.length - (at(now - 2 * DAY).slice(0, 7) === at(now).slice(0, 7) ? 2 : 0));
  assert.equal(v.usageThisMonth.storageBytes, 0);
  assert.equal(v.usageThisMonth.currency, 'USD');

  assert.deepEqual(v.usageTrend, [
    { day: at(now - 29 * DAY), units: 1, estimatedCost: '0.01', events: 1 },
    { day: at(now - 2 * DAY), units: 5, estimatedCost: '0.01', events: 2 },
    { day: at(now), units: 3, estimatedCost: '0.04', events: 3 },
  ], 'empty days omitted, oldest first, each day\'s cost rounded once');

  assert.equal(v.billingHistory.length, 1);
  assert.equal(v.billingHistory[0].kind, 'account');
  assert.deepEqual(v.billingHistory[0].changed, ['clipUnitPrice', 'seatLimit', 'timeZone']);
  assert.equal(v.billingHistory[0].actor.userId, owner.user.id);
  assert.equal((await s.call('PATCH', billing(orgId), { token: owner.token, body: { planName: 'Later' } })).status, 200);
  const again = await s.call('GET', commercial(orgId), { token: owner.token });
  assert.deepEqual(again.body.billingHistory.map((h: any) => h.changed), [['planName'], ['clipUnitPrice', 'seatLimit', 'timeZone']], 'newest first');

  const exp = await s.call('GET', `${commercial(orgId)}/export`, { token: owner.token });
  assert.equal(exp.status, 200);
  const doc = JSON.parse(exp.text);
  assert.ok(Date.parse(doc.exportedAt));
  assert.equal(doc.billingAccountEvents.length, 2);
  assert.deepEqual(doc.usageTrend, again.body.usageTrend);
  assert.deepEqual(doc.invoices, []);
  const totals = doc.usageByMonth.reduce((a: any, m: any) => ({ events: a.events + m.events, clips: a.clips + m.clips }), { events: 0, clips: 0 });
  assert.deepEqual(totals, { events: 7, clips: 5 }, 'every event of the organization, in some month');
  assert.deepEqual(doc.usageByMonth.map((m: any) => m.month), [...new Set([40, 29, 2, 0].map((d) => at(now - d * DAY).slice(0, 7)))]);
  for (const m of doc.usageByMonth) assert.equal(m.currency, 'USD');
});

test('the trend buckets by the organization\'s local day across DST changes, omits empty days and keeps to [30 days before today, now]', async (t) => {
  const s = await startTestServer(t);
  const tree = await makeTree(s);
  const ny = 'America/New_York';
  // Autumn: 2026-11-01 06:00Z turns 02:00 EDT back to 01:00 EST (a 25-hour Nov 1).
  for (const at of [
    '2026-10-16T03:59:59.999Z', // Oct 15 23:59 EDT: before the window
    '2026-10-16T04:00:00.000Z', // Oct 16 00:00 EDT: the window's first instant
    '2026-11-01T03:30:00.000Z', // Oct 31 23:30 EDT
    '2026-11-01T04:30:00.000Z', // Nov 1 00:30 EDT
    '2026-11-01T05:30:00.000Z', // Nov 1 01:30 EDT
    '2026-11-01T06:30:00.000Z', // Nov 1 01:30 EST
    '2026-11-02T04:59:59.999Z', // Nov 1 23:59 EST
    '2026-11-02T05:00:00.000Z', // Nov 2 00:00 EST
    '2026-11-15T12:00:00.000Z', // now
    '2026-11-15T12:00:00.001Z', // after now
  ]) await seedUsage(s, tree, at, { e4: 5000 });
  const autumn = await usageTrend(s.db, tree.organizationId, ny, 'USD', new Date('2026-11-15T12:00:00Z'));
  assert.deepEqual(autumn, [
    { day: '2026-10-16', units: 1, estimatedCost: '0.01', events: 1 },
    { day: '2026-10-31', units: 1, estimatedCost: '0.01', events: 1 },
    { day: '2026-11-01', units: 4, estimatedCost: '0.02', events: 4 },
    { day: '2026-11-02', units: 1, estimatedCost: '0.01', events: 1 },
    { day: '2026-11-15', units: 1, estimatedCost: '0.01', events: 1 },
  ]);
  // The same instants in UTC fall on other days.
  assert.deepEqual((await usageTrend(s.db, tree.organizationId, 'UTC', 'USD', new Date('2026-11-15T12:00:00Z'))).map((d) => [d.day, d.events]),
    [['2026-10-16', 2], ['2026-11-01', 4], ['2026-11-02', 2], ['2026-11-15', 1]]);

  // Spring: 2026-03-08 07:00Z jumps 02:00 EST to 03:00 EDT (a 23-hour Mar 8).
  const spring = await makeTree(s);
  for (const at of ['2026-03-08T04:59:59.999Z', '2026-03-08T05:00:00.000Z', '2026-03-08T07:30:00.000Z', '2026-03-09T03:59:59.999Z', '2026-03-09T04:00:00.000Z']) {
    await seedUsage(s, spring, at, { e4: 12_500 });
  }
  assert.deepEqual(await usageTrend(s.db, spring.organizationId, ny, 'USD', new Date('2026-03-20T15:00:00Z')), [
    { day: '2026-03-07', units: 1, estimatedCost: '0.01', events: 1 },
    { day: '2026-03-08', units: 3, estimatedCost: '0.04', events: 3 },
    { day: '2026-03-09', units: 1, estimatedCost: '0.01', events: 1 },
  ]);
  assert.deepEqual(await usageTrend(s.db, spring.organizationId, ny, 'USD', new Date('2026-05-01T00:00:00Z')), [], 'no events in the window: an empty trend');
});

test('money sums above 2^53 (e4) are read as BigInt: the commercial view, its export, the trend and an invoice answer exact amounts, not 500', async (t) => {
  const s = await startTestServer(t);
  const { tree, owner } = await owned(s);
  const orgId = tree.organizationId;
  // The highest clip price, USD 1,000,000 (10^12 e4), and 9,100 clips this month: 9.1 x 10^15 e4 > 2^53 (about 9.007 x 10^15).
  assert.equal((await s.call('PATCH', billing(orgId), { token: owner.token, body: { clipUnitPrice: '1000000' } })).status, 200);
  const cc = `cc_${tree.workspaceId.slice(4)}`;
  assert.equal((await s.call('PATCH', `/api/organizations/${orgId}/cost-centers/${cc}`, { token: owner.token, body: { budget: '1000000000.00' } })).status, 200);
  const at = new Date(Date.now() - 1000).toISOString();
  await s.db.run(
    `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 9100)
     INSERT INTO usage_events (id, organization_id, workspace_id, kind, unit, quantity, unit_price_e4, estimated_cost_e4, currency, cost_center_id,
       metadata, created_at, event_key)
     SELECT 'use_big_' || i, ?1, ?2, 'clip', 'clip', 1, 1000000000000, 1000000000000, 'USD', ?3, '{}', ?4, 'big:' || i FROM n`,
    orgId, tree.workspaceId, cc, at);
  const e4 = (await s.db.allBig<{ n: bigint }>('SELECT sum(estimated_cost_e4) AS n FROM usage_events WHERE organization_id = ?', orgId))[0].n;
  assert.equal(e4, 9_100_000_000_000_000n);
  assert.ok(e4 > BigInt(Number.MAX_SAFE_INTEGER));
  const amount = '9100000000.00'; // 9.1 x 10^15 e4 = 9.1 x 10^11 cents

  const view = await s.call('GET', commercial(orgId), { token: owner.token });
  assert.equal(view.status, 200, view.text);
  assert.equal(view.body.usageThisMonth.estimatedCost, amount);
  assert.equal(view.body.usageThisMonth.events, 9100);
  assert.deepEqual(view.body.costCenters.map((c: any) => [c.spent, c.events, c.budgetUsedRatio]), [[amount, 9100, 9.1]]);
  assert.equal(view.body.costCenterDetail[0].estimatedCost, amount);
  assert.deepEqual(view.body.usageTrend.at(-1), { day: localDate(new Date(at), 'UTC'), units: 9100, estimatedCost: amount, events: 9100 });
  const exp = await s.call('GET', `${commercial(orgId)}/export`, { token: owner.token });
  assert.equal(exp.status, 200, exp.text);
  assert.equal(JSON.parse(exp.text).usageByMonth.at(-1).estimatedCost, amount);

  const inv = await s.call('POST', `/api/organizations/${orgId}/invoices/generate`, { token: owner.token, body: {} });
  assert.equal(inv.status, 201, inv.text);
  const clip = inv.body.lines.find((l: any) => l.kind === 'usage');
  assert.deepEqual([clip.quantity, clip.unitPrice, clip.amountExact, clip.amount], ['9100', '1000000.00', '9100000000', amount]);
  assert.deepEqual([inv.body.subtotal, inv.body.total], [amount, amount]);
  assert.equal((await s.call('GET', `/api/organizations/${orgId}/invoices/${inv.body.id}`, { token: owner.token })).status, 200);

  // A base fee whose unit price in e4 passes 2^53: KWD 1,000,000,000.000 = 10^12 fils = 10^16 e4, stored and read back exactly.
  const kwd = await owned(s);
  const kwdOrg = kwd.tree.organizationId;
  assert.equal((await s.call('PATCH', billing(kwdOrg), { token: kwd.owner.token, body: { currency: 'KWD', baseFee: '1000000000' } })).status, 200);
  const fee = await s.call('POST', `/api/organizations/${kwdOrg}/invoices/generate`, { token: kwd.owner.token, body: {} });
  assert.equal(fee.status, 201, fee.text);
  assert.deepEqual([fee.body.lines[0].kind, fee.body.lines[0].unitPrice, fee.body.lines[0].amount], ['base_fee', '1000000000.000', '1000000000.000']);
  assert.equal((await s.db.allBig<{ p: bigint }>('SELECT unit_price_e4 AS p FROM invoice_lines WHERE invoice_id = ? AND position = 1', fee.body.id))[0].p, 10n ** 16n);
  const listed = await s.call('GET', `/api/organizations/${kwdOrg}/invoices/export`, { token: kwd.owner.token });
  assert.equal(listed.status, 200);
  assert.equal(JSON.parse(listed.text)[0].lines[0].unitPrice, '1000000000.000');
});
