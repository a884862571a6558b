// Figure: GET /api/workflows/runs latency p50/p95/max over 10,000 runs of the built-in template
// "shot to episode cut" (4 steps, each a generation job, and 2 gates a run) in the measured
// project, with 3 other projects of as many runs in the same database: the newest 50, the blocked
// ones (status filter, 50), the completed ones (status filter, 200) and one run by id. A run's status
// is derived in SQL from its jobs and gates on every read (src/generation/workflows/store.ts), so this is the
// cost of that derivation. Goal: p95 under 50 ms for the lists. The server runs as a child process
// with its worker off (the seeded statuses must not move); requests are sequential.
// BENCH_WORKFLOW_RUNS (10000) changes the runs per project.
import { forEachSeq } from '../src/kernel/seq.ts';
import { openDb, type Db } from '../src/db/db.ts';
import { migrate } from '../src/db/migrate.ts';
import { loadConfig } from '../src/kernel/config.ts';
import { createContext } from '../src/directory/context.ts';
import { createLogger } from '../src/kernel/log.ts';
import { newId } from '../src/kernel/ids.ts';
import { createOrganization, createWorkspace } from '../src/tenancy/service.ts';
import { createProject } from '../src/production/projects/service.ts';
import type { ProjectRow } from '../src/directory/tenancy/store.ts';
import { userByEmail } from '../src/directory/users/store.ts';
import { insertJob, type JobRow, type JobStatus } from '../src/generation/jobs/store.ts';
import { BUILTIN_TEMPLATES, syncBuiltinTemplates } from '../src/generation/workflows/builtin.ts';
import { insertRun, insertRunGate, insertRunStep, type RunGateRow } from '../src/generation/workflows/store.ts';
import type { RunStatus } from '../src/generation/workflows/schema.ts';
import { goal, login, num, percentile, printTable, setupSvc, startSvc } from './lib.ts';

const RUNS = Number(process.env.BENCH_WORKFLOW_RUNS ?? 10_000);
const PROJECTS = 4;
/** The project the requests read: not the first one created, so neither end of any index. */
const MEASURED = 1;
const REQUESTS = 200;
const WARMUP = 20;
const GOAL_P95_MS = 50;
const TEMPLATE_ID = 'wft_builtin_shot_to_cut';
const TEMPLATE = BUILTIN_TEMPLATES.find((t) => t.id === TEMPLATE_ID)!;

let seed = 7;
const rand = (n: number) => { seed = (seed * 1103515245 + 12345) % 2 ** 31; return (seed >>> 8) % n; };

/**
 * The share of runs in each state (per mille): most runs have every job completed (and then their
 * blocking picture QA gate decides: passed, still pending or failed), some are running or still
 * queued, about 5% have a failed step (blocked) and a few were cancelled.
 */
const MIX: Array<[RunStatus, number]> = [
  ['blocked', 50], ['cancelled', 20], ['running', 80], ['queued', 20], ['awaiting_qa', 50], ['failed', 10], ['completed', 770],
];
function pickStatus(): RunStatus {
  let r = rand(1000);
  for (const [s, share] of MIX) if ((r -= share) < 0) return s;
  return 'completed';
}

const iso = (ms: number) => new Date(ms).toISOString();
const INPUT = (prompt: string | null, parameters: Record<string, unknown>, inputs: string[]) =>
  JSON.stringify({ prompt, negativePrompt: null, parameters, inputs });

interface Seeded { id: string; status: RunStatus }

/** One run in the given (to be derived) status: its 4 jobs chained by depends_on, 4 steps, 2 gates. */
async function seedRun(db: Db, p: ProjectRow, userId: string, status: RunStatus, createdMs: number): Promise<string> {
  const runId = newId('wfr');
  const created = iso(createdMs);
  await insertRun(db, {
    id: runId, organization_id: p.organization_id, workspace_id: p.workspace_id, project_id: p.id, template_id: TEMPLATE_ID, template_version: 1,
    mode: 'queue', shot_id: null, episode_id: null, adapter_id: 'con_bench_local', priority: 0, approve_external: 0, created_by: userId, created_at: created,
  });
  // Gates before steps, as instantiate writes them: the steps' insert trigger derives the status from both.
  const allDone = status === 'completed' || status === 'awaiting_qa' || status === 'failed';
  const decided = iso(createdMs + 20 * 60_000);
  for (const g of TEMPLATE.gates) {
    const gate: RunGateRow = { run_id: runId, gate_key: g.key, label: g.label, blocking: g.blocking ? 1 : 0, status: 'pending', decided_by: null, decided_at: null, note: null, qa_run_id: null };
    if (allDone) {
      // The blocking gate gives the derived status; the other one is mostly passed on finished runs.
      gate.status = g.blocking ? (status === 'completed' ? 'passed' : status === 'failed' ? 'failed' : 'pending') : rand(4) ? 'passed' : 'pending';
      if (gate.status !== 'pending') Object.assign(gate, { decided_by: userId, decided_at: decided, note: gate.status === 'failed' ? 'continuity break at 00:02' : null });
    }
    await insertRunGate(db, gate);
  }
  // The step that stopped or is under way (0..3); steps before it completed.
  const at = rand(TEMPLATE.steps.length);
  const jobStatus = (i: number): JobStatus => {
    switch (status) {
      case 'completed': case 'awaiting_qa': case 'failed': return 'completed';
      case 'queued': return 'queued';
      case 'running': return i < at ? 'completed' : i === at ? 'running' : 'queued';
      case 'blocked': return i < at ? 'completed' : i === at ? 'failed' : 'blocked';
      case 'cancelled': return i < at ? 'completed' : i === at ? 'cancelled' : 'blocked';
      default: throw new Error(`no seed for ${status}`);
    }
  };
  let previous: string | null = null;
  await forEachSeq(TEMPLATE.steps, async (step, i) => {
    const jobId = newId('job');
    const js = jobStatus(i);
    const t = (minutes: number) => iso(createdMs + (i * 3 + minutes) * 60_000);
    const compose = step.jobKind === 'compose';
    const connectorId = compose ? null : 'con_bench_local';
    const prompt = compose ? null : `S${i + 1}: the conductor looks up as the night train leaves the platform`;
    const job: JobRow = {
      id: jobId, organization_id: p.organization_id, workspace_id: p.workspace_id, project_id: p.id, shot_id: null, kind: step.jobKind, status: js,
      connector_id: connectorId, priority: 0, attempt: js === 'queued' || js === 'blocked' ? 0 : js === 'failed' ? 3 : 1, max_attempts: 3,
      depends_on: step.dependsOnPrevious ? previous : null, leased_by: js === 'running' ? 'bench-worker' : null, leased_at: js === 'running' ? t(1) : null, run_after: null,
      input: INPUT(prompt, step.parameters, []), output: js === 'completed' ? JSON.stringify({ assetId: `ast_bench_${jobId}` }) : null,
      error: js === 'failed' ? 'connector_error: the model server answered 500' : js === 'cancelled' ? 'cancelled: cancelled by a person' : null,
      created_by: userId, created_at: created, updated_at: js === 'queued' ? created : t(2),
      started_at: js === 'queued' || js === 'blocked' ? null : t(1), finished_at: ['completed', 'failed', 'cancelled'].includes(js) ? t(2) : null,
      external_ref: null, attempt_started_at: js === 'queued' || js === 'blocked' ? null : t(1), episode_id: null,
      workflow_run_id: runId,
    };
    await insertJob(db, job);
    await insertRunStep(db, {
      run_id: runId, position: i + 1, step_key: step.key, label: step.label, job_kind: step.jobKind, shot_id: null, connector_id: connectorId, job_id: jobId,
      preview: JSON.stringify({
        kind: step.jobKind, connectorId, connectorLabel: compose ? null : 'Bench local', costMode: 'local', shotId: null, episodeId: null, prompt,
        parameters: step.parameters, dependsOnStep: i > 0 && step.dependsOnPrevious ? TEMPLATE.steps[i - 1].key : null,
        inputFromPrevious: step.inputFromPrevious, priority: 0,
      }),
      blockers: JSON.stringify(i > 0 && step.dependsOnPrevious ? [{ code: 'waits_for_step', message: `waits for step "${TEMPLATE.steps[i - 1].key}"` }] : []),
    });
    previous = jobId;
  });
  return runId;
}

// Data: the bench user owns an organization with one workspace of PROJECTS projects, RUNS runs each.
const setup = setupSvc();
const config = loadConfig({ dataDir: setup.dataDir, storageDir: setup.storageDir }, { SVC_DB_SYNCHRONOUS: 'normal' });
const db = openDb(config.dbPath, { synchronous: 'normal' });
await migrate(db);
await syncBuiltinTemplates(db, new Date().toISOString()); // what the server does at start: the runs reference version 1
const ctx = createContext({ db, config, log: createLogger('warn') });
const userId = (await userByEmail(db, setup.email))!.id;
const org = await createOrganization(ctx, { name: 'Bench Studio', ownerUserId: userId });
const ws = await createWorkspace(ctx, org.id, { name: 'Dramas' });
const projects: Awaited<ReturnType<typeof createProject>>[] = [];
for (let i = 0; i < PROJECTS; i++) projects.push(await createProject(ctx, ws.id, { name: `Series ${i}` }));
const measured: Seeded[] = []; // in creation order (oldest first)
const t0 = performance.now();
await db.tx(async () => {
  // A run a minute, the projects interleaved, so that every project's runs span the same time.
  const base = Date.now() - RUNS * PROJECTS * 60_000;
  for (let i = 0; i < RUNS; i++) {
    for (let p = 0; p < PROJECTS; p++) {
      const status = pickStatus();
      const id = await seedRun(db, projects[p], userId, status, base + (i * PROJECTS + p) * 60_000);
      if (p === MEASURED) measured.push({ id, status });
    }
  }
});
const seedSeconds = (performance.now() - t0) / 1000;
const totals = (await db.get<{ runs: number; steps: number; jobs: number; gates: number }>(
  `SELECT (SELECT count(*) FROM workflow_runs) AS runs, (SELECT count(*) FROM workflow_run_steps) AS steps,
     (SELECT count(*) FROM generation_jobs) AS jobs, (SELECT count(*) FROM workflow_run_gates) AS gates`))!;
db.close();

const project = projects[MEASURED];
const newest = [...measured].reverse();
const expected = new Map(measured.map((r) => [r.id, r.status]));
const countOf = (s: RunStatus) => measured.filter((r) => r.status === s).length;
const mix = MIX.map(([s]) => `${s} ${num(countOf(s))}`).join(', ');

interface RunBody { id?: string; status?: string; projectId?: string; steps?: unknown[]; gates?: unknown[]; template?: { version?: number } }
interface ListBody { items?: RunBody[]; limit?: number }

const fail = (what: string, why: string): never => { throw new Error(`${what}: ${why}`); };

/** The list must be the expected ids, newest first, each with its seeded status, all of the measured project. */
function checkList(what: string, body: ListBody, status: RunStatus | null, limit: number): number {
  const want = newest.filter((r) => status === null || r.status === status).slice(0, limit);
  const items = body.items ?? fail(what, `no items in ${JSON.stringify(body).slice(0, 200)}`);
  if (items.length !== want.length) fail(what, `${items.length} items, expected ${want.length}`);
  items.forEach((it, i) => {
    if (it.id !== want[i].id) fail(what, `item ${i} is ${it.id}, expected ${want[i].id}`);
    if (it.status !== want[i].status) fail(what, `run ${it.id} has status ${it.status}, seeded as ${want[i].status}`);
    if (it.projectId !== project.id) fail(what, `run ${it.id} belongs to project ${it.projectId}`);
    if (it.steps?.length !== 4 || it.gates?.length !== 2) fail(what, `run ${it.id} has ${it.steps?.length} steps and ${it.gates?.length} gates`);
  });
  return items.length;
}

function checkRun(what: string, body: RunBody, id: string): number {
  if (body.id !== id) fail(what, `got ${JSON.stringify(body).slice(0, 200)}`);
  if (body.status !== expected.get(id)) fail(what, `status ${body.status}, seeded as ${expected.get(id)}`);
  if (body.steps?.length !== 4 || body.gates?.length !== 2 || body.template?.version !== 1) fail(what, 'steps, gates or template missing');
  return 1;
}

const svc = await startSvc(setup, { SVC_WORKER_ENABLED: '0' });
const rows: string[][] = [['request', 'results', 'p50', 'p95', 'max', `goal p95 < ${GOAL_P95_MS} ms`]];
let worstList = 0;
try {
  const token = await login(svc.url, setup.email, setup.password);
  const headers = { authorization: `Bearer ${token}` };
  const scope = await fetch(`${svc.url}/api/context`, {
    method: 'PATCH', headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify({ organizationId: org.id, workspaceId: ws.id, projectId: project.id }),
  });
  if (scope.status !== 200) throw new Error(`PATCH /api/context: ${scope.status} ${await scope.text()}`);

  // The by-id request walks through runs spread over the project (every status), one per request.
  const spread = Array.from({ length: REQUESTS + WARMUP }, (_, i) => measured[Math.floor((i * measured.length) / (REQUESTS + WARMUP))].id);
  const cases: Array<{ label: string; list: boolean; path: (i: number) => string; check: (body: any, i: number) => number }> = [
    { label: 'GET /api/workflows/runs?limit=50', list: true, path: () => '/api/workflows/runs?limit=50', check: (b) => checkList('newest 50', b, null, 50) },
    { label: 'GET /api/workflows/runs?status=blocked&limit=50', list: true, path: () => '/api/workflows/runs?status=blocked&limit=50', check: (b) => checkList('blocked', b, 'blocked', 50) },
    { label: 'GET /api/workflows/runs?status=completed&limit=200', list: true, path: () => '/api/workflows/runs?status=completed&limit=200', check: (b) => checkList('completed', b, 'completed', 200) },
    { label: 'GET /api/workflows/runs/:id', list: false, path: (i) => `/api/workflows/runs/${spread[i]}`, check: (b, i) => checkRun(`run ${spread[i]}`, b, spread[i]) },
  ];
  for (const c of cases) {
    const times: number[] = [];
    let results = 0;
    for (let i = 0; i < WARMUP + REQUESTS; i++) {
      const start = performance.now();
      const res = await fetch(`${svc.url}${c.path(i)}`, { headers });
      const body = await res.json();
      const ms = performance.now() - start;
      if (res.status !== 200) throw new Error(`${c.path(i)}: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
      results = c.check(body, i);
      if (i >= WARMUP) times.push(ms);
    }
    const p95 = percentile(times, 95);
    if (c.list) worstList = Math.max(worstList, p95);
    rows.push([c.label, num(results), `${num(percentile(times, 50), 2)} ms`, `${num(p95, 2)} ms`, `${num(Math.max(...times), 2)} ms`,
      c.list ? goal(p95 < GOAL_P95_MS) : '-']);
  }
} finally {
  await svc.stop();
}
printTable(`Workflow runs: ${num(RUNS)} runs of ${TEMPLATE_ID} v1 in the project (${PROJECTS} projects, ${num(totals.runs)} runs in the database), ${REQUESTS} sequential requests each after ${WARMUP} warm-up`, rows, [
  `worst list p95 ${num(worstList, 2)} ms (goal < ${GOAL_P95_MS} ms: ${goal(worstList < GOAL_P95_MS)}); times include the HTTP round trip; every answer checked (200, ids, derived status, project)`,
  `measured project: ${mix}`,
  `seeded in ${num(seedSeconds, 1)} s through the store's SQL (one transaction, synchronous=normal): ${num(totals.runs)} runs, ${num(totals.steps)} steps, ${num(totals.jobs)} jobs, ${num(totals.gates)} gates`,
]);
