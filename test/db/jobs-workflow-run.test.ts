// Jobs name their workflow run (generation_jobs.workflow_run_id, schema step 0016), so that the trigger
// that follows a run's jobs (workflow_runs_follow_jobs) fires for them only, on both engines: the step
// fills the column from the runs' steps on a database of version 15; a run still follows its jobs,
// and a job of no run changes no run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Db } from '../../src/db/db.ts';
import { migrate } from '../../src/db/migrate.ts';
import { ENGINES } from '../helpers/postgres.ts';
import { atVersion15 } from '../helpers/schema-steps.ts';

const T0 = '2026-01-01T00:00:00.000Z';

async function world(db: Db): Promise<void> {
  await db.tx(async () => {
    await db.run("INSERT INTO organizations (id, name, created_at) VALUES ('o1', 'Studio', ?)", T0);
    await db.run("INSERT INTO workspaces (id, organization_id, name, created_at) VALUES ('w1', 'o1', 'Drama', ?)", T0);
    await db.run("INSERT INTO projects (id, organization_id, workspace_id, name, created_at, updated_at) VALUES ('p1', 'o1', 'w1', 'Pilot', ?, ?)", T0, T0);
    await db.run(`INSERT INTO workflow_templates (id, scope, organization_id, template_key, version, created_at, updated_at)
      VALUES ('t1', 'organization', 'o1', 'k', 1, ?, ?)`, T0, T0);
    await db.run(`INSERT INTO workflow_template_versions (template_id, version, name, category, status, description, steps, gates, created_at)
      VALUES ('t1', 1, 'T', 'c', 'active', '', '[]', '[]', ?)`, T0);
    await db.run(`INSERT INTO workflow_runs (id, organization_id, workspace_id, project_id, template_id, template_version, mode, priority, approve_external, created_at)
      VALUES ('r1', 'o1', 'w1', 'p1', 't1', 1, 'queue', 0, 0, ?)`, T0);
    for (const id of ['ja', 'jb', 'jc']) {
      await db.run(`INSERT INTO generation_jobs (id, organization_id, workspace_id, project_id, kind, status, created_at, updated_at)
        VALUES (?, 'o1', 'w1', 'p1', 'chat', 'queued', ?, ?)`, id, T0, T0);
    }
    for (const [position, job] of [[1, 'ja'], [2, 'jb']] as const) {
      await db.run(`INSERT INTO workflow_run_steps (run_id, position, step_key, label, job_kind, job_id, preview, blockers)
        VALUES ('r1', ?, ?, 'S', 'chat', ?, '{}', '[]')`, position, `s${position}`, job);
    }
  });
}

const runOf = async (db: Db) => ({ ...(await db.get<{ status: string; revision: number }>("SELECT status, revision FROM workflow_runs WHERE id = 'r1'"))! });

for (const engine of Object.keys(ENGINES)) {
  test(`${engine}: step 0016 names each step's job's run; the run follows its jobs, a job of no run changes no run`, async (t) => {
    const db = await ENGINES[engine](t);
    await migrate(db);
    await atVersion15(db);
    await world(db);
    assert.deepEqual((await migrate(db)).applied, ['0016-jobs-name-their-workflow-run.sql']);
    assert.deepEqual((await db.all('SELECT id, workflow_run_id FROM generation_jobs ORDER BY id')).map((r) => ({ ...r })),
      [{ id: 'ja', workflow_run_id: 'r1' }, { id: 'jb', workflow_run_id: 'r1' }, { id: 'jc', workflow_run_id: null }]);
    const before = await runOf(db);
    assert.equal(before.status, 'queued');
    await db.run("UPDATE generation_jobs SET status = 'running', attempt = 1 WHERE id = 'jc'");
    await db.run("UPDATE generation_jobs SET status = 'completed' WHERE id = 'jc'");
    assert.deepEqual(await runOf(db), before, 'a job of no run: the run untouched');
    await db.run("UPDATE generation_jobs SET status = 'running', attempt = 1 WHERE id = 'ja'");
    assert.deepEqual(await runOf(db), { status: 'running', revision: before.revision + 1 });
    await db.run("UPDATE generation_jobs SET status = 'completed' WHERE id IN ('ja', 'jb')");
    assert.deepEqual(await runOf(db), { status: 'completed', revision: before.revision + 3 });
  });
}
