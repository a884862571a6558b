// Database snapshots with SVC_DATABASE=postgres: pg_dump's custom format into the backups folder,
// checked, hashed and recorded like a SQLite snapshot; the password never on pg_dump's command line or
// in the answer; and the dump restores (pg_restore) into an empty database holding the same rows.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { startTestServer } from '../helpers/server.ts';
import { login, makeUser, member } from '../helpers/factories.ts';
import { freshDatabaseUrl } from '../helpers/postgres.ts';
import { openPostgres } from '../../src/db/postgres.ts';

test('on PostgreSQL a snapshot is a pg_dump custom-format file, checked, hashed, recorded and restorable', async (t) => {
  const url = await freshDatabaseUrl(t);
  const s = await startTestServer(t, { SVC_DATABASE: 'postgres', SVC_POSTGRES_URL: url });
  const admin = await login(s, await makeUser(s, { systemAdmin: true }));
  const owner = await member(s, 'org_owner');
  assert.equal((await s.call('POST', '/api/system/backups', { token: owner.token })).status, 403);

  const r = await s.call('POST', '/api/system/backups', { token: admin });
  assert.equal(r.status, 201, r.text);
  assert.match(r.body.fileName, /^svc-\d{8}T\d{9}Z\.dump$/);
  assert.equal(r.body.integrity, 'ok');
  const file = path.join(s.config.backupsDir, r.body.fileName);
  const bytes = fs.readFileSync(file);
  assert.equal(bytes.subarray(0, 5).toString('latin1'), 'PGDMP', 'pg_dump\'s custom format');
  assert.deepEqual([r.body.sizeBytes, r.body.sha256], [bytes.length, createHash('sha256').update(bytes).digest('hex')]);
  assert.deepEqual(fs.readdirSync(s.config.backupsDir), [r.body.fileName], 'no temporary file left');
  const password = new URL(url).password;
  if (password) assert.ok(!r.text.includes(password), 'no password in the answer');
  const listed = await s.call('GET', '/api/system/backups', { token: admin });
  assert.deepEqual(listed.body.items.map((b: { id: string }) => b.id), [r.body.id]);

  // The restore of docs/operations.md, into an empty database: the same users and audit rows.
  const target = await freshDatabaseUrl(t);
  const bare = new URL(target);
  const targetPassword = decodeURIComponent(bare.password);
  bare.password = '';
  execFileSync('pg_restore', ['--no-owner', '--no-privileges', `--dbname=${bare.toString()}`, file], { env: { ...process.env, PGPASSWORD: targetPassword } });
  const restored = await openPostgres({ url: target });
  t.after(() => restored.close());
  const count = async (db: { get<T>(sql: string): Promise<T | undefined> }, table: string) => Number((await db.get<{ n: number }>(`SELECT count(*) AS n FROM ${table}`))!.n);
  for (const table of ['users', 'organizations', 'memberships']) assert.equal(await count(restored, table), await count(s.db, table), table);
  // The snapshot's own audit record was written after the dump: the restored log ends before it.
  assert.equal(await count(restored, 'audit_log'), await count(s.db, 'audit_log') - 1);
});
