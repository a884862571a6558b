// Figure: the usage list and export over 1,000,000 usage events of one organization (6 workspaces,
// 30 projects, 40 users, 9 cost centers, 5 kinds, one year up to now; plus 20,000 events of another
// organization), seeded with SQL in one transaction; `svc serve` runs as a child process.
// - GET /api/organizations/:id/usage p50/p95/max (sequential) for an unfiltered first page and
//   filtered pages, each with its summary and facets over the whole filtered set; goal: p95 of a
//   filtered page under 50 ms. The same filters over the whole year show what the default window
//   (this local month) bounds, and the grouped pass behind summary and facets is timed on its own.
// - GET .../usage/export?format=csv of every event: events/s, MB/s and the server's RSS growth
//   (VmRSS sampled; goal: constant memory, growth under 50 MB like the audit export).
// - The 31-day usage trend: GET .../commercial (which holds it) p50/p95, and usageTrend() alone.
import { mapSeq } from '../src/kernel/seq.ts';
import fs from 'node:fs';
import path from 'node:path';
import { openDb } from '../src/db/db.ts';
import { newId } from '../src/kernel/ids.ts';
import { insertWorkspaceCommercial } from '../src/directory/plan/account.ts';
import { localDate, monthOf, startOfLocalDay } from '../src/kernel/periods.ts';
import { usageTrend } from '../src/commercial/trend.ts';
import { eachUsageCombo, resolveQuery, usageWhere, windowSums, FACET_INDEXES, type FacetColumn } from '../src/commercial/usage/store.ts';
import { goal, login, measuredDownload, num, percentile, printTable, setupSvc, startSvc, svcCli } from './lib.ts';

const EVENTS = Number(process.env.BENCH_USAGE_EVENTS ?? 1_000_000);
const OTHER_EVENTS = 20_000;
const RUNS = Number(process.env.BENCH_USAGE_RUNS ?? 60);
const GOAL_P95_MS = 50;
const GOAL_RSS_MB = 50;
const SAMPLE_MS = 20;
const MB = 1024 * 1024;
const TZ = 'Europe/Berlin';

// mulberry32: a small deterministic generator, so that every run seeds the same data.
let state = 20250301;
const rand = (n: number) => {
  state = (state + 0x6d2b79f5) | 0;
  let x = Math.imul(state ^ (state >>> 15), 1 | state);
  x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
  return (((x ^ (x >>> 14)) >>> 0) % n);
};
const KINDS: Array<[kind: string, unit: string, percent: number, quantity: () => number, e4PerUnit: number]> = [
  ['clip', 'clip', 40, () => 1, 125], ['image', 'image', 25, () => 1 + rand(4), 40], ['voice', 'second', 15, () => (5 + rand(120)) / 2, 3],
  ['text', 'token', 12, () => 200 + rand(4000), 0], ['upscale', 'second', 8, () => 4 + rand(20), 12],
];
const MODELS = ['wan-2.1', 'flux-dev', 'kokoro', 'qwen-2.5', 'hunyuan', 'sdxl-turbo', 'whisper', 'ltx-video', 'cogvideo', 'llama-3'];

// ---- seed ------------------------------------------------------------------------------------------
// The organizations through the CLI (the bench user owns the measured one); everything else with SQL in
// one transaction: workspaces with their cost center and quota rows, projects, users, extra cost centers
// and the events, spread evenly over the year up to now (rowids in time order, as recording makes them).
const setup = setupSvc();
const org = svcCli(setup, ['orgs', 'create', '--name', 'Bench Studio', '--owner', setup.email]) as { id: string };
svcCli(setup, ['users', 'create', '--email', 'other-owner@example.com', '--name', 'Other Owner', '--password-stdin'], { input: `${setup.password}\n` });
const other = svcCli(setup, ['orgs', 'create', '--name', 'Other Studio', '--owner', 'other-owner@example.com']) as { id: string };
const dbPath = path.join(setup.dataDir, 'svc.db');
const db = openDb(dbPath, { synchronous: 'normal' });
const t0 = performance.now();
const created = new Date().toISOString();
const users: string[] = [];
const extraCostCenters: string[] = [];
const end = Date.now() - 60_000;
const start = end - 365 * 86_400_000;
const workspaces: string[] = [];
const projects: Array<{ id: string; workspace_id: string }> = [];
const costCenterOf = new Map<string, string>();
const row = async (table: string, values: Record<string, string | null>) =>
  await db.run(`INSERT INTO ${table} (${Object.keys(values).join(', ')}) VALUES (${Object.keys(values).map(() => '?').join(', ')})`, ...Object.values(values));
async function workspace(organizationId: string, name: string, projectNames: string[]): Promise<void> {
  const ws = { id: newId('wsp'), organization_id: organizationId, name };
  await row('workspaces', { ...ws, created_at: created });
  await insertWorkspaceCommercial(db, ws, created);
  costCenterOf.set(ws.id, `cc_${ws.id.slice(4)}`);
  if (organizationId === org.id) workspaces.push(ws.id);
  for (const p of projectNames) {
    const id = newId('prj');
    await row('projects', { id, organization_id: organizationId, workspace_id: ws.id, name: p, created_at: created, updated_at: created });
    projects.push({ id, workspace_id: ws.id });
  }
}
await db.tx(async () => {
  await db.run('UPDATE organizations SET time_zone = ? WHERE id = ?', TZ, org.id);
  for (let i = 0; i < 6; i++) await workspace(org.id, `Studio ${String.fromCharCode(65 + i)}`, Array.from({ length: 5 }, (_, j) => `Series ${i}-${j}`));
  await workspace(other.id, 'Elsewhere', ['Elsewhere pilot']);
  for (let i = 0; i < 40; i++) {
    users.push(newId('usr'));
    await row('users', { id: users[i], email: `artist${i}@bench.test`, email_normalized: `artist${i}@bench.test`, name: `Artist ${i}`, created_at: created, updated_at: created });
  }
  for (const [code, name] of [['MKT', 'Marketing'], ['RND', 'Research'], ['PILOT', 'Pilots']]) {
    extraCostCenters.push(newId('cc'));
    await row('cost_centers', { id: extraCostCenters.at(-1)!, organization_id: org.id, workspace_id: null, code, name, created_at: created, updated_at: created });
  }
  const insert = `INSERT INTO usage_events (id, organization_id, workspace_id, project_id, actor_user_id, kind, unit, quantity, estimated_cost_e4,
      currency, cost_center_id, job_id, metadata, created_at, event_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'USD', ?, NULL, ?, ?, ?)`;
  const add = async (orgId: string, p: { id: string; workspace_id: string }, i: number, n: number, cc: string) => {
    let r = rand(100);
    const k = KINDS.find((x) => (r -= x[2]) < 0) ?? KINDS[0];
    const quantity = k[3]();
    const id = newId('use');
    const metadata = JSON.stringify({ connectorId: `con_${rand(8)}`, model: MODELS[rand(MODELS.length)], attempt: 1 + rand(2), jobId: newId('job') });
    await db.run(insert, id, orgId, p.workspace_id, p.id, users[rand(users.length)], k[0], k[1], quantity, Math.round(quantity * k[4] * 100),
      cc, metadata, new Date(start + Math.floor(((i + Math.random()) * (end - start)) / n)).toISOString(), `bench:${id}`);
  };
  const own = projects.slice(0, 30);
  for (let i = 0; i < EVENTS; i++) {
    const p = own[rand(own.length)];
    await add(org.id, p, i, EVENTS, rand(10) === 0 ? extraCostCenters[rand(3)] : costCenterOf.get(p.workspace_id)!);
  }
  const elsewhere = projects[30];
  for (let i = 0; i < OTHER_EVENTS; i++) await add(other.id, elsewhere, i, OTHER_EVENTS, costCenterOf.get(elsewhere.workspace_id)!);
});
const seedSeconds = (performance.now() - t0) / 1000;
const dbMB = fs.statSync(dbPath).size / MB;

// ---- windows and cases ------------------------------------------------------------------------------
const now = new Date();
const thisMonth = monthOf(TZ, now);
const lastMonth = monthOf(TZ, new Date(thisMonth.start.getTime() - 1));
const lastMonthFrom = localDate(lastMonth.start, TZ);
const lastMonthTo = localDate(new Date(lastMonth.end.getTime() - 1), TZ);
const yearFrom = localDate(new Date(start - 86_400_000), TZ);
const p0 = projects[7];
const cc0 = (await db.get<{ id: string; code: string }>('SELECT id, code FROM cost_centers WHERE workspace_id = ?', workspaces[2]))!;
const kindCc = `kind=image&costCenter=${cc0.code}`;

interface Case { name: string; qs: string; filtered: boolean; window: string }
const cases: Case[] = [
  { name: 'unfiltered first page', qs: '', filtered: false, window: 'this month' },
  { name: 'projectId + month', qs: `projectId=${p0.id}&from=${lastMonthFrom}&to=${lastMonthTo}`, filtered: true, window: 'last month' },
  { name: 'kind + costCenter', qs: kindCc, filtered: true, window: 'this month' },
  { name: 'query (model in metadata)', qs: 'query=kokoro', filtered: true, window: 'this month' },
  { name: 'userId + workspaceId', qs: `userId=${users[3]}&workspaceId=${workspaces[1]}`, filtered: true, window: 'this month' },
  { name: 'kind + costCenter, page 20', qs: `${kindCc}&page=20`, filtered: true, window: 'this month' },
  { name: 'kind=clip (40% of events)', qs: 'kind=clip', filtered: false, window: 'this month' },
  { name: 'unfiltered, whole year', qs: `from=${yearFrom}`, filtered: false, window: 'year' },
  { name: 'kind + costCenter, whole year', qs: `${kindCc}&from=${yearFrom}`, filtered: false, window: 'year' },
  { name: 'query, whole year', qs: `query=kokoro&from=${yearFrom}`, filtered: false, window: 'year' },
];

const median5 = async (fn: () => Promise<unknown>) => {
  const times: number[] = [];
  for (let i = 0; i < 5; i++) {
    const s = performance.now();
    await fn();
    times.push(performance.now() - s);
  }
  return percentile(times, 50);
};

/**
 * Summary and facets alone, in this process on the same file (median of 5): the grouped pass over the
 * filtered set, and for a window without other filters also the loose index scans the server uses there.
 */
async function aggregationMs(c: Case): Promise<{ grouped: number; loose: number | null }> {
  const q = new URLSearchParams(c.qs);
  const day = (d: string, after: boolean) => { const [y, m, dd] = d.split('-').map(Number); return startOfLocalDay(y, m, dd + (after ? 1 : 0), TZ).toISOString(); };
  const from = q.get('from') ? day(q.get('from')!, false) : thisMonth.start.toISOString();
  const to = q.get('to') ? day(q.get('to')!, true) : null;
  const w = usageWhere(db.dialect, {
    organizationId: org.id, from, to, projectId: q.get('projectId') ?? undefined, workspaceId: q.get('workspaceId') ?? undefined,
    userId: q.get('userId') ?? undefined, kind: q.get('kind') ?? undefined, costCenterId: q.get('costCenter') ? cc0.id : undefined,
    query: q.get('query') ? await resolveQuery(db, org.id, q.get('query')!) : undefined,
  });
  const onlyWindow = [...q.keys()].every((k) => k === 'from' || k === 'to' || k === 'page');
  const columns = Object.keys(FACET_INDEXES) as FacetColumn[];
  return {
    grouped: await median5(async () => await eachUsageCombo(db, w, () => {})),
    loose: onlyWindow ? await median5(async () => await mapSeq(columns, async (col) => await windowSums(db, org.id, col, from, to, 2000))) : null,
  };
}


async function timed(url: string, headers: Record<string, string>, runs: number) {
  for (let i = 0; i < 3; i++) await (await fetch(url, { headers })).arrayBuffer(); // warm-up
  const times: number[] = [];
  let body: any;
  for (let i = 0; i < runs; i++) {
    const s = performance.now();
    const res = await fetch(url, { headers });
    body = await res.json();
    times.push(performance.now() - s);
    if (res.status !== 200) throw new Error(`${url}: ${res.status} ${JSON.stringify(body)}`);
  }
  return { times, body };
}

// ---- measure -----------------------------------------------------------------------------------------
// Summary and facets alone first, before the server starts (its idle keep-alive sockets would time out meanwhile).
const aggregation = new Map((await mapSeq(cases, async (c) => [c, await aggregationMs(c)])));
const svc = await startSvc(setup);
const rows: string[][] = [['case', 'window', 'events in set', 'items', 'p50', 'p95', 'max', 'goal', 'grouped pass', 'index scans']];
let worstFiltered = 0;
let exportRow: string[];
let exportOk: boolean;
const trendRows: string[] = [];
try {
  const token = await login(svc.url, setup.email, setup.password);
  const headers = { authorization: `Bearer ${token}` };
  const base = `${svc.url}/api/organizations/${org.id}/usage`;
  for (const c of cases) {
    const { times, body } = await timed(`${base}?${c.qs}`, headers, c.window === 'year' ? Math.min(RUNS, 10) : RUNS);
    const p95 = percentile(times, 95);
    if (c.filtered) worstFiltered = Math.max(worstFiltered, p95);
    const agg = aggregation.get(c)!;
    rows.push([c.name, c.window, num(body.summary.events), String(body.items.length), `${num(percentile(times, 50), 1)} ms`, `${num(p95, 1)} ms`,
      `${num(Math.max(...times), 1)} ms`, c.filtered ? goal(p95 < GOAL_P95_MS) : '-', `${num(agg.grouped, 1)} ms`,
      agg.loose === null ? '-' : `${num(agg.loose, 1)} ms`]);
  }

  // The CSV export of every event.
  const { status, bytes, newlines, seconds, baseRss, peakRss } = await measuredDownload(`${base}/export?format=csv&from=${yearFrom}`, headers, svc.pid, SAMPLE_MS);
  const exported = newlines - 1; // a header line; no cell of the seeded events holds a newline
  exportOk = status === 200 && exported === EVENTS && (peakRss - baseRss) / MB < GOAL_RSS_MB;
  exportRow = ['csv', num(exported), num(bytes / MB, 1), num(seconds, 2), num(exported / seconds), num(bytes / MB / seconds, 1),
    `${num(baseRss / MB, 1)} MB`, `${num(peakRss / MB, 1)} MB`, `${num((peakRss - baseRss) / MB, 1)} MB`];

  // The 31-day trend: the commercial view holds it; usageTrend() alone in this process.
  const commercial = await fetch(`${svc.url}/api/organizations/${org.id}/commercial`, { headers });
  await commercial.arrayBuffer();
  if (commercial.status === 200) {
    const { times, body } = await timed(`${svc.url}/api/organizations/${org.id}/commercial`, headers, 20);
    trendRows.push(`GET /api/organizations/:id/commercial (whole view, usageTrend of ${body.usageTrend.length} days inside): p50 ${num(percentile(times, 50), 1)} ms, p95 ${num(percentile(times, 95), 1)} ms`);
  } else {
    trendRows.push(`GET /api/organizations/:id/commercial answered ${commercial.status}: not timed`);
  }
  const trendTimes: number[] = [];
  let days = 0;
  for (let i = 0; i < 20; i++) {
    const t = performance.now();
    days = (await usageTrend(db, org.id, TZ, 'USD', new Date())).length;
    trendTimes.push(performance.now() - t);
  }
  trendRows.push(`usageTrend() alone (31 local days of ${TZ}, ${days} days with events, ~${num(EVENTS / 365 * 31)} events): p50 ${num(percentile(trendTimes, 50), 1)} ms, p95 ${num(percentile(trendTimes, 95), 1)} ms`);
} finally {
  const how = await svc.stop();
  if (how !== 0) process.stderr.write(`svc serve exited with ${how}\n`);
  db.close();
}

const listOk = worstFiltered < GOAL_P95_MS;
printTable(`Usage list: GET /api/organizations/:id/usage over ${num(EVENTS)} events (one year), page of 50 with summary and facets, sequential requests`, rows, [
  `worst p95 of a filtered page (this month or an explicit month): ${num(worstFiltered, 1)} ms (goal < ${GOAL_P95_MS} ms: ${goal(listOk)}); times include the HTTP round trip`,
  'the "whole year" rows give from= a year back: summary and facets are exact sums over the whole filtered set, so their cost grows with it (the default window, this local month, bounds it)',
  'goal rows: the filtered pages of the issue (project + month, kind + cost center, query) and two more; "-": shown for the bound, not counted',
  'summary and facets alone, in the bench process on the same file: "grouped pass" = one GROUP BY over the filtered set (count, quantity, cost by user, project,',
  '  cost center, workspace, kind, unit; what the server runs when a filter narrows the window); "index scans" = each facet counted from its own index by a',
  '  loose index scan and the totals by unit from the covering index usage_events_org_unit (what the server runs for a window without other filters)',
  `seeded ${num(EVENTS + OTHER_EVENTS)} events with SQL in one transaction in ${num(seedSeconds, 1)} s (synchronous=normal); database ${num(dbMB)} MB`,
]);
printTable('Usage export: GET .../usage/export?format=csv of every event, server RSS sampled every 20 ms', [
  ['format', 'events', 'MB', 'seconds', 'events/s', 'MB/s', 'RSS before', 'RSS peak', 'RSS growth'], exportRow,
], [`goal: RSS growth below ${GOAL_RSS_MB} MB (constant memory): ${goal(exportOk)}`]);
printTable('Usage trend: the last 31 local days per day', [['figure'], ...trendRows.map((r) => [r])]);
