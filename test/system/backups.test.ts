// Database snapshots: access on the two routes, a snapshot taken while other connections keep
// committing (consistent, integrity ok, every row committed before it began), the record, file and
// audit, retention, `svc backup --json`, and the offline restore of docs/operations.md performed end
// to end. On each engine: a SQLite file (VACUUM INTO, `.db`) or pg_dump's custom format (`.dump`,
// checked here by restoring it with pg_restore into an empty database).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { DatabaseSync } from 'node:sqlite';
import { Worker } from 'node:worker_threads';
import { setTimeout as sleep } from 'node:timers/promises';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { login, makeUser, member } from '../helpers/factories.ts';
import { Sandbox, describe } from '../helpers/cli.ts';
import { freshDatabaseUrl } from '../helpers/postgres.ts';
import { createBackup } from '../../src/system/backups.ts';
import { openPostgres } from '../../src/db/postgres.ts';
import pg from 'pg';

async function world(t: TestContext, env: Record<string, string> = {}) {
  const s = await startTestServer(t, env);
  const admin = await makeUser(s, { systemAdmin: true });
  const adminToken = await login(s, admin);
  const owner = await member(s, 'org_owner');
  return { s, adminToken, ownerToken: owner.token };
}

function readOnly<T>(file: string, fn: (db: DatabaseSync) => T): T {
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

const sha256 = (file: string) => createHash('sha256').update(fs.readFileSync(file)).digest('hex');
const backupFiles = (s: TestServer) => fs.readdirSync(s.config.backupsDir).sort();
/** The snapshot file's extension on each engine (src/system/backups.ts). */
const extension = (engine: string) => (engine === 'postgres' ? 'dump' : 'db');

/** pg_restore of `file` into the database of `url` (PGPASSWORD, as the service passes it); throws on any error. */
function pgRestore(url: string, file: string, args: string[]): void {
  const bare = new URL(url);
  const password = decodeURIComponent(bare.password);
  bare.password = '';
  execFileSync('pg_restore', [...args, `--dbname=${bare.toString()}`, file], { env: { ...process.env, PGPASSWORD: password }, stdio: ['ignore', 'pipe', 'pipe'] });
}

test('backups: no session 401, an organization owner 403, the system administrator lists and creates', async (t) => {
  const { s, adminToken, ownerToken } = await world(t);
  for (const [method, p] of [['GET', '/api/system/backups'], ['POST', '/api/system/backups']] as const) {
    assert.equal((await s.call(method, p)).status, 401);
    const denied = await s.call(method, p, { token: ownerToken });
    assert.equal(denied.status, 403, denied.text);
    assert.equal(denied.body.error.code, 'permission_denied');
  }
  assert.equal(fs.existsSync(s.config.backupsDir) && backupFiles(s).length > 0, false, 'nothing written for refused requests');
  assert.deepEqual((await s.call('GET', '/api/system/backups', { token: adminToken })).body, { items: [] });

  const made = await s.call('POST', '/api/system/backups', { token: adminToken });
  assert.equal(made.status, 201, made.text);
  const b = made.body;
  const ext = extension(s.db.engine);
  assert.match(b.id, /^bkp_/);
  assert.match(b.fileName, new RegExp(`^svc-\\d{8}T\\d{9}Z\\.${ext}$`));
  assert.equal(b.path, path.join(s.config.dataDir, 'backups', b.fileName));
  assert.equal(b.integrity, 'ok');
  assert.equal(b.sizeBytes, fs.statSync(b.path).size);
  assert.equal(b.sha256, sha256(b.path));
  assert.deepEqual(backupFiles(s), [b.fileName], 'no temporary file left behind');
  const stamp = /^svc-(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)(\d{3})Z\.(?:db|dump)$/.exec(b.fileName)!;
  const at = Date.parse(`${stamp[1]}-${stamp[2]}-${stamp[3]}T${stamp[4]}:${stamp[5]}:${stamp[6]}.${stamp[7]}Z`);
  assert.ok(Math.abs(at - Date.now()) < 60_000, 'named by its UTC time');

  const second = await s.call('POST', '/api/system/backups', { token: adminToken });
  assert.equal(second.status, 201, second.text);
  const list = await s.call('GET', '/api/system/backups', { token: adminToken });
  assert.equal(list.status, 200, list.text);
  assert.deepEqual(list.body.items.map((i: any) => i.id), [second.body.id, b.id], 'newest first');

  const audit = await s.db.all<any>("SELECT actor_type, target_id, organization_id, metadata FROM audit_log WHERE action = 'system.database.backup_created' ORDER BY seq");
  assert.equal(audit.length, 2);
  assert.equal(audit[0].actor_type, 'user');
  assert.equal(audit[0].target_id, b.id);
  assert.equal(audit[0].organization_id, null);
  assert.deepEqual(JSON.parse(audit[0].metadata), { fileName: b.fileName, sizeBytes: b.sizeBytes, sha256: b.sha256 });
});

// On SQLite a writer in another thread (its own connection) commits one row per small transaction as
// fast as it can (pausing about a millisecond between) until told to stop: real concurrency with the
// snapshot's read transaction.
const WRITER = `
const { DatabaseSync } = require('node:sqlite');
const { workerData } = require('node:worker_threads');
const flag = new Int32Array(workerData.flag);
const db = new DatabaseSync(workerData.file);
db.exec('PRAGMA busy_timeout = 10000');
const insert = db.prepare("INSERT INTO organizations (id, name, created_at) VALUES (?, 'thread writer', '2026-01-01T00:00:00.000Z')");
let n = 0;
while (Atomics.load(flag, 0) === 0) {
  db.exec('BEGIN IMMEDIATE');
  insert.run('org_thread_' + (++n));
  db.exec('COMMIT');
  Atomics.store(flag, 1, n);
  Atomics.wait(flag, 1, n, 1); // about a millisecond between transactions, so other connections get the lock
}
db.close();
`;

interface OtherWriter {
  /** Rows org_thread_1..n it has committed so far. */
  committed(): number;
  stop(): Promise<void>;
}

/**
 * A writer on a connection of its own, outside the server, committing org_thread_1, 2, ... one row per
 * transaction: the thread above on SQLite; on PostgreSQL a connection of this process, which keeps
 * committing while pg_dump (another process) takes the snapshot.
 */
async function otherWriter(t: TestContext, s: TestServer): Promise<OtherWriter> {
  if (s.db.engine === 'postgres') {
    const client = new pg.Client({ connectionString: s.config.postgresUrl });
    await client.connect();
    let n = 0;
    let stopped = false;
    const loop = (async () => {
      try {
        while (!stopped) {
          await client.query("INSERT INTO organizations (id, name, created_at) VALUES ($1, 'thread writer', '2026-01-01T00:00:00.000Z')", [`org_thread_${n + 1}`]);
          n++;
          await sleep(1);
        }
      } finally {
        await client.end();
      }
    })();
    const stop = async () => { stopped = true; await loop; };
    t.after(() => stop().catch(() => {}));
    return { committed: () => n, stop };
  }
  const flag = new SharedArrayBuffer(8);
  const counters = new Int32Array(flag);
  const worker = new Worker(WRITER, { eval: true, workerData: { file: s.config.dbPath, flag } });
  const workerDone = new Promise<void>((resolve, reject) => { worker.once('exit', () => resolve()); worker.once('error', reject); });
  t.after(async () => { Atomics.store(counters, 0, 1); await workerDone.catch(() => {}); });
  return {
    committed: () => Atomics.load(counters, 1),
    stop: async () => { Atomics.store(counters, 0, 1); await workerDone; },
  };
}

/**
 * The organizations in a snapshot file, once it proved whole: on SQLite opened read-only, integrity_check
 * ok and no foreign key violated; on PostgreSQL restored with pg_restore --exit-on-error into an empty
 * database (any error fails, and each foreign key is checked against the restored rows as it is added).
 */
async function organizationsIn(t: TestContext, engine: string, file: string): Promise<Set<string>> {
  if (engine === 'postgres') {
    const url = await freshDatabaseUrl(t);
    pgRestore(url, file, ['--exit-on-error', '--no-owner', '--no-privileges']);
    const copy = await openPostgres({ url, max: 1 });
    try {
      return new Set((await copy.all<{ id: string }>('SELECT id FROM organizations')).map((r) => r.id));
    } finally {
      await copy.close();
    }
  }
  return readOnly(file, (db) => {
    assert.deepEqual(db.prepare('PRAGMA integrity_check').all().map((r: any) => r.integrity_check), ['ok']);
    assert.deepEqual(db.prepare('PRAGMA foreign_key_check').all(), []);
    return new Set((db.prepare('SELECT id FROM organizations').all() as Array<{ id: string }>).map((r) => r.id));
  });
}

test('a snapshot taken while writes continue opens, passes its integrity check and holds every row committed before it began', async (t) => {
  const { s, adminToken } = await world(t);
  const writer = await otherWriter(t, s);

  // And a writer on the server's own connection, awaiting between its small transactions.
  let stop = false;
  let local = 0;
  const loop = (async () => {
    while (!stop) {
      await s.db.tx(async () => {
        for (let i = 0; i < 3; i++) {
          await s.db.run("INSERT INTO organizations (id, name, created_at) VALUES (?, 'loop writer', '2026-01-01T00:00:00.000Z')", `org_loop_${++local}`);
        }
      });
      await sleep(1);
    }
  })();
  try {
    while (writer.committed() < 100 || local < 30) await sleep(5);
    // Every row committed by now (by either writer) must be in the snapshot.
    const before = new Set((await s.db.all<{ id: string }>("SELECT id FROM organizations WHERE id LIKE 'org_thread_%' OR id LIKE 'org_loop_%'")).map((r) => r.id));
    const made = await s.call('POST', '/api/system/backups', { token: adminToken });
    assert.equal(made.status, 201, made.text);
    const threadRowsAtReply = writer.committed();
    // It commits every few milliseconds; on a loaded machine its next commit may take longer than that.
    for (let waited = 0; writer.committed() <= threadRowsAtReply && waited < 2000; waited += 10) await sleep(10);
    assert.ok(writer.committed() > threadRowsAtReply, 'the other writer kept committing after the snapshot');

    const file = made.body.path as string;
    assert.equal(made.body.integrity, 'ok');
    const inCopy = await organizationsIn(t, s.db.engine, file);
    for (const id of before) assert.ok(inCopy.has(id), `${id}, committed before the snapshot began, is in it`);
    // One consistent snapshot: the other writer's rows in the copy are a prefix 1..k with no gaps.
    const threadIds = [...inCopy].filter((id) => id.startsWith('org_thread_')).map((id) => Number(id.slice('org_thread_'.length))).sort((a, b) => a - b);
    assert.deepEqual(threadIds, threadIds.map((_, i) => i + 1));
    assert.ok(threadIds.length < writer.committed(), 'rows committed after the snapshot are not in it');
    assert.equal(made.body.sha256, sha256(file));
  } finally {
    stop = true;
    await loop;
    await writer.stop();
  }
});

test('retention keeps the newest SVC_BACKUP_RETENTION snapshots, files and rows', async (t) => {
  const { s, adminToken } = await world(t, { SVC_BACKUP_RETENTION: '2' });
  const made = [];
  for (let i = 0; i < 4; i++) made.push(await createBackup(s.operator()));
  assert.equal(new Set(made.map((m) => m.fileName)).size, 4, 'distinct names even within one millisecond');
  const kept = made.slice(-2).reverse();
  assert.deepEqual(backupFiles(s), kept.map((k) => k.fileName).sort());
  const list = await s.call('GET', '/api/system/backups', { token: adminToken });
  assert.deepEqual(list.body.items.map((i: any) => i.fileName), kept.map((k) => k.fileName));
  assert.equal((await s.db.get<{ n: number }>('SELECT count(*) AS n FROM system_backups'))!.n, 2);
  assert.equal((await s.db.get<{ n: number }>("SELECT count(*) AS n FROM audit_log WHERE action = 'system.database.backup_created'"))!.n, 4);
});

const PASSWORD = 'a long test password';

async function loginStatus(url: string, email: string): Promise<number> {
  const r = await fetch(`${url}/api/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password: PASSWORD }) });
  await r.text();
  return r.status;
}

test('svc backup --json while svc serve runs, then the offline restore of docs/operations.md: the pre-backup rows come back, the later ones do not', async (t) => {
  const sb = new Sandbox(t);
  const user = (email: string) => sb.run(['users', 'create', '--email', email, '--name', email, '--password-stdin', '--json', ...sb.dirs], { input: `${PASSWORD}\n` });
  const first = await user('before@b.c');
  assert.equal(first.code, 0, describe(first));
  let server = await sb.serve(['--port', '0', ...sb.dirs]);
  assert.equal((await sb.run(['orgs', 'create', '--name', 'Before', '--owner', 'before@b.c', '--json', ...sb.dirs])).code, 0);

  const backup = await sb.run(['backup', '--json', ...sb.dirs]);
  assert.equal(backup.code, 0, describe(backup));
  assert.equal(backup.stderr, '');
  const b = JSON.parse(backup.stdout);
  const ext = extension(sb.database);
  assert.match(b.fileName, new RegExp(`^svc-\\d{8}T\\d{9}Z\\.${ext}$`));
  assert.equal(b.path, path.join(sb.data, 'backups', b.fileName));
  assert.equal(b.integrity, 'ok');
  assert.equal(b.sizeBytes, fs.statSync(b.path).size);
  assert.equal(b.sha256, sha256(b.path));
  assert.equal(b.createdBy?.startsWith('local operator'), true);
  const text = await sb.run(['backup', ...sb.dirs]);
  assert.equal(text.code, 0, describe(text));
  const [p, size, hash] = text.stdout.trim().split('\n');
  assert.match(p, new RegExp(`backups/svc-\\d{8}T\\d{9}Z\\.${ext}$`));
  assert.match(size, /^\d+ bytes$/);
  assert.match(hash, /^sha256 [0-9a-f]{64}$/);

  // Written after the snapshot: gone after the restore.
  assert.equal((await user('after@b.c')).code, 0);
  assert.equal((await sb.run(['orgs', 'create', '--name', 'After', '--owner', 'after@b.c', '--json', ...sb.dirs])).code, 0);
  assert.equal(await loginStatus(server.url, 'after@b.c'), 200);

  // Stop svc serve; restore the snapshot; start svc serve. SQLite: copy it over data/svc.db, remove
  // -wal and -shm. PostgreSQL: pg_restore --clean --if-exists --no-owner into the service's database.
  server.child.kill('SIGTERM');
  assert.equal((await server.done).code, 0);
  if (sb.database === 'postgres') {
    pgRestore((await sb.databaseEnv(sb.dirs)).SVC_POSTGRES_URL, b.path, ['--clean', '--if-exists', '--no-owner']);
  } else {
    const dbFile = path.join(sb.data, 'svc.db');
    fs.copyFileSync(b.path, dbFile);
    fs.rmSync(`${dbFile}-wal`, { force: true });
    fs.rmSync(`${dbFile}-shm`, { force: true });
  }
  server = await sb.serve(['--port', '0', ...sb.dirs]);

  assert.equal(await loginStatus(server.url, 'before@b.c'), 200, 'a user of before the snapshot logs in');
  assert.equal(await loginStatus(server.url, 'after@b.c'), 401, 'a user made after the snapshot does not exist');
  const orgs = await sb.run(['orgs', 'list', '--json', ...sb.dirs]);
  assert.equal(orgs.code, 0, describe(orgs));
  const names = JSON.stringify(JSON.parse(orgs.stdout));
  assert.match(names, /"Before"/);
  assert.doesNotMatch(names, /"After"/);
  server.child.kill('SIGTERM');
  assert.equal((await server.done).code, 0);
});
