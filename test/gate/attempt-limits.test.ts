// Attempt limits hold under concurrency and across processes (src/gate/ratelimit.ts, table
// attempt_limits): every guess at a secret reserves its slot before the secret is checked, so a burst
// sent at once gets no more evaluations than the limit; the counts live in the database, so a restart
// keeps them and two servers on one database file share them. Over real HTTP.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { startTestServer, tempDir, type Answer, type TestServer } from '../helpers/server.ts';
import { login, makeTree, makeUser } from '../helpers/factories.ts';
import { totpAt } from '../../src/identity/mfa/totp.ts';
import { openDb } from '../../src/db/db.ts';
import { migrate } from '../../src/db/migrate.ts';
import { openPostgres, type PostgresDb } from '../../src/db/postgres.ts';
import { checkAttempt, reserveAttempt, type AttemptLimit, type Slot } from '../../src/gate/ratelimit.ts';
import { freshDatabaseUrl } from '../helpers/postgres.ts';

/** How many answers of each status a burst got. */
function tally(answers: Answer[]): Record<number, number> {
  const out: Record<number, number> = {};
  for (const a of answers) out[a.status] = (out[a.status] ?? 0) + 1;
  return out;
}

function assertLimited(answers: Answer[], evaluated: number, max: number, what: string): void {
  const t = tally(answers);
  assert.equal((t[evaluated] ?? 0) + (t[429] ?? 0), answers.length, `${what}: only ${evaluated} and 429, got ${JSON.stringify(t)}`);
  assert.equal(t[evaluated], max, `${what}: exactly the limit was evaluated, got ${JSON.stringify(t)}`);
  for (const a of answers.filter((x) => x.status === 429)) {
    assert.equal(a.body.error.code, 'rate_limited');
    assert.ok(Number(a.headers.get('retry-after')) >= 1, 'Retry-After');
  }
}

const burst = (n: number, send: (i: number) => Promise<Answer>) => Promise.all(Array.from({ length: n }, (_, i) => send(i)));
const count = async (s: TestServer, sql: string, ...params: string[]) => (await s.db.get<{ n: number }>(sql, ...params))!.n;
/** A higher scrypt cost than the tests' default, so that concurrent checks overlap as in production. */
const SLOW = { SVC_SCRYPT_LOG_N: '13' };
const wrongLogin = (s: TestServer, email: string) => s.call('POST', '/api/auth/login', { body: { email, password: 'wrong password!' } });

test('40 concurrent wrong passwords for one e-mail: at most the limit (10) are checked, the rest 429; the right password then waits too', async (t) => {
  const s = await startTestServer(t, { ...SLOW, SVC_LOGIN_MAX_FAILURES_PER_ADDRESS: '1000' });
  const u = await makeUser(s);
  assertLimited(await burst(40, () => wrongLogin(s, u.email)), 401, 10, 'per e-mail');
  assert.equal(await count(s, "SELECT count(*) AS n FROM audit_log WHERE action = 'auth.login' AND result = 'failure'"), 10, 'ten evaluations audited');
  assert.equal((await s.call('POST', '/api/auth/login', { body: { email: u.email, password: u.password } })).status, 429);
  // An unknown e-mail gets the same answers (no oracle of which addresses have accounts).
  assertLimited(await burst(15, () => wrongLogin(s, 'nobody@example.test')), 401, 10, 'unknown e-mail');
});

test('40 concurrent wrong logins for 40 e-mails from one address: at most the per-address limit (30) are checked', async (t) => {
  const s = await startTestServer(t, SLOW);
  assertLimited(await burst(40, (i) => wrongLogin(s, `burst-${i}@example.test`)), 401, 30, 'per address');
});

test('the per-address budget counts an IPv6 client by its /64: rotating addresses inside one prefix buys no new guesses', async (t) => {
  // Behind a trusted proxy the client address is the first X-Forwarded-For entry.
  const s = await startTestServer(t, { ...SLOW, SVC_TRUST_PROXY: '1', SVC_LOGIN_MAX_FAILURES_PER_ADDRESS: '6' });
  const from = (ip: string, i: number) => s.call('POST', '/api/auth/login', { body: { email: `v6-${i}@example.test`, password: 'wrong password!' }, headers: { 'x-forwarded-for': ip } });
  assertLimited(await burst(12, (i) => from(`2001:db8:1:2::${(i + 1).toString(16)}`, i)), 401, 6, 'one /64');
  assert.equal((await from('2001:db8:1:3::1', 99)).status, 401, 'another /64 has its own budget');
  assert.equal((await from('[::ffff:198.51.100.7]', 98)).status, 401, 'IPv4-mapped: counted as its IPv4 address');
  assertLimited(await burst(8, (i) => from('198.51.100.7', 100 + i)), 401, 5, 'the same IPv4 address, one guess already spent');
});

test('30 concurrent wrong current passwords on POST /api/auth/password: at most the limit (10) are checked', async (t) => {
  const s = await startTestServer(t, { ...SLOW, SVC_LOGIN_MAX_FAILURES_PER_ADDRESS: '1000' });
  const u = await makeUser(s);
  const token = await login(s, u);
  const answers = await burst(30, () => s.call('POST', '/api/auth/password', { token, body: { currentPassword: 'not the password', newPassword: 'another long password 42' } }));
  assertLimited(answers, 422, 10, 'password change');
  assert.equal((await s.call('POST', '/api/auth/password', { body: { currentPassword: 'x', newPassword: 'another long password 42' } })).status, 401, 'no credential: 401');
});

test('MFA: a concurrent burst of wrong codes locks the challenge after exactly 5 evaluations; wrong passwords to turn TOTP off are limited under a burst', async (t) => {
  const s = await startTestServer(t, { ...SLOW, SVC_LOGIN_MAX_FAILURES_PER_ADDRESS: '1000' });
  const u = await makeUser(s);
  // The MFA routes take the browser session (cookie and the service's Origin).
  const signedIn = await s.call('POST', '/api/auth/login', { body: { email: u.email, password: u.password }, headers: { origin: s.url } });
  assert.equal(signedIn.status, 200, signedIn.text);
  const headers = { cookie: signedIn.headers.get('set-cookie')!.split(';')[0], origin: s.url };
  const setup = await s.call('POST', '/api/auth/mfa/setup', { headers });
  assert.equal(setup.status, 200, setup.text);
  const enable = await s.call('POST', '/api/auth/mfa/enable', { headers, body: { code: totpAt(setup.body.secret, Math.floor(Date.now() / 1000)) } });
  assert.equal(enable.status, 200, enable.text);

  const challenge = await s.call('POST', '/api/auth/login', { body: { email: u.email, password: u.password } });
  assert.equal(challenge.body.mfaRequired, true, challenge.text);
  const now = Math.floor(Date.now() / 1000);
  const near = new Set([-2, -1, 0, 1, 2].map((k) => totpAt(setup.body.secret, now + k * 30)));
  const wrong = ['000000', '111111', '222222', '333333', '444444', '555555'].find((c) => !near.has(c))!;
  const codes = await burst(12, () => s.call('POST', '/api/auth/login/mfa', { body: { challengeToken: challenge.body.challengeToken, code: wrong } }));
  assert.ok(codes.every((a) => a.status === 401), JSON.stringify(tally(codes)));
  assert.equal(await count(s, "SELECT count(*) AS n FROM audit_log WHERE action = 'auth.mfa.code_rejected'"), 5, 'five codes evaluated');
  assert.equal(codes.filter((a) => a.body.error.code === 'mfa_code_invalid').length, 4);

  const disable = await burst(30, () => s.call('POST', '/api/auth/mfa/disable', { headers, body: { password: 'not the password' } }));
  assertLimited(disable, 422, 10, 'MFA disable');
});

const perAddress4 = { SVC_LOGIN_MAX_FAILURES_PER_ADDRESS: '4', SVC_LOGIN_MAX_FAILURES_PER_EMAIL: '1000' };

test('MFA: wrong codes count per user over all challenges, in the database: a burst split over two servers gets the limit; an accepted code clears it', async (t) => {
  const dataDir = path.join(tempDir(t), 'data');
  const env = { SVC_LOGIN_MAX_FAILURES_PER_EMAIL: '3', SVC_LOGIN_MAX_FAILURES_PER_ADDRESS: '1000' };
  const a = await startTestServer(t, env, { dataDir });
  const b = await startTestServer(t, env, { dataDir });
  const u = await makeUser(a);
  const signedIn = await a.call('POST', '/api/auth/login', { body: { email: u.email, password: u.password }, headers: { origin: a.url } });
  const headers = { cookie: signedIn.headers.get('set-cookie')!.split(';')[0], origin: a.url };
  const setup = await a.call('POST', '/api/auth/mfa/setup', { headers });
  const now = Math.floor(Date.now() / 1000);
  assert.equal((await a.call('POST', '/api/auth/mfa/enable', { headers, body: { code: totpAt(setup.body.secret, now - 30) } })).status, 200);
  const near = new Set([-2, -1, 0, 1, 2].map((k) => totpAt(setup.body.secret, now + k * 30)));
  const wrong = ['000000', '111111', '222222', '333333', '444444', '555555'].find((c) => !near.has(c))!;
  const challenge = async () => (await a.call('POST', '/api/auth/login', { body: { email: u.email, password: u.password } })).body.challengeToken as string;
  const redeem = (s: TestServer, token: string, code: string) => s.call('POST', '/api/auth/login/mfa', { body: { challengeToken: token, code } });

  const first = await challenge();
  for (let i = 0; i < 2; i++) assert.equal((await redeem(a, first, wrong)).body.error.code, 'mfa_code_invalid');
  const second = await challenge();
  const answers = await burst(6, (i) => redeem(i % 2 ? a : b, second, wrong));
  assertLimited(answers, 401, 1, 'a new challenge buys no new guesses');
  assert.equal((await redeem(b, second, totpAt(setup.body.secret, now))).status, 429, 'over the limit even the right code waits');
  assert.ok(await count(a, "SELECT count(*) AS n FROM audit_log WHERE action = 'auth.mfa.challenge_refused' AND metadata LIKE '%rate_limited%'") >= 5);
  // Once the window has passed (rows removed here), two more wrong codes, then an accepted code clears them all.
  await a.db.run("DELETE FROM attempt_limits WHERE bucket = 'mfa_code'");
  for (let i = 0; i < 2; i++) assert.equal((await redeem(b, second, wrong)).status, 401);
  assert.equal((await redeem(b, second, totpAt(setup.body.secret, now))).status, 200, 'the right code signs in');
  const third = await challenge();
  for (let i = 0; i < 3; i++) assert.equal((await redeem(a, third, wrong)).status, 401);
  assert.equal((await redeem(a, third, wrong)).status, 429);
});

test('SSO ticket redemption: wrong tickets count against the address, then 429 without looking at the ticket', async (t) => {
  const s = await startTestServer(t, perAddress4);
  const redeem = () => s.call('POST', '/api/auth/sso/redeem', { body: { ticket: 'not-a-ticket-0123456789' } });
  assertLimited(await burst(10, redeem), 401, 4, 'SSO redeem');
  assert.equal(await count(s, "SELECT count(*) AS n FROM audit_log WHERE metadata LIKE '%invalid_ticket%'"), 4, 'refusals past the limit are not audited');

});

test('invitation registration and preview: refused tokens count against the address, then 429', async (t) => {
  const s2 = await startTestServer(t, perAddress4);
  const register = () => s2.call('POST', '/api/auth/register', { body: { token: 'not-an-invitation-token', email: 'new@example.test', name: 'New', password: 'a long test password' } });
  assertLimited(await burst(10, register), 404, 4, 'register');
  assert.equal((await s2.call('GET', '/api/invitations/preview?token=another-guess')).status, 429, 'preview shares the budget');

});

test('SCIM: unknown bearer tokens count against the address, then 429 in the SCIM error shape', async (t) => {
  const s3 = await startTestServer(t, perAddress4);
  const scim = () => s3.call('GET', '/scim/v2.0/scim_nope/Users', { token: 'scim_not-a-real-token-0123456789' });
  const scimAnswers = await burst(10, scim);
  const st = tally(scimAnswers);
  assert.deepEqual([st[401], st[429]], [4, 6], JSON.stringify(st));
  const over = scimAnswers.find((a) => a.status === 429)!;
  assert.equal(over.body.status, '429', 'the SCIM error shape');
  assert.ok(Number(over.headers.get('retry-after')) >= 1);

});

test('OAuth client-credentials exchange: a burst of wrong secrets split over two servers on one database gets the per-client limit of checks', async (t) => {
  const dataDir = path.join(tempDir(t), 'data');
  const env = { SVC_LOGIN_MAX_FAILURES_PER_ADDRESS: '1000', SVC_LOGIN_MAX_FAILURES_PER_EMAIL: '5' };
  const a = await startTestServer(t, env, { dataDir });
  const b = await startTestServer(t, env, { dataDir });
  const tree = await makeTree(a);
  const admin = await login(a, await makeUser(a, { systemAdmin: true }));
  const created = await a.call('POST', '/api/system/api-clients', { token: admin, body: { name: 'ci', organizationId: tree.organizationId, permissions: ['script:read'] } });
  assert.equal(created.status, 201, created.text);
  const exchange = (s: TestServer, secret: string) =>
    s.call('POST', '/api/oauth/token', { body: { grant_type: 'client_credentials', client_id: created.body.client.id, client_secret: secret } });
  assertLimited(await burst(12, (i) => exchange(i % 2 ? a : b, 'svccs_wrong')), 401, 5, 'token exchange');
  assert.equal((await exchange(a, created.body.clientSecret)).status, 429, 'even the right secret waits');
});

test('the counts survive a restart on the same data directory', async (t) => {
  const dataDir = path.join(tempDir(t), 'data');
  const env = { SVC_LOGIN_MAX_FAILURES_PER_EMAIL: '3', SVC_LOGIN_MAX_FAILURES_PER_ADDRESS: '1000' };
  const first = await startTestServer(t, env, { dataDir });
  const u = await makeUser(first);
  for (let i = 0; i < 3; i++) assert.equal((await wrongLogin(first, u.email)).status, 401);
  await first.close();
  const second = await startTestServer(t, env, { dataDir });
  const after = await second.call('POST', '/api/auth/login', { body: { email: u.email, password: u.password } });
  assert.equal(after.status, 429, 'still limited after the restart');
  assert.equal(after.body.error.code, 'rate_limited');
});

test('two servers on one database file share the counts (a burst split over both gets the limit, not twice it)', async (t) => {
  const dataDir = path.join(tempDir(t), 'data');
  const env = { SVC_LOGIN_MAX_FAILURES_PER_EMAIL: '6', SVC_LOGIN_MAX_FAILURES_PER_ADDRESS: '1000' };
  const a = await startTestServer(t, env, { dataDir });
  const b = await startTestServer(t, env, { dataDir });
  const u = await makeUser(a);
  assertLimited(await burst(20, (i) => wrongLogin(i % 2 ? a : b, u.email)), 401, 6, 'two servers');
  // A success on one clears the count for both.
  const other = await makeUser(a);
  for (let i = 0; i < 5; i++) assert.equal((await wrongLogin(i % 2 ? a : b, other.email)).status, 401);
  assert.equal((await b.call('POST', '/api/auth/login', { body: { email: other.email, password: other.password } })).status, 200);
  for (let i = 0; i < 6; i++) assert.equal((await wrongLogin(i % 2 ? a : b, other.email)).status, 401, `after the clear, attempt ${i + 1}`);
  assert.equal((await wrongLogin(a, other.email)).status, 429);
});

test('the limiter: keys stored as SHA-256 only, all-or-none reservations, released slots free, expired rows pruned', async (t) => {
  const db = openDb(path.join(tempDir(t), 'svc.db'));
  t.after(() => db.close());
  await migrate(db);
  const small: AttemptLimit = { bucket: 'test_small', max: 2, windowMs: 60_000 };
  const big: AttemptLimit = { bucket: 'test_big', max: 5, windowMs: 1_000 };
  const t0 = 1_000_000_000_000;
  (await reserveAttempt(db, [{ limit: small, key: 'alice@example.test' }, { limit: big, key: '192.0.2.1' }], t0)).fail();
  const rows = await db.all<{ key_hash: string }>('SELECT key_hash FROM attempt_limits');
  assert.equal(rows.length, 2);
  assert.ok(rows.every((r) => /^[0-9a-f]{64}$/.test(r.key_hash)), 'no key in clear');
  const released = await reserveAttempt(db, [{ limit: small, key: 'alice@example.test' }], t0 + 1);
  await released.release();
  (await reserveAttempt(db, [{ limit: small, key: 'alice@example.test' }], t0 + 2)).fail();
  let refusedWith = 0;
  await assert.rejects(async () => await reserveAttempt(db, [{ limit: big, key: '192.0.2.1' }, { limit: small, key: 'alice@example.test' }], t0 + 3, (w) => { refusedWith = w; }),
    (e: any) => e.status === 429 && e.code === 'rate_limited');
  assert.equal(refusedWith, 60, 'Retry-After: until the oldest counted attempt leaves the window');
  assert.equal((await db.get<{ n: number }>("SELECT count(*) AS n FROM attempt_limits WHERE bucket = 'test_big'"))!.n, 1, 'all or none: nothing reserved on refusal');
  // A synchronous check: success writes nothing; a failure is counted and its error thrown; at the limit it does not run.
  const tok: AttemptLimit = { bucket: 'test_token', max: 2, windowMs: 60_000 };
  const rowsOf = async (bucket: string) => (await db.get<{ n: number }>('SELECT count(*) AS n FROM attempt_limits WHERE bucket = ?', bucket))!.n;
  assert.equal(await checkAttempt(db, [{ limit: tok, key: 'k' }], t0, () => 'ok'), 'ok');
  assert.equal(await rowsOf('test_token'), 0, 'a success writes nothing');
  for (let i = 0; i < 2; i++) await assert.rejects(async () => await checkAttempt(db, [{ limit: tok, key: 'k' }], t0, () => { throw new Error('wrong token'); }), /wrong token/);
  assert.equal(await rowsOf('test_token'), 2);
  let ran = false;
  await assert.rejects(async () => await checkAttempt(db, [{ limit: tok, key: 'k' }], t0, () => { ran = true; }), (e: any) => e.status === 429);
  assert.equal(ran, false, 'at the limit the check does not run');
  await checkAttempt(db, [{ limit: tok, key: 'other' }], t0, () => 'ok', { clears: [tok] });
  // A minute and more later every row has expired: the next reservation prunes them.
  await reserveAttempt(db, [{ limit: big, key: '192.0.2.9' }], t0 + 120_000);
  assert.equal((await db.get<{ n: number }>('SELECT count(*) AS n FROM attempt_limits'))!.n, 1, 'only the new row is left');
});

test('postgres: concurrent reservations and checks on two pools (two processes) get exactly the limit, whatever the order of their keys', async (t) => {
  const pools: PostgresDb[] = [];
  const url = await freshDatabaseUrl(t, async () => { for (const p of pools) await p.close(); });
  pools.push(await openPostgres({ url, max: 5 }), await openPostgres({ url, max: 5 }));
  await migrate(pools[0]);
  const account: AttemptLimit = { bucket: 'pg_account', max: 4, windowMs: 60_000 };
  const address: AttemptLimit = { bucket: 'pg_address', max: 7, windowMs: 60_000 };
  const t0 = Date.now();
  // Half of the attempts name their keys in the other order: the locks are taken sorted, never crosswise.
  const slots = (i: number, who: string): Slot[] => {
    const both: Slot[] = [{ limit: account, key: who }, { limit: address, key: '192.0.2.1' }];
    return i % 2 ? both.reverse() : both;
  };
  const outcome = async (p: Promise<unknown>) => p.then(() => 'granted', (e: { status?: number }) => (e.status === 429 ? '429' : Promise.reject(e as Error)));
  const reserved = await Promise.all(Array.from({ length: 24 }, async (_, i) => await outcome(reserveAttempt(pools[i % 2], slots(i, 'alice'), t0))));
  assert.equal(reserved.filter((x) => x === 'granted').length, 4, 'the account\'s limit');
  // Checks that take a while (inside the transaction) and fail: each counted, never more run than allowed.
  let ran = 0;
  const failing = async () => { ran++; await new Promise((r) => setTimeout(r, 5)); throw Object.assign(new Error('wrong'), { status: 401 }); };
  const checked = await Promise.all(Array.from({ length: 24 }, async (_, i) => await outcome(checkAttempt(pools[i % 2], slots(i, `user${i % 3}`), t0, failing))
    .catch((e: { status?: number }) => (e.status === 401 ? 'failed' : Promise.reject(e as Error)))));
  assert.equal(ran, 3, 'the address had 3 of its 7 left');
  assert.equal(checked.filter((x) => x === 'failed').length, 3);
  assert.equal((await pools[1].get<{ n: number }>("SELECT count(*) AS n FROM attempt_limits WHERE bucket = 'pg_address'"))!.n, 7);
});
