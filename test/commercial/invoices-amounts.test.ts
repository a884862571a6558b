// The arithmetic of invoice drafts with hand-computed totals in USD, JPY and KWD (rounding once per
// line, tax once on the unrounded sum), storage lines, usage lines that multiply out, and a real
// video job's clip price.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeProject, makeTree, makeWorkspace, member } from '../helpers/factories.ts';
import { createJob, jobWorld, waitJob } from '../helpers/jobs.ts';
import { setBilling, addUsage, base, setup, lineOf } from './invoices-setup.ts';
import { serversRunTheWorker } from '../helpers/server.ts';

serversRunTheWorker();

test('USD: tax once on the unrounded sum: three lines whose taxes each round up while their sum rounds down', async (t) => {
  const { s, tree, owner, generate } = await setup(t);
  const org = tree.organizationId;
  const w1 = tree.workspaceId;
  const w2 = (await makeWorkspace(s, org)).id;
  await setBilling(s, owner.token, org, { currency: 'USD', baseFee: '49.00', seatUnitPrice: '0', storageUnitPrice: '0' });
  // W1 clips: 7 x USD 0.0143 (14,300 e4) = 100,100 e4 = 10.01 cents -> line 10 cents; the first at the period's start (inclusive)
  await addUsage(s, org, w1, { costE4: 14_300, at: '2026-03-01T00:00:00.000Z' });
  await addUsage(s, org, w1, { costE4: 14_300, at: '2026-03-10T12:00:00.000Z' }, 6);
  // W2 clips: 3 x USD 0.0333 (33,300 e4) = 99,900 e4 = 9.99 cents -> 10 cents
  await addUsage(s, org, w2, { costE4: 33_300, at: '2026-03-31T23:59:59.999Z' }, 3);
  // W1 voice: 40 seconds for 100,000 e4 (2,500 e4 = 0.25 cents = USD 0.0025 a second) = 10 cents exactly
  await addUsage(s, org, w1, { kind: 'voice', unit: 'second', quantity: 40, costE4: 100_000, at: '2026-03-05T00:00:00.000Z' });
  // outside: before the start, at the end (exclusive), and another organization's usage in the period
  await addUsage(s, org, w1, { costE4: 9_990_000, at: '2026-02-28T23:59:59.999Z' });
  await addUsage(s, org, w1, { costE4: 9_990_000, at: '2026-04-01T00:00:00.000Z' });
  const elsewhere = await makeTree(s);
  await addUsage(s, elsewhere.organizationId, elsewhere.workspaceId, { costE4: 9_990_000, at: '2026-03-15T00:00:00.000Z' });

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
  const w2 = (await makeWorkspace(s, org)).id;
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
  await addUsage(s, org, w1, { costE4: 125_000, at: '2026-05-20T10:00:00.000Z', currency: 'JPY' }, 3);
  // an event recorded in another currency is not billed in yen; the snapshot names it
  await addUsage(s, org, w1, { costE4: 125_000, at: '2026-05-20T10:00:00.000Z', currency: 'USD' });

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
  const w2 = (await makeWorkspace(s, org)).id;
  await member(s, 'org_admin', tree);
  // a seat KWD 1.2345 = 1,234.5 fils = 12,345,000 e4
  await setBilling(s, owner.token, org, { currency: 'KWD', seatUnitPrice: '1.2345' });
  // W1 clips: 4 x 2.6 fils (26,000 e4) = 10.4 fils -> 10
  await addUsage(s, org, w1, { costE4: 26_000, at: '2026-01-02T00:00:00.000Z', currency: 'KWD' }, 4);
  // W2 clips: 2 x 5.2 fils (52,000 e4) = 10.4 fils -> 10
  await addUsage(s, org, w2, { costE4: 52_000, at: '2026-01-03T00:00:00.000Z', currency: 'KWD' }, 2);
  // W1 voice: 13 seconds at 0.8 fils (8,000 e4) = 104,000 e4 = 10.4 fils -> 10
  await addUsage(s, org, w1, { kind: 'voice', unit: 'second', quantity: 13, costE4: 104_000, at: '2026-01-04T00:00:00.000Z', currency: 'KWD' });

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

test('storage lines: a file stored by two projects of one workspace is billed once; a workspace is billed for each file it stores', async (t) => {
  const { s, tree, owner, generate } = await setup(t);
  const org = tree.organizationId;
  const w1 = tree.workspaceId;
  const p2 = (await makeProject(s, w1)).id;
  const w2 = (await makeWorkspace(s, org)).id;
  const p3 = (await makeProject(s, w2)).id;
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
  const paths = await s.db.all<{ project_id: string; storage_path: string }>('SELECT project_id, storage_path FROM asset_versions WHERE organization_id = ?', org);
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
  await addUsage(s, org, w1, { kind: 'voice', unit: 'second', quantity: 0.7, unitPriceE4: 12_345, costE4: 8_642, at: '2026-02-10T00:00:00.000Z' }, 2);
  // The same kind at another recorded price is its own line.
  await addUsage(s, org, w1, { kind: 'voice', unit: 'second', quantity: 3, unitPriceE4: 3_333, costE4: 9_999, at: '2026-02-11T00:00:00.000Z' });
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
  const events = await s.db.all<{ unit_price_e4: number; estimated_cost_e4: number; quantity: number }>(
    "SELECT unit_price_e4, estimated_cost_e4, quantity FROM usage_events WHERE organization_id = ? AND kind = 'clip'", org);
  assert.deepEqual(events.map((e) => ({ ...e })), [1, 2].map(() => ({ unit_price_e4: 14_300, estimated_cost_e4: 14_300, quantity: 1 })));
  const r = await s.call('POST', `${base(org)}/generate`, { token, body: {} });
  assert.equal(r.status, 201, r.text);
  const clip = lineOf(r.body, 'usage', tree.workspaceId, 'clip');
  assert.deepEqual([clip.quantity, clip.unitPrice, clip.amountExact, clip.amount], ['2', '0.0143', '0.0286', '0.03']);
});
