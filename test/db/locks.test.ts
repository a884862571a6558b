// The rules SQLite's single writer used to keep, kept on PostgreSQL at READ COMMITTED by db.lock()
// (src/directory/locks.ts) and by an optimistic write: transactions on two pools of one database (as
// two processes would open) check, pause, then write, all at once, and the limit or the invariant
// holds. On SQLite the same transactions take turns on one connection. Each test runs the function
// the service calls inside its transaction to take the key and check (seats, clips, storage, version
// numbers, owners, system administrators), then the store's write the service makes next: the
// services themselves also append to the audit log, whose statement does not run on PostgreSQL yet.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { openDb, type Db } from '../../src/db/db.ts';
import { openPostgres, type PostgresDb } from '../../src/db/postgres.ts';
import { migrate } from '../../src/db/migrate.ts';
import { AppError } from '../../src/kernel/errors.ts';
import { insertDefaultBillingAccount } from '../../src/directory/plan/account.ts';
import { assertSeatsAvailable } from '../../src/directory/plan/seats.ts';
import {
  activeOwnerCount, insertMembership, insertOrganization, insertProject, insertWorkspace, setMembershipRole,
} from '../../src/directory/tenancy/store.ts';
import { insertUser, setSystemAdmin, updateUserStatus, type UserRow } from '../../src/directory/users/store.ts';
import { insertInvitation } from '../../src/identity/members/store.ts';
import { assertKeepsAnOwner } from '../../src/tenancy/service.ts';
import { assertKeepsASystemAdmin, assertOwnsNoOrganizationAlone } from '../../src/identity/users/governance.ts';
import { holdClipQuota } from '../../src/generation/jobs/service.ts';
import { blockDescendants, dependencyStatus, insertJob, jobById, type JobRow } from '../../src/generation/jobs/store.ts';
import { insertAsset, insertVersion, nextVersionNumber, type VersionRow } from '../../src/production/assets/store.ts';
import { holdStorageQuota } from '../../src/production/assets/service.ts';
import { deliveryInProject, insertDelivery, updateDelivery } from '../../src/finishing/delivery/store.ts';
import { tempDir } from '../helpers/server.ts';
import { freshDatabaseUrl } from '../helpers/postgres.ts';

const T0 = '2026-03-10T12:00:00.000Z';
const ORG = 'org_l1';
const WS = 'ws_l1';
const PROJECT = 'prj_l1';
/** Attempts at once in each race: more than the limit, spread over the two pools. */
const N = 8;

/** Two handles on one migrated database: two PostgreSQL pools, or SQLite's one connection twice. */
const ENGINES: Record<string, (t: TestContext) => Promise<[Db, Db]>> = {
  sqlite: async (t) => {
    const db = openDb(path.join(tempDir(t), 'svc.db'));
    t.after(() => db.close());
    await migrate(db);
    return [db, db];
  },
  postgres: async (t) => {
    const pools: PostgresDb[] = [];
    const url = await freshDatabaseUrl(t, async () => { for (const p of pools) await p.close(); });
    pools.push(await openPostgres({ url, max: N / 2 }), await openPostgres({ url, max: N / 2 }));
    await migrate(pools[0]);
    return [pools[0], pools[1]];
  },
};

/** Between a transaction's check and its write: long enough for every other attempt to check too, were nothing held. */
const pause = () => new Promise((resolve) => setTimeout(resolve, 20));

/** `n` attempts at once, alternating between the two handles, each in a transaction of its own. */
async function race<T>(dbs: [Db, Db], n: number, attempt: (db: Db, i: number) => Promise<T>): Promise<Array<PromiseSettledResult<T>>> {
  return await Promise.allSettled(Array.from({ length: n }, async (_, i) => {
    const db = dbs[i % 2];
    return await db.tx(() => attempt(db, i));
  }));
}

/** How many attempts succeeded, and the codes of the refused ones (anything but an AppError fails the test). */
function tally(outcomes: Array<PromiseSettledResult<unknown>>): { ok: number; refused: string[] } {
  const refused = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected').map((o) => {
    if (!(o.reason instanceof AppError)) throw o.reason;
    return o.reason.code;
  });
  return { ok: outcomes.length - refused.length, refused };
}

async function world(db: Db, limits: { seats?: number; clips?: number; storageBytes?: number } = {}): Promise<void> {
  await insertOrganization(db, { id: ORG, name: 'Locks', time_zone: 'UTC', created_at: T0, created_by: null });
  await insertDefaultBillingAccount(db, ORG, T0);
  await db.run('UPDATE billing_accounts SET seat_limit = ?, monthly_clip_quota = ?, storage_gb = ? WHERE organization_id = ?',
    limits.seats ?? 25, limits.clips ?? 1000, (limits.storageBytes ?? 2 ** 30) / 2 ** 30, ORG);
  await insertWorkspace(db, { id: WS, organization_id: ORG, name: 'Main', created_at: T0, created_by: null });
  await insertProject(db, {
    id: PROJECT, organization_id: ORG, workspace_id: WS, name: 'P', status: 'active', template_id: null, created_at: T0, created_by: null,
    updated_at: T0, archived_at: null, archived_by: null, archived_from_status: null,
  });
}

async function user(db: Db, id: string, o: { admin?: boolean; owner?: boolean } = {}): Promise<UserRow> {
  const u: UserRow = {
    id, email: `${id}@example.com`, email_normalized: `${id}@example.com`, name: id, status: 'active', is_system_admin: o.admin ? 1 : 0,
    password_hash: null, password_must_change: 0, password_changed_at: null, mfa_enabled: 0, last_login_at: null, created_at: T0, updated_at: T0,
  };
  await insertUser(db, u);
  if (o.owner) {
    await insertMembership(db, {
      id: `mem_${id}`, user_id: id, level: 'organization', scope_id: ORG, organization_id: ORG, workspace_id: null, project_id: null,
      role: 'org_owner', access_mode: 'full', status: 'active', created_at: T0, created_by: null,
    });
  }
  return u;
}

function job(id: string, o: Partial<JobRow> = {}): JobRow {
  return {
    id, organization_id: ORG, workspace_id: WS, project_id: PROJECT, shot_id: null, kind: 'video', status: 'queued', connector_id: null,
    priority: 0, attempt: 0, max_attempts: 3, depends_on: null, leased_by: null, leased_at: null, run_after: null, input: '{}', output: null,
    error: null, created_by: null, created_at: T0, updated_at: T0, started_at: null, finished_at: null, external_ref: null,
    attempt_started_at: null, episode_id: null, workflow_run_id: null, ...o,
  };
}

function version(id: string, number: number, o: Partial<VersionRow> = {}): VersionRow {
  return {
    id, asset_id: 'ast_l1', organization_id: ORG, workspace_id: WS, project_id: PROJECT, number, file_name: `${id}.bin`,
    mime_type: 'application/octet-stream', declared_mime_type: null, file_size: 100, content_sha256: id.padEnd(64, '0'),
    storage_path: `assets/${ORG}/${id}`, status: 'ok', restored_from_version_id: null, verified_at: null, created_by: null, created_at: T0, ...o,
  };
}

async function asset(db: Db): Promise<void> {
  await insertAsset(db, {
    id: 'ast_l1', organization_id: ORG, workspace_id: WS, project_id: PROJECT, kind: 'image', name: 'a', description: '', tags: '[]',
    status: 'active', current_version_id: null, created_by: null, created_at: T0, updated_at: T0, archived_at: null,
  });
}

for (const engine of Object.keys(ENGINES)) {
  test(`${engine}: seats: invitations at once never take more seats than the limit (seats key)`, async (t) => {
    const dbs = await ENGINES[engine](t);
    await world(dbs[0], { seats: 3 });
    const outcomes = await race(dbs, N, async (db, i) => {
      await assertSeatsAvailable(db, ORG, T0);
      await pause();
      await insertInvitation(db, {
        id: `inv_${i}`, organization_id: ORG, workspace_id: null, project_id: null, email: `p${i}@example.com`, email_normalized: `p${i}@example.com`,
        role: 'org_member', status: 'pending', token_hash: `hash${i}`, token_hint: null, expires_at: '2026-03-17T12:00:00.000Z', invited_by: null,
        created_at: T0, updated_at: T0, accepted_at: null, accepted_by: null, revoked_at: null, revoked_by: null,
      });
    });
    assert.deepEqual(tally(outcomes), { ok: 3, refused: Array<string>(N - 3).fill('seat_limit_reached') });
    assert.equal((await dbs[1].get<{ n: number }>("SELECT count(*) AS n FROM invitations WHERE status = 'pending'"))!.n, 3);
  });

  test(`${engine}: clips: video jobs created at once never exceed the monthly clip quota (clips key)`, async (t) => {
    const dbs = await ENGINES[engine](t);
    await world(dbs[0], { clips: 3 });
    const outcomes = await race(dbs, N, async (db, i) => {
      await holdClipQuota(db, ORG, WS, new Date(T0));
      await pause();
      await insertJob(db, job(`job_${i}`));
    });
    assert.deepEqual(tally(outcomes), { ok: 3, refused: Array<string>(N - 3).fill('clip_quota_exceeded') });
    assert.equal((await dbs[1].get<{ n: number }>("SELECT count(*) AS n FROM generation_jobs WHERE kind = 'video'"))!.n, 3);
  });

  test(`${engine}: storage: files registered at once never exceed the storage quota (storage key)`, async (t) => {
    const dbs = await ENGINES[engine](t);
    await world(dbs[0], { storageBytes: 350 });
    await asset(dbs[0]);
    const outcomes = await race(dbs, N, async (db, i) => {
      const v = version(`asv_${i}`, i + 1);
      await holdStorageQuota(db, ORG, WS, v.storage_path, v.file_size);
      await pause();
      await insertVersion(db, v);
    });
    assert.deepEqual(tally(outcomes), { ok: 3, refused: Array<string>(N - 3).fill('storage_quota_exceeded') });
  });

  test(`${engine}: asset versions: versions added at once get numbers 1..n, none twice (asset key)`, async (t) => {
    const dbs = await ENGINES[engine](t);
    await world(dbs[0]);
    await asset(dbs[0]);
    const outcomes = await race(dbs, N, async (db, i) => {
      const n = await nextVersionNumber(db, 'ast_l1');
      await pause();
      await insertVersion(db, version(`asv_${i}`, n));
    });
    assert.deepEqual(tally(outcomes), { ok: N, refused: [] });
    const numbers = (await dbs[1].all<{ number: number }>('SELECT number FROM asset_versions WHERE asset_id = ? ORDER BY number', 'ast_l1')).map((r) => r.number);
    assert.deepEqual(numbers, Array.from({ length: N }, (_, i) => i + 1));
  });

  test(`${engine}: last owner: owners demoted at once leave one active owner (owners key)`, async (t) => {
    const dbs = await ENGINES[engine](t);
    await world(dbs[0]);
    for (let i = 0; i < 4; i++) await user(dbs[0], `usr_o${i}`, { owner: true });
    const outcomes = await race(dbs, 4, async (db, i) => {
      await assertKeepsAnOwner(db, ORG, `usr_o${i}`);
      await pause();
      await setMembershipRole(db, `mem_usr_o${i}`, 'org_admin', 'full');
    });
    assert.deepEqual(tally(outcomes), { ok: 3, refused: ['last_owner'] });
    assert.equal(await activeOwnerCount(dbs[1], ORG), 1);
  });

  test(`${engine}: last owner: a suspension and a demotion at once leave an active owner (owners key)`, async (t) => {
    const dbs = await ENGINES[engine](t);
    await world(dbs[0]);
    await user(dbs[0], 'usr_a', { owner: true });
    await user(dbs[0], 'usr_b', { owner: true });
    const outcomes = await race(dbs, 2, async (db, i) => {
      if (i === 0) {
        await assertKeepsAnOwner(db, ORG, 'usr_a');
        await pause();
        await setMembershipRole(db, 'mem_usr_a', 'org_member', 'full');
      } else {
        await assertOwnsNoOrganizationAlone(db, 'usr_b');
        await pause();
        await updateUserStatus(db, 'usr_b', 'suspended', T0);
      }
    });
    const { ok, refused } = tally(outcomes);
    assert.equal(ok, 1);
    assert.ok(refused.length === 1 && ['last_owner', 'only_organization_owner'].includes(refused[0]), refused.join());
    assert.equal(await activeOwnerCount(dbs[1], ORG), 1);
  });

  test(`${engine}: last system administrator: identities removed at once leave one (system-admins key)`, async (t) => {
    const dbs = await ENGINES[engine](t);
    await world(dbs[0]);
    for (let i = 0; i < 4; i++) await user(dbs[0], `usr_s${i}`, { admin: true });
    const outcomes = await race(dbs, 4, async (db, i) => {
      await assertKeepsASystemAdmin(db, `usr_s${i}`);
      await pause();
      await setSystemAdmin(db, `usr_s${i}`, false, T0);
    });
    assert.deepEqual(tally(outcomes), { ok: 3, refused: ['last_system_admin'] });
    assert.equal((await dbs[1].get<{ n: number }>("SELECT count(*) AS n FROM users WHERE is_system_admin = 1 AND status = 'active'"))!.n, 1);
  });

  test(`${engine}: delivery: of changes made at once from the same row, one writes and the others find it changed`, async (t) => {
    const dbs = await ENGINES[engine](t);
    await world(dbs[0]);
    await insertDelivery(dbs[0], {
      id: 'dlv_l1', organization_id: ORG, workspace_id: WS, project_id: PROJECT, title: 'D', note: null, status: 'draft', version: 1,
      created_by: null, created_at: T0, updated_at: T0, approved_by: null, approved_at: null,
    });
    // On PostgreSQL every change reads the row before any writes (on SQLite they take turns, each reading the last write).
    const n = engine === 'postgres' ? 4 : 1;
    let arrived = 0;
    let allRead!: () => void;
    const reads = new Promise<void>((resolve) => { allRead = resolve; });
    const outcomes = await race(dbs, 4, async (db, i) => {
      const d = (await deliveryInProject(db, PROJECT, 'dlv_l1'))!;
      if (++arrived === n) allRead();
      if (engine === 'postgres') await reads;
      return await updateDelivery(db, d, { ...d, title: `D${i}`, version: d.version + 1, updated_at: `2026-03-10T12:00:0${i}.000Z` });
    });
    const written = outcomes.map((o) => (o.status === 'fulfilled' ? o.value : o.reason as Error));
    const d = (await deliveryInProject(dbs[1], PROJECT, 'dlv_l1'))!;
    if (engine === 'postgres') {
      assert.deepEqual(written.filter((w) => w === true).length, 1, String(written));
      assert.deepEqual(written.filter((w) => w === false).length, 3, String(written));
      assert.equal(d.version, 2, 'one change written: the others did not write over it');
    } else {
      assert.deepEqual(written, [true, true, true, true]);
      assert.equal(d.version, 5);
    }
  });

  test(`${engine}: job dependency: a job written behind a dependency that fails meanwhile ends blocked (dependency read FOR SHARE)`, async (t) => {
    const dbs = await ENGINES[engine](t);
    await world(dbs[0]);
    await insertJob(dbs[0], job('job_dep', { kind: 'image', status: 'running' }));
    let checked!: () => void;
    const read = new Promise<void>((resolve) => { checked = resolve; });
    const creating = dbs[0].tx(async () => {
      const status = await dependencyStatus(dbs[0], 'job_dep');
      checked();
      await pause();
      await insertJob(dbs[0], job('job_child', { kind: 'image', depends_on: 'job_dep', status: status === 'failed' ? 'blocked' : 'queued' }));
    });
    await read;
    // The worker fails the dependency and blocks what waits on it, in one transaction (settle.ts).
    const failing = dbs[1].tx(async () => {
      await dbs[1].run("UPDATE generation_jobs SET status = 'failed', updated_at = ? WHERE id = ?", T0, 'job_dep');
      return await blockDescendants(dbs[1], 'job_dep', T0);
    });
    await creating;
    assert.deepEqual(await failing, ['job_child']);
    assert.equal((await jobById(dbs[1], 'job_child'))!.status, 'blocked');
  });
}
