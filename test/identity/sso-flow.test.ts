// The start of every SSO flow: the one-time encrypted flow states, the SSO storage key, and
// GET /api/auth/sso/start with the public list of providers and the identity overview.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { startTestServer } from '../helpers/server.ts';
import { createContext } from '../../src/directory/context.ts';
import { FLOW_TTL_MS, saveFlowState, takeFlowState } from '../../src/identity/sso/state.ts';
import { MFA_KEY_SETTING, SSO_KEY_SETTING, SecretUnreadableError, parseEncryptionKey, parseMfaKey, seal, unseal } from '../../src/kernel/seal.ts';
import { SECRET_VALUE, world, oidcBody, samlBody, create, ctxAt, discoveryServer } from './sso-setup.ts';

test('flow states: stored hashed and encrypted, taken once (deleted), refused when expired, of another kind, moved to another row, or re-pointed at another provider or kind; expired states purged on save', async (t) => {
  const { s, admin, org } = await world(t);
  const p = await create(s, admin, oidcBody(org.id));
  const ctx = s.operator();
  const handle = `state-${crypto.randomBytes(16).toString('hex')}`;
  const payload = { nonce: 'n-123', verifier: 'v-456', returnTo: '/projects/1' };
  await saveFlowState(ctx, { providerId: p.id, kind: 'oidc', handle, payload, ttlMs: FLOW_TTL_MS });
  const stored = (await s.db.get<any>('SELECT * FROM sso_states'))!;
  assert.equal(stored.handle_hash, crypto.hash('sha256', handle, 'hex'));
  for (const secret of [handle, 'n-123', 'v-456', '/projects/1']) assert.ok(!JSON.stringify(stored).includes(secret), `${secret} is not stored in clear`);
  assert.equal(Date.parse(stored.expires_at) - Date.parse(stored.created_at), 10 * 60_000);

  assert.equal(await takeFlowState(ctx, 'saml', handle), null, 'another kind does not take it');
  assert.equal((await s.db.get<any>('SELECT count(*) AS n FROM sso_states'))!.n, 1, 'nor deletes it');
  assert.deepEqual(await takeFlowState(ctx, 'oidc', handle), { providerId: p.id, payload });
  assert.equal((await s.db.get<any>('SELECT count(*) AS n FROM sso_states'))!.n, 0, 'a taken state is deleted at once');
  assert.equal(await takeFlowState(ctx, 'oidc', handle), null, 'single use');
  assert.equal(await takeFlowState(ctx, 'oidc', 'never-issued'), null);
  assert.equal(await takeFlowState(ctx, 'oidc', ''), null);

  const late = `late-${crypto.randomBytes(8).toString('hex')}`;
  await saveFlowState(ctx, { providerId: p.id, kind: 'saml', handle: late, payload: { relayState: 'r' }, ttlMs: FLOW_TTL_MS });
  assert.equal(await takeFlowState(ctxAt(s, Date.now() + FLOW_TTL_MS + 1000), 'saml', late), null, 'expired');
  assert.equal((await s.db.get<any>('SELECT count(*) AS n FROM sso_states'))!.n, 0, 'an expired state met at take is deleted too');

  // Every save forgets the states already expired (not a day later); unexpired ones stay.
  await saveFlowState(ctx, { providerId: p.id, kind: 'oidc', handle: 'fresh', payload: {}, ttlMs: FLOW_TTL_MS });
  await saveFlowState(ctxAt(s, Date.now() - FLOW_TTL_MS - 1000), { providerId: p.id, kind: 'oidc', handle: 'stale', payload: {}, ttlMs: FLOW_TTL_MS });
  assert.equal((await s.db.get<any>('SELECT count(*) AS n FROM sso_states'))!.n, 2, 'the stale state is still there before the next save');
  await saveFlowState(ctx, { providerId: p.id, kind: 'oidc', handle: 'next', payload: {}, ttlMs: FLOW_TTL_MS });
  assert.deepEqual((await s.db.all<any>('SELECT handle_hash FROM sso_states ORDER BY handle_hash')).map((r) => r.handle_hash),
    ['fresh', 'next'].map((h) => crypto.hash('sha256', h, 'hex')).sort(), 'the expired state was deleted by the save');
  assert.equal(await takeFlowState(ctx, 'oidc', 'stale'), null);
  assert.deepEqual((await takeFlowState(ctx, 'oidc', 'fresh'))?.payload, {});
  assert.deepEqual((await takeFlowState(ctx, 'oidc', 'next'))?.payload, {});

  // The provider id and the kind are additional data too: a row re-pointed at another provider, or
  // relabelled as another kind, does not decrypt (and is used up).
  const q = await create(s, admin, oidcBody(org.id, {}, { name: 'Other OIDC' }));
  await saveFlowState(ctx, { providerId: p.id, kind: 'oidc', handle: 'moved', payload: { who: 'moved' }, ttlMs: FLOW_TTL_MS });
  await s.db.run('UPDATE sso_states SET provider_id = ? WHERE handle_hash = ?', q.id, crypto.hash('sha256', 'moved', 'hex'));
  assert.equal(await takeFlowState(ctx, 'oidc', 'moved'), null, 'provider id changed on the row');
  assert.equal(await takeFlowState(ctx, 'oidc', 'moved'), null, 'and it is gone');
  await saveFlowState(ctx, { providerId: p.id, kind: 'oidc', handle: 'relabelled', payload: { who: 'relabelled' }, ttlMs: FLOW_TTL_MS });
  await s.db.run("UPDATE sso_states SET kind = 'saml' WHERE handle_hash = ?", crypto.hash('sha256', 'relabelled', 'hex'));
  assert.equal(await takeFlowState(ctx, 'saml', 'relabelled'), null, 'kind changed on the row');
  // Unchanged, the same provider's state is taken as usual (the refusals above are the binding, not the key).
  await saveFlowState(ctx, { providerId: q.id, kind: 'oidc', handle: 'kept', payload: { who: 'kept' }, ttlMs: FLOW_TTL_MS });
  assert.deepEqual(await takeFlowState(ctx, 'oidc', 'kept'), { providerId: q.id, payload: { who: 'kept' } });

  // A payload moved to another row (the handle hash is its additional data) does not decrypt.
  const a = 'handle-a', b = 'handle-b';
  await saveFlowState(ctx, { providerId: p.id, kind: 'oidc', handle: a, payload: { who: 'a' }, ttlMs: FLOW_TTL_MS });
  await saveFlowState(ctx, { providerId: p.id, kind: 'oidc', handle: b, payload: { who: 'b' }, ttlMs: FLOW_TTL_MS });
  await s.db.run('UPDATE sso_states SET payload = (SELECT payload FROM sso_states WHERE handle_hash = ?) WHERE handle_hash = ?',
    crypto.hash('sha256', a, 'hex'), crypto.hash('sha256', b, 'hex'));
  assert.equal(await takeFlowState(ctx, 'oidc', b), null);
  assert.deepEqual((await takeFlowState(ctx, 'oidc', a))?.payload, { who: 'a' });

  // Under another SVC_OIDC_STORAGE_KEY nothing decrypts.
  const c = 'handle-c';
  await saveFlowState(ctx, { providerId: p.id, kind: 'oidc', handle: c, payload: { who: 'c' }, ttlMs: FLOW_TTL_MS });
  const otherKey = createContext({ db: s.db, config: { ...s.config, oidcStorageKey: 'ef'.repeat(32) }, log: s.log });
  assert.equal(await takeFlowState(otherKey, 'oidc', c), null);
});

test('the SSO storage key shares the MFA key parsing but is its own key: ciphertexts do not cross', () => {
  const hex = 'ab'.repeat(32);
  const mfa = parseMfaKey(hex);
  const sso = parseEncryptionKey(hex, SSO_KEY_SETTING);
  assert.deepEqual(mfa.key, sso.key, 'the same 32 bytes');
  assert.notEqual(mfa.id, sso.id, 'fingerprinted per setting');
  const devMfa = parseMfaKey('');
  const devSso = parseEncryptionKey('', SSO_KEY_SETTING);
  assert.equal(devSso.source, 'development');
  assert.notDeepEqual(devMfa.key, devSso.key, 'separate development keys');
  const pass = 'a long passphrase for the key';
  assert.notDeepEqual(parseEncryptionKey(pass, MFA_KEY_SETTING).key, parseEncryptionKey(pass, SSO_KEY_SETTING).key, 'separate scrypt salts');
  assert.throws(() => parseEncryptionKey('short', SSO_KEY_SETTING), /SVC_OIDC_STORAGE_KEY must be 32 bytes/);
  const aad = Buffer.from('x');
  const blob = seal(devSso, aad, 'payload');
  assert.equal(unseal(devSso, aad, blob), 'payload');
  assert.throws(() => unseal(devMfa, aad, blob), SecretUnreadableError);
  assert.throws(() => unseal(devSso, Buffer.from('y'), blob), SecretUnreadableError);
});

test('start redirects to the provider with a one-time state; the public list shows active providers only; the identity overview lists providers with variable names only', async (t) => {
  const { s, admin, org } = await world(t);
  const issuer = await discoveryServer(t);
  const o = await create(s, admin, oidcBody(org.id, { issuer }));
  const sm = await create(s, admin, samlBody(org.id));
  const off = await create(s, admin, oidcBody(org.id, {}, { status: 'disabled', name: 'Off' }));

  const list = await s.call('GET', '/api/auth/sso/providers');
  assert.equal(list.status, 200);
  assert.deepEqual(list.body.items.map((p: any) => Object.keys(p).sort().join(',')), ['id,kind,name', 'id,kind,name']);
  assert.deepEqual(new Set(list.body.items.map((p: any) => p.id)), new Set([o.id, sm.id]));
  assert.ok(!list.body.items.some((p: any) => p.id === off.id));

  const start = await s.call('GET', `/api/auth/sso/start?providerId=${o.id}&returnTo=%2Fhome`);
  assert.equal(start.status, 302, start.text);
  const location = new URL(start.headers.get('location')!);
  assert.equal(`${location.origin}${location.pathname}`, `${issuer}/auth`);
  assert.equal(location.searchParams.get('code_challenge_method'), 'S256');
  assert.equal((await s.db.get<any>("SELECT count(*) AS n FROM sso_states WHERE kind = 'oidc'"))!.n, 1);
  assert.ok(!start.headers.get('location')!.includes(SECRET_VALUE));

  const overview = await s.call('GET', '/api/system/identity', { token: admin });
  assert.equal(overview.status, 200, overview.text);
  assert.deepEqual(overview.body.providers.oidc.map((p: any) => p.id).sort(), [o.id, off.id].sort());
  assert.deepEqual(overview.body.providers.saml.map((p: any) => [p.id, p.config.idpCertRef]), [[sm.id, 'SSO_PROVIDERS_TEST_CERT']]);
  assert.equal(overview.body.counts.providers, 3);
  assert.equal(overview.body.counts.activeProviders, 2);
  assert.ok(!overview.text.includes(SECRET_VALUE));
});

test('SVC_OIDC_STORAGE_KEY at start: a bad value stops the start, the development key is warned about, a set key is not', async (t) => {
  await assert.rejects(startTestServer(t, { SVC_OIDC_STORAGE_KEY: 'too short' }), /SVC_OIDC_STORAGE_KEY/);
  const dev = await startTestServer(t);
  dev.log.flush();
  assert.ok(dev.logs.some((l) => l.includes('SVC_OIDC_STORAGE_KEY is not set') && l.includes('"warn"')));
  const keyed = await startTestServer(t, { SVC_OIDC_STORAGE_KEY: 'ab'.repeat(32) });
  keyed.log.flush();
  assert.ok(!keyed.logs.some((l) => l.includes('SVC_OIDC_STORAGE_KEY is not set')));
});
