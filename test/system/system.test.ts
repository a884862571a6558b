// System administration: the effective configuration (sources, secrets only set/unset), health probes
// (database round trip, integrity-check age, WAL, disk, worker, queue) with 503 when failing, feature
// flags (global and per organization, one read function, audited) and the identity overview; every
// route refused without a session (401) and to an organization owner (403); `svc health` and
// `svc config` with --json.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer, serversRunTheWorker } from '../helpers/server.ts';
import { login, makeUser, member } from '../helpers/factories.ts';
import { Sandbox } from '../helpers/cli.ts';
import { connector } from '../helpers/jobs.ts';
import { featureEnabled } from '../../src/platform/flags/flags.ts';

serversRunTheWorker();

const ROUTES = [
  ['GET', '/api/system/config'], ['GET', '/api/system/health'], ['GET', '/api/system/feature-flags'],
  ['GET', '/api/system/feature-flags/workflow_queue_mode'], ['PUT', '/api/system/feature-flags/workflow_queue_mode'], ['GET', '/api/system/identity'],
] as const;

async function admin(s: TestServer) {
  const u = await makeUser(s, { systemAdmin: true });
  return login(s, u);
}

test('system routes: no session 401, an organization owner 403, the system administrator 200', async (t) => {
  const s = await startTestServer(t);
  const owner = await member(s, 'org_owner');
  const token = await admin(s);
  for (const [method, p] of ROUTES) {
    const body = method === 'PUT' ? { enabled: false } : undefined;
    assert.equal((await s.call(method, p, { body })).status, 401, `${method} ${p}`);
    const refused = await s.call(method, p, { token: owner.token, body });
    assert.equal(refused.status, 403, `${method} ${p}`);
  }
  assert.equal((await s.db.get<{ n: number }>('SELECT count(*) AS n FROM feature_flags'))!.n, 0, 'a refused PUT wrote nothing');
  for (const [method, p] of ROUTES) {
    const r = await s.call(method, p, { token, body: method === 'PUT' ? { enabled: true } : undefined });
    assert.equal(r.status, 200, `${method} ${p}: ${r.text}`);
  }
});

test('config: every setting with its source (default, env, flag); a secret only as set or unset', async (t) => {
  const secret = 'correct-horse-battery-staple-0123456789';
  const s = await startTestServer(t, { SVC_MFA_ENCRYPTION_KEY: secret, SVC_BACKUP_RETENTION: '3' });
  const r = await s.call('GET', '/api/system/config', { token: await admin(s) });
  assert.equal(r.status, 200, r.text);
  assert.ok(!r.text.includes(secret), 'the secret value never appears');
  const by = Object.fromEntries(r.body.settings.map((x: { env: string }) => [x.env, x]));
  assert.deepEqual([by.SVC_BACKUP_RETENTION.value, by.SVC_BACKUP_RETENTION.source], [3, 'env']);
  assert.deepEqual([by.SVC_PORT.value, by.SVC_PORT.source, by.SVC_PORT.flag], [0, 'flag', '--port']);
  assert.deepEqual([by.SVC_DB_SYNCHRONOUS.value, by.SVC_DB_SYNCHRONOUS.source, by.SVC_DB_SYNCHRONOUS.default], ['full', 'default', 'full']);
  assert.deepEqual(by.SVC_MFA_ENCRYPTION_KEY, { ...by.SVC_MFA_ENCRYPTION_KEY, secret: true, set: true, source: 'env' });
  assert.equal('value' in by.SVC_MFA_ENCRYPTION_KEY, false);
  assert.equal(r.body.dbPath, s.config.dbPath);

  const unset = await startTestServer(t);
  const u = await unset.call('GET', '/api/system/config', { token: await admin(unset) });
  const key = u.body.settings.find((x: { env: string }) => x.env === 'SVC_MFA_ENCRYPTION_KEY');
  assert.deepEqual([key.set, key.source], [false, 'default']);
});

test('health: probes with status and latency; integrity age from the last checked snapshot', async (t) => {
  const s = await startTestServer(t, { SVC_WORKER_POLL_MS: '100' });
  const token = await admin(s);
  const probes = async () => {
    const r = await s.call('GET', '/api/system/health', { token });
    return { r, by: Object.fromEntries(r.body.probes.map((p: { name: string }) => [p.name, p])) as Record<string, any> };
  };
  // The worker thread writes its first heartbeat shortly after start.
  let first = await probes();
  for (let i = 0; i < 50 && first.by.worker.status !== 'ok'; i++) first = await probes();
  assert.deepEqual(first.r.body.probes.map((p: { name: string }) => p.name), ['database', 'integrity', 'wal', 'disk', 'worker', 'queue']);
  for (const p of first.r.body.probes) assert.ok(typeof p.latencyMs === 'number' && p.latencyMs >= 0, p.name);
  assert.equal(first.by.database.status, 'ok');
  assert.ok((await s.db.get<{ nonce: string }>('SELECT nonce FROM system_health_probe WHERE id = 1'))!.nonce.length > 10, 'the round trip wrote its row');
  assert.deepEqual([first.by.integrity.status, first.by.integrity.details.lastCheckedAt], ['warn', null]);
  assert.equal(first.by.worker.status, 'ok', JSON.stringify(first.by.worker));
  assert.equal(first.r.status, 200);
  assert.equal(first.r.body.status, 'degraded', 'no integrity check yet');
  assert.ok(first.by.wal.details.bytes >= 0);
  assert.deepEqual(first.by.disk.details.volumes.map((v: { name: string }) => v.name), ['data', 'storage']);
  assert.ok(first.by.disk.details.volumes.every((v: { freeBytes: number; totalBytes: number }) => v.freeBytes > 0 && v.totalBytes >= v.freeBytes));
  assert.equal(first.by.queue.details.depth.queued, 0);

  const backup = await s.call('POST', '/api/system/backups', { token });
  assert.equal(backup.status, 201, backup.text);
  const after = await probes();
  assert.deepEqual([after.by.integrity.status, after.by.integrity.details.lastCheckedAt, after.by.integrity.details.snapshot],
    ['ok', backup.body.createdAt, backup.body.fileName]);

});

test('health over HTTP answers 503 when a probe fails (a stale worker heartbeat)', async (t) => {
  // The worker heartbeats once at start, then only every hour: its row is moved an hour back.
  const s = await startTestServer(t, { SVC_WORKER_POLL_MS: '3600000', SVC_WORKER_STALE_MS: '60000' });
  const token = await admin(s);
  for (let i = 0; i < 100 && !await s.db.get('SELECT 1 FROM worker_state WHERE worker_id = ?', s.config.workerId); i++) await new Promise((r) => setTimeout(r, 20));
  await s.db.run('UPDATE worker_state SET heartbeat_at = ? WHERE worker_id = ?', new Date(Date.now() - 3_600_000).toISOString(), s.config.workerId);
  const r = await s.call('GET', '/api/system/health', { token });
  assert.equal(r.status, 503, r.text);
  assert.equal(r.body.status, 'failing');
  const worker = r.body.probes.find((p: { name: string }) => p.name === 'worker');
  assert.deepEqual([worker.status, worker.details.health], ['fail', 'stale']);
});

test('feature flags: the default, a global value, an organization\'s value winning over it, cleared again; audited; unknown flag 404, bad organization 422', async (t) => {
  const s = await startTestServer(t);
  const token = await admin(s);
  const a = await member(s, 'org_owner');
  const b = await member(s, 'org_owner');
  const enabled = async (org: string) => await featureEnabled(s.db, 'workflow_queue_mode', org);
  assert.deepEqual([await enabled(a.tree.organizationId), await enabled(b.tree.organizationId)], [true, true], 'declared default');

  const list = await s.call('GET', '/api/system/feature-flags', { token });
  assert.deepEqual(list.body.items.map((f: { key: string }) => f.key).sort(), ['client_delivery_links', 'workflow_queue_mode']);
  assert.deepEqual(list.body.items.find((f: { key: string }) => f.key === 'workflow_queue_mode').global, null);

  const put = (body: unknown) => s.call('PUT', '/api/system/feature-flags/workflow_queue_mode', { token, body });
  assert.equal((await put({ enabled: false })).body.global, false);
  assert.deepEqual([await enabled(a.tree.organizationId), await enabled(b.tree.organizationId)], [false, false], 'global off');
  const org = await put({ enabled: true, organizationId: a.tree.organizationId });
  assert.deepEqual(org.body.organizations.map((o: { organizationId: string; enabled: boolean }) => [o.organizationId, o.enabled]), [[a.tree.organizationId, true]]);
  assert.deepEqual([await enabled(a.tree.organizationId), await enabled(b.tree.organizationId)], [true, false], 'the organization\'s value wins');
  assert.equal((await put({ enabled: true, organizationId: a.tree.organizationId })).status, 200, 'a repeat changes nothing');
  await put({ enabled: null });
  await put({ enabled: null, organizationId: a.tree.organizationId });
  assert.deepEqual([await enabled(a.tree.organizationId), await enabled(b.tree.organizationId)], [true, true], 'cleared: the default again');

  const audit = await s.db.all<{ target_id: string; organization_id: string | null; metadata: string }>(
    "SELECT target_id, organization_id, metadata FROM audit_log WHERE action = 'system.feature_flag.updated' ORDER BY seq");
  assert.deepEqual(audit.map((x) => [JSON.parse(x.metadata).level, JSON.parse(x.metadata).from, JSON.parse(x.metadata).to]),
    [['global', null, false], ['organization', null, true], ['global', false, null], ['organization', true, null]], 'four changes, the repeat not audited');

  assert.equal((await s.call('PUT', '/api/system/feature-flags/no_such_flag', { token, body: { enabled: true } })).status, 404);
  assert.equal((await s.call('GET', '/api/system/feature-flags/no_such_flag', { token })).status, 404);
  const bad = await put({ enabled: true, organizationId: 'org_nope' });
  assert.deepEqual([bad.status, bad.body.error.code], [422, 'validation_failed']);
  assert.equal((await put({ enabled: 'yes' })).status, 422);
  assert.equal((await s.db.get<{ n: number }>('SELECT count(*) AS n FROM feature_flag_organizations'))!.n, 0, 'refused writes wrote nothing');
});

test('identity overview: policy, providers, directories with token hints only, counts', async (t) => {
  const s = await startTestServer(t);
  const token = await admin(s);
  const owner = await member(s, 'org_owner');
  const dir = await s.call('POST', '/api/system/identity/directory-syncs', { token, body: { name: 'Okta', organizationId: owner.tree.organizationId } });
  assert.equal(dir.status, 201, dir.text);
  const r = await s.call('GET', '/api/system/identity', { token });
  assert.equal(r.status, 200, r.text);
  assert.ok(!r.text.includes(dir.body.token), 'the directory token never appears');
  assert.deepEqual(r.body.directories.map((d: { id: string; tokenHint: string }) => [d.id, d.tokenHint]), [[dir.body.directory.id, dir.body.directory.tokenHint]]);
  assert.equal(r.body.policy.passwordMinLength, 12);
  assert.deepEqual(r.body.providers, { password: { enabled: true }, oidc: [], saml: [] });
  assert.deepEqual([r.body.counts.users, r.body.counts.systemAdministrators, r.body.counts.directories, r.body.counts.activeDirectories], [2, 1, 1, 1]);
  assert.ok(r.body.counts.activeSessions >= 2);
});

test('svc health --json and svc config --json as the operator', async (t) => {
  const sb = new Sandbox(t);
  const health = await sb.run(['health', '--json', ...sb.dirs]);
  // No worker has ever run on this database: failing, exit 1, and the document says why.
  assert.equal(health.code, 1, health.stderr);
  const h = JSON.parse(health.stdout);
  assert.equal(h.status, 'failing');
  assert.deepEqual(h.probes.map((p: { name: string; status: string }) => [p.name, p.status]).filter(([n]: string[]) => n === 'database' || n === 'worker'),
    [['database', 'ok'], ['worker', 'fail']]);
  const text = await sb.run(['health', ...sb.dirs]);
  assert.match(text.stdout, /^health: failing\nok {3}database/);

  const config = await sb.run(['config', '--json', ...sb.dirs], { env: { SVC_MFA_ENCRYPTION_KEY: 'a-long-operator-passphrase-xyz' } });
  assert.equal(config.code, 0, config.stderr);
  assert.ok(!config.stdout.includes('a-long-operator-passphrase-xyz'));
  const c = JSON.parse(config.stdout);
  const by = Object.fromEntries(c.settings.map((x: { env: string }) => [x.env, x]));
  assert.deepEqual([by.SVC_DATA_DIR.source, by.SVC_DATA_DIR.value], ['flag', sb.data]);
  assert.deepEqual([by.SVC_MFA_ENCRYPTION_KEY.set, by.SVC_MFA_ENCRYPTION_KEY.source], [true, 'env']);
});

test('the workflow_queue_mode flag: off, queue mode is 409 feature_disabled and writes nothing while plan mode works; an organization\'s value turns it back on', async (t) => {
  const s = await startTestServer(t);
  const token = await admin(s);
  const owner = await member(s, 'org_owner');
  const shot = (await s.db.get<{ id: string }>('SELECT id FROM shots WHERE project_id = ? ORDER BY position', owner.tree.projectId))!;
  await connector(s, owner.token, 'http://127.0.0.1:9', { probe: false });
  const instantiate = (mode: string) => s.call('POST', '/api/workflows/templates/wft_builtin_voice_over/instantiate', { token: owner.token, body: { mode, shotId: shot.id } });
  const runs = async () => (await s.db.get<{ n: number }>('SELECT count(*) AS n FROM workflow_runs'))!.n;
  assert.equal((await s.call('PUT', '/api/system/feature-flags/workflow_queue_mode', { token, body: { enabled: false } })).status, 200);
  const off = await instantiate('queue');
  assert.deepEqual([off.status, off.body.error.code, off.body.error.details.flag], [409, 'feature_disabled', 'workflow_queue_mode']);
  assert.equal(await runs(), 0, 'nothing written');
  const plan = await instantiate('plan');
  assert.equal(plan.status, 201, plan.text);
  assert.equal(await runs(), 1);
  await s.call('PUT', '/api/system/feature-flags/workflow_queue_mode', { token, body: { enabled: true, organizationId: owner.tree.organizationId } });
  const on = await instantiate('queue');
  assert.equal(on.status, 201, on.text);
  assert.equal(on.body.status, 'queued');
});
