// The audit log's hash chain checked by `svc audit verify` as a child process after edits through a
// second connection to the database (SQLite's file, or the PostgreSQL server's database).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';
import { databaseEnvOf, startTestServer, type TestServer } from '../helpers/server.ts';
import { childEnv } from '../helpers/cli.ts';
import { dropTrigger } from '../helpers/sql.ts';
import { login, member } from '../helpers/factories.ts';
import { seed, type Row, world } from './audit-setup.ts';

const BIN_SVC = fileURLToPath(new URL('../../bin/svc', import.meta.url));

function svc(s: TestServer, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [BIN_SVC, ...args, '--data-dir', s.config.dataDir, '--storage-dir', s.config.storageDir], {
    env: childEnv(databaseEnvOf(s.config)), stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => { stdout += c; });
  child.stderr.setEncoding('utf8').on('data', (c: string) => { stderr += c; });
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => { clearTimeout(timer); resolve({ code, stdout, stderr }); });
  });
}

/** Runs `sql` on a second connection to the server's database, as the sqlite3 shell or psql would open it. */
async function tamper(s: TestServer, t: TestContext, ...sql: string[]): Promise<void> {
  if (s.config.database === 'postgres') {
    const client = new pg.Client({ connectionString: s.config.postgresUrl });
    await client.connect();
    try {
      for (const q of sql) await client.query(q);
    } finally {
      await client.end();
    }
    return;
  }
  const db = new DatabaseSync(path.join(s.config.dataDir, 'svc.db'));
  t.after(() => { if (db.isOpen) db.close(); });
  for (const q of sql) db.exec(q);
  db.close();
}

/** The canonical text of an audit row (schema.sql): JSON.stringify of its hashed values, then prev_hash. */
const canonical = (r: Row): string => JSON.stringify([r.id, r.created_at, r.actor_type, r.actor_user_id, r.actor_name, r.organization_id,
  r.workspace_id, r.project_id, r.action, r.target_type, r.target_id, r.result, r.metadata, r.ip, r.user_agent, r.request_id, r.prev_hash]);

test('hash chain: svc audit verify passes, then names the row edited, re-hashed or removed through another connection', async (t) => {
  const s = await startTestServer(t);
  const w = await world(s);
  // Awkward content the canonical text must survive, and appends from another process in between.
  // (PostgreSQL's text holds no U+0000: there the name has the other control characters only.)
  const odd = s.db.engine === 'postgres' ? 'Nul\nl 🎬 "q" \\ \u2028' : 'N\u0000ul\nl 🎬 "q" \\ \u2028';
  await seed(s, { organizationId: w.A.organizationId, action: 'odd.text', actorName: odd, metadata: { k: '\u0001\u007f' } });
  const cli = await svc(s, ['orgs', 'create', '--name', 'From the CLI', '--owner', w.ownerA.user.email, '--json']);
  assert.equal(cli.code, 0, cli.stderr);
  await login(s, w.ownerA.user);

  const ok = await svc(s, ['audit', 'verify', '--json']);
  assert.equal(ok.code, 0, ok.stderr);
  const report = JSON.parse(ok.stdout);
  const rows = await s.db.all<Row>('SELECT seq, id, prev_hash, hash FROM audit_log ORDER BY seq');
  assert.deepEqual(report, { ok: true, rows: rows.length, headSeq: rows.at(-1)!.seq, headHash: rows.at(-1)!.hash, broken: null });
  assert.equal(rows[0].prev_hash, '0'.repeat(64), 'the first row chains to the genesis value');
  for (let i = 1; i < rows.length; i++) assert.equal(rows[i].prev_hash, rows[i - 1].hash, `seq ${rows[i].seq} links to the row before`);
  const text = await svc(s, ['audit', 'verify']);
  assert.equal(text.code, 0);
  assert.match(text.stdout, new RegExp(`^audit log intact: ${rows.length} rows; head seq ${rows.at(-1)!.seq} hash [0-9a-f]{64}\\n$`));

  // The database refuses edits while its triggers are there.
  await assert.rejects(async () => await s.db.run("UPDATE audit_log SET action = 'x' WHERE seq = 1"), /append-only/);

  // Edited content: that row's own hash no longer matches.
  const victim = rows[Math.floor(rows.length / 2)];
  await tamper(s, t, dropTrigger(s.db.engine, 'audit_log_no_update', 'audit_log'), `UPDATE audit_log SET metadata = '{"tampered":true}' WHERE seq = ${victim.seq}`);
  const edited = await svc(s, ['audit', 'verify', '--json']);
  assert.equal(edited.code, 1, edited.stderr);
  // With --json the error is one JSON document on stderr (the report stays on stdout).
  const editedError = JSON.parse(edited.stderr).error;
  assert.equal(editedError.code, 'audit_chain_broken');
  assert.equal(editedError.message, `audit chain broken at seq ${victim.seq} (id ${victim.id}): its content does not match its hash (the row or its hash was changed)`);
  assert.deepEqual(JSON.parse(edited.stdout).broken, { seq: victim.seq, id: victim.id, problem: 'hash', message: editedError.message });
  assert.deepEqual(editedError.details.broken, JSON.parse(edited.stdout).broken);
  const plain = await svc(s, ['audit', 'verify']);
  assert.equal(plain.code, 1);
  assert.equal(plain.stdout, '');
  assert.match(plain.stderr, new RegExp(`seq ${victim.seq} \\(id ${victim.id}\\)`));
  assert.equal(plain.stderr, `svc: ${editedError.message}\n`);

  // The editor recomputes that row's hash: now the next row's link names the break.
  const changed = (await s.db.get<Row>('SELECT * FROM audit_log WHERE seq = ?', victim.seq))!;
  await tamper(s, t, `UPDATE audit_log SET hash = '${createHash('sha256').update(canonical(changed)).digest('hex')}' WHERE seq = ${victim.seq}`);
  const next = rows[rows.indexOf(victim) + 1];
  const relinked = await svc(s, ['audit', 'verify', '--json']);
  assert.equal(relinked.code, 1);
  assert.equal(JSON.parse(relinked.stdout).broken.problem, 'link');
  assert.match(JSON.parse(relinked.stderr).error.message, new RegExp(`^audit chain broken at seq ${next.seq} \\(id ${next.id}\\): its prev_hash is not the hash of the row before it`));
});

test('hash chain: removing the last rows or a row in the middle is reported', async (t) => {
  const s = await startTestServer(t);
  await member(s, 'org_owner');
  for (let i = 0; i < 5; i++) await seed(s, { action: 'test.row', metadata: { i } });
  const rows = await s.db.all<Row>('SELECT seq, id FROM audit_log ORDER BY seq');
  const last = rows.at(-1)!;
  await tamper(s, t, dropTrigger(s.db.engine, 'audit_log_no_delete', 'audit_log'), `DELETE FROM audit_log WHERE seq = ${last.seq}`);
  const truncated = await svc(s, ['audit', 'verify', '--json']);
  assert.equal(truncated.code, 1);
  assert.deepEqual(JSON.parse(truncated.stdout).broken, {
    seq: last.seq, id: null, problem: 'truncated',
    message: `audit chain broken after seq ${last.seq - 1}: rows up to seq ${last.seq} were written and are missing (the end of the log was removed)`,
  });
  const middle = rows[2];
  await tamper(s, t, `DELETE FROM audit_log WHERE seq = ${middle.seq}`);
  const gap = await svc(s, ['audit', 'verify', '--json']);
  assert.equal(gap.code, 1);
  assert.deepEqual(JSON.parse(gap.stdout).broken.seq, rows[3].seq);
  assert.equal(JSON.parse(gap.stdout).broken.problem, 'link');
});
