// The worker's claim (src/generation/jobs/claim.ts) and the notification outbox's (claimDue) on both
// engines, with several claimers at once: on PostgreSQL each runs on its own pool (as separate
// processes would), and FOR UPDATE SKIP LOCKED must hand every job or row to exactly one of them.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { openDb, type Db } from '../../src/db/db.ts';
import { openPostgres } from '../../src/db/postgres.ts';
import { migrate } from '../../src/db/migrate.ts';
import { claimForRun, claimJobs, claimSql, type ClaimedJob, type ClaimRide } from '../../src/generation/jobs/claim.ts';
import { completeChats } from '../../src/generation/jobs/settle.ts';
import { batchedCompletions } from '../../src/generation/worker/completions.ts';
import { claimDue } from '../../src/platform/notifications/store.ts';
import { tempDir } from '../helpers/server.ts';
import { freshDatabaseUrl } from '../helpers/postgres.ts';

const T0 = '2026-01-01T00:00:00.000Z';
const NOW = '2026-01-01T00:01:00.000Z';
const JOBS = 60;
const CLAIMERS = 4;

/**
 * `CLAIMERS` handles on one new database: PostgreSQL pools, or on SQLite one connection shared (its
 * transactions queue; connections of one thread would block each other's event loop on the lock).
 */
const ENGINES: Record<string, (t: TestContext) => Promise<Db[]>> = {
  sqlite: async (t) => {
    const db = openDb(path.join(tempDir(t), 'svc.db'));
    t.after(() => db.close());
    return Array.from({ length: CLAIMERS }, () => db);
  },
  postgres: async (t) => {
    const dbs: Db[] = [];
    const url = await freshDatabaseUrl(t, async () => { for (const db of dbs) await db.close(); });
    for (let i = 0; i < CLAIMERS; i++) dbs.push(await openPostgres({ url, max: 3 }));
    return dbs;
  },
};

async function world(db: Db): Promise<void> {
  await migrate(db);
  await db.tx(async () => {
    await db.run("INSERT INTO organizations (id, name, created_at) VALUES ('org_1', 'Studio', ?)", T0);
    await db.run("INSERT INTO workspaces (id, organization_id, name, created_at) VALUES ('ws_1', 'org_1', 'Drama', ?)", T0);
    await db.run("INSERT INTO projects (id, organization_id, workspace_id, name, created_at, updated_at) VALUES ('prj_1', 'org_1', 'ws_1', 'Pilot', ?, ?)", T0, T0);
    await db.run(`INSERT INTO model_connectors (id, organization_id, label, endpoint, kind, cost_mode, status, created_at, updated_at)
      VALUES ('con_1', 'org_1', 'local', 'http://127.0.0.1:1', 'openai-compatible', 'local', 'ready', ?, ?)`, T0, T0);
    for (let i = 0; i < JOBS; i++) {
      await db.run(`INSERT INTO generation_jobs (id, organization_id, workspace_id, project_id, connector_id, kind, status, priority, created_at, updated_at)
        VALUES (?, 'org_1', 'ws_1', 'prj_1', 'con_1', 'image', 'queued', ?, ?, ?)`, `job_${String(i).padStart(3, '0')}`, i % 3, T0, T0);
    }
  });
}

for (const engine of Object.keys(ENGINES)) {
  test(`${engine}: a claim reads the job's call with it: the connector as it is then (a change or a pause counts from the next claim), the names`, async (t) => {
    const [db] = await ENGINES[engine](t);
    await world(db);
    const connector = {
      id: 'con_1', label: 'local', endpoint: 'http://127.0.0.1:1', kind: 'openai-compatible', capability: '[]', cost_mode: 'local', auth_env: null, protocol: '{}',
    };
    const claim = async () => (await db.tx(() => claimJobs(db, 'w', NOW, 1)))[0];
    const job = await claim();
    assert.deepEqual(job.call, { connector, organizationName: 'Studio', projectName: 'Pilot' });
    assert.deepEqual(Object.keys(job).filter((k) => k.startsWith('call')), ['call'], 'only the job\'s columns and its call');
    assert.deepEqual({ ...job, call: undefined }, { ...(await db.get('SELECT * FROM generation_jobs WHERE id = ?', job.id))!, call: undefined });
    await db.run("UPDATE model_connectors SET label = 'renamed', endpoint = 'http://127.0.0.1:2', protocol = '{\"models\":{\"image\":\"m\"}}', auth_env = 'SVC_X' WHERE id = 'con_1'");
    await db.run("UPDATE organizations SET name = 'Studio 2' WHERE id = 'org_1'");
    await db.run("UPDATE projects SET name = 'Pilot 2' WHERE id = 'prj_1'");
    assert.deepEqual((await claim()).call, {
      connector: { ...connector, label: 'renamed', endpoint: 'http://127.0.0.1:2', protocol: '{"models":{"image":"m"}}', auth_env: 'SVC_X' },
      organizationName: 'Studio 2', projectName: 'Pilot 2',
    });
    await db.run("UPDATE model_connectors SET status = 'disabled' WHERE id = 'con_1'");
    assert.equal(await claim(), undefined, 'a paused connector: nothing claimed');
    await db.run("UPDATE model_connectors SET status = 'ready' WHERE id = 'con_1'");
    assert.equal((await claim()).call.connector?.label, 'renamed');
    // A compose job has no connector; a manual run's claim reads the call too.
    await db.run(`INSERT INTO generation_jobs (id, organization_id, workspace_id, project_id, kind, status, priority, created_at, updated_at)
      VALUES ('job_compose', 'org_1', 'ws_1', 'prj_1', 'compose', 'queued', 9, ?, ?)`, T0, T0);
    assert.deepEqual((await claim()).call, { connector: null, organizationName: 'Studio 2', projectName: 'Pilot 2' });
    const run = await db.tx(() => claimForRun(db, 'job_059', 'run:u', NOW));
    assert.equal(run?.call.connector?.endpoint, 'http://127.0.0.1:2');
  });

  test(`${engine}: concurrent claims by several workers lease every job exactly once, in priority then age order`, async (t) => {
    const dbs = await ENGINES[engine](t);
    await world(dbs[0]);
    const taken = new Map<string, string>();
    const rounds = await Promise.all(dbs.map(async (db, w) => {
      const mine: string[] = [];
      for (;;) {
        const jobs = await db.tx(() => claimJobs(db, `worker-${w}`, NOW, 2));
        if (jobs.length === 0) return mine;
        for (const j of jobs) {
          assert.equal(taken.get(j.id), undefined, `${j.id} claimed by worker-${w} and ${taken.get(j.id)}`);
          taken.set(j.id, `worker-${w}`);
          assert.deepEqual([j.status, j.leased_by, j.attempt], ['running', `worker-${w}`, 1]);
          mine.push(j.id);
        }
      }
    }));
    assert.equal(taken.size, JOBS);
    const rows = await dbs[0].all<{ leased_by: string; attempt: number }>('SELECT leased_by, attempt FROM generation_jobs');
    assert.ok(rows.every((r) => r.attempt === 1 && taken.size === JOBS), 'no job leased twice');
    assert.ok(rounds.filter((r) => r.length > 0).length >= 2, 'the work was shared');
    // One claimer alone takes the highest priority first.
    await dbs[0].run("UPDATE generation_jobs SET status = 'queued', attempt = 0, leased_by = NULL");
    const first = await dbs[0].tx(() => claimJobs(dbs[0], 'solo', NOW, 3));
    assert.deepEqual(first.map((j) => j.id), ['job_002', 'job_005', 'job_008']);
  });

  test(`${engine}: concurrent outbox claims take each due row once`, async (t) => {
    const dbs = await ENGINES[engine](t);
    await world(dbs[0]);
    await dbs[0].tx(async () => {
      await dbs[0].run("INSERT INTO notification_channels (id, organization_id, kind, created_at, updated_at) VALUES ('ch_1', 'org_1', 'log', ?, ?)", T0, T0);
      for (let i = 0; i < JOBS; i++) {
        await dbs[0].run(`INSERT INTO notification_outbox (id, organization_id, channel_id, event_id, category, type, payload, next_attempt_at, created_at)
          VALUES (?, 'org_1', 'ch_1', ?, 'jobs', 'job.completed', '{}', ?, ?)`, `out_${String(i).padStart(3, '0')}`, `evt_${i}`, T0, T0);
      }
    });
    const seen = new Set<string>();
    await Promise.all(dbs.map(async (db) => {
      for (;;) {
        const rows = await db.tx(() => claimDue(db, NOW, '2026-01-01T00:02:00.000Z', 3));
        if (rows.length === 0) return;
        for (const r of rows) {
          assert.ok(!seen.has(r.id), `${r.id} claimed twice`);
          seen.add(r.id);
        }
      }
    }));
    assert.equal(seen.size, JOBS);
  });
}

test('postgres: the worker\'s connections plan the claim once, as an ordered walk of the claim index, whatever the statistics say', async (t) => {
  const pools: Db[] = [];
  const url = await freshDatabaseUrl(t, async () => { for (const db of pools) await db.close(); });
  const plain = await openPostgres({ url, max: 1 });
  const worker = await openPostgres({ url, max: 1, workerPlans: true });
  pools.push(plain, worker);
  await world(plain);
  // A burst of queued jobs into a table never analyzed: the statistics say a handful are queued.
  await plain.tx(async () => {
    for (let i = 0; i < 3000; i++) {
      await plain.run(`INSERT INTO generation_jobs (id, organization_id, workspace_id, project_id, connector_id, kind, status, priority, created_at, updated_at)
        VALUES (?, 'org_1', 'ws_1', 'prj_1', 'con_1', 'image', 'queued', 0, ?, ?)`, `burst_${String(i).padStart(4, '0')}`, NOW, NOW);
    }
  });
  const plan = async (db: Db) => (await db.all<{ 'QUERY PLAN': string }>(`EXPLAIN ${claimSql(db.dialect, 1)}`, 'w', NOW, null)).map((r) => r['QUERY PLAN']).join('\n');
  const planned = await plan(worker);
  assert.match(planned, /Index Scan using generation_jobs_claim/);
  assert.doesNotMatch(planned, /Bitmap|Sort/);
  // Without it, this plan reads every queued job and sorts them for each claim (what workerPlans prevents).
  assert.match(await plan(plain), /Bitmap Heap Scan on generation_jobs/);
  // The plan the worker's prepared claim keeps (generic: planned once, whatever the parameters) is that walk too.
  await worker.run(`PREPARE generic_claim (text, text, text) AS ${claimSql(worker.dialect, 1).replace(/\?(\d)/g, '$$$1')}`);
  const generic = (await worker.all<{ 'QUERY PLAN': string }>(`EXPLAIN EXECUTE generic_claim ('w', '${NOW}', NULL)`)).map((r) => r['QUERY PLAN']).join('\n');
  assert.match(generic, /Index Scan using generation_jobs_claim/);
  assert.doesNotMatch(generic, /Bitmap|Sort/);
  await worker.run('DEALLOCATE generic_claim');
  const claims = [];
  for (let i = 0; i < 8; i++) claims.push(...await worker.tx(() => claimJobs(worker, 'w', NOW, 1)));
  assert.equal(claims[0].id, 'job_002', 'still the highest priority, then the oldest');
  assert.equal(new Set(claims.map((j) => j.id)).size, 8);
  // Prepared after its first runs (pg-statements.ts), the claim was planned once (generic) and never again per run.
  const plans = async (db: Db) => (await db.all<{ generic: number; custom: number }>(
    "SELECT generic_plans::int AS generic, custom_plans::int AS custom FROM pg_prepared_statements WHERE statement LIKE '%picked AS MATERIALIZED%'"))[0];
  const kept = await plans(worker);
  assert.ok(kept.generic >= 1, `generic plans: ${kept.generic}`);
  assert.equal(kept.custom, 0);
  // A connection left to choose plans it anew for its first runs at least (and, for the worker's statements, for ever).
  for (let i = 0; i < 8; i++) await plain.tx(() => claimJobs(plain, 'w2', NOW, 1));
  assert.ok((await plans(plain)).custom >= 1);
});

test('postgres: chat completions written together carry the worker\'s next claim: each job leased once under concurrent batches; a lost lease writes nothing of its own; children released to their parents', async (t) => {
  const dbs = await ENGINES.postgres(t);
  await world(dbs[0]);
  const HELD = 3;
  const DONE_AT = '2026-01-01T00:01:05.000Z';
  /** Completes `jobs` in one statement with a claim for `limit` slots riding on it. */
  const complete = async (db: Db, jobs: ClaimedJob[], worker: string, limit: number) => {
    const rode: ClaimedJob[][] = [];
    const ride: ClaimRide = { workerId: worker, now: NOW, limit, taken: (taken) => { rode.push(taken); } };
    const chats = jobs.map((job) => ({ job, lease: { jobId: job.id, leasedBy: worker, attempt: job.attempt }, output: `{"text":"${job.id}"}`, at: DONE_AT }));
    return { released: await completeChats(db, chats, ride), rode: rode.flat() };
  };
  const leasedTo = new Map<string, string>();
  const [reference] = await claimJobs(dbs[0], 'worker-0', NOW, 1);
  leasedTo.set(reference.id, 'worker-0');
  let batches = 0;
  await Promise.all(dbs.map(async (db, w) => {
    const worker = `worker-${w}`;
    let mine = w === 0 ? [reference] : await claimJobs(db, worker, NOW, HELD);
    for (const j of mine) leasedTo.set(j.id, worker);
    while (mine.length) {
      // The slots these completions free, and those no job holds.
      const { released, rode } = await complete(db, mine, worker, HELD);
      batches++;
      assert.deepEqual(released, mine.map(() => []));
      for (const j of rode) {
        assert.equal(leasedTo.get(j.id), undefined, `${j.id} leased to ${worker} and ${leasedTo.get(j.id)}`);
        leasedTo.set(j.id, worker);
        assert.deepEqual([j.status, j.leased_by, j.attempt], ['running', worker, 1]);
        assert.deepEqual(j.call, reference.call, 'the call read with the job, as a claim reads it');
        assert.deepEqual({ ...j, call: undefined }, { ...(await db.get('SELECT * FROM generation_jobs WHERE id = ?', j.id))!, call: undefined });
      }
      assert.ok(rode.length <= HELD);
      mine = rode;
    }
  }));
  assert.equal(leasedTo.size, JOBS);
  assert.ok(batches < JOBS, 'completions were written together');
  const db = dbs[0];
  assert.equal((await db.get<{ n: number }>("SELECT count(*) AS n FROM generation_jobs WHERE status = 'completed' AND attempt = 1 AND output = '{\"text\":\"' || id || '\"}'"))!.n, JOBS);
  assert.equal((await db.get<{ n: number }>("SELECT count(*) AS n FROM job_attempts WHERE outcome = 'completed' AND runner LIKE 'worker-%' AND latency_ms = 5000 AND finished_at = ?", DONE_AT))!.n, JOBS);
  assert.ok(new Set(leasedTo.values()).size >= 2, 'the work was shared');
  // In one statement: a completion whose lease was lost writes nothing of its own, the other's job
  // releases its blocked child (queued, for a later claim: the ride reads the queue as the statement
  // began), and the ride still claims (the slots are free either way).
  await db.run("UPDATE generation_jobs SET status = 'queued', attempt = 0, leased_by = NULL, output = NULL WHERE id IN ('job_000', 'job_003', 'job_006', 'job_009')");
  await db.run("UPDATE generation_jobs SET status = 'blocked', depends_on = 'job_003' WHERE id = 'job_006'");
  await db.run("INSERT INTO search_documents (doc_key, type, target_id, organization_id, workspace_id, project_id, title, status, target_tab, updated_at) VALUES ('job:job_003', 'job', 'job_003', 'org_1', 'ws_1', 'prj_1', 'image job', 'running', 'jobs', ?)", T0);
  await db.run("UPDATE generation_jobs SET priority = -1 WHERE id = 'job_009'");
  const held = await claimJobs(db, 'w', NOW, 2);
  assert.deepEqual(held.map((j) => j.id).sort(), ['job_000', 'job_003']);
  await db.run("UPDATE generation_jobs SET leased_by = 'someone-else' WHERE id = 'job_000'");
  const after = await complete(db, held, 'w', 2);
  assert.deepEqual(after.released, held.map((j) => (j.id === 'job_000' ? null : ['job_006'])));
  assert.deepEqual(after.rode.map((j) => [j.id, j.leased_by]), [['job_009', 'w']]);
  assert.equal((await db.get<{ status: string }>("SELECT status FROM generation_jobs WHERE id = 'job_006'"))!.status, 'queued');
  assert.deepEqual({ ...(await db.get('SELECT status, leased_by, output FROM generation_jobs WHERE id = ?', 'job_000')) }, { status: 'running', leased_by: 'someone-else', output: null });
  assert.deepEqual({ ...(await db.get('SELECT status, output FROM generation_jobs WHERE id = ?', 'job_003')) }, { status: 'completed', output: '{"text":"job_003"}' });
  assert.equal((await db.get<{ status: string }>("SELECT status FROM search_documents WHERE doc_key = 'job:job_003'"))!.status, 'completed');
  assert.equal((await db.get<{ n: number }>("SELECT count(*) AS n FROM job_attempts WHERE job_id = 'job_000' AND attempt = 1 AND runner = 'w'"))!.n, 0);
});

test('postgres: a statement of completions that fails writes each of them alone: the one that cannot be written fails alone, the others complete', async (t) => {
  const [db] = await ENGINES.postgres(t);
  await world(db);
  const jobs = await claimJobs(db, 'w', NOW, 3);
  const chat = (job: ClaimedJob, projectId = job.project_id) =>
    ({ job: { ...job, project_id: projectId }, lease: { jobId: job.id, leasedBy: 'w', attempt: job.attempt }, output: '{"text":"ok"}', at: NOW });
  const freed: string[] = [];
  const complete = batchedCompletions(db, () => null);
  // The first is written at once; the other two wait for it and go together. The second's attempt
  // names a project that does not exist, which fails their statement.
  const settled = await Promise.allSettled([
    complete(chat(jobs[0]), () => { freed.push(jobs[0].id); }),
    complete(chat(jobs[1], 'prj_missing'), () => { freed.push(jobs[1].id); }),
    complete(chat(jobs[2]), () => { freed.push(jobs[2].id); }),
  ]);
  assert.deepEqual(settled.map((s) => s.status), ['fulfilled', 'rejected', 'fulfilled']);
  assert.deepEqual(settled.map((s) => (s.status === 'fulfilled' ? s.value : null)), [[], null, []]);
  const rows = await db.all<{ id: string; status: string }>('SELECT id, status FROM generation_jobs WHERE id IN (?, ?, ?) ORDER BY id', ...jobs.map((j) => j.id));
  assert.deepEqual(Object.fromEntries(rows.map((r) => [r.id, r.status])), { [jobs[0].id]: 'completed', [jobs[1].id]: 'running', [jobs[2].id]: 'completed' });
  assert.equal((await db.get<{ n: number }>('SELECT count(*) AS n FROM job_attempts WHERE job_id = ?', jobs[1].id))!.n, 0, 'nothing half-written');
  assert.deepEqual(freed, [], 'no claim rode on them, so no slot was given back by one');
});
