// Issue 21 item 1: a connector's credential (authEnv) comes only from variables the operator designated
// (SVC_CONNECTOR_SECRET_PREFIX, SVC_CONNECTOR_SECRET_NAMES), never from one of the service's own
// settings nor any other variable: refused at registration and PATCH (422 naming authEnv), re-checked
// at every call (a connector stored before the rule sends nothing), presence reported only for
// designated names; sign-in providers and connectors never share a variable.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';
import { startTestServer, tempDir, serversRunTheWorker } from '../helpers/server.ts';
import { login, makeOrg, makeUser, member } from '../helpers/factories.ts';
import { createJob, waitJob, WORKER_ENV } from '../helpers/jobs.ts';
import { jsonSetText } from '../helpers/sql.ts';
import { ConfigError, loadConfig } from '../../src/kernel/config.ts';
import { startServer } from '../../src/server.ts';
import { createLogger } from '../../src/kernel/log.ts';
import { callConnector, probeConnector } from '../../src/generation/connectors/protocols/index.ts';
import { credentialPolicy } from '../../src/kernel/credentials.ts';
import { ConnectorError, type CallRequest, type ConnectorSpec } from '../../src/generation/connectors/protocols/types.ts';
import { LocalStore } from '../../src/kernel/storage/local.ts';

serversRunTheWorker();

const BASE = '/api/platform/models';

/** An endpoint "the tenant controls": answers like an OpenAI-compatible server and records every Authorization header. */
async function spy(t: TestContext) {
  const seen: Array<{ url: string; authorization: string | null }> = [];
  const server = http.createServer((req, res) => {
    seen.push({ url: req.url ?? '', authorization: req.headers.authorization ?? null });
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(req.url === '/v1/models' ? '{"data":[]}' : JSON.stringify({ model: 'm', choices: [{ message: { role: 'assistant', content: 'hello' } }] }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => { server.closeAllConnections(); server.close(); });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

const body = (endpoint: string, authEnv: unknown, over: Record<string, unknown> = {}) => ({
  label: 'Tenant model', endpoint, kind: 'openai-compatible', capability: ['chat'], costMode: 'local', authEnv,
  protocol: { models: { chat: 'm' } }, ...over,
});

/** Sets process.env entries for the test's duration. */
function setEnv(t: TestContext, vars: Record<string, string>): void {
  const before = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  Object.assign(process.env, vars);
  t.after(() => {
    for (const [k, v] of Object.entries(before)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });
}

/** Refused names and why: the service's own variables, or no designation at all. */
const FORBIDDEN: Record<string, RegExp> = {
  SVC_MFA_ENCRYPTION_KEY: /own settings/, SVC_OIDC_STORAGE_KEY: /own settings/, SVC_SESSION_SECRET: /own settings/,
  // Settings under the designated prefix itself, and the platform's own targets.
  SVC_CONNECTOR_SECRET_PREFIX: /own settings/, SVC_CONNECTOR_SECRET_NAMES: /own settings/, PLATFORM_POSTGRES_URL: /own settings/,
  PATH: /designated/, HOME: /designated/, OPENAI_API_KEY: /designated/,
  // The prefix alone names no variable.
  SVC_CONNECTOR_SECRET_: /designated/,
};

test('registration and PATCH refuse every variable the operator did not designate, with 422 naming authEnv; nothing stored', async (t) => {
  const s = await startTestServer(t);
  const m = await spy(t);
  const admin = await member(s, 'org_admin');
  const register = (b: unknown, token = admin.token) => s.call('POST', `${BASE}/register`, { token, body: b });

  assert.equal((await register(body(m.url, 'SVC_MFA_ENCRYPTION_KEY'), '')).status, 401, 'no credential');
  const orgMember = await member(s, 'org_member', admin.tree);
  const denied = await register(body(m.url, 'SVC_MFA_ENCRYPTION_KEY'), orgMember.token);
  assert.equal(denied.status, 403, denied.text);

  for (const [name, why] of Object.entries(FORBIDDEN)) {
    const r = await register(body(m.url, name));
    assert.equal(r.status, 422, `${name}: ${r.text}`);
    assert.equal(r.body.error.code, 'validation_failed');
    assert.deepEqual(Object.keys(r.body.error.details.fields), ['authEnv'], name);
    assert.match(r.body.error.details.fields.authEnv, why, name);
  }
  assert.equal((await s.db.get<{ n: number }>('SELECT count(*) AS n FROM model_connectors'))!.n, 0);
  assert.equal((await s.db.get<{ n: number }>("SELECT count(*) AS n FROM audit_log WHERE action LIKE 'model.connector.%'"))!.n, 0);

  const name = `SVC_CONNECTOR_SECRET_T${crypto.randomBytes(4).toString('hex').toUpperCase()}`;
  const ok = await register(body(m.url, name));
  assert.equal(ok.status, 201, ok.text);
  for (const bad of ['SVC_OIDC_STORAGE_KEY', 'PATH']) {
    const p = await s.call('PATCH', `${BASE}/${ok.body.id}`, { token: admin.token, body: { authEnv: bad } });
    assert.equal(p.status, 422, p.text);
    assert.ok('authEnv' in p.body.error.details.fields);
  }
  assert.equal((await s.db.get<{ auth_env: string }>('SELECT auth_env FROM model_connectors WHERE id = ?', ok.body.id))!.auth_env, name, 'unchanged');
});

test('authConfigured is reported only for designated names: the presence of PATH or a key setting is never told', async (t) => {
  const designated = `SVC_CONNECTOR_SECRET_P${crypto.randomBytes(4).toString('hex').toUpperCase()}`;
  setEnv(t, { [designated]: 'value-of-the-designated-variable' });
  const s = await startTestServer(t, { SVC_MFA_ENCRYPTION_KEY: 'a'.repeat(64) });
  const m = await spy(t);
  const admin = await member(s, 'org_admin');
  const c = await s.call('POST', `${BASE}/register`, { token: admin.token, body: body(m.url, designated) });
  assert.equal(c.body.authConfigured, true);
  // A connector stored before the rule, naming PATH (set in every process).
  await s.db.run('UPDATE model_connectors SET auth_env = ? WHERE id = ?', 'PATH', c.body.id);
  const got = await s.call('GET', `${BASE}/${c.body.id}`, { token: admin.token });
  assert.equal(got.body.authEnv, 'PATH');
  assert.equal(got.body.authConfigured, false);
  const list = await s.call('GET', BASE, { token: admin.token });
  assert.equal(list.body.items[0].authConfigured, false);
});

test('a connector stored with a forbidden name sends nothing: the probe and every job call fail with connector_credential_forbidden, not retried', async (t) => {
  const s = await startTestServer(t, WORKER_ENV);
  const m = await spy(t);
  const admin = await member(s, 'org_owner');
  const c = await s.call('POST', `${BASE}/register`, { token: admin.token, body: body(m.url, null) });
  assert.equal(c.status, 201, c.text);
  const ready = await s.call('POST', `${BASE}/${c.body.id}/probe`, { token: admin.token });
  assert.equal(ready.body.status, 'ready', ready.text);
  assert.equal(m.seen.length, 1);
  // The row as a connector registered before this change could hold it.
  await s.db.run('UPDATE model_connectors SET auth_env = ? WHERE id = ?', 'PATH', c.body.id);

  const probe = await s.call('POST', `${BASE}/${c.body.id}/probe`, { token: admin.token });
  assert.equal(probe.status, 200, probe.text);
  assert.equal(probe.body.probe.ok, false);
  assert.match(probe.body.probe.error, /authEnv PATH .*designated.*the call was not made/);
  assert.equal(m.seen.length, 1, 'the probe sent nothing');

  await s.db.run("UPDATE model_connectors SET status = 'ready' WHERE id = ?", c.body.id);
  // The dry run shows what the call would do: refuse, rather than list an authorization header.
  const dry = await s.call('POST', '/api/adapters/dry-run', { token: admin.token, body: { kind: 'chat', connectorId: c.body.id, prompt: 'hello' } });
  assert.equal(dry.status, 422, dry.text);
  assert.match(dry.body.error.details.fields.connectorId, /^connector_credential_forbidden: authEnv PATH /);
  const job = await createJob(s, admin.token, { kind: 'chat', connectorId: c.body.id, prompt: 'hello' });
  const failed = await waitJob(s, admin.token, job.id, ['failed']);
  assert.equal(failed.attempt, 1, 'not retried');
  assert.match(JSON.stringify(failed), /connector_credential_forbidden/);
  assert.equal(m.seen.length, 1, 'the job sent nothing');
  assert.ok(m.seen.every((x) => x.authorization === null));
  s.log.flush();
  assert.ok(!s.logs.join('\n').includes(process.env.PATH!), 'the value of PATH appears nowhere');
});

test('a name listed in SVC_CONNECTOR_SECRET_NAMES (or under a changed prefix) is sent; the service\'s settings stay refused', async (t) => {
  const listed = `TEAM_MODEL_KEY_${crypto.randomBytes(3).toString('hex').toUpperCase()}`;
  const prefixed = `ACME_SECRETS_${crypto.randomBytes(3).toString('hex').toUpperCase()}`;
  setEnv(t, { [listed]: 'listed-credential-value', [prefixed]: 'prefixed-credential-value' });
  const s = await startTestServer(t, { SVC_CONNECTOR_SECRET_NAMES: `${listed}, OTHER_KEY`, SVC_CONNECTOR_SECRET_PREFIX: 'ACME_SECRETS_' });
  const m = await spy(t);
  const admin = await member(s, 'org_owner');
  for (const [name, value] of [[listed, 'listed-credential-value'], [prefixed, 'prefixed-credential-value']]) {
    const c = await s.call('POST', `${BASE}/register`, { token: admin.token, body: body(m.url, name) });
    assert.equal(c.status, 201, c.text);
    assert.equal(c.body.authConfigured, true);
    const p = await s.call('POST', `${BASE}/${c.body.id}/probe`, { token: admin.token });
    assert.equal(p.body.probe.ok, true, p.text);
    assert.equal(m.seen.at(-1)!.authorization, `Bearer ${value}`);
  }
  const old = await s.call('POST', `${BASE}/register`, { token: admin.token, body: body(m.url, 'SVC_CONNECTOR_SECRET_X') });
  assert.equal(old.status, 422, 'the default prefix is replaced, not added');
  const setting = await s.call('POST', `${BASE}/register`, { token: admin.token, body: body(m.url, 'SVC_SESSION_SECRET') });
  assert.equal(setting.status, 422);
});

test('a sign-in provider\'s variable is never a connector credential, and a provider may not name a designated variable', async (t) => {
  const s = await startTestServer(t);
  const sys = await login(s, await makeUser(s, { systemAdmin: true }));
  const org = await makeOrg(s);
  const provider = (ref: string) => s.call('POST', '/api/system/identity/providers', {
    token: sys, body: { kind: 'oidc', name: 'Corp', organizationId: org.id, config: { issuer: 'https://login.example.test', clientId: 'c', clientSecretRef: ref } },
  });
  const refused = await provider('SVC_CONNECTOR_SECRET_IDP');
  assert.equal(refused.status, 422, refused.text);
  assert.ok('config.clientSecretRef' in refused.body.error.details.fields);
  // A provider created before the rule (or while the name was not designated) keeps its variable to itself.
  const created = await provider('CORP_IDP_SECRET');
  assert.equal(created.status, 201, created.text);
  await s.db.run(`UPDATE identity_providers SET config = ${jsonSetText(s.db, 'config', 'clientSecretRef', '?')} WHERE id = ?`, 'SVC_CONNECTOR_SECRET_IDP', created.body.id);
  const admin = await member(s, 'org_admin');
  const r = await s.call('POST', `${BASE}/register`, { token: admin.token, body: body('http://127.0.0.1:9', 'SVC_CONNECTOR_SECRET_IDP') });
  assert.equal(r.status, 422, r.text);
  assert.match(r.body.error.details.fields.authEnv, /sign-in provider/);
});

test('the protocol layer itself refuses a forbidden variable before any byte is sent', async (t) => {
  const m = await spy(t);
  const policy = credentialPolicy(loadConfig({}, {}));
  const connector: ConnectorSpec = {
    id: 'mdl_1', label: 'x', endpoint: m.url, kind: 'openai-compatible', capability: ['chat'], costMode: 'local', authEnv: 'SVC_MFA_ENCRYPTION_KEY', protocol: {},
  };
  const env = { SVC_MFA_ENCRYPTION_KEY: 'the-real-mfa-key-of-the-platform' };
  const req: CallRequest = {
    connector, contract: { organization: { id: 'o', name: 'o' }, project: { id: 'p', name: 'p' }, episode: null, scene: null, shot: null, kind: 'chat', prompt: 'hi', negativePrompt: null, parameters: {}, inputs: [] } as unknown as CallRequest['contract'],
    execution: { jobId: 'job_1', attempt: 1, kind: 'chat', model: 'm', deadline: new Date(Date.now() + 60_000).toISOString() },
    inputFiles: [], resumeRef: null, onRef: () => {}, signal: new AbortController().signal, storage: new LocalStore(tempDir(t)),
    maxOutputBytes: 1024, timeoutMs: 2000, env, credentials: policy,
  };
  await assert.rejects(callConnector(req), (e: ConnectorError) => {
    assert.ok(e instanceof ConnectorError);
    assert.equal(e.code, 'connector_credential_forbidden');
    assert.equal(e.retryable, false);
    assert.ok(!e.message.includes(env.SVC_MFA_ENCRYPTION_KEY));
    return true;
  });
  const probe = await probeConnector(connector, { env, credentials: policy, timeoutMs: 2000 });
  assert.equal(probe.ok, false);
  assert.equal(m.seen.length, 0, 'nothing reached the endpoint');
});

test('a malformed designation stops the start', async (t) => {
  const log = createLogger('silent');
  for (const env of [
    { SVC_CONNECTOR_SECRET_PREFIX: 'lower_' }, { SVC_CONNECTOR_SECRET_PREFIX: 'AB' }, { SVC_CONNECTOR_SECRET_PREFIX: 'NO_TRAILING' },
    { SVC_CONNECTOR_SECRET_NAMES: 'GOOD_KEY,SVC_MFA_ENCRYPTION_KEY' }, { SVC_CONNECTOR_SECRET_NAMES: 'PLATFORM_REDIS_URL' }, { SVC_CONNECTOR_SECRET_NAMES: 'bad-name' },
  ]) {
    const dir = tempDir(t);
    const config = loadConfig({ port: 0, dataDir: `${dir}/data`, storageDir: `${dir}/storage` }, { SVC_SCRYPT_LOG_N: '10', ...env });
    // A start that wrongly succeeds is closed again, so the failure is an assertion, not a hang.
    await assert.rejects(startServer(config, log).then((r) => r.close()), ConfigError, JSON.stringify(env));
  }
});
