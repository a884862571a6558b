// Usage over real HTTP: access to the organization's usage list and export (owners and admins with
// usage:view; the system administrator), every filter and the inclusive local-day window (also across
// DST changes), summary and facets checked by hand on a small seeded set, tenant scoping (list,
// facets, export), CSV quoting, the default window (this month), GET /api/usage at each level and
// GET /api/billing with its estimated charges, and recordUsageEvent storing an event once.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { recordUsageEvent } from '../../src/commercial/usage/service.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { makeOrg, makeProject, makeTree, makeUser, makeWorkspace, member, login, type Tree } from '../helpers/factories.ts';

type Row = Record<string, any>;

interface Ev { id: string; at: string; ws: string | null; project: string | null; user: string | null; kind: string; unit: string; quantity: number; e4: number; cc?: string; metadata?: unknown }

/** One usage event written with SQL; its cost center is the given one or the workspace's own row. */
async function ev(s: TestServer, org: string, e: Ev): Promise<string> {
  await s.db.run(
    `INSERT INTO usage_events (id, organization_id, workspace_id, project_id, actor_user_id, kind, unit, quantity, estimated_cost_e4, currency,
       cost_center_id, metadata, created_at, event_key)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'USD', coalesce(?, (SELECT id FROM cost_centers WHERE workspace_id = ?)), ?, ?, ?)`,
    e.id, org, e.ws, e.project, e.user, e.kind, e.unit, e.quantity, e.e4, e.cc ?? null, e.ws, JSON.stringify(e.metadata ?? {}), e.at, `test:${e.id}`);
  return e.id;
}

const ccOf = async (s: TestServer, ws: string) => (await s.db.get<{ id: string; code: string; name: string }>('SELECT id, code, name FROM cost_centers WHERE workspace_id = ?', ws))!;
const ids = (items: Row[]) => items.map((i) => i.id);
const MARCH = 'from=2025-03-01&to=2025-03-31';
const NOTE = 'a, "quoted"\nline';

async function world(t: TestContext) {
  const s = await startTestServer(t);
  const owner = await member(s, 'org_owner');
  const A: Tree = owner.tree;
  const org = A.organizationId;
  const ws2 = await makeWorkspace(s, org, 'Beta, "Studio"\nEast');
  const p2 = await makeProject(s, ws2.id, 'Night Train');
  const producer = await member(s, 'producer', A);
  const u1 = owner.user.id;
  const u2 = producer.user.id;
  const cc1 = await ccOf(s, A.workspaceId);
  const cc2 = await ccOf(s, ws2.id);
  const e = [
    await ev(s, org, { id: 'use_e1', at: '2025-03-01T10:00:00.000Z', ws: A.workspaceId, project: A.projectId, user: u1, kind: 'clip', unit: 'clip', quantity: 1, e4: 12_500, metadata: { connectorId: 'con_a' } }),
    await ev(s, org, { id: 'use_e2', at: '2025-03-02T10:00:00.000Z', ws: A.workspaceId, project: A.projectId, user: u2, kind: 'clip', unit: 'clip', quantity: 1, e4: 12_500 }),
    await ev(s, org, { id: 'use_e3', at: '2025-03-03T10:00:00.000Z', ws: ws2.id, project: p2.id, user: u1, kind: 'voice', unit: 'second', quantity: 30.5, e4: 305_000, metadata: { note: NOTE } }),
    await ev(s, org, { id: 'use_e4', at: '2025-03-04T10:00:00.000Z', ws: ws2.id, project: p2.id, user: u2, kind: 'image', unit: 'image', quantity: 2, e4: 45_000 }),
    await ev(s, org, { id: 'use_e5', at: '2025-03-05T10:00:00.000Z', ws: ws2.id, project: p2.id, user: u2, kind: 'clip', unit: 'clip', quantity: 1, e4: 12_500, cc: cc1.id }),
    await ev(s, org, { id: 'use_e6', at: '2025-04-01T00:00:00.000Z', ws: A.workspaceId, project: A.projectId, user: u1, kind: 'clip', unit: 'clip', quantity: 1, e4: 12_500 }),
  ];
  // Another organization with events of the same month that every filter would match.
  const ownerB = await member(s, 'org_owner');
  const B = ownerB.tree;
  await ev(s, B.organizationId, { id: 'use_b1', at: '2025-03-03T10:00:00.000Z', ws: B.workspaceId, project: B.projectId, user: u1, kind: 'clip', unit: 'clip', quantity: 1, e4: 99_990_000, metadata: { connectorId: 'con_a', note: 'Night Train Beta' } });
  await ev(s, B.organizationId, { id: 'use_b2', at: '2025-03-04T10:00:00.000Z', ws: B.workspaceId, project: B.projectId, user: u2, kind: 'voice', unit: 'second', quantity: 7, e4: 1 });
  return { s, owner, producer, ownerB, A, B, org, ws2: ws2.id, p2: p2.id, u1, u2, cc1, cc2, e };
}

test('the usage list: access for owners and admins with usage:view, the system administrator; 401 and 403 otherwise', async (t) => {
  const w = await world(t);
  const { s, org } = w;
  const path = `/api/organizations/${org}/usage?${MARCH}`;
  const exportPath = `/api/organizations/${org}/usage/export?${MARCH}&format=csv`;
  for (const p of [path, exportPath, '/api/usage', '/api/billing']) {
    const r = await s.call('GET', p);
    assert.equal(r.status, 401, p);
    assert.equal(r.body.error.code, 'unauthenticated');
  }
  const admin = await member(s, 'org_admin', w.A);
  const sysAdmin = await makeUser(s, { systemAdmin: true });
  const sysToken = await login(s, sysAdmin);
  for (const token of [w.owner.token, admin.token, sysToken]) {
    for (const p of [path, exportPath]) assert.equal((await s.call('GET', p, { token })).status, 200, p);
  }
  // A producer holds usage:view in its workspace but is no organization admin; a writer has neither.
  const writer = await member(s, 'writer', w.A);
  const orgMember = await member(s, 'org_member', w.A);
  for (const token of [w.producer.token, writer.token, orgMember.token]) {
    for (const p of [path, exportPath]) {
      const r = await s.call('GET', p, { token });
      assert.equal(r.status, 403, `${p}: ${r.text}`);
      assert.equal(r.body.error.code, 'permission_denied');
    }
  }
  // Another organization's owner: the path names an organization it cannot see.
  for (const p of [path, exportPath]) {
    const r = await s.call('GET', p, { token: w.ownerB.token });
    assert.equal(r.status, 403);
    assert.equal(r.body.error.code, 'organization_forbidden');
  }
});

test('summary, facets and items of a small seeded set, checked by hand; tenant scoping', async (t) => {
  const w = await world(t);
  const r = await w.s.call('GET', `/api/organizations/${w.org}/usage?${MARCH}`, { token: w.owner.token });
  assert.equal(r.status, 200, r.text);
  const b = r.body;
  assert.deepEqual(ids(b.items), ['use_e5', 'use_e4', 'use_e3', 'use_e2', 'use_e1'], 'newest first, the April event and the other organization\'s left out');
  assert.deepEqual(b.pagination, { page: 1, pageSize: 50, total: 5 });
  assert.deepEqual(b.window, { from: '2025-03-01T00:00:00.000Z', to: '2025-04-01T00:00:00.000Z', timeZone: 'UTC' });
  // 12,500 + 12,500 + 305,000 + 45,000 + 12,500 = 387,500 e4 = 38.75 cents -> 0.39, rounded once; by unit 0.0375 -> 0.04, 0.045 -> 0.05, 0.305 -> 0.31.
  assert.deepEqual(b.summary, {
    events: 5, estimatedCost: '0.39', currency: 'USD',
    byUnit: [
      { unit: 'clip', events: 3, quantity: 3, estimatedCost: '0.04' },
      { unit: 'image', events: 1, quantity: 2, estimatedCost: '0.05' },
      { unit: 'second', events: 1, quantity: 30.5, estimatedCost: '0.31' },
    ],
  });
  const wsName = (await w.s.db.get<{ name: string }>('SELECT name FROM workspaces WHERE id = ?', w.A.workspaceId))!.name;
  const pName = (await w.s.db.get<{ name: string }>('SELECT name FROM projects WHERE id = ?', w.A.projectId))!.name;
  assert.deepEqual(b.facets, {
    kind: [{ value: 'clip', count: 3 }, { value: 'image', count: 1 }, { value: 'voice', count: 1 }],
    unit: [{ value: 'clip', count: 3 }, { value: 'image', count: 1 }, { value: 'second', count: 1 }],
    workspace: [{ value: w.ws2, count: 3, name: 'Beta, "Studio"\nEast' }, { value: w.A.workspaceId, count: 2, name: wsName }],
    project: [{ value: w.p2, count: 3, name: 'Night Train' }, { value: w.A.projectId, count: 2, name: pName }],
    costCenter: [{ value: w.cc1.id, count: 3, name: w.cc1.name, code: w.cc1.code }, { value: w.cc2.id, count: 2, name: w.cc2.name, code: w.cc2.code }],
    user: [{ value: w.u2, count: 3, name: w.producer.user.name }, { value: w.u1, count: 2, name: w.owner.user.name }],
  });
  // The same set through the grouped pass (a filter matching every event: each kind has an i) gives the same figures.
  const grouped = await w.s.call('GET', `/api/organizations/${w.org}/usage?${MARCH}&query=i`, { token: w.owner.token });
  assert.deepEqual([grouped.body.summary, grouped.body.facets], [b.summary, b.facets]);
  const e5 = b.items[0];
  assert.deepEqual(e5, {
    id: 'use_e5', at: '2025-03-05T10:00:00.000Z', workspaceId: w.ws2, workspaceName: 'Beta, "Studio"\nEast', projectId: w.p2, projectName: 'Night Train',
    actorUserId: w.u2, actorName: w.producer.user.name, kind: 'clip', unit: 'clip', quantity: 1, estimatedCost: '0.01', currency: 'USD',
    costCenter: { id: w.cc1.id, code: w.cc1.code, name: w.cc1.name }, jobId: null, metadata: {},
  });
  assert.deepEqual(b.items[2].metadata, { note: NOTE });
  // The other organization sees only its own two events, and none of A's values in its facets.
  const other = await w.s.call('GET', `/api/organizations/${w.B.organizationId}/usage?${MARCH}`, { token: w.ownerB.token });
  assert.deepEqual(ids(other.body.items), ['use_b2', 'use_b1']);
  assert.deepEqual(other.body.facets.workspace.map((f: Row) => f.value), [w.B.workspaceId]);
  assert.equal(other.body.summary.estimatedCost, '99.99');
  // Filters naming another organization's rows match nothing.
  for (const qs of [`workspaceId=${w.B.workspaceId}`, `projectId=${w.B.projectId}`, `costCenter=${(await ccOf(w.s, w.B.workspaceId)).id}`]) {
    const x = await w.s.call('GET', `/api/organizations/${w.org}/usage?${MARCH}&${qs}`, { token: w.owner.token });
    assert.deepEqual([x.body.items, x.body.summary.events, x.body.facets.kind], [[], 0, []], qs);
  }
});

test('every filter, the query term, paging and the window', async (t) => {
  const w = await world(t);
  const list = async (qs: string) => {
    const r = await w.s.call('GET', `/api/organizations/${w.org}/usage?${qs}`, { token: w.owner.token });
    assert.equal(r.status, 200, `${qs}: ${r.text}`);
    return r.body;
  };
  const cases: Array<[string, string[]]> = [
    [`workspaceId=${w.ws2}`, ['use_e5', 'use_e4', 'use_e3']],
    [`projectId=${w.A.projectId}`, ['use_e2', 'use_e1']],
    [`userId=${w.u1}`, ['use_e3', 'use_e1']],
    ['kind=clip', ['use_e5', 'use_e2', 'use_e1']],
    ['unitName=second', ['use_e3']],
    [`costCenter=${w.cc1.id}`, ['use_e5', 'use_e2', 'use_e1']],
    [`costCenter=${encodeURIComponent(w.cc2.code)}`, ['use_e4', 'use_e3']],
    ['costCenter=nope', []],
    ['kind=clip&userId=' + w.u2, ['use_e5', 'use_e2']],
    ['query=night', ['use_e5', 'use_e4', 'use_e3']], // project name
    ['query=BETA', ['use_e5', 'use_e4', 'use_e3']], // workspace name, case-insensitive
    ['query=con_a', ['use_e1']], // metadata; the other organization's con_a stays out
    ['query=Voice', ['use_e3']], // kind
    ['query=secon', ['use_e3']], // unit
    [`query=${encodeURIComponent(w.cc2.code)}`, ['use_e4', 'use_e3']], // cost center code
    ['query=o%25n', []], // % and _ are literal characters, not LIKE wildcards ("con" would match them)
    ['query=c_n', []],
    ['query=n_a', ['use_e1']],
    ['from=2025-03-02&to=2025-03-04', ['use_e4', 'use_e3', 'use_e2']],
    ['from=2025-03-02T10:00:00Z&to=2025-03-03T10:00:00Z', ['use_e3', 'use_e2']], // instants, both inclusive
    ['from=2025-03-02T11:00:00%2B01:00&to=2025-03-02T10:00:00.000Z', ['use_e2']],
    ['to=2025-03-03', ['use_e3', 'use_e2', 'use_e1']], // from: the start of to's local month
    ['from=2025-03-05', ['use_e6', 'use_e5']], // no upper bound
  ];
  for (const [qs, want] of cases) {
    const b = await list(qs.startsWith('from') || qs.startsWith('to') ? qs : `${MARCH}&${qs}`);
    assert.deepEqual(ids(b.items), want, qs);
    assert.equal(b.summary.events, want.length, qs);
    assert.equal(b.pagination.total, want.length, qs);
    assert.equal(b.facets.kind.reduce((n: number, f: Row) => n + f.count, 0), want.length, qs);
  }
  const page2 = await list(`${MARCH}&pageSize=2&page=2`);
  assert.deepEqual([ids(page2.items), page2.pagination], [['use_e3', 'use_e2'], { page: 2, pageSize: 2, total: 5 }]);
  assert.equal((await list(`${MARCH}&pageSize=1000`)).pagination.pageSize, 200);
  for (const [qs, field] of [['from=2025-03-05&to=2025-03-04', 'from'], ['from=2025-02-30', 'from'], ['to=2025-02-30T10:00:00Z', 'to'], ['to=2025-03-02T25:00:00Z', 'to'], ['to=2025-13-01', 'to'], ['from=yesterday', 'from'], ['query=', 'query']] as const) {
    const r = await w.s.call('GET', `/api/organizations/${w.org}/usage?${qs}`, { token: w.owner.token });
    assert.equal(r.status, 422, qs);
    assert.equal(r.body.error.code, 'validation_failed');
    assert.ok(r.body.error.details.fields[field], `${qs}: ${r.text}`);
  }
  // Without from and to: this local month only.
  const now = new Date(Date.now() - 1000).toISOString();
  await ev(w.s, w.org, { id: 'use_now', at: now, ws: w.A.workspaceId, project: w.A.projectId, user: w.u1, kind: 'clip', unit: 'clip', quantity: 1, e4: 1 });
  await ev(w.s, w.org, { id: 'use_old', at: new Date(Date.now() - 40 * 86_400_000).toISOString(), ws: w.A.workspaceId, project: null, user: null, kind: 'clip', unit: 'clip', quantity: 1, e4: 1 });
  const current = await list('');
  assert.deepEqual(ids(current.items), ['use_now']);
  assert.equal(current.window.from, `${now.slice(0, 7)}-01T00:00:00.000Z`);
  assert.equal(current.window.to, null);
});

test('local days of the organization\'s time zone, across both DST changes', async (t) => {
  const w = await world(t);
  const patch = await w.s.call('PATCH', `/api/organizations/${w.org}/billing`, { token: w.owner.token, body: { timeZone: 'America/New_York' } });
  assert.equal(patch.status, 200, patch.text);
  const at = async (id: string, iso: string) => await ev(w.s, w.org, { id, at: iso, ws: w.A.workspaceId, project: w.A.projectId, user: w.u1, kind: 'clip', unit: 'clip', quantity: 1, e4: 1 });
  // 2025-03-09 lasts 23 hours in New York (05:00Z to 04:00Z next day); 2025-11-02 lasts 25 (04:00Z to 05:00Z next day).
  await at('use_d1', '2025-03-09T04:59:59.999Z'); await at('use_d2', '2025-03-09T05:00:00.000Z'); await at('use_d3', '2025-03-10T03:59:59.999Z'); await at('use_d4', '2025-03-10T04:00:00.000Z');
  await at('use_f1', '2025-11-02T03:59:59.999Z'); await at('use_f2', '2025-11-02T04:00:00.000Z'); await at('use_f3', '2025-11-03T04:59:59.999Z'); await at('use_f4', '2025-11-03T05:00:00.000Z');
  const list = (qs: string) => w.s.call('GET', `/api/organizations/${w.org}/usage?${qs}`, { token: w.owner.token });
  const spring = await list('from=2025-03-09&to=2025-03-09');
  assert.deepEqual(ids(spring.body.items), ['use_d3', 'use_d2']);
  assert.deepEqual(spring.body.window, { from: '2025-03-09T05:00:00.000Z', to: '2025-03-10T04:00:00.000Z', timeZone: 'America/New_York' });
  const fall = await list('from=2025-11-02&to=2025-11-02');
  assert.deepEqual(ids(fall.body.items), ['use_f3', 'use_f2']);
  assert.deepEqual(fall.body.window, { from: '2025-11-02T04:00:00.000Z', to: '2025-11-03T05:00:00.000Z', timeZone: 'America/New_York' });
  // The export uses the same window.
  const csv = await w.s.call('GET', `/api/organizations/${w.org}/usage/export?format=csv&from=2025-03-09&to=2025-03-09`, { token: w.owner.token });
  assert.deepEqual(parseCsv(csv.text).slice(1).map((r) => r[0]), ['use_d3', 'use_d2']);
});

/** RFC 4180: quoted cells may hold commas, CR/LF and doubled quotes. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') { cell += '"'; i++; } else if (c === '"') quoted = false; else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') { row.push(cell); cell = ''; } else if (c === '\r' && text[i + 1] === '\n') { row.push(cell); rows.push(row); row = []; cell = ''; i++; } else cell += c;
  }
  assert.equal(cell + row.join(''), '', 'the text ends with CRLF');
  return rows;
}

test('the export: CSV with RFC 4180 quoting and JSON, the same rows as the list, tenant-scoped', async (t) => {
  const w = await world(t);
  const base = `/api/organizations/${w.org}/usage/export?${MARCH}`;
  const csv = await w.s.call('GET', `${base}&format=csv`, { token: w.owner.token });
  assert.equal(csv.status, 200);
  assert.equal(csv.headers.get('content-type'), 'text/csv; charset=utf-8');
  assert.match(csv.headers.get('content-disposition')!, new RegExp(`^attachment; filename="usage-${w.org}-.+\\.csv"$`));
  const rows = parseCsv(csv.text);
  const header = rows[0];
  assert.deepEqual(header, ['id', 'at', 'workspaceId', 'workspaceName', 'projectId', 'projectName', 'actorUserId', 'actorName', 'kind', 'unit', 'quantity',
    'estimatedCost', 'currency', 'costCenterId', 'costCenterCode', 'costCenterName', 'jobId', 'metadata']);
  const byId = new Map(rows.slice(1).map((r) => [r[0], Object.fromEntries(header.map((h, i) => [h, r[i]]))]));
  assert.deepEqual([...byId.keys()], ['use_e5', 'use_e4', 'use_e3', 'use_e2', 'use_e1']);
  const e3 = byId.get('use_e3')!;
  assert.deepEqual(JSON.parse(e3.metadata), { note: NOTE }, 'metadata with a comma, quotes and a newline survives as its JSON text');
  assert.equal(e3.workspaceName, 'Beta, "Studio"\nEast', 'a cell with a raw newline, comma and quotes');
  assert.equal(e3.quantity, '30.5');
  assert.equal(e3.estimatedCost, '0.31');
  assert.ok(csv.text.includes('"Beta, ""Studio""\nEast"'));
  const json = await w.s.call('GET', `${base}&format=json`, { token: w.owner.token });
  assert.equal(json.headers.get('content-type'), 'application/json; charset=utf-8');
  const list = await w.s.call('GET', `/api/organizations/${w.org}/usage?${MARCH}`, { token: w.owner.token });
  assert.deepEqual(json.body, list.body.items);
  const filtered = await w.s.call('GET', `${base}&format=json&query=con_a`, { token: w.owner.token });
  assert.deepEqual(ids(filtered.body), ['use_e1']);
  for (const text of [csv.text, json.text]) assert.ok(!text.includes('use_b') && !text.includes(w.B.workspaceId), 'nothing of the other organization');
  const empty = await w.s.call('GET', `${base}&format=json&kind=none`, { token: w.owner.token });
  assert.deepEqual(empty.body, []);
  const bad = await w.s.call('GET', `${base}&format=xml`, { token: w.owner.token });
  assert.equal(bad.status, 422);
});

test('GET /api/usage: this month of the session\'s project, workspace or organization, with the limits', async (t) => {
  const w = await world(t);
  const { s, org } = w;
  const now = new Date(Date.now() - 1000).toISOString();
  await ev(s, org, { id: 'use_m1', at: now, ws: w.A.workspaceId, project: w.A.projectId, user: w.u1, kind: 'clip', unit: 'clip', quantity: 1, e4: 12_500 });
  await ev(s, org, { id: 'use_m2', at: now, ws: w.A.workspaceId, project: w.A.projectId, user: w.u2, kind: 'clip', unit: 'clip', quantity: 1, e4: 12_500 });
  await ev(s, org, { id: 'use_m3', at: now, ws: w.ws2, project: w.p2, user: w.u2, kind: 'voice', unit: 'second', quantity: 12.25, e4: 122_500 });
  await ev(s, w.B.organizationId, { id: 'use_mb', at: now, ws: w.B.workspaceId, project: w.B.projectId, user: w.u2, kind: 'clip', unit: 'clip', quantity: 1, e4: 1 });
  const moved = await s.call('PATCH', '/api/context', { token: w.owner.token, body: { organizationId: org, workspaceId: w.A.workspaceId, projectId: w.A.projectId } });
  assert.equal(moved.status, 200, moved.text);
  const get = (token: string, qs = '') => s.call('GET', `/api/usage${qs}`, { token });
  const project = (await get(w.owner.token)).body;
  const month = now.slice(0, 7);
  assert.deepEqual(project.scope, { level: 'project', organizationId: org, workspaceId: w.A.workspaceId, projectId: w.A.projectId });
  assert.deepEqual(project.month, { label: month, start: `${month}-01T00:00:00.000Z`, end: project.month.end, timeZone: 'UTC' });
  assert.deepEqual([project.events, project.clips, project.estimatedCost, project.currency], [2, 2, '0.03', 'USD']); // 25,000 e4 = 2.5 cents
  assert.deepEqual(project.byKind, [{ kind: 'clip', unit: 'clip', events: 2, quantity: 2, estimatedCost: '0.03' }]);
  assert.deepEqual(project.storage, { usedBytes: 0 });
  assert.deepEqual(project.limits.organization, {
    monthlyClipQuota: 1000, clipsUsed: 2, clipsTowardQuota: 2, storageLimitBytes: 100 * 1024 ** 3, storageUsedBytes: 0, quotaWarningPercent: 80,
  });
  assert.deepEqual(project.limits.workspace, { workspaceId: w.A.workspaceId, monthlyClipQuota: null, clipsUsed: 2, clipsTowardQuota: 2, storageLimitBytes: null, storageUsedBytes: 0 });
  const ws = (await get(w.owner.token, '?level=workspace')).body;
  assert.deepEqual([ws.scope.level, ws.scope.projectId, ws.events], ['workspace', null, 2]);
  const all = (await get(w.owner.token, '?level=organization')).body;
  assert.deepEqual([all.scope.level, all.scope.workspaceId, all.events, all.clips, all.estimatedCost, all.limits.workspace], ['organization', null, 3, 2, '0.15', null]);
  assert.deepEqual(all.byKind.map((k: Row) => [k.kind, k.quantity, k.estimatedCost]), [['clip', 2, '0.03'], ['voice', 12.25, '0.12']]);
  // A producer sees its workspace and project, not the organization level; a writer holds no usage:view.
  await s.call('PATCH', '/api/context', { token: w.producer.token, body: { organizationId: org, workspaceId: w.A.workspaceId, projectId: w.A.projectId } });
  assert.equal((await get(w.producer.token, '?level=workspace')).body.events, 2);
  const denied = await get(w.producer.token, '?level=organization');
  assert.deepEqual([denied.status, denied.body.error.code], [403, 'permission_denied']);
  const writer = await member(s, 'writer', w.A);
  const refused = await get(writer.token);
  assert.deepEqual([refused.status, refused.body.error.code], [403, 'permission_denied']);
  assert.equal((await get(w.owner.token, '?level=planet')).status, 422);
  // A session whose organization has no workspace yet: organization level only.
  const lone = await makeUser(s);
  await makeOrg(s, { ownerUserId: lone.id });
  const loneToken = await login(s, lone);
  assert.equal((await get(loneToken)).body.scope.level, 'organization');
  const noProject = await get(loneToken, '?level=project');
  assert.deepEqual([noProject.status, noProject.body.error.code], [403, 'scope_forbidden']);
});

test('GET /api/billing: the account as a read view and this period\'s estimated charges, line by line', async (t) => {
  const s = await startTestServer(t);
  const owner = await member(s, 'org_owner');
  const org = owner.tree.organizationId;
  const producer = await member(s, 'producer', owner.tree);
  const patch = await s.call('PATCH', `/api/organizations/${org}/billing`, {
    token: owner.token, body: { baseFee: '99.00', seatUnitPrice: '10.00', storageUnitPrice: '0.50', clipUnitPrice: '0.0125' },
  });
  assert.equal(patch.status, 200, patch.text);
  const now = new Date(Date.now() - 1000).toISOString();
  for (const id of ['use_c1', 'use_c2', 'use_c3']) {
    await ev(s, org, { id, at: now, ws: owner.tree.workspaceId, project: owner.tree.projectId, user: owner.user.id, kind: 'clip', unit: 'clip', quantity: 1, e4: 12_500 });
  }
  const other = await makeTree(s);
  await ev(s, other.organizationId, { id: 'use_x', at: now, ws: other.workspaceId, project: other.projectId, user: null, kind: 'clip', unit: 'clip', quantity: 1, e4: 5_000_000 });
  for (const token of [owner.token, producer.token]) {
    const r = await s.call('GET', '/api/billing', { token });
    assert.equal(r.status, 200, r.text);
    const b = r.body;
    assert.deepEqual([b.organizationId, b.planName, b.billingCycle, b.currency, b.baseFee, b.seatUnitPrice, b.storageUnitPrice, b.clipUnitPrice],
      [org, 'Studio', 'monthly', 'USD', '99.00', '10.00', '0.50', '0.0125']);
    assert.deepEqual([b.seatLimit, b.storageGb, b.monthlyClipQuota, b.quotaWarningPercent, b.localRunnerOnly, b.cloudConnectorsRequireApproval],
      [25, 100, 1000, 80, false, true]);
    assert.equal(b.period.cycle, 'monthly');
    assert.equal(b.period.start, `${now.slice(0, 7)}-01T00:00:00.000Z`);
    // Two active members x 10.00; no stored bytes; three clips of 0.0125 = 0.0375 -> 0.04.
    assert.deepEqual(b.estimatedCharges, {
      currency: 'USD',
      lines: [
        { kind: 'base_fee', quantity: '1', unitPrice: '99.00', amount: '99.00' },
        { kind: 'seats', quantity: '2', unitPrice: '10.00', amount: '20.00' },
        { kind: 'storage', quantity: '0', unitPrice: '0.50', amount: '0.00' },
        { kind: 'usage', quantity: '3', unitPrice: null, amount: '0.04' },
      ],
      total: '119.04',
    });
    assert.ok(!JSON.stringify(b).match(/password|secret|token/i));
  }
  const writer = await member(s, 'writer', owner.tree);
  const r = await s.call('GET', '/api/billing', { token: writer.token });
  assert.deepEqual([r.status, r.body.error.code], [403, 'permission_denied']);
});

test('recordUsageEvent stores the same event once and takes the workspace\'s cost center', async (t) => {
  const s = await startTestServer(t);
  const tree = await makeTree(s);
  const event = {
    organizationId: tree.organizationId, workspaceId: tree.workspaceId, projectId: tree.projectId, kind: 'voice', unit: 'second', quantity: 4.5,
    unitPriceE4: 10_000, currency: 'USD', at: '2025-03-01T00:00:00.000Z', eventKey: 'voice:take-7', metadata: { take: 7 },
  };
  assert.equal(await recordUsageEvent(s.db, event), true);
  assert.equal(await recordUsageEvent(s.db, { ...event, quantity: 9 }), false, 'the same key again: nothing stored');
  const rows = await s.db.all<Row>('SELECT * FROM usage_events WHERE organization_id = ?', tree.organizationId);
  assert.equal(rows.length, 1);
  assert.deepEqual([rows[0].quantity, rows[0].cost_center_id, rows[0].event_key, rows[0].metadata], [4.5, (await ccOf(s, tree.workspaceId)).id, 'voice:take-7', '{"take":7}']);
  assert.deepEqual([(await s.db.get<{ p: number }>('SELECT unit_price_e4 AS p FROM usage_events WHERE id = ?', rows[0].id))!.p], [10_000]);
  assert.equal((await s.db.get<{ e: number }>('SELECT estimated_cost_e4 AS e FROM usage_events WHERE id = ?', rows[0].id))!.e, 45_000, '4.5 x 10,000');
  assert.equal(await recordUsageEvent(s.db, { ...event, eventKey: 'voice:take-8' }), true);
  const other = await makeTree(s);
  assert.equal(await recordUsageEvent(s.db, { ...event, organizationId: other.organizationId, workspaceId: other.workspaceId, projectId: other.projectId }), true,
    'keys are unique per organization');
  assert.equal((await s.db.get<Row>('SELECT count(*) AS n FROM usage_events'))!.n, 3);
});
