// Issue 21 item 11: SVC_SESSION_SECRET keys the stored hashes of session tokens and API-client access
// tokens (HMAC-SHA-256): the database holds no plain SHA-256 of a live token, a token stored under
// another secret (or as plain SHA-256) does not authenticate, the configuration report tells only
// set/unset, an unset secret is warned about at start and a malformed one stops it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import path from 'node:path';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.ts';
import { login, makeTree, makeUser } from '../helpers/factories.ts';
import { ConfigError, loadConfig } from '../../src/kernel/config.ts';
import { startServer } from '../../src/server.ts';
import { createLogger } from '../../src/kernel/log.ts';
import { newId } from '../../src/kernel/ids.ts';
import { tokenHash } from '../../src/directory/sessions/token-hash.ts';

const SECRET_A = crypto.randomBytes(32).toString('hex');
const SECRET_B = 'another long passphrase for the session secret';
const sha256 = (s: string) => crypto.hash('sha256', s, 'hex');
const hmac = (key: Buffer, s: string) => crypto.createHmac('sha256', key).update(s).digest('hex');

async function client(s: TestServer, adminToken: string, organizationId: string) {
  const r = await s.call('POST', '/api/system/api-clients', { token: adminToken, body: { name: 'Integration', organizationId, permissions: ['script:read'] } });
  assert.equal(r.status, 201, r.text);
  const id = r.body.client.id as string;
  const secret = r.body.clientSecret as string;
  const exchange = () => s.call('POST', '/api/oauth/token', { body: { grant_type: 'client_credentials', client_id: id, client_secret: secret } });
  return { id, secret, exchange };
}

const context = (s: TestServer, token: string) => s.call('GET', '/api/context', { token });

test('with SVC_SESSION_SECRET set the database holds the HMAC of each live token, never its plain SHA-256', async (t) => {
  const s = await startTestServer(t, { SVC_SESSION_SECRET: SECRET_A });
  const admin = await makeUser(s, { systemAdmin: true });
  const token = await login(s, admin);
  const tree = await makeTree(s);
  const c = await client(s, token, tree.organizationId);
  const issued = await c.exchange();
  assert.equal(issued.status, 200, issued.text);
  const access = issued.body.access_token as string;
  assert.equal((await context(s, token)).status, 200, 'the session authenticates');
  assert.notEqual((await context(s, access)).status, 401, 'the access token authenticates');

  const sessions = (await s.db.all<{ token_hash: string }>('SELECT token_hash FROM sessions')).map((r) => r.token_hash);
  const tokens = (await s.db.all<{ token_hash: string }>('SELECT token_hash FROM api_client_tokens')).map((r) => r.token_hash);
  assert.deepEqual(sessions, [hmac(Buffer.from(SECRET_A, 'hex'), token)], 'the session token under HMAC-SHA-256 with the configured key');
  assert.deepEqual(tokens, [hmac(Buffer.from(SECRET_A, 'hex'), access)]);
  const dump = JSON.stringify([await s.db.all('SELECT * FROM sessions'), await s.db.all('SELECT * FROM api_client_tokens'), await s.db.all('SELECT * FROM audit_log')]);
  for (const live of [token, access]) {
    assert.ok(!dump.includes(sha256(live)), 'no plain SHA-256 of a live token');
    assert.ok(!dump.includes(live));
  }
  assert.ok(!dump.includes(SECRET_A));
});

test('a token stored under another secret, or as plain SHA-256, does not authenticate; the client secret survives a change', async (t) => {
  const dir = tempDir(t);
  const dirs = { dataDir: path.join(dir, 'data'), storageDir: path.join(dir, 'storage') };
  const a = await startTestServer(t, { SVC_SESSION_SECRET: SECRET_A }, dirs);
  const admin = await makeUser(a, { systemAdmin: true });
  const token = await login(a, admin);
  const c = await client(a, token, (await makeTree(a)).organizationId);
  const access = (await c.exchange()).body.access_token as string;
  assert.equal((await context(a, token)).status, 200);

  // The same database under another secret (a changed SVC_SESSION_SECRET): everyone is signed out.
  const b = await startTestServer(t, { SVC_SESSION_SECRET: SECRET_B }, dirs);
  const bySession = await context(b, token);
  assert.equal(bySession.status, 401, bySession.text);
  assert.equal(bySession.body.error.code, 'unauthenticated');
  assert.equal((await context(b, access)).status, 401, 'the access token is no credential either');
  const again = await c.exchange();
  assert.equal(again.status, 200, 'the client secret itself still works on the first server');
  const fresh = await b.call('POST', '/api/oauth/token', { body: { grant_type: 'client_credentials', client_id: c.id, client_secret: c.secret } });
  assert.equal(fresh.status, 200, `the client obtains a new access token under the new secret: ${fresh.text}`);
  assert.notEqual((await context(b, fresh.body.access_token)).status, 401);

  // A row as stored before this change (plain SHA-256) is no credential.
  const old = crypto.randomBytes(32).toString('base64url');
  const at = new Date().toISOString();
  await b.db.run(
    `INSERT INTO sessions (id, token_hash, user_id, kind, created_at, last_seen_at, expires_at) VALUES (?, ?, ?, 'bearer', ?, ?, ?)`,
    newId('ses'), sha256(old), admin.id, at, at, new Date(Date.now() + 3_600_000).toISOString(),
  );
  assert.equal((await context(b, old)).status, 401);
  // The same row under the current key is one (the refusal above is the hash, nothing else).
  const current = crypto.randomBytes(32).toString('base64url');
  await b.db.run(
    `INSERT INTO sessions (id, token_hash, user_id, kind, created_at, last_seen_at, expires_at) VALUES (?, ?, ?, 'bearer', ?, ?, ?)`,
    newId('ses'), tokenHash(b.config, current), admin.id, at, at, new Date(Date.now() + 3_600_000).toISOString(),
  );
  assert.equal((await context(b, current)).status, 200);
});

test('the configuration report tells only whether SVC_SESSION_SECRET is set', async (t) => {
  const s = await startTestServer(t, { SVC_SESSION_SECRET: SECRET_B });
  const r = await s.call('GET', '/api/system/config', { token: await login(s, await makeUser(s, { systemAdmin: true })) });
  assert.equal(r.status, 200, r.text);
  assert.ok(!r.text.includes(SECRET_B));
  const entry = r.body.settings.find((x: { env: string }) => x.env === 'SVC_SESSION_SECRET');
  assert.ok(entry, 'SVC_SESSION_SECRET is reported');
  assert.deepEqual([entry.secret, entry.set, entry.source, 'value' in entry], [true, true, 'env', false]);

  const unset = await startTestServer(t);
  const u = await unset.call('GET', '/api/system/config', { token: await login(unset, await makeUser(unset, { systemAdmin: true })) });
  const e = u.body.settings.find((x: { env: string }) => x.env === 'SVC_SESSION_SECRET');
  assert.deepEqual([e.set, e.source], [false, 'default']);
});

test('an unset secret is warned about at start, a set one is not; a malformed one stops the start', async (t) => {
  const unset = await startTestServer(t);
  unset.log.flush();
  const warning = unset.logs.map((l) => JSON.parse(l)).find((l) => /SVC_SESSION_SECRET is not set/.test(l.msg));
  assert.ok(warning, 'warned');
  assert.equal(warning.level, 'warn');
  assert.match(warning.msg, /built-in development key, which is public/);

  const set = await startTestServer(t, { SVC_SESSION_SECRET: SECRET_A });
  set.log.flush();
  assert.ok(!set.logs.some((l) => l.includes('SVC_SESSION_SECRET is not set')));
  assert.ok(!set.logs.some((l) => l.includes(SECRET_A)));

  const dir = tempDir(t);
  const config = loadConfig({ port: 0, dataDir: path.join(dir, 'data'), storageDir: path.join(dir, 'storage') }, { SVC_SCRYPT_LOG_N: '10', SVC_SESSION_SECRET: 'too-short' });
  await assert.rejects(startServer(config, createLogger('silent')).then((r) => r.close()), (e: Error) => e instanceof ConfigError && /SVC_SESSION_SECRET/.test(e.message));
});
