// Storage warnings on PostgreSQL at READ COMMITTED (src/commercial/quotas/warnings.ts): the bound of a
// scope's stored bytes (an exact count plus the storage_added counter's growth since) misses no file
// committed out of order: a file registered by another process in a transaction that began before a
// check and commits after it still counts at the next check. (SQLite: test/commercial/quotas.test.ts.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { migrate } from '../../src/db/migrate.ts';
import { openPostgres, type PostgresDb } from '../../src/db/postgres.ts';
import { createContext, type Ctx } from '../../src/directory/context.ts';
import { loadConfig } from '../../src/kernel/config.ts';
import { createLogger } from '../../src/kernel/log.ts';
import { newId } from '../../src/kernel/ids.ts';
import { createOrganization, createWorkspace } from '../../src/tenancy/service.ts';
import { quotaContextOf } from '../../src/commercial/quotas/service.ts';
import { storageQuotaWarnings } from '../../src/commercial/quotas/warnings.ts';
import { freshDatabaseUrl } from '../helpers/postgres.ts';

const GIB = 2 ** 30;

test('postgres: a file committed by another process after a check, from a transaction begun before it, counts at the next check', async (t) => {
  const pools: PostgresDb[] = [];
  const url = await freshDatabaseUrl(t, async () => { for (const p of pools) await p.close(); });
  pools.push(await openPostgres({ url, max: 4 }), await openPostgres({ url, max: 4 }));
  await migrate(pools[0]);
  const config = loadConfig({}, {});
  const [a, b] = pools.map((db) => createContext({ db, config, log: createLogger('silent') }));
  const org = (await createOrganization(a, { name: 'Studio' })).id;
  const ws = (await createWorkspace(a, org, { name: 'Main' })).id;
  const ws2 = (await createWorkspace(a, org, { name: 'Other' })).id;
  // The organization stores at most 1,000 bytes; it is warned at 80 %.
  await a.db.run('UPDATE billing_accounts SET storage_gb = ?, quota_warning_percent = 80 WHERE organization_id = ?', 1000 / GIB, org);
  // An asset in each workspace (the counter's row of a workspace is locked by the transaction that adds to it).
  const assets = new Map<string, { project: string; asset: string }>();
  for (const w of [ws, ws2]) {
    const ids = { project: newId('prj'), asset: newId('ast') };
    await a.db.run('INSERT INTO projects (id, organization_id, workspace_id, name, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)', ids.project, org, w, 'P', 'now', 'now');
    await a.db.run("INSERT INTO assets (id, organization_id, workspace_id, project_id, kind, name, created_at, updated_at) VALUES (?, ?, ?, ?, 'image', 'I', 'now', 'now')",
      ids.asset, org, w, ids.project);
    assets.set(w, ids);
  }
  let number = 0;
  const store = async (ctx: Ctx, size: number, w = ws) => await ctx.db.run(
    `INSERT INTO asset_versions (id, asset_id, organization_id, workspace_id, project_id, number, file_name, mime_type, file_size, content_sha256, storage_path, created_at)
     VALUES (?, ?, ?, ?, ?, ?, 'f.png', 'image/png', ?, 'h', ?, 'now')`,
    newId('asv'), assets.get(w)!.asset, org, w, assets.get(w)!.project, ++number, size, `assets/${org}/${number}`);
  /** A file stored and the warnings checked in one transaction of `ctx`, as generated media are registered. */
  const register = async (ctx: Ctx, size: number) => await ctx.db.tx(async () => {
    await store(ctx, size);
    await storageQuotaWarnings(ctx, org, ws, await quotaContextOf(ctx.db, org, ws));
  });
  const warned = async () => (await a.db.all<{ threshold: number; used: number }>(
    "SELECT threshold, used FROM quota_warnings WHERE organization_id = ? AND metric = 'storage' ORDER BY threshold", org)).map((r) => ({ ...r }));

  await register(a, 100); // no bound yet: counted exactly (100), the bound of this process
  // Another process stores 600 bytes (in the other workspace) in a transaction that stays open while this one checks.
  let release!: () => void;
  const held = new Promise<void>((r) => { release = r; });
  let stored!: () => void;
  const begun = new Promise<void>((r) => { stored = r; });
  const other = b.db.tx(async () => {
    await store(b, 600, ws2);
    stored();
    await held;
  });
  await begun;
  await register(a, 50); // 150 visible: the bound (100 + 50) stays below 800, nothing counted
  release();
  await other; // the 600 bytes commit after that check
  assert.deepEqual(await warned(), []);
  await register(a, 100); // 850 stored: the bound (100 + 750 added since) reaches 80 %
  assert.deepEqual(await warned(), [{ threshold: 80, used: 850 }]);
});
