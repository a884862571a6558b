// Figure: GET /api/audit/export of 200,000 audit records (CSV, then JSON) from `svc serve` in a
// child process, downloaded over HTTP while the server's resident memory (VmRSS in /proc/PID/status)
// is sampled; goal: RSS growth below 50 MB, i.e. constant memory whatever the size. Also the time to
// seed the rows through the service's one-INSERT append path and `svc audit verify` over them.
import path from 'node:path';
import { openDb } from '../src/db/db.ts';
import { insertAudit } from '../src/platform/audit/store.ts';
import { goal, login, measuredDownload, num, printTable, setupSvc, startSvc, svcCli } from './lib.ts';

const ROWS = Number(process.env.BENCH_AUDIT_ROWS ?? 200_000);
const GOAL_MB = 50;
const SAMPLE_MS = 20;
const MB = 1024 * 1024;


const setup = setupSvc();
const org = svcCli(setup, ['orgs', 'create', '--name', 'Studio', '--owner', setup.email]) as { id: string };

// Seed: one transaction of the service's own append statement (prepared once, chained by SQL).
const seedStarted = performance.now();
{
  const db = openDb(path.join(setup.dataDir, 'svc.db'), { synchronous: 'normal' });
  const actions = ['shot.rendered', 'script.edited', 'asset.verified', 'job.failed', 'delivery.approved', 'auth.login'];
  const t0 = Date.parse('2025-01-01T00:00:00Z');
  await db.tx(async () => {
    for (let i = 0; i < ROWS; i++) {
      await insertAudit(db, {
        id: `aud_bench${String(i).padStart(8, '0')}`,
        created_at: new Date(t0 + i * 1000).toISOString(),
        actor_type: 'user', actor_user_id: setup.userId, actor_name: i % 50 === 0 ? '=formula, "quoted"' : 'Bench User',
        organization_id: org.id, workspace_id: null, project_id: null,
        action: actions[i % actions.length], target_type: 'shot', target_id: `shot_${i % 997}`,
        result: i % 17 === 0 ? 'failure' : 'success',
        metadata: JSON.stringify({ i, note: 'a typical metadata object, with a comma', attempt: i % 3, path: `outputs/${i}.mp4` }),
        ip: '127.0.0.1', user_agent: 'Mozilla/5.0 (X11; Linux x86_64) bench', request_id: `req_bench-${i.toString(36)}`,
      });
    }
  });
  db.close();
}
const seedSeconds = (performance.now() - seedStarted) / 1000;

const verifyStarted = performance.now();
const verified = svcCli(setup, ['audit', 'verify']) as { ok: boolean; rows: number };
const verifySeconds = (performance.now() - verifyStarted) / 1000;
if (!verified.ok) throw new Error(`svc audit verify: ${JSON.stringify(verified)}`);

interface Measured { format: string; rows: number; bytes: number; seconds: number; baseRss: number; peakRss: number; status: number }

const svc = await startSvc(setup);
const measured: Measured[] = [];
const listMs: Array<[string, number]> = [];
try {
  const token = await login(svc.url, setup.email, setup.password);
  const headers = { authorization: `Bearer ${token}` };
  // Warm-up: the list (timed: a page with facets over every record), and a small export of each format.
  for (const p of ['/api/audit', '/api/audit', '/api/audit?result=failure&query=shot_99', '/api/audit/export?format=csv&pageSize=10', '/api/audit/export?format=json&pageSize=10']) {
    const t0 = performance.now();
    const r = await fetch(svc.url + p, { headers });
    await r.arrayBuffer();
    if (r.status !== 200) throw new Error(`${p}: ${r.status}`);
    if (p.startsWith('/api/audit?') || p === '/api/audit') listMs.push([p, performance.now() - t0]);
  }
  for (const format of ['csv', 'json']) {
    const { status, bytes, newlines, seconds, baseRss, peakRss } = await measuredDownload(`${svc.url}/api/audit/export?format=${format}`, headers, svc.pid, SAMPLE_MS);
    // CSV: a header line and one line per record; JSON: "[", one line per record, "]".
    const rows = format === 'csv' ? newlines - 1 : newlines - 2;
    measured.push({ format, rows, bytes, seconds, baseRss, peakRss, status });
  }
} finally {
  const how = await svc.stop();
  if (how !== 0) process.stderr.write(`svc serve exited with ${how}\n`);
}

const ok = measured.every((m) => m.status === 200 && m.rows >= ROWS && (m.peakRss - m.baseRss) / MB < GOAL_MB);
printTable(`Audit export: GET /api/audit/export of ${num(ROWS)} seeded records over HTTP, server RSS sampled every ${SAMPLE_MS} ms`, [
  ['format', 'records', 'MB', 'seconds', 'records/s', 'MB/s', 'RSS before', 'RSS peak', 'RSS growth'],
  ...measured.map((m) => [
    m.format, num(m.rows), num(m.bytes / MB, 1), num(m.seconds, 2), num(m.rows / m.seconds), num(m.bytes / MB / m.seconds, 1),
    `${num(m.baseRss / MB, 1)} MB`, `${num(m.peakRss / MB, 1)} MB`, `${num((m.peakRss - m.baseRss) / MB, 1)} MB`,
  ]),
], [
  `goal: RSS growth below ${GOAL_MB} MB for every format: ${goal(ok)} (records: the seeded ones plus the set-up's and the exports' own audit records)`,
  `seeding ${num(ROWS)} records in one transaction through the one-INSERT hash-chained append: ${num(seedSeconds, 1)} s (${num(ROWS / seedSeconds)} records/s, synchronous=normal)`,
  `svc audit verify over ${num(verified.rows)} records (a child process, start-up included): ${num(verifySeconds, 1)} s (${num(verified.rows / verifySeconds)} records/s)`,
  `GET /api/audit (page of 50 with facets, as the organization's owner): ${listMs.map(([p, ms]) => `${p.replace('/api/audit', '') || '(no filter)'} ${num(ms)} ms`).join('; ')}`,
  'client: fetch in the bench process, reading the body as it arrives; server: svc serve as a child process, access log at info to a file',
]);
if (!ok) process.stderr.write('audit-export: a download failed or the server\'s RSS grew by 50 MB or more\n');
