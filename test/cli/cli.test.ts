// bin/svc as a real child process: users and organizations created from the command line, the
// database migrated and refused when newer, the server listening, logging in and stopping on
// SIGTERM, flags winning over SVC_* variables, and the re-execution under an older system Node.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { currentSchemaVersion } from '../../src/db/migrate.ts';
import { openPostgres } from '../../src/db/postgres.ts';
import { Sandbox, describe, lines, type Result, type Server } from '../helpers/cli.ts';
import { openDataFolderDb } from '../helpers/postgres.ts';

const PASSWORD = 'a long test password';
/** Sends SIGTERM and asserts the server exits with code 0 within 10 s, having printed one stdout line. */
async function stop(server: Server): Promise<Result> {
  const started = Date.now();
  assert.ok(server.child.kill('SIGTERM'), 'SIGTERM delivered');
  let timer: NodeJS.Timeout | undefined;
  const r = await Promise.race([
    server.done,
    new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error('serve still running 10 s after SIGTERM')), 10_000); }),
  ]).finally(() => clearTimeout(timer));
  assert.equal(r.code, 0, describe(r));
  assert.ok(Date.now() - started < 10_000);
  assert.deepEqual(lines(r.stdout), [server.firstLine], 'the listening line is the only stdout line');
  assert.ok(r.stdout.endsWith('\n'));
  return r;
}

/** Asserts a failed command: non-zero exit (not a signal), nothing on stdout, one line on stderr. */
function assertOneLineFailure(r: Result): string {
  assert.ok(r.code !== null && r.code !== 0, describe(r));
  assert.equal(r.stdout, '', describe(r));
  const errLines = lines(r.stderr);
  assert.equal(errLines.length, 1, describe(r));
  assert.ok(r.stderr.endsWith('\n'));
  return errLines[0];
}

async function api(url: string, method: string, p: string, opts: { token?: string; body?: unknown } = {}) {
  const headers: Record<string, string> = {};
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(url + p, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
  const text = await res.text();
  return { status: res.status, text, body: text ? JSON.parse(text) : null };
}

async function login(url: string, email: string, password: string) {
  const r = await api(url, 'POST', '/api/auth/login', { body: { email, password } });
  assert.equal(r.status, 200, r.text);
  assert.equal(typeof r.body.token, 'string');
  assert.ok(r.body.token.length >= 20, r.text);
  return r.body as { token: string; passwordChangeRequired: boolean; user: { id: string; email: string } };
}

function createAdmin(sb: Sandbox, email = 'a@b.c', extra: string[] = sb.dirs, env: Record<string, string> = {}): Promise<Result> {
  return sb.run(['users', 'create', '--email', email, '--name', 'A', '--system-admin', '--password-stdin', '--json', ...extra], { input: `${PASSWORD}\n`, env });
}

/** Rows of the database of the data folder `dataDir` (read-only): its SQLite file, or on PostgreSQL the folder's database. */
async function query<T>(t: TestContext, dataDir: string, sql: string, ...params: string[]): Promise<T[]> {
  const db = await openDataFolderDb(t, dataDir);
  try {
    // Copies: node:sqlite rows have a null prototype, which deepEqual tells apart.
    return (await db.all<T & object>(sql, ...params)).map((r) => ({ ...r }));
  } finally {
    await db.close();
  }
}

/** The schema version of the sandbox's database, read as each engine keeps it (src/db/migrate.ts). */
async function schemaVersion(t: TestContext, sb: Sandbox): Promise<number> {
  const [r] = sb.database === 'postgres'
    ? await query<{ version: number }>(t, sb.data, 'SELECT version FROM svc_schema_version')
    : await query<{ version: number }>(t, sb.data, 'SELECT user_version AS version FROM pragma_user_version');
  return Number(r.version);
}

/** Sets the schema version of the sandbox's database, as a newer version of svc would have left it. */
async function setSchemaVersion(sb: Sandbox, version: number): Promise<void> {
  if (sb.database === 'postgres') {
    const db = await openPostgres({ url: (await sb.databaseEnv(sb.dirs)).SVC_POSTGRES_URL, max: 1 });
    try {
      await db.run('UPDATE svc_schema_version SET version = ?', version);
    } finally {
      await db.close();
    }
    return;
  }
  const db = new DatabaseSync(path.join(sb.data, 'svc.db'));
  db.exec(`PRAGMA user_version = ${version}`);
  db.close();
}

test('users create --password-stdin --json, then serve: login, /api/context, SIGTERM exits 0', async (t) => {
  const sb = new Sandbox(t);
  const created = await createAdmin(sb);
  assert.equal(created.code, 0, describe(created));
  assert.equal(created.stderr, '');
  const doc = JSON.parse(created.stdout); // throws unless stdout is exactly one JSON document
  assert.equal(doc.user.email, 'a@b.c');
  assert.equal(doc.user.name, 'A');
  assert.equal(doc.user.isSystemAdmin, true);
  assert.equal(doc.user.passwordChangeRequired, false);
  assert.match(doc.user.id, /^usr_/);
  assert.equal('initialPassword' in doc, false);
  assert.doesNotMatch(created.stdout, /scrypt|password_hash/);

  const server = await sb.serve(['--port', '0', ...sb.dirs]);
  assert.match(server.firstLine, /^listening on http:\/\/127\.0\.0\.1:\d+$/);
  assert.notEqual(server.port, 0);
  // The trailing newline of stdin is not part of the password.
  const session = await login(server.url, 'a@b.c', PASSWORD);
  assert.equal(session.passwordChangeRequired, false);
  assert.equal(session.user.id, doc.user.id);
  const ctx = await api(server.url, 'GET', '/api/context', { token: session.token });
  assert.equal(ctx.status, 200, ctx.text);
  assert.equal(ctx.body.user.email, 'a@b.c');
  assert.equal(ctx.body.user.isSystemAdmin, true);
  const anonymous = await api(server.url, 'GET', '/api/context');
  assert.equal(anonymous.status, 401, anonymous.text);
  // A write by another process (the CLI on the same data directory) is seen by the next request.
  assert.equal(ctx.body.memberships.length, 0);
  const org = await sb.run(['orgs', 'create', '--name', 'Studio', '--owner', 'a@b.c', '--json', ...sb.dirs]);
  assert.equal(org.code, 0, describe(org));
  const after = await api(server.url, 'GET', '/api/context', { token: session.token });
  assert.deepEqual(after.body.memberships.map((m: { organizationId: string; role: string }) => [m.organizationId, m.role]), [[JSON.parse(org.stdout).id, 'org_owner']]);

  await stop(server);
  assert.ok(fs.existsSync(path.join(sb.storage, 'assets')), 'serve prepared the storage directory given by --storage-dir');
});

test('users create without --password-stdin prints a one-time password that must be changed', async (t) => {
  const sb = new Sandbox(t);
  const r = await sb.run(['users', 'create', '--email', 'new@b.c', '--name', 'New', ...sb.dirs]);
  assert.equal(r.code, 0, describe(r));
  assert.equal(r.stderr, '');
  assert.throws(() => JSON.parse(r.stdout), 'text mode without --json');
  const out = lines(r.stdout);
  assert.equal(out.length, 2, r.stdout);
  assert.match(out[0], /^created user usr_\S+ <new@b\.c>$/);
  const m = /^one-time initial password \(change it at first login\): (\S+)$/.exec(out[1]);
  assert.ok(m, r.stdout);
  const initial = m[1];
  assert.ok(initial.length >= 10, initial);

  const server = await sb.serve(['--port', '0', ...sb.dirs]);
  const session = await login(server.url, 'new@b.c', initial);
  assert.equal(session.passwordChangeRequired, true);
  const wrong = await api(server.url, 'POST', '/api/auth/login', { body: { email: 'new@b.c', password: initial + 'x' } });
  assert.equal(wrong.status, 401, wrong.text);
  await stop(server);
});

test('a duplicate e-mail address (other case) fails with one stderr line and nothing on stdout', async (t) => {
  const sb = new Sandbox(t);
  const first = await createAdmin(sb, 'a@b.c');
  assert.equal(first.code, 0, describe(first));
  for (const json of [true, false]) {
    const dup = await sb.run(['users', 'create', '--email', 'A@B.C', '--name', 'Other', ...(json ? ['--json'] : []), ...sb.dirs]);
    const line = assertOneLineFailure(dup);
    assert.match(line, /e-mail/);
    assert.match(line, /exists|already/);
  }
  const rows = await query<{ email: string }>(t, sb.data, 'SELECT email FROM users');
  assert.deepEqual(rows.map((u) => u.email), ['a@b.c']);
});

test('orgs create --owner by e-mail prints the organization; an unknown owner fails', async (t) => {
  const sb = new Sandbox(t);
  const user = await createAdmin(sb);
  assert.equal(user.code, 0, describe(user));
  const userId = JSON.parse(user.stdout).user.id as string;

  const r = await sb.run(['orgs', 'create', '--name', 'Studio', '--owner', 'a@b.c', '--json', ...sb.dirs]);
  assert.equal(r.code, 0, describe(r));
  assert.equal(r.stderr, '');
  const org = JSON.parse(r.stdout);
  assert.match(org.id, /^org_/);
  assert.equal(org.name, 'Studio');
  const owners = await query<{ user_id: string; role: string }>(t, sb.data, "SELECT user_id, role FROM memberships WHERE level = 'organization' AND scope_id = ?", org.id);
  assert.deepEqual(owners, [{ user_id: userId, role: 'org_owner' }]);

  const bad = await sb.run(['orgs', 'create', '--name', 'Nope', '--owner', 'nobody@x.y', '--json', ...sb.dirs]);
  const line = assertOneLineFailure(bad);
  assert.match(line, /nobody@x\.y/);
  const orgs = await query<{ name: string }>(t, sb.data, 'SELECT name FROM organizations');
  assert.deepEqual(orgs.map((o) => o.name), ['Studio']);
});

test('orgs create requires --owner: the local operator is no person, and an organization never starts without an owner', async (t) => {
  const sb = new Sandbox(t);
  assert.equal((await createAdmin(sb)).code, 0);
  const r = await sb.run(['orgs', 'create', '--name', 'Ownerless', ...sb.dirs]);
  assert.equal(r.code, 2, describe(r));
  assert.match(assertOneLineFailure(r), /owner/);
  assert.deepEqual((await query<{ n: number }>(t, sb.data, 'SELECT count(*) AS n FROM organizations')).map((x) => x.n), [0]);
});

/** A failed --json command: nothing on stdout, one stderr line that is exactly the contract's error body. */
function jsonFailure(r: Result): { code: string; message: string; details?: any } {
  const line = assertOneLineFailure(r);
  const doc = JSON.parse(line);
  assert.deepEqual(Object.keys(doc), ['error'], line);
  const { error } = doc;
  assert.match(error.code, /^[a-z][a-z0-9_]*$/, line);
  assert.ok(typeof error.message === 'string' && error.message.length > 0, line);
  assert.ok(Object.keys(error).every((k) => ['code', 'message', 'details'].includes(k)), line);
  return error;
}

test('svc --help lists the global options every command accepts', async (t) => {
  const sb = new Sandbox(t);
  const help = await sb.run(['--help']);
  assert.equal(help.code, 0, describe(help));
  assert.match(help.stdout, /^Global options:$/m);
  for (const flag of ['--data-dir', '--storage-dir', '--json', '--help', '--version']) {
    assert.match(help.stdout, new RegExp(`^\\s+${flag}\\s`, 'm'), `${flag} in:\n${help.stdout}`);
  }
  assert.match(help.stdout, /SVC_DATA_DIR/);
  // A command's own help lists them too, beside its own options.
  const sub = await sb.run(['orgs', 'create', '--help']);
  assert.match(sub.stdout, /--owner/);
  assert.match(sub.stdout, /--data-dir/);
});

test('with --json every kind of failure is one JSON error document on stderr, with the exit code of the text form', async (t) => {
  const sb = new Sandbox(t);
  assert.equal((await createAdmin(sb)).code, 0);
  const notADirectory = path.join(sb.root, 'a-file');
  fs.writeFileSync(notADirectory, '');
  const cases: { args: string[]; exit: number; code: string; check?: (e: { message: string; details?: any }) => void }[] = [
    // The parser's refusals: no command, a missing required flag, an unknown flag, a flag without its value.
    { args: [], exit: 2, code: 'usage_error', check: (e) => assert.match(e.message, /name a command/) },
    { args: ['orgs', 'create', '--name', 'X', ...sb.dirs], exit: 2, code: 'usage_error', check: (e) => assert.deepEqual(e.details.fields, { owner: 'is required' }) },
    { args: ['users', 'list', '--bogus', ...sb.dirs], exit: 2, code: 'usage_error', check: (e) => assert.deepEqual(Object.keys(e.details.fields), ['bogus']) },
    { args: ['orgs', 'create', '--owner', 'a@b.c', ...sb.dirs, '--name'], exit: 1, code: 'usage_error', check: (e) => assert.deepEqual(e.details.fields, { name: 'needs a value' }) },
    // The service's validation, not found and conflict.
    { args: ['orgs', 'create', '--name', '', '--owner', 'a@b.c', ...sb.dirs], exit: 1, code: 'validation_failed', check: (e) => assert.equal(e.details.fields.name, 'must not be empty') },
    { args: ['model-server', '--port', '70000'], exit: 1, code: 'validation_failed', check: (e) => assert.match(e.details.fields.port, /0\.\.65535/) },
    { args: ['users', 'suspend', 'nobody@x.y', ...sb.dirs], exit: 1, code: 'not_found', check: (e) => assert.match(e.message, /nobody@x\.y/) },
    { args: ['users', 'create', '--email', 'A@B.C', '--name', 'B', ...sb.dirs], exit: 1, code: 'email_already_registered' },
    // A setting out of range, and an unexpected failure (the data directory is a file).
    { args: ['serve', '--port', 'abc', ...sb.dirs], exit: 1, code: 'invalid_configuration', check: (e) => assert.match(e.message, /--port must be an integer/) },
    { args: ['backup', '--data-dir', notADirectory, '--storage-dir', sb.storage], exit: 1, code: 'internal_error', check: (e) => assert.match(e.message, /a-file/) },
  ];
  for (const c of cases) {
    // The same failure as text too: the same exit code, one `svc: ` line.
    const [json, text] = await Promise.all([sb.run([...c.args, '--json']), sb.run(c.args)]);
    assert.equal(json.code, c.exit, `${c.args.join(' ')} --json: ${describe(json)}`);
    const error = jsonFailure(json);
    assert.equal(error.code, c.code, `${c.args.join(' ')}: ${json.stderr}`);
    c.check?.(error);
    assert.equal(text.code, c.exit, `${c.args.join(' ')}: ${describe(text)}`);
    assert.match(assertOneLineFailure(text), /^svc: [^{]/);
  }
  // --json=true asks for JSON too; a later --no-json takes it back.
  assert.equal(jsonFailure(await sb.run(['users', 'suspend', 'nobody@x.y', '--json=true', ...sb.dirs])).code, 'not_found');
  assert.match(assertOneLineFailure(await sb.run(['users', 'suspend', 'nobody@x.y', '--json', '--no-json', ...sb.dirs])), /^svc: /);
  assert.deepEqual((await query<{ n: number }>(t, sb.data, 'SELECT count(*) AS n FROM organizations')).map((x) => x.n), [0]);
});

test('invalid input is refused with one line and nothing written: names, e-mail, password, port', async (t) => {
  const sb = new Sandbox(t);
  assert.equal((await createAdmin(sb)).code, 0);
  for (const name of ['', '   ', 'x'.repeat(201)]) {
    assert.match(assertOneLineFailure(await sb.run(['orgs', 'create', '--name', name, '--owner', 'a@b.c', ...sb.dirs])), /name must/);
  }
  assert.match(assertOneLineFailure(await sb.run(['orgs', 'create', '--owner', 'a@b.c', '--name', ...sb.dirs])), /name/);
  assert.match(assertOneLineFailure(await sb.run(['users', 'create', '--email', 'not-an-address', '--name', 'X', ...sb.dirs])), /email must be an e-mail address/);
  assert.match(assertOneLineFailure(await sb.run(['users', 'create', '--email', 'short@b.c', '--name', 'X', '--password-stdin', ...sb.dirs], { input: 'short\n' })), /password must be at least 12 characters/);
  assert.match(assertOneLineFailure(await sb.run(['serve', '--port', 'abc', ...sb.dirs])), /--port must be an integer, got "abc"/);
  assert.deepEqual((await query<{ n: number }>(t, sb.data, 'SELECT count(*) AS n FROM organizations')).map((r) => r.n), [0]);
  assert.deepEqual((await query<{ n: number }>(t, sb.data, 'SELECT count(*) AS n FROM users')).map((r) => r.n), [1]);
});

test('migrate --json applies schema.sql to a fresh database, then nothing', async (t) => {
  const sb = new Sandbox(t);
  const version = currentSchemaVersion();
  // The database as the command names it: the SQLite file, or the PostgreSQL server and database without the user or password.
  const pg = sb.database === 'postgres' ? new URL((await sb.databaseEnv(sb.dirs)).SVC_POSTGRES_URL) : null;
  const first = await sb.run(['migrate', '--json', '--data-dir', sb.data]);
  assert.equal(first.code, 0, describe(first));
  assert.equal(first.stderr, '');
  const a = JSON.parse(first.stdout);
  assert.equal(a.database, pg ? `postgres://${pg.host}${pg.pathname}` : path.join(sb.data, 'svc.db'));
  assert.equal(a.from, 0);
  assert.equal(a.to, version);
  assert.deepEqual(a.applied, [pg ? 'schema.pg.sql' : 'schema.sql'], first.stdout);
  assert.equal(await schemaVersion(t, sb), version);

  const second = await sb.run(['migrate', '--json', '--data-dir', sb.data]);
  assert.equal(second.code, 0, describe(second));
  const b = JSON.parse(second.stdout);
  assert.deepEqual({ from: b.from, to: b.to, applied: b.applied }, { from: version, to: version, applied: [] });
});

test('a database written by a newer version makes serve and migrate fail with one line', async (t) => {
  const sb = new Sandbox(t);
  const m = await sb.run(['migrate', '--data-dir', sb.data]);
  assert.equal(m.code, 0, describe(m));
  await setSchemaVersion(sb, 999);

  const runs = await Promise.all([
    sb.run(['serve', '--port', '0', ...sb.dirs]),
    sb.run(['migrate', ...sb.dirs]),
    sb.run(['migrate', '--json', ...sb.dirs]),
  ]);
  for (const r of runs) {
    const line = assertOneLineFailure(r);
    assert.match(line, /written by a newer version/);
    assert.match(line, /999/);
  }
  assert.equal(JSON.parse(lines(runs[2].stderr)[0]).error.code, 'unsupported_schema_version');
  assert.equal(await schemaVersion(t, sb), 999, 'the database is left alone');
});

test('flags win over the environment: --port 0 beats SVC_PORT=1', async (t) => {
  const sb = new Sandbox(t);
  const server = await sb.serve(['--port', '0', ...sb.dirs], { SVC_PORT: '1' });
  assert.notEqual(server.port, 1);
  assert.notEqual(server.port, 0);
  const health = await api(server.url, 'GET', '/api/health');
  assert.equal(health.status, 200, health.text);
  assert.deepEqual(health.body, { status: 'ok' });
  await stop(server);
});

test('SVC_DATA_DIR is used without --data-dir; --data-dir beats it', async (t) => {
  const sb = new Sandbox(t);
  // Not ./data: the children run in sb.root, where the default would land.
  const envData = path.join(sb.root, 'env-data');
  const other = path.join(sb.root, 'other');
  const viaEnv = await sb.run(['users', 'create', '--email', 'a@b.c', '--name', 'A', '--password-stdin'], {
    input: PASSWORD, env: { SVC_DATA_DIR: envData, SVC_STORAGE_DIR: sb.storage },
  });
  assert.equal(viaEnv.code, 0, describe(viaEnv));
  assert.match(viaEnv.stdout, /^created user usr_\S+ <a@b\.c>\n$/);
  if (sb.database === 'postgres') {
    // The database is SVC_POSTGRES_URL's (the tests give each data folder one of its own): no SQLite file anywhere.
    assert.equal(fs.existsSync(path.join(envData, 'svc.db')), false, 'no SQLite file on PostgreSQL');
  } else {
    assert.ok(fs.existsSync(path.join(envData, 'svc.db')), 'the database is in SVC_DATA_DIR');
  }
  assert.deepEqual((await query<{ email: string }>(t, envData, 'SELECT email FROM users')).map((u) => u.email), ['a@b.c']);
  assert.equal(fs.existsSync(path.join(sb.root, 'data')), false, 'the default ./data was not used');

  // The same data directory by flag sees that user.
  const viaFlag = await sb.run(['users', 'create', '--email', 'A@B.C', '--name', 'A', '--data-dir', envData]);
  assert.match(assertOneLineFailure(viaFlag), /e-mail/);

  // The flag wins over a different SVC_DATA_DIR.
  const both = await sb.run(['users', 'create', '--email', 'a@b.c', '--name', 'A', '--data-dir', envData], { env: { SVC_DATA_DIR: other } });
  assert.match(assertOneLineFailure(both), /e-mail/);
  assert.equal(fs.existsSync(other), false, 'SVC_DATA_DIR was ignored when --data-dir was given');
});

/** /usr/bin/node when it exists and is older than 22.18, else why the test is skipped. */
function oldSystemNode(): { node: string } | { skip: string } {
  const node = '/usr/bin/node';
  if (!fs.existsSync(node)) return { skip: `${node} does not exist` };
  const v = execFileSync(node, ['-p', 'process.versions.node'], { encoding: 'utf8' }).trim();
  const [major, minor] = v.split('.').map(Number);
  if (major > 22 || (major === 22 && minor >= 18)) return { skip: `${node} is ${v}, new enough to run svc itself` };
  return { node };
}

test('an older /usr/bin/node re-executes bin/svc with the project\'s Node', async (t) => {
  const sys = oldSystemNode();
  if ('skip' in sys) {
    t.skip(sys.skip);
    return;
  }
  const sb = new Sandbox(t);
  const help = await sb.run(['--help'], { node: sys.node });
  assert.equal(help.code, 0, describe(help));
  assert.match(help.stdout, /\bserve\b/);
  assert.match(help.stdout, /\bmigrate\b/);
  assert.equal(help.stderr, '');

  // The exit code of the re-executed command comes through.
  const none = await sb.run([], { node: sys.node });
  assert.equal(none.code, 2, describe(none));
  assert.match(assertOneLineFailure(none), /name a command/);
});

test('under an older /usr/bin/node, serve still stops cleanly on SIGTERM', async (t) => {
  const sys = oldSystemNode();
  if ('skip' in sys) {
    t.skip(sys.skip);
    return;
  }
  const sb = new Sandbox(t);
  const server = await sb.serve(['--port', '0', ...sb.dirs], {}, sys.node);
  const health = await api(server.url, 'GET', '/api/health');
  assert.equal(health.status, 200, health.text);
  await stop(server);
});

test('users suspend from another process: the running server refuses the old token on the very next request', async (t) => {
  const sb = new Sandbox(t);
  assert.equal((await createAdmin(sb)).code, 0);
  const created = await sb.run(['users', 'create', '--email', 'w@b.c', '--name', 'W', '--password-stdin', '--json', ...sb.dirs], { input: PASSWORD });
  assert.equal(created.code, 0, describe(created));
  const userId = JSON.parse(created.stdout).user.id as string;
  const server = await sb.serve(['--port', '0', ...sb.dirs]);
  const session = await login(server.url, 'w@b.c', PASSWORD);
  assert.equal((await api(server.url, 'GET', '/api/context', { token: session.token })).status, 200);

  const suspended = await sb.run(['users', 'suspend', 'w@b.c', ...sb.dirs]);
  assert.equal(suspended.code, 0, describe(suspended));
  assert.equal(suspended.stdout, `suspended user ${userId} <w@b.c>\n`);
  // The server's read cache must notice the other process's commit.
  const next = await api(server.url, 'GET', '/api/context', { token: session.token });
  assert.equal(next.status, 401, next.text);

  const listed = await sb.run(['users', 'list', '--json', ...sb.dirs]);
  assert.equal(listed.code, 0, describe(listed));
  const doc = JSON.parse(listed.stdout);
  assert.equal(doc.pagination.total, 2);
  const w = doc.items.find((u: { email: string }) => u.email === 'w@b.c');
  assert.equal(w.status, 'suspended');
  assert.equal(w.activeSessions, 0);
  assert.doesNotMatch(listed.stdout, /scrypt|password_?hash/i);
  const suspendedOnly = JSON.parse((await sb.run(['users', 'list', '--status', 'suspended', '--query', 'W@B', '--limit', '500', '--json', ...sb.dirs])).stdout);
  assert.deepEqual(suspendedOnly.items.map((u: { id: string }) => u.id), [userId]);
  assert.equal(suspendedOnly.pagination.pageSize, 200);

  // Reactivated, then a one-time password from the command line that works and must be changed.
  assert.equal((await sb.run(['users', 'activate', userId, ...sb.dirs])).code, 0);
  const reset = await sb.run(['users', 'reset-password', 'w@b.c', ...sb.dirs]);
  assert.equal(reset.code, 0, describe(reset));
  const m = /^one-time password \(change it at next login\): (\S+)$/m.exec(reset.stdout);
  assert.ok(m, reset.stdout);
  const fresh = await login(server.url, 'w@b.c', m[1]);
  assert.equal(fresh.passwordChangeRequired, true);
  const revoked = await sb.run(['users', 'revoke-sessions', 'w@b.c', '--json', ...sb.dirs]);
  assert.deepEqual(JSON.parse(revoked.stdout), { userId, revoked: 1 });
  assert.equal((await api(server.url, 'GET', '/api/auth/session', { token: fresh.token })).status, 401);
  const mfa = await sb.run(['users', 'reset-mfa', 'w@b.c', '--json', ...sb.dirs]);
  assert.equal(JSON.parse(mfa.stdout).mfaEnabled, false);

  // Refusals and unknown users: one stderr line, non-zero exit.
  assert.match(assertOneLineFailure(await sb.run(['users', 'suspend', 'a@b.c', '--json', ...sb.dirs])), /last active system administrator/);
  assert.match(assertOneLineFailure(await sb.run(['users', 'suspend', 'nobody@x.y', ...sb.dirs])), /nobody@x\.y/);
  assert.match(assertOneLineFailure(await sb.run(['users', 'reset-password', 'usr_nobody', '--json', ...sb.dirs])), /usr_nobody/);

  const org = await sb.run(['orgs', 'create', '--name', 'Studio', '--owner', 'w@b.c', '--json', ...sb.dirs]);
  assert.equal(org.code, 0, describe(org));
  const orgs = await sb.run(['orgs', 'list', '--json', ...sb.dirs]);
  assert.deepEqual(JSON.parse(orgs.stdout).items.map((o: { name: string }) => o.name), ['Studio']);
  assert.match(assertOneLineFailure(await sb.run(['users', 'suspend', 'w@b.c', ...sb.dirs])), /only active owner/);
  const actions = await query<{ action: string; actor_type: string }>(t, sb.data,
    "SELECT action, actor_type FROM audit_log WHERE target_id = ? AND action LIKE 'user.%' ORDER BY seq", userId);
  assert.deepEqual(actions.map((a) => [a.action, a.actor_type]), [
    ['user.created', 'operator'], ['user.suspended', 'operator'], ['user.activated', 'operator'],
    ['user.password_reset', 'operator'], ['user.sessions_revoked', 'operator'], ['user.mfa_reset', 'operator'],
  ]);
  await stop(server);
});
