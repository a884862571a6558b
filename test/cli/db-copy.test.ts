// svc db copy as a real child process: an installation built through the HTTP API on SQLite (users, an
// organization, tasks, a script, jobs and a workflow run whose status follows its steps through
// triggers, a job that depends on a later one, values past 2^53, bytes, a fraction and text beyond
// ASCII) copied into a fresh PostgreSQL database that `svc migrate` prepared (counts per table, the
// audit chain on the target, the copy recorded there), then back from PostgreSQL into a new empty
// data folder, where every table holds exactly the original rows. A target with data is refused and
// left unchanged; the PostgreSQL password never shows. Needs the test PostgreSQL server
// (test/helpers/postgres.ts). Until the audit chain has its head table on PostgreSQL (schema version
// 15), `svc audit verify` cannot run there: a copy to PostgreSQL then fails its chain check and is
// rolled back, which is what the first test checks instead.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { serversRunTheWorker, tempDir, type TestServer } from '../helpers/server.ts';
import { createJob, jobWorld, waitJob } from '../helpers/jobs.ts';
import { freshDatabaseUrl } from '../helpers/postgres.ts';
import { Sandbox, describe, type Result } from '../helpers/cli.ts';
import { openPostgres } from '../../src/db/postgres.ts';

serversRunTheWorker();

const PASSWORD = 'Sekr3t-pw-of-the-copy';
/** The audit chain can be verified on PostgreSQL (its head is a table, audit_chain_head). */
const CHAIN_ON_POSTGRES = fs.readFileSync(new URL('../../schema.pg.sql', import.meta.url), 'utf8').includes('audit_chain_head');
const BIG = 9_007_199_254_740_993n; // 2^53 + 1: not a double
const HUGE_ID = 4_611_686_018_427_387_904n; // 2^62

/** Polls a workflow run until it is done (completed, blocked, failed or awaiting QA). */
async function settledRun(s: TestServer, token: string, id: string): Promise<string> {
  const until = Date.now() + 60_000;
  for (;;) {
    const r = await s.call('GET', `/api/workflows/runs/${id}`, { token });
    assert.equal(r.status, 200, r.text);
    if (['completed', 'blocked', 'failed', 'awaiting_qa', 'cancelled'].includes(r.body.status)) return r.body.status as string;
    if (Date.now() > until) assert.fail(`run ${id} is still ${r.body.status}`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

/** An installation on SQLite built through the API, stopped; its data folder. */
async function installation(t: TestContext): Promise<string> {
  const { s, token, tree, id } = await jobWorld(t, { env: { SVC_DATABASE: 'sqlite' } });
  for (const title of ['Lantern rig', 'Rain over the station – 雨の駅']) {
    const r = await s.call('POST', '/api/tasks', { token, body: { title, description: `The ${title} needs a check.` } });
    assert.equal(r.status, 201, r.text);
  }
  const season = await s.call('POST', '/api/production/seasons', { token, body: { title: 'Season 1' } });
  const episode = await s.call('POST', `/api/production/seasons/${season.body.id}/episodes`, { token, body: { title: 'Cold open' } });
  assert.equal(episode.status, 201, episode.text);
  const saved = await s.call('PUT', `/api/production/script/episodes/${episode.body.id}`, {
    token, body: { baseRevision: 0, scenes: [{ heading: 'INT. STATION - NIGHT', lines: [{ kind: 'action', text: 'Rain. 🌧' }] }] },
  });
  assert.equal(saved.status, 200, saved.text);
  const image = await createJob(s, token, { kind: 'image', connectorId: id });
  const video = await createJob(s, token, { kind: 'video', connectorId: id, dependsOn: image.id, prompt: 'the lantern swings' });
  await waitJob(s, token, video.id, ['completed']);
  const shot = (await s.db.get<{ id: string }>('SELECT id FROM shots WHERE project_id = ? ORDER BY position', tree.projectId))!;
  const tpl = await s.call('POST', '/api/workflows/templates', {
    token, body: { name: 'Two steps', templateKey: 'two', status: 'active', steps: [
      { key: 'still', label: 'Still', jobKind: 'image', requiresShot: true },
      { key: 'voice', label: 'Voice', jobKind: 'tts', requiresShot: true, prompt: '{{shot.title}} says hello' },
    ] },
  });
  assert.equal(tpl.status, 201, tpl.text);
  const run = await s.call('POST', `/api/workflows/templates/${tpl.body.id}/instantiate`, { token, body: { mode: 'queue', shotId: shot.id } });
  assert.equal(run.status, 201, run.text);
  assert.equal(await settledRun(s, token, run.body.id), 'completed');
  // What the API does not write: a job depending on one whose id sorts after its own (the copy must
  // not rely on key order for that reference), 64-bit values, bytes with a zero in them.
  await s.db.run(`INSERT INTO generation_jobs (id, organization_id, workspace_id, project_id, kind, status, depends_on, created_at, updated_at)
    VALUES ('job_0000', ?, ?, ?, 'image', 'cancelled', ?, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')`,
  tree.organizationId, tree.workspaceId, tree.projectId, video.id);
  await s.db.run('INSERT INTO attempt_limits (id, bucket, key_hash, at_ms, expires_at_ms) VALUES (?, ?, ?, ?, ?)', HUGE_ID, 'login', 'h'.repeat(64), BIG, BIG);
  const user = await s.db.get<{ user_id: string }>('SELECT user_id FROM memberships LIMIT 1');
  await s.db.run("INSERT INTO mfa_factors (user_id, status, secret_enc, key_id, created_at, updated_at) VALUES (?, 'pending', ?, 'k1', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')",
    user!.user_id, Buffer.from([0, 1, 2, 255, 0, 42]));
  await s.close();
  return s.config.dataDir;
}

/** Every plain table of a SQLite file (FTS tables and sqlite_ ones aside) with its rows in key order, 64-bit integers exact. */
function sqliteRows(file: string): Map<string, unknown[]> {
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    const out = new Map<string, unknown[]>();
    const tables = db.prepare("SELECT name FROM pragma_table_list WHERE schema = 'main' AND type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").all() as Array<{ name: string }>;
    for (const { name } of tables) {
      const key = (db.prepare('SELECT name FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk').all(name) as Array<{ name: string }>).map((c) => c.name);
      const st = db.prepare(`SELECT * FROM ${name} ORDER BY ${key.length ? key.join(', ') : 'rowid'}`);
      st.setReadBigInts(true);
      out.set(name, st.all().map((r) => ({ ...r })));
    }
    const sequence = db.prepare('SELECT * FROM sqlite_sequence ORDER BY name');
    sequence.setReadBigInts(true);
    out.set('sqlite_sequence', sequence.all().map((r) => ({ ...r })));
    return out;
  } finally {
    db.close();
  }
}

interface CopyJson {
  from: { engine: string; database: string };
  to: { engine: string; database: string };
  schemaVersion: number;
  tables: Array<{ table: string; source: number; target: number; same: boolean }>;
  rows: number;
  derived: string[];
  same: boolean;
  chain: { ok: boolean; rows: number; headSeq: number | null; headHash: string };
}

function parsed(r: Result): CopyJson {
  assert.equal(r.code, 0, describe(r));
  return JSON.parse(r.stdout) as CopyJson;
}

test('svc db copy moves an installation from SQLite to PostgreSQL and back, every row the same', async (t) => {
  const dataDir = await installation(t);
  const original = sqliteRows(path.join(dataDir, 'svc.db'));
  const sb = new Sandbox(t, { database: 'sqlite' }); // the commands name their engines themselves
  const url = new URL(await freshDatabaseUrl(t));
  url.password = PASSWORD;
  const pgEnv = { SVC_POSTGRES_URL: url.toString() };
  const label = `postgres://${url.host}${url.pathname}`;

  // A target with the schema and no rows (svc migrate) counts as empty.
  const migrated = await sb.run(['migrate', '--data-dir', dataDir], { env: { ...pgEnv, SVC_DATABASE: 'postgres' } });
  assert.equal(migrated.code, 0, describe(migrated));

  const sourceBytes = fs.readFileSync(path.join(dataDir, 'svc.db'));
  const there = await sb.run(['db', 'copy', '--from', 'sqlite', '--to', 'postgres', '--data-dir', dataDir, '--json'], { env: pgEnv });
  assert.ok(fs.readFileSync(path.join(dataDir, 'svc.db')).equals(sourceBytes), 'the source is only read');
  assert.ok(!there.stdout.includes(PASSWORD) && !there.stderr.includes(PASSWORD), 'the password is never shown');
  if (!CHAIN_ON_POSTGRES) {
    assert.equal(there.code, 1, describe(there));
    assert.equal(JSON.parse(there.stderr).error.code, 'internal_error');
    const pg = await openPostgres({ url: url.toString() });
    try {
      assert.deepEqual(await pg.get('SELECT (SELECT count(*) FROM users) + (SELECT count(*) FROM audit_log) AS n'), { n: 0 }, 'the copy was rolled back');
    } finally {
      await pg.close();
    }
    t.diagnostic('the audit chain cannot be verified on PostgreSQL before schema version 15: the copy was rolled back');
    return;
  }
  const report = parsed(there);
  assert.deepEqual([report.from, report.to], [{ engine: 'sqlite', database: path.join(dataDir, 'svc.db') }, { engine: 'postgres', database: label }]);
  assert.ok(report.same);
  assert.ok(report.tables.length >= 70, `${report.tables.length} tables`);
  for (const tbl of report.tables) {
    assert.equal(tbl.source, original.get(tbl.table)!.length, `${tbl.table}: rows read`);
    assert.equal(tbl.target, tbl.source, `${tbl.table}: rows written`);
  }
  assert.deepEqual(report.derived, ['search_fts']);
  assert.equal(report.rows, report.tables.reduce((n, x) => n + x.source, 0));
  const audited = original.get('audit_log')!;
  assert.ok(audited.length > 10);
  assert.deepEqual([report.chain.ok, report.chain.rows, report.chain.headSeq], [true, audited.length, Number((audited.at(-1) as { seq: bigint }).seq)]);

  // The target as the service reads it: the search index filled by its triggers, the counters moved
  // on, the run as the source had it, and the copy recorded after the copied chain.
  const pg = await openPostgres({ url: url.toString() });
  try {
    assert.deepEqual(await pg.get('SELECT count(*) AS n FROM search_fts'), await pg.get('SELECT count(*) AS n FROM search_documents'));
    assert.ok((await pg.get<{ n: number }>('SELECT count(*) AS n FROM search_fts WHERE title LIKE ?', '%雨の駅%'))!.n === 1);
    await pg.run("INSERT INTO attempt_limits (bucket, key_hash, at_ms, expires_at_ms) VALUES ('login', 'x', 1, 1)");
    assert.deepEqual(await pg.allBig('SELECT max(id) AS n FROM attempt_limits'), [{ n: HUGE_ID + 1n }]);
    const last = await pg.all<{ action: string; actor_type: string; metadata: string }>('SELECT action, actor_type, metadata FROM audit_log ORDER BY seq DESC LIMIT 1');
    assert.deepEqual(last.map((r) => [r.action, r.actor_type]), [['system.database.copied', 'operator']]);
    assert.deepEqual(JSON.parse(last[0].metadata).to, { engine: 'postgres', database: label });
    await pg.run('DELETE FROM attempt_limits WHERE key_hash = ?', 'x');
  } finally {
    await pg.close();
  }

  // Copying again into what now holds data is refused, and nothing changes there.
  const again = await sb.run(['db', 'copy', '--from', 'sqlite', '--to', 'postgres', '--data-dir', dataDir, '--json'], { env: pgEnv });
  assert.equal(again.code, 1, describe(again));
  assert.equal(again.stdout, '');
  const refusal = JSON.parse(again.stderr) as { error: { code: string; message: string; details: { tables: string[] } } };
  assert.equal(refusal.error.code, 'database_not_empty');
  assert.ok(refusal.error.details.tables.includes('users'), again.stderr);
  assert.match(refusal.error.message, new RegExp(`^postgres ${label.replace(/[/.]/g, '\\$&')}: the target is not empty`));
  assert.ok(!again.stderr.includes(PASSWORD));

  // And back, as text, into a new data folder.
  const backDir = path.join(tempDir(t), 'data');
  const back = await sb.run(['db', 'copy', '--from', 'postgres', '--to', 'sqlite', '--data-dir', backDir], { env: pgEnv });
  assert.equal(back.code, 0, describe(back));
  assert.match(back.stdout, /the same on both sides/);
  assert.match(back.stdout, /audit chain intact on the target/);
  assert.ok(!back.stdout.includes(PASSWORD) && !back.stderr.includes(PASSWORD), 'the password is never shown');
  const copy = sqliteRows(path.join(backDir, 'svc.db'));
  assert.deepEqual([...copy.keys()], [...original.keys()]);
  for (const [table, rows] of original) {
    if (table === 'audit_log' || table === 'audit_chain_head' || table === 'sqlite_sequence') continue;
    assert.deepEqual(copy.get(table), rows, table);
  }
  // The audit log: the original rows, then the record of each copy.
  const log = copy.get('audit_log') as Array<{ seq: bigint; action: string }>;
  assert.deepEqual(log.slice(0, audited.length), audited);
  assert.deepEqual(log.slice(audited.length).map((r) => r.action), ['system.database.copied', 'system.database.copied']);
  for (const head of (copy.get('audit_chain_head') ?? []) as Array<{ seq: bigint }>) assert.equal(head.seq, log.at(-1)!.seq, 'the chain head is the last record');
  const sequence = (rows: unknown[]) => (rows as Array<{ name: string; seq: bigint }>).map((r) => [r.name, r.seq]);
  assert.deepEqual(sequence(copy.get('sqlite_sequence')!), sequence(original.get('sqlite_sequence')!).map(([name, seq]) => [name, name === 'audit_log' ? (seq as bigint) + 2n : seq]));
  // The search index of the copy answers as the original's.
  const match = (file: string) => {
    const db = new DatabaseSync(file, { readOnly: true });
    try {
      return db.prepare("SELECT rowid, title FROM search_fts WHERE search_fts MATCH '\"lantern\"' ORDER BY rowid").all().map((r) => ({ ...r }));
    } finally {
      db.close();
    }
  };
  const found = match(path.join(dataDir, 'svc.db'));
  assert.ok(found.length > 0);
  assert.deepEqual(match(path.join(backDir, 'svc.db')), found);
});

test('svc db copy refuses the same engine twice, a missing source and a missing SVC_POSTGRES_URL', async (t) => {
  const sb = new Sandbox(t, { database: 'sqlite' }); // the commands name their engines themselves
  const same = await sb.run(['db', 'copy', '--from', 'sqlite', '--to', 'sqlite', ...sb.dirs, '--json']);
  assert.equal(same.code, 1, describe(same));
  assert.equal(JSON.parse(same.stderr).error.code, 'validation_failed');
  const none = await sb.run(['db', 'copy', '--from', 'sqlite', '--to', 'postgres', ...sb.dirs], { env: { SVC_POSTGRES_URL: 'postgres://u:p@127.0.0.1:1/x' } });
  assert.equal(none.code, 1, describe(none));
  assert.match(none.stderr, /^svc: no database to copy at .*svc\.db\n$/);
  const noUrl = await sb.run(['db', 'copy', '--from', 'postgres', '--to', 'sqlite', ...sb.dirs, '--json']);
  assert.equal(noUrl.code, 1, describe(noUrl));
  assert.deepEqual(JSON.parse(noUrl.stderr).error.code, 'invalid_configuration');
  assert.match(JSON.parse(noUrl.stderr).error.message, /--from postgres needs SVC_POSTGRES_URL/);
});
