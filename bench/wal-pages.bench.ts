// Figure: the pages each commit of the worker writes to SQLite's WAL, by b-tree (table or index),
// and how long its COMMIT takes. A burn-down of BENCH_WAL_JOBS (400) chat jobs against svc
// model-server with the worker loop in this process (src/generation/worker/loop.ts, concurrency 2,
// synchronous=FULL), in a studio that already holds BENCH_WAL_HISTORY finished jobs (each figure is
// measured for every count of the comma-separated list, default 0 and 20000: deeper b-trees split
// and fill differently). After every COMMIT the frames it appended are read from the -wal file
// (their page numbers, from the frame headers) and each page is named by its b-tree as the dbstat
// virtual table tells, read again after every commit that changed the freelist (page 1) or wrote a
// page not known yet: pages move between b-trees through the freelist (the emptied claim index's
// pages become attempt rows), so a page is named by its b-tree just after the commit that wrote it.
// A commit is classed by what it did: how many jobs it settled (attempt rows written) and how many
// it claimed; "1+1" (one settle and the next claim) is the worker's steady state at concurrency 2.
import fs from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import type { Db, Param } from '../src/db/db.ts';
import { createContext } from '../src/directory/context.ts';
import { createLogger } from '../src/kernel/log.ts';
import { startWorkerLoop } from '../src/generation/worker/loop.ts';
import { workerActor } from '../src/generation/worker/host.ts';
import { bindSubscribers } from '../src/subscribers.ts';
import { workerWorld } from './worker-world.ts';
import { SVC_BIN, num, percentile, printTable, report, startProcess } from './lib.ts';

const JOBS = Number(process.env.BENCH_WAL_JOBS ?? 400);
const HISTORIES = (process.env.BENCH_WAL_HISTORY ?? '0,20000').split(',').map(Number);

const model = await startProcess([SVC_BIN, 'model-server', '--port', '0']);
bindSubscribers();

/** One commit: the pages it wrote (by b-tree), its COMMIT's time, and what its transaction did. */
interface Commit { /** The b-tree of each page written. */ trees: string[]; ms: number; settles: number; claims: number; committed: boolean }

/**
 * Reads the frames appended to the WAL since the last call: a commit's frames end with its commit
 * frame (database size non-zero). A WAL restarted by a checkpoint has new salts; reading starts over.
 */
function walReader(file: string): () => number[][] {
  let offset = 32;
  let salts = '';
  return () => {
    const fd = fs.openSync(file, 'r');
    try {
      const head = Buffer.alloc(32);
      if (fs.readSync(fd, head, 0, 32, 0) < 32) return [];
      const pageSize = head.readUInt32BE(8);
      const s = head.subarray(16, 24).toString('hex');
      if (s !== salts) { salts = s; offset = 32; }
      const commits: number[][] = [];
      let pages: number[] = [];
      const frame = Buffer.alloc(24);
      for (;;) {
        if (fs.readSync(fd, frame, 0, 24, offset) < 24 || frame.subarray(8, 16).toString('hex') !== salts) break;
        pages.push(frame.readUInt32BE(0));
        offset += 24 + pageSize;
        if (frame.readUInt32BE(4) !== 0) { commits.push(pages); pages = []; }
      }
      offset -= pages.length * (24 + pageSize); // an unfinished transaction's frames are read again
      return commits;
    } finally {
      fs.closeSync(fd);
    }
  };
}

/** `history` finished chat jobs of the studio's project, with their attempt rows and search documents, written by SQL. */
async function seedHistory(db: Db, template: string, history: number): Promise<void> {
  if (history <= 0) return;
  await db.tx(async () => {
    await db.run(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?2)
      INSERT INTO generation_jobs (id, organization_id, workspace_id, project_id, kind, status, connector_id, attempt, input, output,
        created_at, updated_at, started_at, finished_at, attempt_started_at)
      SELECT 'hist-' || printf('%08d', i), organization_id, workspace_id, project_id, kind, 'completed', connector_id, 1, input,
        '{"text":"an answer of some length, as the model server gives it"}', created_at, created_at, created_at, created_at, created_at
      FROM generation_jobs, n WHERE id = ?1`, template, history);
    await db.run(`INSERT INTO job_attempts (job_id, attempt, project_id, mode, runner, started_at, finished_at, outcome, latency_ms)
      SELECT id, 1, project_id, 'worker', 'bench-worker', started_at, finished_at, 'completed', 40 FROM generation_jobs WHERE id LIKE 'hist-%'`);
    await db.run(`INSERT INTO search_documents (doc_key, type, target_id, organization_id, workspace_id, project_id, title, subtitle, body, status, target_tab, updated_at)
      SELECT 'job:' || g.id, d.type, g.id, d.organization_id, d.workspace_id, d.project_id, d.title, d.subtitle, d.body, 'completed', d.target_tab, g.created_at
      FROM generation_jobs g, search_documents d WHERE g.id LIKE 'hist-%' AND d.target_id = ?1`, template);
  });
}

/** Adds to `names` the b-tree of each page of `file` (a page of the freelist has none), by the dbstat virtual table. */
function pageNames(file: string, names: Map<number, string>): Map<number, string> {
  const stat = new DatabaseSync(file, { readOnly: true });
  for (const r of stat.prepare('SELECT name, pageno FROM dbstat').all() as Array<{ name: string; pageno: number }>) names.set(r.pageno, r.name);
  stat.close();
  return names;
}

interface Run { history: number; commits: Commit[]; seconds: number }

async function measure(history: number): Promise<Run> {
  const world = await workerWorld(model.url);
  const { config, db, connectorId, chat } = world;
  try {
    const first = await chat(0);
    await seedHistory(db, first, history);
    await db.tx(async () => { for (let i = 1; i < JOBS; i++) await chat(i); });
    await db.run("UPDATE model_connectors SET status = 'ready' WHERE id = ?", connectorId);
    if (process.env.BENCH_WAL_SQL) await db.exec(process.env.BENCH_WAL_SQL); // a variant of the schema to try
    await db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    let names = pageNames(config.dbPath, new Map());

    // Every COMMIT: its frames, its time, and what its transaction did.
    const commits: Commit[] = [];
    const read = walReader(`${config.dbPath}-wal`);
    let settles = 0;
    let claims = 0;
    const o = db as unknown as Record<string, unknown>;
    const raw = o.raw as { exec: (sql: string) => void };
    const exec = raw.exec.bind(raw);
    const collect = (ms: number, committed: boolean) => {
      const found = read();
      if (found.some((pages) => pages.some((p) => p === 1 || !names.has(p)))) names = pageNames(config.dbPath, new Map());
      const named = found.map((pages) => pages.map((p) => names.get(p) ?? '(freelist)'));
      // Frames before the last commit frame are commits outside a transaction (autocommit statements).
      for (const trees of named.slice(0, -1)) commits.push({ trees, ms: NaN, settles: 0, claims: 0, committed: false });
      if (named.length) commits.push({ trees: named.at(-1)!, ms, settles, claims, committed });
      settles = 0;
      claims = 0;
    };
    raw.exec = (sql: string) => {
      if (sql !== 'COMMIT') return exec(sql);
      const t0 = performance.now();
      exec(sql);
      collect(performance.now() - t0, true);
    };
    const run = db.run.bind(db);
    db.run = async (sql: string, ...params: Param[]) => {
      const r = await run(sql, ...params);
      if (sql.startsWith('INSERT INTO job_attempts') && r.changes) settles++;
      return r;
    };
    const all = db.all.bind(db) as (sql: string, ...params: Param[]) => Promise<unknown[]>;
    (db as unknown as { all: typeof all }).all = async (sql: string, ...params: Param[]) => {
      const rows = await all(sql, ...params);
      if (sql.startsWith('WITH picked')) claims += rows.length;
      return rows;
    };

    const t0 = performance.now();
    const loop = await startWorkerLoop(createContext({ db, config, log: createLogger('warn'), actor: workerActor(config.workerId), requestId: 'bench-worker' }));
    await world.drained();
    const seconds = (performance.now() - t0) / 1000;
    await loop.stop(1000);
    collect(NaN, false);
    raw.exec = exec;
    await world.allCompleted();

    return { history, commits, seconds };
  } finally {
    await world.close();
  }
}

const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);
const kindOf = (c: Commit) => (c.committed ? `${c.settles}+${c.claims}` : 'outside a transaction');

const runs: Run[] = [];
for (const h of HISTORIES) runs.push(await measure(h));

for (const r of runs) {
  const steady = r.commits.filter((c) => c.committed && c.settles === 1 && c.claims === 1);
  const kinds = new Map<string, Commit[]>();
  for (const c of r.commits) kinds.set(kindOf(c), [...(kinds.get(kindOf(c)) ?? []), c]);
  const all = r.commits.flatMap((c) => c.trees);
  const rows: string[][] = [['commits (settles+claims)', 'count', 'pages each', 'COMMIT ms p50', 'COMMIT ms mean']];
  for (const [k, cs] of [...kinds].sort((a, b) => b[1].length - a[1].length)) {
    const ms = cs.map((c) => c.ms).filter((x) => !Number.isNaN(x));
    rows.push([k, num(cs.length), num(mean(cs.map((c) => c.trees.length)), 2), ms.length ? num(percentile(ms, 50), 3) : '-', ms.length ? num(mean(ms), 3) : '-']);
  }
  rows.push(['all (per job)', num(r.commits.length), num(all.length / JOBS, 2), '', '']);
  printTable(`WAL pages per commit, ${num(JOBS)} chat jobs, ${num(r.history)} finished before (burn-down ${num(r.seconds, 2)} s)`, rows, [
    '1+1: one job settled and the next claimed in one transaction (concurrency 2: the steady state)',
    'COMMIT ms: the COMMIT statement (WAL write, fsync, and a checkpoint when one is due)',
  ]);
  const byTree = (cs: Commit[]) => {
    const m = new Map<string, number>();
    for (const c of cs) for (const n of c.trees) m.set(n, (m.get(n) ?? 0) + 1);
    return m;
  };
  const steadyTrees = byTree(steady);
  const allTrees = byTree(r.commits);
  const trees = [...new Set([...allTrees.keys()])].sort((a, b) => (steadyTrees.get(b) ?? 0) - (steadyTrees.get(a) ?? 0) || (allTrees.get(b) ?? 0) - (allTrees.get(a) ?? 0));
  const treeRows: string[][] = [['b-tree', 'pages per 1+1 commit', 'pages per job (all commits)']];
  treeRows.push(['all', num(mean(steady.map((c) => c.trees.length)), 2), num(all.length / JOBS, 2)]);
  for (const t of trees) treeRows.push([t, num((steadyTrees.get(t) ?? 0) / Math.max(1, steady.length), 2), num((allTrees.get(t) ?? 0) / JOBS, 2)]);
  printTable(`WAL pages by b-tree, ${num(r.history)} finished jobs before`, treeRows, [
    `${num(steady.length)} commits of 1+1; each page named by its b-tree after the commit that wrote it (dbstat)`,
  ]);
  const suffix = r.history ? ` (${r.history} finished before)` : '';
  report({ figure: `WAL pages per 1+1 commit${suffix}`, value: mean(steady.map((c) => c.trees.length)), unit: 'pages', better: 'lower' });
  report({ figure: `COMMIT ms mean, 1+1 commit${suffix}`, value: mean(steady.map((c) => c.ms)), unit: 'ms', better: 'lower' });
}
await model.stop();
