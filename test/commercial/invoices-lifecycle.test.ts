// An invoice's life: every status transition, gap-free numbers per organization, the ledger's filters
// and its streamed export, periods that never overlap, and immutability in the database.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeTree, member } from '../helpers/factories.ts';
import { STATUSES, type Status, setBilling, base, setup } from './invoices-setup.ts';

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
  const audited = await s.db.all<{ metadata: string }>("SELECT metadata FROM audit_log WHERE action = 'invoice.status_changed' AND organization_id = ?", tree.organizationId);
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
  const other = await makeTree(s);
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
  const numbers = async (org: string) => (await s.db.all<{ number: string }>('SELECT number FROM invoices WHERE organization_id = ? AND number IS NOT NULL ORDER BY number', org)).map((r) => r.number);
  assert.deepEqual(await numbers(a), ['INV-000001', 'INV-000002', 'INV-000003', 'INV-000004']);
  assert.deepEqual(await numbers(b), ['ACME-000001', 'ACME-000002']);
  assert.equal((await s.db.get<{ n: number }>('SELECT next_invoice_number AS n FROM billing_accounts WHERE organization_id = ?', a))!.n, 5);
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
  const count = async () => (await s.db.get<{ n: number }>('SELECT count(*) AS n FROM invoices WHERE organization_id = ?', org))!.n;
  const nov = await generate({ periodStart: '2026-11-01', periodEnd: '2026-12-01' }); // UTC organization
  assert.equal(nov.status, 201, nov.text);
  const novRef = { id: nov.body.id, number: null, status: 'draft', periodStart: '2026-11-01T00:00:00.000Z', periodEnd: '2026-12-01T00:00:00.000Z' };

  // The review's repro, step by step: another zone or cycle would draw periods across November. Both are refused.
  const account = await s.db.get('SELECT * FROM billing_accounts WHERE organization_id = ?', org);
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
  assert.deepEqual(await s.db.get('SELECT * FROM billing_accounts WHERE organization_id = ?', org), account, 'the refused PATCHes changed nothing');
  assert.equal((await s.db.get<any>('SELECT time_zone FROM organizations WHERE id = ?', org))!.time_zone, 'UTC');
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
  assert.equal(await count(), 1, 'the refusals wrote nothing');
  assert.equal((await s.db.get<{ n: number }>("SELECT count(*) AS n FROM audit_log WHERE action = 'invoice.generated' AND organization_id = ?", org))!.n, 1);
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
  assert.equal(await count(), 3);
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
    await assert.rejects(async () => await s.db.run(sql, inv.id), message, sql);
  }
  const after = (await s.call('GET', `${base(org)}/${inv.id}`, { token: owner.token })).body;
  assert.deepEqual(after, before);
  assert.equal(after.number, 'INV-000001');
  // The status still moves (through the service).
  assert.equal((await setStatus(inv.id, 'paid')).status, 200);
});
