// Lost updates (src/directory/locks.ts, RowRead in src/db/dialect.ts): a change computed from a row it
// read (the row written back whole, a status a transition starts from, JSON merged in TypeScript) reads
// the row locked. Without the lock, on PostgreSQL at READ COMMITTED, two requests changing different
// fields of one object both start from the row as it was and the later write undoes the earlier one;
// its audit record starts from the stale value too. Here, per object, requests changing different
// fields (a status twice) run at once over HTTP: every change must survive, there is one audit record
// a change, and the records replayed in order from the row as it was must give the row as it is (each
// starts from what the one before left). On the test server's engine, and, when that is SQLite (whose
// writers take turns), on PostgreSQL too, with a server of its own: the race is PostgreSQL's.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, testDatabase, type Answer, type TestServer } from '../helpers/server.ts';
import { login, makeUser, member } from '../helpers/factories.ts';
import { freshDatabaseUrl } from '../helpers/postgres.ts';
import { lockClause } from '../../src/db/dialect.ts';

type Engine = 'sqlite' | 'postgres';
const ENGINES: Engine[] = testDatabase() === 'postgres' ? ['postgres'] : ['sqlite', 'postgres'];

async function serverOn(t: TestContext, engine: Engine): Promise<TestServer> {
  if (engine === testDatabase()) return await startTestServer(t);
  return await startTestServer(t, { SVC_DATABASE: 'postgres', SVC_POSTGRES_URL: await freshDatabaseUrl(t), SVC_POSTGRES_POOL: '4' });
}

/** What an audit record says a long text became: not its value (src/production/catalog/shots.ts, tasks). */
const TEXT = '(text)';

interface Change { from: unknown; to: unknown }
type Fields = Record<string, unknown>;

interface Race {
  /** The requests, sent all at once; each changes something. */
  requests: Array<() => Promise<Answer>>;
  /** The object's fields the requests change, named as its audit records name them. */
  row(): Promise<Fields>;
  /** Its audit records of these requests, oldest first, each as the changes it records. */
  trail(): Promise<Array<Record<string, Change>>>;
  /** The fields as they must be after every request. */
  expected: Fields;
}

async function race(name: string, r: Race): Promise<void> {
  const before = await r.row();
  const answers = await Promise.all(r.requests.map((send) => send()));
  for (const a of answers) assert.equal(a.status, 200, `${name}: ${a.text}`);
  const after = await r.row();
  for (const [k, v] of Object.entries(r.expected)) assert.deepEqual(after[k], v, `${name}: the change of ${k} survives`);
  const trail = await r.trail();
  assert.equal(trail.length, r.requests.length, `${name}: one audit record a change`);
  const state = { ...before };
  for (const changes of trail) {
    for (const [k, { from, to }] of Object.entries(changes)) {
      assert.ok(k in state, `${name}: ${k} is one of the fields`);
      if (from !== TEXT) assert.deepEqual(from, state[k], `${name}: a record of ${k} starts from what the one before left`);
      state[k] = to === TEXT ? after[k] : to;
    }
  }
  assert.deepEqual(state, after, `${name}: the records, replayed in order, give the row`);
}

const audits = async (s: TestServer, targetType: string, targetId: string) =>
  (await s.db.all<{ action: string; metadata: string }>('SELECT action, metadata FROM audit_log WHERE target_type = ? AND target_id = ? ORDER BY seq', targetType, targetId))
    .map((a) => ({ action: a.action, metadata: JSON.parse(a.metadata) as Record<string, any> }));

/** The records of `actions`, each as its metadata's `changes`. */
const changesOf = async (s: TestServer, targetType: string, targetId: string, actions: string[]) =>
  (await audits(s, targetType, targetId)).filter((a) => actions.includes(a.action)).map((a) => a.metadata.changes as Record<string, Change>);

for (const engine of ENGINES) {
  test(`${engine}: requests changing different fields of one object at once all survive, with the audit records to match`, async (t) => {
    const s = await serverOn(t, engine);
    assert.equal(s.db.engine, engine);
    const producer = await member(s, 'producer');
    const tree = producer.tree;
    const owner = await member(s, 'org_owner', tree);
    const call = (method: string, path: string, body?: unknown, token = producer.token) => s.call(method, path, { token, ...(body === undefined ? {} : { body }) });
    const patch = (path: string, token = producer.token) => (body: unknown) => () => call('PATCH', path, body, token);
    const first = async (table: string) => (await s.db.get<{ id: string }>(`SELECT id FROM ${table} WHERE project_id = ? ORDER BY position`, tree.projectId))!.id;

    await t.test('a shot', async () => {
      const id = await first('shots');
      const to = patch(`/api/production/shots/${id}`);
      await race('shot', {
        requests: [
          to({ title: 'Platform at night' }), to({ sceneId: 'scene-7' }), to({ description: 'Rain on the platform.' }), to({ prompt: 'a rainy platform' }),
          to({ negativePrompt: 'no people' }), to({ durationTargetMs: 4000 }), to({ aspectRatio: '16:9' }), to({ status: 'ready' }), to({ status: 'review' }),
        ],
        row: async () => {
          const r = (await s.db.get<Fields>('SELECT * FROM shots WHERE id = ?', id))!;
          return {
            title: r.title, sceneId: r.scene_id, description: r.description, prompt: r.prompt, negativePrompt: r.negative_prompt,
            durationTargetMs: r.duration_target_ms === null ? null : Number(r.duration_target_ms), aspectRatio: r.aspect_ratio, status: r.status,
          };
        },
        trail: () => changesOf(s, 'shot', id, ['shot.updated', 'shot.status_changed']),
        expected: {
          title: 'Platform at night', sceneId: 'scene-7', description: 'Rain on the platform.', prompt: 'a rainy platform', negativePrompt: 'no people',
          durationTargetMs: 4000, aspectRatio: '16:9',
        },
      });
    });

    await t.test('an episode', async () => {
      const id = await first('episodes');
      const to = patch(`/api/production/episodes/${id}`);
      await race('episode', {
        requests: [to({ title: 'The arrival' }), to({ status: 'in_production' })],
        row: async () => {
          const r = (await s.db.get<Fields>('SELECT title, status FROM episodes WHERE id = ?', id))!;
          return { title: r.title, status: r.status };
        },
        trail: () => changesOf(s, 'episode', id, ['episode.updated']),
        expected: { title: 'The arrival', status: 'in_production' },
      });
    });

    await t.test('a project', async () => {
      const id = tree.projectId;
      const to = patch(`/api/projects/${id}`);
      await race('project', {
        requests: [to({ name: 'Night trains' }), to({ templateId: 'tpl_short' }), () => call('POST', `/api/projects/${id}/lifecycle`, { action: 'activate' })],
        row: async () => {
          const r = (await s.db.get<Fields>('SELECT name, template_id, status FROM projects WHERE id = ?', id))!;
          return { name: r.name, templateId: r.template_id, status: r.status };
        },
        trail: async () => (await audits(s, 'project', id)).filter((a) => a.action !== 'project.created').map(({ action, metadata: m }): Record<string, Change> => (action === 'project.updated'
          ? { name: { from: m.before.name, to: m.after.name }, templateId: { from: m.before.templateId, to: m.after.templateId } }
          : { status: { from: m.from, to: m.to } })),
        expected: { name: 'Night trains', templateId: 'tpl_short', status: 'active' },
      });
    });

    await t.test('an asset', async () => {
      const created = await call('POST', '/api/assets', { kind: 'image', name: 'Platform', description: '', tags: ['set'] });
      assert.equal(created.status, 201, created.text);
      const id = created.body.id;
      const to = patch(`/api/assets/${id}`);
      await race('asset', {
        requests: [to({ name: 'Platform 9' }), to({ description: 'The night platform.' }), to({ tags: ['set', 'night'] })],
        row: async () => {
          const r = (await s.db.get<Fields>('SELECT name, description, tags FROM assets WHERE id = ?', id))!;
          return { name: r.name, description: r.description, tags: JSON.parse(r.tags as string) };
        },
        // asset.updated names the fields it changed, not their values.
        trail: async () => (await audits(s, 'asset', id)).filter((a) => a.action === 'asset.updated')
          .map((a) => Object.fromEntries((a.metadata.fields as string[]).map((f) => [f, { from: TEXT, to: TEXT }]))),
        expected: { name: 'Platform 9', description: 'The night platform.', tags: ['set', 'night'] },
      });
    });

    await t.test('a task', async () => {
      const created = await call('POST', '/api/tasks', { title: 'Light the platform' });
      assert.equal(created.status, 201, created.text);
      const id = created.body.id;
      const to = patch(`/api/tasks/${id}`);
      await race('task', {
        requests: [
          to({ title: 'Light platform 9' }), to({ description: 'Sodium lamps.' }), to({ type: 'art' }), to({ priority: 'high' }),
          to({ status: 'in_progress' }), to({ dueAt: '2026-05-01' }), to({ linkedPage: `/production/shots/${await first('shots')}` }),
        ],
        row: async () => {
          const r = (await s.db.get<Fields>('SELECT * FROM tasks WHERE id = ?', id))!;
          return { title: r.title, description: r.description, type: r.type, priority: r.priority, status: r.status, dueAt: r.due_at, linkedPage: r.linked_page };
        },
        trail: () => changesOf(s, 'task', id, ['task.updated', 'task.status_changed']),
        expected: {
          title: 'Light platform 9', description: 'Sodium lamps.', type: 'art', priority: 'high', status: 'in_progress', dueAt: '2026-05-01T00:00:00.000Z',
        },
      });
    });

    await t.test('a model connector', async () => {
      const base = '/api/platform/models';
      const created = await call('POST', `${base}/register`, {
        label: 'Local image model', endpoint: 'http://127.0.0.1:9', kind: 'openai-compatible', capability: ['image'], costMode: 'local',
      }, owner.token);
      assert.equal(created.status, 201, created.text);
      const id = created.body.id;
      const to = patch(`${base}/${id}`, owner.token);
      await race('connector', {
        requests: [to({ label: 'Image model' }), to({ capability: ['image', 'video'] }), () => call('POST', `${base}/${id}/disable`, undefined, owner.token)],
        row: async () => {
          const r = (await s.db.get<Fields>('SELECT label, capability, status FROM model_connectors WHERE id = ?', id))!;
          return { label: r.label, capability: JSON.parse(r.capability as string), status: r.status };
        },
        trail: async () => (await audits(s, 'model_connector', id)).filter((a) => a.action !== 'model.connector.registered')
          .map(({ action, metadata: m }) => (action === 'model.connector.disabled' ? { status: m.status } : m.changes)),
        expected: { label: 'Image model', capability: ['image', 'video'], status: 'disabled' },
      });
    });

    await t.test('a billing account', async () => {
      const id = tree.organizationId;
      const to = patch(`/api/organizations/${id}/billing`, owner.token);
      await race('billing account', {
        requests: [to({ planName: 'Studio Pro' }), to({ seatLimit: 40 }), to({ quotaWarningPercent: 90 }), to({ monthlyClipQuota: 2500 })],
        row: async () => {
          const r = (await s.db.get<Fields>('SELECT * FROM billing_accounts WHERE organization_id = ?', id))!;
          return { planName: r.plan_name, seatLimit: Number(r.seat_limit), quotaWarningPercent: Number(r.quota_warning_percent), monthlyClipQuota: Number(r.monthly_clip_quota) };
        },
        trail: async () => (await audits(s, 'billing_account', id)).filter((a) => a.action === 'billing.account.updated')
          .map(({ metadata: m }) => Object.fromEntries((m.changed as string[]).map((k) => [k, { from: m.before[k], to: m.after[k] }]))),
        expected: { planName: 'Studio Pro', seatLimit: 40, quotaWarningPercent: 90, monthlyClipQuota: 2500 },
      });
    });

    await t.test('a sign-in provider (its configuration merged)', async () => {
      const admin = await login(s, await makeUser(s, { systemAdmin: true }));
      const base = '/api/system/identity/providers';
      const created = await call('POST', base, {
        kind: 'oidc', name: 'Corporate OIDC', organizationId: tree.organizationId,
        config: { issuer: 'https://login.example.test', clientId: 'svc-client', clientSecretRef: 'LOST_UPDATES_TEST_SECRET' },
      }, admin);
      assert.equal(created.status, 201, created.text);
      const id = created.body.id;
      const to = patch(`${base}/${id}`, admin);
      const row = async () => {
        const r = (await s.db.get<Fields>('SELECT name, default_role, status, config FROM identity_providers WHERE id = ?', id))!;
        return { name: r.name, defaultRole: r.default_role, status: r.status, config: JSON.parse(r.config as string) };
      };
      const config = (await row()).config;
      await race('provider', {
        requests: [
          to({ name: 'Corporate sign-in' }), to({ defaultRole: 'org_admin' }), to({ status: 'disabled' }),
          to({ config: { clientId: 'svc-client-2' } }), to({ config: { scopes: ['openid', 'email'] } }),
        ],
        row,
        trail: () => changesOf(s, 'identity_provider', id, ['identity_provider.updated']),
        expected: { name: 'Corporate sign-in', defaultRole: 'org_admin', status: 'disabled', config: { ...config, clientId: 'svc-client-2', scopes: ['openid', 'email'] } },
      });
    });
  });
}

test(`${testDatabase()}: a locking read is the engine's FOR UPDATE, only inside a transaction`, async (t) => {
  const s = await startTestServer(t);
  const fragment = s.db.engine === 'postgres' ? ' FOR UPDATE' : '';
  assert.throws(() => lockClause(s.db, { forUpdate: true }), /outside a transaction/);
  assert.equal(lockClause(s.db, undefined), '');
  assert.equal(lockClause(s.db, {}), '');
  await s.db.tx(async () => {
    assert.equal(lockClause(s.db, { forUpdate: true }), fragment);
    assert.equal(lockClause(s.db, { forUpdate: true }, 'q'), fragment && `${fragment} OF q`);
    assert.equal(lockClause(s.db, { forUpdate: false }), '');
  });
});
