// TOTP MFA and the identity policy, over real HTTP: browser-session management, login with a
// challenge, lockout, replay, expiry, drift, recovery codes, encryption at rest (fail closed),
// enrollment required by policy, password rules and session lifetimes from the policy.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { generateSync } from 'otplib';
import { startTestServer, type Answer, type TestServer } from '../helpers/server.ts';
import { grant, login, makeOrg, makeUser, member, type TestUser } from '../helpers/factories.ts';
import { storedValues } from '../helpers/sql.ts';
import { sha256Hex } from '../../src/kernel/ids.ts';
import { tokenHash } from '../../src/directory/sessions/token-hash.ts';
import { TOTP_CONFIG, totpAt } from '../../src/identity/mfa/totp.ts';
import { decryptSecret, encryptSecret, parseMfaKey } from '../../src/kernel/seal.ts';
import { ConfigError } from '../../src/kernel/config.ts';

const STEP = TOTP_CONFIG.period;

function base32Decode(s: string): Buffer {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = 0;
  let value = 0;
  const out: number[] = [];
  for (const c of s) {
    value = (value << 5) | alphabet.indexOf(c);
    bits += 5;
    if (bits >= 8) { out.push((value >>> (bits - 8)) & 255); bits -= 8; }
  }
  return Buffer.from(out);
}
const audit = async (s: TestServer, action: string) => await s.db.all<any>('SELECT * FROM audit_log WHERE action = ? ORDER BY seq', action);
const meta = (row: any) => JSON.parse(row.metadata);

/**
 * The current time in whole seconds, at least `margin` seconds before the next 30-second step
 * boundary (waits when closer), so that codes computed from it land in the step the test means.
 */
async function steadyNow(margin = 5): Promise<number> {
  const into = (Date.now() / 1000) % STEP;
  if (into > STEP - margin) await new Promise((r) => setTimeout(r, (STEP - into + 0.05) * 1000));
  return Math.floor(Date.now() / 1000);
}

/** The code `k` steps from `base`. */
const code = (secret: string, base: number, k = 0) => totpAt(secret, base + k * STEP);

/** A 6-digit code that is none of the codes within two steps of `base`. */
function wrongCode(secret: string, base: number): string {
  const near = new Set([-2, -1, 0, 1, 2].map((k) => code(secret, base, k)));
  for (let n = 314159; ; n++) if (!near.has(String(n).padStart(6, '0'))) return String(n).padStart(6, '0');
}

interface Browser { jar: string; token: string; call(method: string, path: string, body?: unknown): Promise<Answer> }

/** A browser-like login (Origin of the service): the cookie session and a caller sending it with the Origin. */
async function browserLogin(s: TestServer, u: { email: string; password: string }): Promise<Browser> {
  const r = await s.call('POST', '/api/auth/login', { body: { email: u.email, password: u.password }, headers: { origin: s.url } });
  assert.equal(r.status, 200, r.text);
  assert.ok(r.body.token, `a session, not a challenge: ${r.text}`);
  return browserOf(s, r);
}

function browserOf(s: TestServer, r: { body: any; headers: Headers }): Browser {
  const cookie = r.headers.get('set-cookie');
  assert.ok(cookie, 'a browser login sets the session cookie');
  const jar = cookie.split(';')[0];
  return { jar, token: r.body.token, call: (method, path, body) => s.call(method, path, { body, headers: { cookie: jar, origin: s.url } }) };
}

interface Enrolled { user: TestUser; secret: string; recoveryCodes: string[]; base: number; browser: Browser }

/** A user with TOTP enabled through the browser routes; the enabling code is the one of step base-1 (so base and base+1 are fresh). */
async function enrolled(s: TestServer, user?: TestUser): Promise<Enrolled> {
  const u = user ?? await makeUser(s);
  const browser = await browserLogin(s, u);
  const setup = await browser.call('POST', '/api/auth/mfa/setup');
  assert.equal(setup.status, 200, setup.text);
  const base = await steadyNow();
  const enable = await browser.call('POST', '/api/auth/mfa/enable', { code: code(setup.body.secret, base, -1) });
  assert.equal(enable.status, 200, enable.text);
  return { user: u, secret: setup.body.secret, recoveryCodes: enable.body.recoveryCodes, base, browser };
}

async function challenge(s: TestServer, u: { email: string; password: string }, headers: Record<string, string> = {}): Promise<string> {
  const r = await s.call('POST', '/api/auth/login', { body: { email: u.email, password: u.password }, headers });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.mfaRequired, true, r.text);
  return r.body.challengeToken;
}

const redeem = (s: TestServer, challengeToken: string, c: string, headers: Record<string, string> = {}) =>
  s.call('POST', '/api/auth/login/mfa', { body: { challengeToken, code: c }, headers });

test('otplib with the service\'s TOTP configuration reproduces the RFC 6238 SHA-1 test vectors', () => {
  assert.equal(TOTP_CONFIG.algorithm, 'sha1');
  const secret = new TextEncoder().encode('12345678901234567890');
  const vectors: Array<[number, string]> = [
    [59, '94287082'], [1111111109, '07081804'], [1111111111, '14050471'],
    [1234567890, '89005924'], [2000000000, '69279037'], [20000000000, '65353130'],
  ];
  for (const [epoch, expected] of vectors) {
    assert.equal(generateSync({ ...TOTP_CONFIG, digits: 8, secret, epoch }), expected, `T=${epoch}`);
  }
});

test('the encryption key: hex, base64 or a passphrase; too short refused; a ciphertext is bound to its key and user', () => {
  const hex = parseMfaKey('ab'.repeat(32));
  assert.equal(hex.source, 'hex');
  assert.equal(parseMfaKey(Buffer.alloc(32, 7).toString('base64')).source, 'base64');
  const pass = parseMfaKey('a long passphrase for the key');
  assert.equal(pass.source, 'passphrase');
  assert.equal(parseMfaKey('').source, 'development');
  assert.throws(() => parseMfaKey('too short'), ConfigError);
  const blob = encryptSecret(hex, 'usr_a', 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP');
  assert.equal(decryptSecret(hex, 'usr_a', blob), 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP');
  assert.throws(() => decryptSecret(pass, 'usr_a', blob), /does not decrypt/);
  assert.throws(() => decryptSecret(hex, 'usr_b', blob), /does not decrypt/, 'another user\'s row');
});

test('the five management routes need a browser session: Bearer is 403 browser_session_required, none is 401', async (t) => {
  const s = await startTestServer(t);
  const u = await makeUser(s);
  const token = await login(s, u);
  const routes: Array<[string, string, unknown]> = [
    ['GET', '/api/auth/mfa', undefined],
    ['POST', '/api/auth/mfa/setup', undefined],
    ['POST', '/api/auth/mfa/enable', { code: '123456' }],
    ['POST', '/api/auth/mfa/setup/cancel', undefined],
    ['POST', '/api/auth/mfa/disable', { password: u.password }],
  ];
  for (const [method, path, body] of routes) {
    const bearer = await s.call(method, path, { token, body });
    assert.equal(bearer.status, 403, `${method} ${path}`);
    assert.equal(bearer.body.error.code, 'browser_session_required');
    assert.equal((await s.call(method, path, { body })).status, 401, `${method} ${path} without a credential`);
  }
  const browser = await browserLogin(s, u);
  const bearerWithCookie = await s.call('GET', '/api/auth/mfa', { token: browser.token });
  assert.equal(bearerWithCookie.body.error.code, 'browser_session_required', 'the browser session\'s token used as Bearer is still Bearer');
  const noOrigin = await s.call('POST', '/api/auth/mfa/setup', { headers: { cookie: browser.jar } });
  assert.equal(noOrigin.status, 403);
  assert.equal(noOrigin.body.error.code, 'origin_forbidden');
  assert.equal((await s.db.get<any>('SELECT count(*) AS n FROM mfa_factors'))!.n, 0, 'nothing was set up');
  const doc = (await s.call('GET', '/api/openapi.json')).body;
  assert.deepEqual(doc.paths['/api/auth/mfa/setup'].post.security, [{ cookieSession: [] }]);
  assert.equal(doc.paths['/api/auth/mfa/setup'].post['x-access'].session, 'browser');
});

test('set-up and enable from the browser, then login answers a challenge that a code exchanges for the session', async (t) => {
  const s = await startTestServer(t);
  const u = await makeUser(s);
  const browser = await browserLogin(s, u);
  assert.deepEqual((await browser.call('GET', '/api/auth/mfa')).body,
    { method: 'totp', enabled: false, pendingSetup: false, recoveryCodesLeft: 0, enabledAt: null, requiredByPolicy: false });
  const setup = await browser.call('POST', '/api/auth/mfa/setup');
  assert.equal(setup.status, 200, setup.text);
  const { secret } = setup.body;
  assert.match(secret, /^[A-Z2-7]{32}$/);
  assert.deepEqual([setup.body.algorithm, setup.body.digits, setup.body.period], ['SHA1', 6, 30]);
  const uri = new URL(setup.body.otpauthUri);
  assert.equal(uri.protocol, 'otpauth:');
  assert.equal(uri.searchParams.get('secret'), secret);
  assert.equal(uri.searchParams.get('issuer'), 'svc');
  assert.equal((await browser.call('GET', '/api/auth/mfa')).body.pendingSetup, true);
  assert.equal((await s.call('POST', '/api/auth/login', { body: { email: u.email, password: u.password } })).body.mfaRequired, undefined,
    'pending set-up changes nothing at login');

  const base = await steadyNow();
  const wrong = await browser.call('POST', '/api/auth/mfa/enable', { code: wrongCode(secret, base) });
  assert.equal(wrong.status, 422);
  assert.ok(wrong.body.error.details.fields.code);
  const enable = await browser.call('POST', '/api/auth/mfa/enable', { code: code(secret, base) });
  assert.equal(enable.status, 200, enable.text);
  const codes: string[] = enable.body.recoveryCodes;
  assert.equal(codes.length, 10);
  assert.equal(new Set(codes).size, 10);
  for (const c of codes) assert.match(c, /^[0-9a-hjkmnp-tv-z]{4}(-[0-9a-hjkmnp-tv-z]{4}){3}$/);
  const status = (await browser.call('GET', '/api/auth/mfa')).body;
  assert.equal(status.enabled, true);
  assert.equal(status.recoveryCodesLeft, 10);
  assert.equal((await s.db.get<any>('SELECT mfa_enabled FROM users WHERE id = ?', u.id))!.mfa_enabled, 1);
  assert.equal((await browser.call('POST', '/api/auth/mfa/setup')).body.error.code, 'mfa_already_enabled');
  const stored = JSON.stringify(await s.db.all('SELECT * FROM mfa_recovery_codes'));
  for (const c of codes) assert.ok(!stored.includes(c) && !stored.includes(c.replaceAll('-', '')), 'recovery codes are stored hashed');

  const sessionsBefore = (await s.db.get<any>('SELECT count(*) AS n FROM sessions'))!.n;
  const r = await s.call('POST', '/api/auth/login', { body: { email: u.email, password: u.password } });
  assert.equal(r.status, 200);
  assert.deepEqual(Object.keys(r.body).sort(), ['challengeToken', 'expiresAt', 'mfaRequired']);
  assert.equal(r.body.mfaRequired, true);
  assert.equal(r.headers.get('set-cookie'), null);
  const ttl = Date.parse(r.body.expiresAt) - Date.now();
  assert.ok(ttl > 4 * 60_000 && ttl <= 5 * 60_000, 'valid five minutes');
  assert.equal((await s.db.get<any>('SELECT count(*) AS n FROM sessions'))!.n, sessionsBefore, 'no session before the second factor');
  const row = (await s.db.get<any>('SELECT * FROM mfa_challenges WHERE user_id = ?', u.id))!;
  assert.equal(row.token_hash, sha256Hex(r.body.challengeToken), 'stored as SHA-256');

  // The enabling code's step is spent: the next step's code (one step ahead) signs in.
  const ok = await redeem(s, r.body.challengeToken, code(secret, base, 1));
  assert.equal(ok.status, 200, ok.text);
  assert.deepEqual(ok.body.user, { id: u.id, email: u.email, name: u.name });
  assert.equal(ok.body.passwordChangeRequired, false);
  assert.equal(ok.headers.get('set-cookie'), null, 'a Bearer login gets no cookie');
  assert.equal((await s.call('GET', '/api/context', { token: ok.body.token })).status, 200);
  assert.equal((await redeem(s, r.body.challengeToken, code(secret, base, 1))).body.error.code, 'mfa_challenge_invalid', 'single use');

  // A browser login: the challenge redeemed from the browser (here with a recovery code) sets the cookie.
  const fromBrowser = await challenge(s, u, { origin: s.url });
  const viaBrowser = await redeem(s, fromBrowser, codes[0], { origin: s.url });
  assert.equal(viaBrowser.status, 200, viaBrowser.text);
  const again = browserOf(s, viaBrowser);
  assert.equal((await again.call('GET', '/api/auth/session')).body.via, 'browser');

  assert.equal((await audit(s, 'auth.mfa.setup_started')).length, 1);
  assert.equal((await audit(s, 'auth.mfa.enabled')).length, 1);
  assert.equal((await audit(s, 'auth.mfa.challenge_issued')).length, 2);
  assert.equal((await audit(s, 'auth.mfa.verified')).length, 1);
  assert.equal((await audit(s, 'auth.mfa.recovery_code_used')).length, 1);
  assert.deepEqual((await audit(s, 'auth.login')).filter((a) => a.result === 'success').map((a) => meta(a).mfa), [undefined, undefined, 'totp', 'recovery_code']);
  s.log.flush();
  const all = JSON.stringify(await s.db.all('SELECT * FROM audit_log')) + s.logs.join('\n');
  for (const secretThing of [secret, r.body.challengeToken, codes[0], code(secret, base, 1)]) {
    assert.ok(!all.includes(secretThing), 'no secret, token or code in the audit log or the service log');
  }
});

test('five consecutive wrong codes lock the challenge: even the right code fails afterwards', async (t) => {
  const s = await startTestServer(t);
  const e = await enrolled(s);
  const token = await challenge(s, e.user);
  const bad = wrongCode(e.secret, e.base);
  for (let left = 4; left >= 1; left--) {
    const r = await redeem(s, token, bad);
    assert.equal(r.status, 401);
    assert.equal(r.body.error.code, 'mfa_code_invalid');
    assert.equal(r.body.error.details.attemptsLeft, left);
  }
  const fifth = await redeem(s, token, bad);
  assert.equal(fifth.status, 401);
  assert.equal(fifth.body.error.code, 'mfa_challenge_locked');
  const right = await redeem(s, token, code(e.secret, e.base));
  assert.equal(right.status, 401);
  assert.equal(right.body.error.code, 'mfa_challenge_locked');
  const recovery = await redeem(s, token, e.recoveryCodes[0]);
  assert.equal(recovery.body.error.code, 'mfa_challenge_locked', 'a recovery code does not unlock it either');
  assert.equal((await audit(s, 'auth.mfa.code_rejected')).length, 5);
  assert.equal((await audit(s, 'auth.mfa.challenge_locked')).length, 1);
  assert.equal((await e.browser.call('GET', '/api/auth/mfa')).body.recoveryCodesLeft, 10, 'nothing was spent');
  // A new login gets a new challenge.
  const fresh = await redeem(s, await challenge(s, e.user), code(e.secret, e.base));
  assert.equal(fresh.status, 200, fresh.text);
});

test('an accepted code is refused when replayed in its time step; one step of drift is accepted, two are not', async (t) => {
  const s = await startTestServer(t);
  const e = await enrolled(s);
  const current = code(e.secret, e.base);
  assert.equal((await redeem(s, await challenge(s, e.user), current)).status, 200);
  const replayToken = await challenge(s, e.user);
  const replay = await redeem(s, replayToken, current);
  assert.equal(replay.status, 401);
  assert.equal(replay.body.error.code, 'mfa_code_invalid');
  assert.equal(meta((await audit(s, 'auth.mfa.code_rejected')).at(-1)).reason, 'replayed');
  assert.equal((await redeem(s, replayToken, code(e.secret, e.base, -1))).status, 401, 'an earlier step is refused too');

  // Drift, on a fresh factor (nothing used yet): set-up, enable with one step behind, sign in one step ahead.
  const v = await makeUser(s);
  const browser = await browserLogin(s, v);
  const { secret } = (await browser.call('POST', '/api/auth/mfa/setup')).body;
  const base = await steadyNow();
  assert.equal((await browser.call('POST', '/api/auth/mfa/enable', { code: code(secret, base, -2) })).status, 422, 'two steps behind');
  assert.equal((await browser.call('POST', '/api/auth/mfa/enable', { code: code(secret, base, 2) })).status, 422, 'two steps ahead');
  assert.equal((await browser.call('POST', '/api/auth/mfa/enable', { code: code(secret, base, -1) })).status, 200, 'one step behind');
  const token = await challenge(s, v);
  assert.equal((await redeem(s, token, code(secret, base, 2))).status, 401, 'two steps ahead at login');
  assert.equal((await redeem(s, token, code(secret, base, 1))).status, 200, 'one step ahead at login');
});

test('an expired challenge is refused, even with the right code', async (t) => {
  const s = await startTestServer(t);
  const e = await enrolled(s);
  const token = await challenge(s, e.user);
  await s.db.run('UPDATE mfa_challenges SET expires_at = ? WHERE token_hash = ?', new Date(Date.now() - 1000).toISOString(), sha256Hex(token));
  const r = await redeem(s, token, code(e.secret, e.base));
  assert.equal(r.status, 401);
  assert.equal(r.body.error.code, 'mfa_challenge_expired');
  assert.equal(meta((await audit(s, 'auth.mfa.challenge_refused')).at(-1)).reason, 'expired');
  assert.equal((await redeem(s, 'x'.repeat(43), code(e.secret, e.base))).body.error.code, 'mfa_challenge_invalid', 'unknown token');
  assert.equal((await redeem(s, await challenge(s, e.user), code(e.secret, e.base))).status, 200, 'the code was not spent');
});

test('a recovery code works once, in any case and with or without dashes', async (t) => {
  const s = await startTestServer(t);
  const e = await enrolled(s);
  const typed = e.recoveryCodes[3].toUpperCase().replaceAll('-', ' ');
  const first = await redeem(s, await challenge(s, e.user), typed);
  assert.equal(first.status, 200, first.text);
  const second = await redeem(s, await challenge(s, e.user), e.recoveryCodes[3]);
  assert.equal(second.status, 401);
  assert.equal(second.body.error.code, 'mfa_code_invalid');
  assert.equal((await e.browser.call('GET', '/api/auth/mfa')).body.recoveryCodesLeft, 9);
  assert.equal(meta((await audit(s, 'auth.mfa.recovery_code_used'))[0]).recoveryCodesLeft, 9);
});

test('the secret is encrypted at rest: not in the database files; a flipped ciphertext byte makes the right code fail', async (t) => {
  const s = await startTestServer(t, { SVC_MFA_ENCRYPTION_KEY: 'cd'.repeat(32) });
  s.log.flush();
  assert.ok(!s.logs.some((l) => l.includes('SVC_MFA_ENCRYPTION_KEY is not set')), 'no development-key warning with a key');
  const e = await enrolled(s);
  const raw = base32Decode(e.secret);
  assert.equal(raw.length, 20);
  // SQLite: the bytes of svc.db and svc.db-wal (free pages and old page versions included).
  // PostgreSQL's files are the server's: there, every text and blob value of every table.
  const stored = s.db.engine === 'postgres'
    ? await storedValues(s.db)
    : [s.config.dbPath, `${s.config.dbPath}-wal`].filter((f) => fs.existsSync(f)).map((f) => fs.readFileSync(f));
  assert.ok(stored.length >= 1 && stored.some((b) => b.length > 0));
  assert.ok(stored.some((b) => b.includes(Buffer.from(e.user.id))), 'the enrolled user is in what is searched');
  for (const bytes of stored) {
    assert.equal(bytes.indexOf(Buffer.from(e.secret, 'ascii')), -1, 'the base32 secret appears nowhere in the database');
    assert.equal(bytes.indexOf(Buffer.from(e.secret.toLowerCase(), 'ascii')), -1);
    assert.equal(bytes.indexOf(raw), -1, 'nor do its raw bytes');
  }
  const row = (await s.db.get<any>('SELECT secret_enc, key_id FROM mfa_factors WHERE user_id = ?', e.user.id))!;
  assert.equal(row.key_id, parseMfaKey('cd'.repeat(32)).id);
  const flipped = Buffer.from(row.secret_enc);
  flipped[20] ^= 0x01;
  await s.db.run('UPDATE mfa_factors SET secret_enc = ? WHERE user_id = ?', flipped, e.user.id);
  const r = await redeem(s, await challenge(s, e.user), code(e.secret, e.base));
  assert.equal(r.status, 401, 'fails closed');
  assert.equal(r.body.error.code, 'mfa_code_invalid');
  assert.equal(meta((await audit(s, 'auth.mfa.code_rejected')).at(-1)).reason, 'secret_unreadable');
  s.log.flush();
  assert.ok(s.logs.some((l) => l.includes('TOTP secret does not decrypt')));
  assert.equal((await redeem(s, await challenge(s, e.user), e.recoveryCodes[0])).status, 200, 'recovery codes do not depend on the key');
});

test('the development key is warned about at start', async (t) => {
  const s = await startTestServer(t);
  s.log.flush();
  assert.ok(s.logs.some((l) => l.includes('SVC_MFA_ENCRYPTION_KEY is not set') && l.includes('"warn"')));
});

test('disable needs the password or a current code; cancel forgets a pending set-up', async (t) => {
  const s = await startTestServer(t);
  const e = await enrolled(s);
  const b = e.browser;
  assert.equal((await b.call('POST', '/api/auth/mfa/disable', {})).status, 422);
  const wrongPassword = await b.call('POST', '/api/auth/mfa/disable', { password: 'not the password at all' });
  assert.equal(wrongPassword.status, 422);
  assert.ok(wrongPassword.body.error.details.fields.password);
  assert.equal((await b.call('POST', '/api/auth/mfa/disable', { code: wrongCode(e.secret, e.base) })).status, 422);
  assert.equal((await b.call('GET', '/api/auth/mfa')).body.enabled, true, 'refusals change nothing');
  const off = await b.call('POST', '/api/auth/mfa/disable', { password: e.user.password });
  assert.equal(off.status, 200, off.text);
  assert.equal(off.body.enabled, false);
  assert.equal((await s.db.get<any>('SELECT count(*) AS n FROM mfa_recovery_codes WHERE user_id = ?', e.user.id))!.n, 0);
  assert.equal((await s.db.get<any>('SELECT mfa_enabled FROM users WHERE id = ?', e.user.id))!.mfa_enabled, 0);
  assert.ok((await s.call('POST', '/api/auth/login', { body: { email: e.user.email, password: e.user.password } })).body.token, 'login is one step again');
  assert.equal((await b.call('POST', '/api/auth/mfa/disable', { password: e.user.password })).body.error.code, 'mfa_not_enabled');

  // Set up again and disable with a code.
  const { secret } = (await b.call('POST', '/api/auth/mfa/setup')).body;
  const base = await steadyNow();
  assert.equal((await b.call('POST', '/api/auth/mfa/enable', { code: code(secret, base) })).status, 200);
  assert.equal((await b.call('POST', '/api/auth/mfa/disable', { code: code(secret, base) })).status, 422, 'the enabling code is spent');
  assert.equal((await b.call('POST', '/api/auth/mfa/disable', { code: code(secret, base, 1) })).status, 200);
  assert.deepEqual((await audit(s, 'auth.mfa.disabled')).map((a) => meta(a).via), ['password', 'totp']);

  // Cancel: a pending set-up is forgotten.
  await b.call('POST', '/api/auth/mfa/setup');
  const cancelled = await b.call('POST', '/api/auth/mfa/setup/cancel');
  assert.equal(cancelled.status, 200);
  assert.equal(cancelled.body.pendingSetup, false);
  assert.equal((await s.db.get<any>('SELECT count(*) AS n FROM mfa_factors WHERE user_id = ?', e.user.id))!.n, 0);
  assert.equal((await audit(s, 'auth.mfa.setup_cancelled')).length, 1);
});

test('governance reset-mfa deletes the factor and the recovery codes', async (t) => {
  const s = await startTestServer(t);
  const admin = await makeUser(s, { systemAdmin: true });
  const adminToken = await login(s, admin);
  const e = await enrolled(s);
  const r = await s.call('POST', `/api/system/users/${e.user.id}/reset-mfa`, { token: adminToken });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.mfaEnabled, false);
  assert.equal((await s.db.get<any>('SELECT count(*) AS n FROM mfa_factors WHERE user_id = ?', e.user.id))!.n, 0);
  assert.equal((await s.db.get<any>('SELECT count(*) AS n FROM mfa_recovery_codes WHERE user_id = ?', e.user.id))!.n, 0);
  assert.ok((await s.call('POST', '/api/auth/login', { body: { email: e.user.email, password: e.user.password } })).body.token);
});

test('identity policy routes: 401 without a session, 403 for a non-administrator, 200 for a system administrator; validated and audited', async (t) => {
  const s = await startTestServer(t);
  const owner = await member(s, 'org_owner');
  const admin = await makeUser(s, { systemAdmin: true });
  const token = await login(s, admin);
  for (const [method, body] of [['GET', undefined], ['PATCH', { passwordMinLength: 14 }]] as const) {
    assert.equal((await s.call(method, '/api/system/identity/policy', { body })).status, 401);
    const denied = await s.call(method, '/api/system/identity/policy', { token: owner.token, body });
    assert.equal(denied.status, 403);
    assert.equal(denied.body.error.code, 'permission_denied');
  }
  const initial = await s.call('GET', '/api/system/identity/policy', { token });
  assert.equal(initial.status, 200);
  assert.deepEqual(initial.body, {
    mfaRequired: false, mfaRequiredOrganizations: [], passwordMinLength: 12, passwordBreachedCheck: true,
    sessionIdleMinutes: null, sessionAbsoluteHours: null, effective: { sessionIdleMinutes: 720, sessionAbsoluteHours: 168 },
    updatedAt: null, updatedBy: null,
  });
  assert.equal((await s.call('PATCH', '/api/system/identity/policy', { token, body: { passwordMinLength: 7 } })).status, 422);
  assert.equal((await s.call('PATCH', '/api/system/identity/policy', { token, body: {} })).status, 422, 'nothing to change');
  const unknownOrg = await s.call('PATCH', '/api/system/identity/policy', { token, body: { mfaRequiredOrganizations: ['org_nope'] } });
  assert.equal(unknownOrg.status, 422);
  const patched = await s.call('PATCH', '/api/system/identity/policy', { token, body: { passwordMinLength: 14, sessionIdleMinutes: 30 } });
  assert.equal(patched.status, 200, patched.text);
  assert.equal(patched.body.passwordMinLength, 14);
  assert.deepEqual(patched.body.effective, { sessionIdleMinutes: 30, sessionAbsoluteHours: 168 });
  assert.equal(patched.body.updatedBy, admin.id);
  const rows = await audit(s, 'system.identity.policy_updated');
  assert.equal(rows.length, 1);
  assert.equal(rows[0].actor_user_id, admin.id);
  assert.equal(meta(rows[0]).before.passwordMinLength, 12);
  assert.equal(meta(rows[0]).after.passwordMinLength, 14);
  assert.deepEqual(meta(rows[0]).changed, ['passwordMinLength', 'sessionIdleMinutes']);
  assert.deepEqual((await s.call('GET', '/api/system/identity/policy', { token })).body.sessionIdleMinutes, 30);
});

test('the policy is enforced: password rules, session lifetimes, MFA required -> enrollment challenge -> enroll -> session', async (t) => {
  const s = await startTestServer(t);
  const admin = await makeUser(s, { systemAdmin: true });
  const adminToken = await login(s, admin);
  const patch = async (body: unknown) => {
    const r = await s.call('PATCH', '/api/system/identity/policy', { token: adminToken, body });
    assert.equal(r.status, 200, r.text);
    return r.body;
  };

  // Password rules on password change.
  const u = await makeUser(s);
  const uToken = await login(s, u);
  await patch({ passwordMinLength: 24 });
  const change = (newPassword: string) => s.call('POST', '/api/auth/password', { token: uToken, body: { currentPassword: u.password, newPassword } });
  const short = await change('a fine but short one');
  assert.equal(short.status, 422);
  assert.equal(short.body.error.details.fields.newPassword, 'must be at least 24 characters');
  const common = await change('password1234567890123456');
  assert.equal(common.status, 422);
  assert.match(common.body.error.details.fields.newPassword, /common/);
  await patch({ passwordMinLength: 12 });
  assert.match((await change('Qwertyuiop!!')).body.error.details.fields.newPassword, /common/);
  await patch({ passwordBreachedCheck: false });
  assert.equal((await change('Qwertyuiop!!')).status, 200, 'the check can be turned off');
  await patch({ passwordBreachedCheck: true });

  // Session lifetimes: the policy's win and also end existing sessions.
  const v = await makeUser(s);
  const idle = await login(s, v);
  const old = await login(s, v);
  const idleSince = async () => await s.db.run('UPDATE sessions SET last_seen_at = ? WHERE token_hash = ?', new Date(Date.now() - 10 * 60_000).toISOString(), tokenHash(s.config, idle));
  await idleSince();
  await s.db.run('UPDATE sessions SET created_at = ? WHERE token_hash = ?', new Date(Date.now() - 2 * 3_600_000).toISOString(), tokenHash(s.config, old));
  assert.equal((await s.call('GET', '/api/context', { token: idle })).status, 200, 'the defaults keep both');
  assert.equal((await s.call('GET', '/api/context', { token: old })).status, 200);
  await idleSince();
  await patch({ sessionIdleMinutes: 5, sessionAbsoluteHours: 1 });
  assert.equal((await s.call('GET', '/api/context', { token: idle })).status, 401, 'idle longer than the policy allows');
  assert.equal((await s.call('GET', '/api/context', { token: old })).status, 401, 'older than the policy allows');
  const fresh = await s.call('POST', '/api/auth/login', { body: { email: v.email, password: v.password } });
  const lifetime = Date.parse(fresh.body.expiresAt) - Date.now();
  assert.ok(lifetime > 55 * 60_000 && lifetime <= 3_600_000, 'a new session lives the policy\'s hour');
  await patch({ sessionIdleMinutes: null, sessionAbsoluteHours: null });

  // MFA required for one organization: its member enrolls at login; others are not asked.
  const org = await makeOrg(s);
  const w = await makeUser(s);
  await grant(s, w.id, 'organization', org.id, 'org_member');
  const outsider = await makeUser(s);
  const policy = await patch({ mfaRequiredOrganizations: [org.id, org.id] });
  assert.deepEqual(policy.mfaRequiredOrganizations, [org.id]);
  assert.ok((await s.call('POST', '/api/auth/login', { body: { email: outsider.email, password: outsider.password } })).body.token);
  const r = await s.call('POST', '/api/auth/login', { body: { email: w.email, password: w.password } });
  assert.equal(r.status, 200);
  assert.deepEqual(Object.keys(r.body).sort(), ['challengeToken', 'expiresAt', 'mfaEnrollmentRequired']);
  assert.equal((await audit(s, 'auth.mfa.enrollment_required')).length, 1);
  assert.equal((await redeem(s, r.body.challengeToken, '123456')).body.error.code, 'mfa_challenge_invalid', 'not a login challenge');
  const noSetup = await s.call('POST', '/api/auth/mfa/enroll/confirm', { body: { challengeToken: r.body.challengeToken, code: '123456' } });
  assert.equal(noSetup.body.error.code, 'mfa_setup_required');
  const setup = await s.call('POST', '/api/auth/mfa/enroll/setup', { body: { challengeToken: r.body.challengeToken } });
  assert.equal(setup.status, 200, setup.text);
  assert.match(setup.body.otpauthUri, /^otpauth:\/\/totp\//);
  assert.equal(setup.body.expiresAt, r.body.expiresAt);
  const base = await steadyNow();
  const wrong = await s.call('POST', '/api/auth/mfa/enroll/confirm', { body: { challengeToken: r.body.challengeToken, code: wrongCode(setup.body.secret, base) } });
  assert.equal(wrong.status, 401);
  assert.equal(wrong.body.error.details.attemptsLeft, 4);
  const done = await s.call('POST', '/api/auth/mfa/enroll/confirm', { body: { challengeToken: r.body.challengeToken, code: code(setup.body.secret, base) } });
  assert.equal(done.status, 200, done.text);
  assert.equal(done.body.recoveryCodes.length, 10);
  assert.deepEqual(done.body.user, { id: w.id, email: w.email, name: w.name });
  assert.equal((await s.call('GET', '/api/context', { token: done.body.token })).status, 200);
  assert.equal((await s.db.get<any>('SELECT mfa_enabled FROM users WHERE id = ?', w.id))!.mfa_enabled, 1);
  assert.equal(meta((await audit(s, 'auth.mfa.enabled'))[0]).via, 'enrollment');
  // From now on the user logs in with a code, and cannot turn MFA off while the policy requires it.
  const token = await challenge(s, w, { origin: s.url });
  const browser = browserOf(s, await redeem(s, token, done.body.recoveryCodes[0], { origin: s.url }));
  const status = (await browser.call('GET', '/api/auth/mfa')).body;
  assert.equal(status.requiredByPolicy, true);
  assert.equal((await browser.call('POST', '/api/auth/mfa/disable', { password: w.password })).body.error.code, 'mfa_required_by_policy');

  // Required for everyone: the administrator too, at the next login.
  await patch({ mfaRequired: true });
  assert.equal((await s.call('POST', '/api/auth/login', { body: { email: admin.email, password: admin.password } })).body.mfaEnrollmentRequired, true);
  assert.equal((await s.call('POST', '/api/auth/login', { body: { email: outsider.email, password: outsider.password } })).body.mfaEnrollmentRequired, true);
});

test('registration into an organization that requires MFA answers an enrollment challenge instead of a session', async (t) => {
  const s = await startTestServer(t);
  const owner = await member(s, 'org_owner');
  const admin = await makeUser(s, { systemAdmin: true });
  const adminToken = await login(s, admin);
  const policy = await s.call('PATCH', '/api/system/identity/policy', { token: adminToken, body: { mfaRequiredOrganizations: [owner.tree.organizationId] } });
  assert.equal(policy.status, 200, policy.text);
  const inv = await s.call('POST', `/api/organizations/${owner.tree.organizationId}/invitations`, { token: owner.token, body: { email: 'new@example.test', role: 'org_member' } });
  assert.equal(inv.status, 201, inv.text);
  const body = { token: inv.body.inviteToken, email: 'new@example.test', name: 'New', password: 'a long enough password' };
  const reg = await s.call('POST', '/api/auth/register', { body });
  assert.equal(reg.status, 201, reg.text);
  assert.equal(reg.body.mfaEnrollmentRequired, true);
  assert.equal(reg.body.token, undefined);
  assert.equal(reg.body.user.email, 'new@example.test');
  assert.equal((await s.db.get<any>('SELECT count(*) AS n FROM sessions WHERE user_id = ?', reg.body.user.id))!.n, 0);
  const setup = await s.call('POST', '/api/auth/mfa/enroll/setup', { body: { challengeToken: reg.body.challengeToken } });
  const base = await steadyNow();
  const done = await s.call('POST', '/api/auth/mfa/enroll/confirm', { body: { challengeToken: reg.body.challengeToken, code: code(setup.body.secret, base) } });
  assert.equal(done.status, 200, done.text);
  assert.equal((await s.call('GET', '/api/context', { token: done.body.token })).body.organization.id, owner.tree.organizationId);
});
