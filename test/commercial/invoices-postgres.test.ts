// Invoice generation on PostgreSQL at READ COMMITTED (src/commercial/invoices/service.ts): the
// overlap check and the insert run under the organization's invoice lock, so concurrent generations
// of overlapping periods on two pools (as two processes) create one invoice and refuse the others;
// a billing cycle change waits for a generation in progress and then sees its invoice.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { migrate } from '../../src/db/migrate.ts';
import { openPostgres, type PostgresDb } from '../../src/db/postgres.ts';
import { createContext, type Ctx } from '../../src/directory/context.ts';
import { loadConfig } from '../../src/kernel/config.ts';
import { createLogger } from '../../src/kernel/log.ts';
import { createOrganization } from '../../src/tenancy/service.ts';
import { generateInvoice } from '../../src/commercial/invoices/service.ts';
import { updateBillingAccount } from '../../src/commercial/billing/service.ts';
import { freshDatabaseUrl } from '../helpers/postgres.ts';

/** Two operator contexts on one fresh database, each with a pool of its own, and an organization. */
async function world(t: TestContext): Promise<{ ctxs: Ctx[]; organizationId: string }> {
  const pools: PostgresDb[] = [];
  const url = await freshDatabaseUrl(t, async () => { for (const p of pools) await p.close(); });
  pools.push(await openPostgres({ url, max: 4 }), await openPostgres({ url, max: 4 }));
  await migrate(pools[0]);
  const config = loadConfig({}, {});
  const ctxs = pools.map((db) => createContext({ db, config, log: createLogger('silent') }));
  return { ctxs, organizationId: (await createOrganization(ctxs[0], { name: 'Studio' })).id };
}

const code = (e: unknown) => (e as { code?: string }).code;

test('postgres: concurrent generations of overlapping periods on two pools create one invoice; the others are 409 invoice_period_overlap', async (t) => {
  const { ctxs, organizationId } = await world(t);
  const periods = Array.from({ length: 10 }, (_, i) => ({ periodStart: `2026-01-${String(i + 1).padStart(2, '0')}`, periodEnd: `2026-02-${String(i + 1).padStart(2, '0')}` }));
  const outcomes = await Promise.all(periods.map(async (p, i) => await generateInvoice(ctxs[i % 2], organizationId, p)
    .then((r) => (r.created ? 'created' : 'existing'), (e: unknown) => code(e) ?? Promise.reject(e as Error))));
  assert.deepEqual(outcomes.filter((o) => o === 'created').length, 1, outcomes.join(', '));
  assert.deepEqual(outcomes.filter((o) => o !== 'created'), Array(9).fill('invoice_period_overlap'));
  assert.equal((await ctxs[1].db.get<{ n: number }>('SELECT count(*) AS n FROM invoices WHERE organization_id = ?', organizationId))!.n, 1);
});

test('postgres: a billing cycle change waits for a generation in progress, then sees its invoice (409 billing_cycle_locked)', async (t) => {
  const { ctxs: [a, b], organizationId } = await world(t);
  let patched: string | undefined;
  let patch: Promise<string> | undefined;
  await a.db.tx(async () => {
    await generateInvoice(a, organizationId, { periodStart: '2026-01-01', periodEnd: '2026-02-01' });
    patch = updateBillingAccount(b, organizationId, { billingCycle: 'quarterly' }).then(() => 'changed', (e: unknown) => code(e) ?? String(e));
    void patch.then((o) => { patched = o; });
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(patched, undefined, 'the change waits for the generation\'s transaction');
  });
  assert.equal(await patch, 'billing_cycle_locked');
  assert.equal((await b.db.get<{ c: string }>('SELECT billing_cycle AS c FROM billing_accounts WHERE organization_id = ?', organizationId))!.c, 'monthly');
});
