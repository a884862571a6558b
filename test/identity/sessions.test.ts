// Login, logout, sessions, password change, rate limits, browser cookie sessions.
import { test } from 'node:test';
import type { Db } from '../../src/db/db.ts';
import assert from 'node:assert/strict';
import { startTestServer } from '../helpers/server.ts';
import { login, makeUser } from '../helpers/factories.ts';
import { setUserStatus, createUser } from '../../src/identity/users/service.ts';
import { tokenHash } from '../../src/directory/sessions/token-hash.ts';

const auditRows = async (s: { db: Db }, action: string) =>
  await s.db.all<any>('SELECT * FROM audit_log WHERE action = ? ORDER BY seq', action);

test('login answers the contract shape and stores only the SHA-256 of the token', async (t) => {
  const s = await startTestServer(t);
  const u = await makeUser(s, { email: 'Mixed.Case@Example.test' });
  const r = await s.call('POST', '/api/auth/login', { body: { email: 'mixed.case@example.TEST', password: u.password } });
  assert.equal(r.status, 200, r.text);
  assert.match(r.body.token, /^[A-Za-z0-9_-]{43}$/);
  assert.ok(Date.parse(r.body.expiresAt) > Date.now());
  assert.deepEqual(r.body.user, { id: u.id, email: u.email, name: u.name });
  assert.equal(r.headers.get('set-cookie'), null, 'no cookie for a non-browser client');
  const rows = await s.db.all<{ token_hash: string }>('SELECT token_hash FROM sessions');
  assert.deepEqual(rows.map((x) => x.token_hash), [tokenHash(s.config, r.body.token)]);
  const dump = JSON.stringify(await s.db.all('SELECT * FROM sessions')) + JSON.stringify(await s.db.all('SELECT * FROM audit_log'));
  assert.ok(!dump.includes(r.body.token));
  assert.ok(!dump.includes(u.password));
  const ok = (await auditRows(s, 'auth.login')).filter((a) => a.result === 'success');
  assert.equal(ok.length, 1);
  assert.equal(ok[0].actor_user_id, u.id);
});

test('unknown e-mail and wrong password get the same 401 invalid_credentials, both audited', async (t) => {
  const s = await startTestServer(t);
  const u = await makeUser(s);
  const wrong = await s.call('POST', '/api/auth/login', { body: { email: u.email, password: 'not the password' } });
  const unknown = await s.call('POST', '/api/auth/login', { body: { email: 'nobody@example.test', password: 'not the password' } });
  assert.equal(wrong.status, 401);
  assert.equal(unknown.status, 401);
  assert.deepEqual(wrong.body, unknown.body);
  assert.equal(wrong.body.error.code, 'invalid_credentials');
  const failures = (await auditRows(s, 'auth.login')).filter((a) => a.result === 'failure');
  assert.deepEqual(failures.map((a) => JSON.parse(a.metadata).reason), ['wrong_password', 'unknown_email']);
  assert.ok(!JSON.stringify(failures).includes('not the password'));
});

test('a suspended account is 403 account_suspended with the right password, 401 otherwise, and its tokens are 401', async (t) => {
  const s = await startTestServer(t);
  const u = await makeUser(s);
  const token = await login(s, u);
  assert.equal((await s.call('GET', '/api/context', { token })).status, 200);
  await setUserStatus(s.operator(), u.id, 'suspended');
  assert.equal((await s.call('GET', '/api/context', { token })).status, 401);
  const right = await s.call('POST', '/api/auth/login', { body: { email: u.email, password: u.password } });
  assert.equal(right.status, 403);
  assert.equal(right.body.error.code, 'account_suspended');
  const wrong = await s.call('POST', '/api/auth/login', { body: { email: u.email, password: 'wrong wrong wrong' } });
  assert.equal(wrong.status, 401);
  await setUserStatus(s.operator(), u.id, 'active');
  assert.equal((await s.call('GET', '/api/context', { token })).status, 401, 'reactivation does not revive revoked sessions');
  assert.equal((await s.call('POST', '/api/auth/login', { body: { email: u.email, password: u.password } })).status, 200);
});

test('a user suspended through one process has its token refused by another at the very next request', async (t) => {
  const a = await startTestServer(t);
  const b = await startTestServer(t, {}, { dataDir: a.config.dataDir }); // the same database: another api process
  const u = await makeUser(a);
  const token = await login(a, u);
  for (let i = 0; i < 2; i++) assert.equal((await b.call('GET', '/api/context', { token })).status, 200, 'the other process has the session cached');
  await setUserStatus(a.operator(), u.id, 'suspended');
  assert.equal((await b.call('GET', '/api/context', { token })).status, 401);
  assert.equal((await a.call('GET', '/api/context', { token })).status, 401);
});

test('logout makes the token 401 at once and clears the cookie', async (t) => {
  const s = await startTestServer(t);
  const u = await makeUser(s);
  const token = await login(s, u);
  const other = await login(s, u);
  const out = await s.call('POST', '/api/auth/logout', { token });
  assert.equal(out.status, 204);
  assert.match(out.headers.get('set-cookie')!, /svc_session=;.*Max-Age=0/);
  assert.equal((await s.call('GET', '/api/auth/session', { token })).status, 401);
  assert.equal((await s.call('GET', '/api/auth/session', { token: other })).status, 200, 'other sessions live on');
  assert.equal((await auditRows(s, 'auth.logout')).length, 1);
});

test('password change checks the current password and the rules, then revokes every old token', async (t) => {
  const s = await startTestServer(t);
  const u = await makeUser(s);
  const token = await login(s, u);
  const other = await login(s, u);
  const wrong = await s.call('POST', '/api/auth/password', { token, body: { currentPassword: 'nope nope nope', newPassword: 'a brand new password' } });
  assert.equal(wrong.status, 422);
  assert.ok(wrong.body.error.details.fields.currentPassword);
  const short = await s.call('POST', '/api/auth/password', { token, body: { currentPassword: u.password, newPassword: 'short' } });
  assert.equal(short.status, 422);
  assert.ok(short.body.error.details.fields.newPassword);
  const same = await s.call('POST', '/api/auth/password', { token, body: { currentPassword: u.password, newPassword: u.password } });
  assert.equal(same.status, 422);
  assert.equal((await s.call('GET', '/api/context', { token })).status, 200, 'refusals change nothing');

  const ok = await s.call('POST', '/api/auth/password', { token, body: { currentPassword: u.password, newPassword: 'a brand new password' } });
  assert.equal(ok.status, 200, ok.text);
  assert.equal((await s.call('GET', '/api/context', { token })).status, 401, 'the token used is replaced');
  assert.equal((await s.call('GET', '/api/context', { token: other })).status, 401, 'other sessions are revoked');
  assert.equal((await s.call('GET', '/api/context', { token: ok.body.token })).status, 200, 'the fresh session works');
  assert.equal((await s.call('POST', '/api/auth/login', { body: { email: u.email, password: u.password } })).status, 401);
  assert.equal((await s.call('POST', '/api/auth/login', { body: { email: u.email, password: 'a brand new password' } })).status, 200);
  const changed = await auditRows(s, 'auth.password.changed');
  assert.equal(changed.length, 1);
  assert.equal(JSON.parse(changed[0].metadata).sessionsRevoked, 2);
});

test('own sessions: list, revoke one, revoke the others; another user\'s session is 404', async (t) => {
  const s = await startTestServer(t);
  const u = await makeUser(s);
  const v = await makeUser(s);
  const a = await login(s, u);
  const b = await login(s, u);
  const c = await login(s, u);
  const vToken = await login(s, v);
  const list = await s.call('GET', '/api/auth/sessions', { token: a });
  assert.equal(list.status, 200);
  assert.equal(list.body.items.length, 3);
  assert.equal(list.body.items.filter((x: any) => x.current).length, 1);
  assert.ok(!list.text.includes(b) && !list.text.includes('token_hash'));
  const current = await s.call('GET', '/api/auth/session', { token: b });
  const bId = current.body.session.id;
  assert.equal(current.body.user.id, u.id);

  const vSessions = await s.call('GET', '/api/auth/sessions', { token: vToken });
  assert.equal(vSessions.body.items.length, 1, 'lists are per user');
  const foreign = await s.call('DELETE', `/api/auth/sessions/${vSessions.body.items[0].id}`, { token: a });
  assert.equal(foreign.status, 404);
  assert.equal((await s.call('GET', '/api/context', { token: vToken })).status, 200);

  assert.equal((await s.call('DELETE', `/api/auth/sessions/${bId}`, { token: a })).status, 204);
  assert.equal((await s.call('GET', '/api/context', { token: b })).status, 401);
  const others = await s.call('POST', '/api/auth/sessions/revoke-others', { token: a });
  assert.deepEqual(others.body, { revoked: 1 });
  assert.equal((await s.call('GET', '/api/context', { token: c })).status, 401);
  assert.equal((await s.call('GET', '/api/context', { token: a })).status, 200);
  assert.equal((await s.call('DELETE', '/api/auth/sessions/ses_unknown', { token: a })).status, 404);
  assert.equal((await s.call('GET', '/api/auth/sessions')).status, 401);
});

test('sessions expire when idle and at their absolute expiry', async (t) => {
  const s = await startTestServer(t, { SVC_SESSION_IDLE_MINUTES: '30' });
  const u = await makeUser(s);
  const idle = await login(s, u);
  const old = await login(s, u);
  // Move time for these sessions by editing their stored times.
  await s.db.run('UPDATE sessions SET last_seen_at = ? WHERE token_hash = ?', new Date(Date.now() - 31 * 60_000).toISOString(), tokenHash(s.config, idle));
  await s.db.run('UPDATE sessions SET expires_at = ? WHERE token_hash = ?', new Date(Date.now() - 1000).toISOString(), tokenHash(s.config, old));
  assert.equal((await s.call('GET', '/api/context', { token: idle })).status, 401);
  assert.equal((await s.call('GET', '/api/context', { token: old })).status, 401);
  const fresh = await login(s, u);
  const listed = await s.call('GET', '/api/auth/sessions', { token: fresh });
  assert.equal(listed.body.items.length, 1, 'expired sessions are not listed');
});

test('failed logins are limited per e-mail and per client address with 429 and Retry-After', async (t) => {
  const s = await startTestServer(t, { SVC_LOGIN_MAX_FAILURES_PER_EMAIL: '3', SVC_LOGIN_MAX_FAILURES_PER_ADDRESS: '6' });
  const u = await makeUser(s);
  for (let i = 0; i < 3; i++) {
    assert.equal((await s.call('POST', '/api/auth/login', { body: { email: u.email, password: 'wrong password!' } })).status, 401);
  }
  const limited = await s.call('POST', '/api/auth/login', { body: { email: u.email, password: u.password } });
  assert.equal(limited.status, 429, 'even the right password waits');
  assert.equal(limited.body.error.code, 'rate_limited');
  assert.ok(Number(limited.headers.get('retry-after')) > 0);
  // Per address: other e-mails from the same client address.
  for (let i = 0; i < 3; i++) {
    assert.equal((await s.call('POST', '/api/auth/login', { body: { email: `x${i}@example.test`, password: 'wrong password!' } })).status, 401);
  }
  const byAddress = await s.call('POST', '/api/auth/login', { body: { email: 'fresh@example.test', password: 'wrong password!' } });
  assert.equal(byAddress.status, 429);
  assert.ok((await auditRows(s, 'auth.login')).some((a) => a.result === 'denied' && JSON.parse(a.metadata).reason === 'rate_limited'));
});

test('a successful login clears the e-mail\'s failure count', async (t) => {
  const s = await startTestServer(t, { SVC_LOGIN_MAX_FAILURES_PER_EMAIL: '3' });
  const u = await makeUser(s);
  for (let round = 0; round < 2; round++) {
    for (let i = 0; i < 2; i++) await s.call('POST', '/api/auth/login', { body: { email: u.email, password: 'wrong password!' } });
    assert.equal((await s.call('POST', '/api/auth/login', { body: { email: u.email, password: u.password } })).status, 200);
  }
});

test('a browser login sets an HttpOnly Secure SameSite=Lax cookie; cookie writes need an allowed Origin', async (t) => {
  const s = await startTestServer(t, { SVC_FRONTEND_ORIGIN: 'https://studio.example' });
  const u = await makeUser(s);
  const r = await s.call('POST', '/api/auth/login', { body: { email: u.email, password: u.password }, headers: { origin: s.url } });
  assert.equal(r.status, 200);
  const cookie = r.headers.get('set-cookie')!;
  assert.match(cookie, /^svc_session=[\w-]{43}; Path=\/; HttpOnly; Secure; SameSite=Lax; Max-Age=\d+$/);
  assert.ok(cookie.includes(r.body.token), 'the response still carries the token');
  const jar = cookie.split(';')[0];
  const viaCookie = await s.call('GET', '/api/auth/session', { headers: { cookie: jar } });
  assert.equal(viaCookie.status, 200);
  assert.equal(viaCookie.body.via, 'browser');
  const noOrigin = await s.call('POST', '/api/auth/sessions/revoke-others', { headers: { cookie: jar } });
  assert.equal(noOrigin.status, 403);
  assert.equal(noOrigin.body.error.code, 'origin_forbidden');
  const evil = await s.call('POST', '/api/auth/sessions/revoke-others', { headers: { cookie: jar, origin: 'https://evil.example' } });
  assert.equal(evil.status, 403);
  const front = await s.call('POST', '/api/auth/sessions/revoke-others', { headers: { cookie: jar, origin: 'https://studio.example' } });
  assert.equal(front.status, 200);
  const own = await s.call('POST', '/api/auth/sessions/revoke-others', { headers: { cookie: jar, origin: s.url } });
  assert.equal(own.status, 200);

  const foreign = await s.call('POST', '/api/auth/login', { body: { email: u.email, password: u.password }, headers: { origin: 'https://evil.example' } });
  assert.equal(foreign.status, 200);
  assert.equal(foreign.headers.get('set-cookie'), null, 'no cookie session for a foreign origin');
  const bearerToken = await login(s, u);
  const bearerAsCookie = await s.call('GET', '/api/auth/session', { headers: { cookie: `svc_session=${bearerToken}` } });
  assert.equal(bearerAsCookie.status, 401, 'a Bearer session is not accepted as a cookie');
});

test('a one-time initial password must be changed before anything but /api/auth/*', async (t) => {
  const s = await startTestServer(t);
  const { user, initialPassword } = await createUser(s.operator(), { email: 'first@example.test', name: 'First' });
  assert.ok(initialPassword && initialPassword.length >= 20);
  const r = await s.call('POST', '/api/auth/login', { body: { email: user.email, password: initialPassword } });
  assert.equal(r.body.passwordChangeRequired, true);
  const blocked = await s.call('GET', '/api/context', { token: r.body.token });
  assert.equal(blocked.status, 403);
  assert.equal(blocked.body.error.code, 'password_change_required');
  assert.equal((await s.call('GET', '/api/auth/session', { token: r.body.token })).status, 200);
  const changed = await s.call('POST', '/api/auth/password', { token: r.body.token, body: { currentPassword: initialPassword, newPassword: 'my own password now' } });
  assert.equal(changed.status, 200);
  assert.equal((await s.call('GET', '/api/context', { token: changed.body.token })).status, 200);
});

test('hashes made with weaker parameters are upgraded at the next login', async (t) => {
  const s = await startTestServer(t, { SVC_SCRYPT_LOG_N: '10' });
  const u = await makeUser(s);
  assert.match((await s.db.get<{ password_hash: string }>('SELECT password_hash FROM users WHERE id = ?', u.id))!.password_hash, /^\$scrypt\$ln=10,r=8,p=1\$/);
  const stronger = await startTestServer(t, { SVC_SCRYPT_LOG_N: '11' });
  const v = await makeUser(stronger);
  await stronger.db.run('UPDATE users SET password_hash = ? WHERE id = ?', (await s.db.get<{ password_hash: string }>('SELECT password_hash FROM users WHERE id = ?', u.id))!.password_hash, v.id);
  assert.equal((await stronger.call('POST', '/api/auth/login', { body: { email: v.email, password: u.password } })).status, 200);
  assert.match((await stronger.db.get<{ password_hash: string }>('SELECT password_hash FROM users WHERE id = ?', v.id))!.password_hash, /^\$scrypt\$ln=11,/);
});
