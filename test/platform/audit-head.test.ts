// The audit log's chain head (audit_chain_head, src/platform/audit/store.ts) on both engines: appends
// of concurrent transactions, some rolled back, on several connections (PostgreSQL: two pools, as two
// processes) form one chain whose seq is gap-free and in commit order; migration 0015 seeds the head
// from a log appended by the statement before it (hashes over json_array) and the chain goes on;
// awkward values hash as they are stored; an append without a head fails and writes nothing.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { openDb, type Db } from '../../src/db/db.ts';
import { migrate, schemaVersionOf } from '../../src/db/migrate.ts';
import { openPostgres, type PostgresDb } from '../../src/db/postgres.ts';
import { GENESIS_HASH, HASHED_FIELDS, insertAudit, type NewAuditRow } from '../../src/platform/audit/store.ts';
import { rowHash, verifyChain } from '../../src/platform/audit/chain.ts';
import { tempDir } from '../helpers/server.ts';
import { freshDatabaseUrl } from '../helpers/postgres.ts';
import { atVersion15 } from '../helpers/schema-steps.ts';

/**
 * The database twice: `a` and `b` are two connections to it (PostgreSQL: two pools, as two processes
 * have); SQLite's are one connection (two in one thread would wait on each other's write lock).
 */
async function open(t: TestContext, engine: 'sqlite' | 'postgres'): Promise<{ a: Db; b: Db }> {
  if (engine === 'sqlite') {
    const db = openDb(path.join(tempDir(t), 'svc.db'));
    t.after(() => db.close());
    await migrate(db);
    return { a: db, b: db };
  }
  const pools: PostgresDb[] = [];
  const url = await freshDatabaseUrl(t, async () => { for (const p of pools) await p.close(); });
  pools.push(await openPostgres({ url, max: 4 }), await openPostgres({ url, max: 4 }));
  await migrate(pools[0]);
  return { a: pools[0], b: pools[1] };
}

const row = (id: string, over: Partial<NewAuditRow> = {}): NewAuditRow => ({
  id, created_at: '2026-01-02T03:04:05.678Z', actor_type: 'system', actor_user_id: null, actor_name: 'Test', organization_id: 'org_1',
  workspace_id: null, project_id: null, action: 'test.append', target_type: 'thing', target_id: id, result: 'success',
  metadata: JSON.stringify({ id }), ip: null, user_agent: null, request_id: null, ...over,
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const logOf = async (db: Db) => await db.all<{ seq: number; id: string; prev_hash: string; hash: string }>('SELECT seq, id, prev_hash, hash FROM audit_log ORDER BY seq');
const headOf = async (db: Db) => ({ ...await db.get<{ seq: number; hash: string }>('SELECT seq, hash FROM audit_chain_head WHERE id = 1') });

for (const engine of ['sqlite', 'postgres'] as const) {
  test(`${engine}: concurrent transactions, some rolled back, append one chain: seq gap-free and in commit order`, async (t) => {
    const { a, b } = await open(t, engine);
    const committed: number[] = [];
    // Each transaction appends two rows, waits (holding the head on PostgreSQL), appends a third, and
    // commits, except every fourth, which rolls back.
    const work = async (i: number) => {
      const db = i % 2 ? b : a;
      try {
        await db.tx(async () => {
          await insertAudit(db, row(`aud_${i}_0`));
          await insertAudit(db, row(`aud_${i}_1`));
          await sleep(3);
          await insertAudit(db, row(`aud_${i}_2`));
          if (i % 4 === 3) throw new Error('rolled back');
        });
        committed.push(i);
      } catch (err) {
        if ((err as Error).message !== 'rolled back') throw err;
      }
    };
    await Promise.all(Array.from({ length: 16 }, (_, i) => work(i)));
    assert.equal(committed.length, 12);
    const log = await logOf(a);
    assert.deepEqual(log.map((r) => r.seq), Array.from({ length: 36 }, (_, k) => k + 1), 'seq 1..36: the rolled-back appends left no gap');
    assert.deepEqual(log.map((r) => r.id), committed.flatMap((i) => [`aud_${i}_0`, `aud_${i}_1`, `aud_${i}_2`]),
      'each transaction\'s rows are consecutive, transactions in the order they committed');
    const report = await verifyChain(b);
    assert.deepEqual(report, { ok: true, rows: 36, headSeq: 36, headHash: log[35].hash, broken: null });
    assert.deepEqual(await headOf(a), { seq: 36, hash: log[35].hash });
  });

  test(`${engine}: values hash as stored: quotes, escapes, line separators, a lone surrogate (U+FFFD)`, async (t) => {
    const { a } = await open(t, engine);
    const odd = `N "q" \\ \n\t\u0001\u007f \u2028 🎬 ${'\ud800'} é${engine === 'sqlite' ? ' \u0000' : ''}`;
    await insertAudit(a, row('aud_odd', { actor_name: odd, metadata: JSON.stringify({ k: odd }), user_agent: '\udc00x' }));
    await insertAudit(a, row('aud_next'));
    const stored = (await a.get<{ actor_name: string; user_agent: string }>("SELECT actor_name, user_agent FROM audit_log WHERE id = 'aud_odd'"))!;
    assert.deepEqual({ ...stored }, { actor_name: odd.toWellFormed(), user_agent: '\ufffdx' });
    assert.equal((await verifyChain(a)).ok, true);
  });

  test(`${engine}: an append without the chain's head fails and writes nothing`, async (t) => {
    const { a } = await open(t, engine);
    await insertAudit(a, row('aud_1'));
    await a.run('DELETE FROM audit_chain_head');
    await assert.rejects(async () => await insertAudit(a, row('aud_2')), /no chain head/);
    assert.deepEqual((await logOf(a)).map((r) => r.id), ['aud_1']);
  });
}

/** The pre-15 append (SQLite only): chained to the last row by seq, hashed over json_array. */
const OLD_APPEND = `INSERT INTO audit_log (${HASHED_FIELDS.join(', ')}, prev_hash, hash)
SELECT ${HASHED_FIELDS.map((f) => `n.${f}`).join(', ')}, n.prev_hash, svc_sha256(json_array(${HASHED_FIELDS.map((f) => `n.${f}`).join(', ')}, n.prev_hash))
  FROM (SELECT ${HASHED_FIELDS.map((f) => `CAST(? AS TEXT) AS ${f}`).join(', ')},
               coalesce((SELECT hash FROM audit_log ORDER BY seq DESC LIMIT 1), '${GENESIS_HASH}') AS prev_hash) AS n`;

/** A current database taken back to version 14: what step 0015 adds is dropped (after the later steps). */
async function atVersion14(db: Db): Promise<void> {
  await atVersion15(db);
  if (db.engine === 'sqlite') {
    await db.exec(`DROP TRIGGER audit_log_head; DROP TABLE audit_chain_head;
      DROP TRIGGER asset_versions_added; DROP TRIGGER media_artifacts_added; DROP TABLE storage_added; PRAGMA user_version = 14`);
  } else {
    await db.exec(`DROP TRIGGER audit_log_head ON audit_log; DROP FUNCTION audit_log_head(); DROP TABLE audit_chain_head;
      DROP TRIGGER asset_versions_added ON asset_versions; DROP FUNCTION asset_versions_added();
      DROP TRIGGER media_artifacts_added ON media_artifacts; DROP FUNCTION media_artifacts_added(); DROP TABLE storage_added;
      UPDATE svc_schema_version SET version = 14`);
  }
}

test('sqlite: step 0015 seeds the head from a log of the statement before it; the chain goes on, and a truncation stays reported', async (t) => {
  const { a: db } = await open(t, 'sqlite');
  await atVersion14(db);
  for (const id of ['aud_1', 'aud_2', 'aud_3']) await db.run(OLD_APPEND, ...HASHED_FIELDS.map((f) => row(id)[f]));
  assert.deepEqual((await migrate(db)).applied, ['0015-audit-head-storage-added.sql', '0016-jobs-name-their-workflow-run.sql']);
  const before = await logOf(db);
  assert.deepEqual(await headOf(db), { seq: 3, hash: before[2].hash });
  await insertAudit(db, row('aud_4'));
  const log = await logOf(db);
  assert.deepEqual(log.map((r) => r.seq), [1, 2, 3, 4]);
  assert.equal(log[3].prev_hash, log[2].hash);
  assert.deepEqual(await verifyChain(db), { ok: true, rows: 4, headSeq: 4, headHash: log[3].hash, broken: null });

  // Rows removed at the end before the upgrade: sqlite_sequence had handed out more, and so has the head.
  const cut = await open(t, 'sqlite');
  await atVersion14(cut.a);
  for (const id of ['aud_1', 'aud_2', 'aud_3']) await cut.a.run(OLD_APPEND, ...HASHED_FIELDS.map((f) => row(id)[f]));
  await cut.a.exec("DROP TRIGGER audit_log_no_delete; DELETE FROM audit_log WHERE id = 'aud_3'");
  await migrate(cut.a);
  assert.equal((await headOf(cut.a)).seq, 3);
  const report = await verifyChain(cut.a);
  assert.deepEqual([report.ok, report.broken?.problem, report.broken?.seq, report.headSeq], [false, 'truncated', 3, 2]);
});

test('postgres: step 0015 seeds the head from the last row; the chain goes on from it', async (t) => {
  const { a: db } = await open(t, 'postgres');
  await atVersion14(db);
  let prev = GENESIS_HASH;
  for (const [seq, id] of [[1, 'aud_1'], [2, 'aud_2']] as const) {
    const r = { ...row(id), seq, prev_hash: prev, hash: null as string | null };
    r.hash = rowHash(r);
    await db.run(`INSERT INTO audit_log (seq, ${HASHED_FIELDS.join(', ')}, prev_hash, hash) VALUES (?, ${HASHED_FIELDS.map(() => '?').join(', ')}, ?, ?)`,
      seq, ...HASHED_FIELDS.map((f) => r[f]), r.prev_hash, r.hash);
    prev = r.hash;
  }
  assert.equal(await schemaVersionOf(db), 14);
  assert.deepEqual((await migrate(db)).applied, ['0015-audit-head-storage-added.sql', '0016-jobs-name-their-workflow-run.sql']);
  assert.deepEqual(await headOf(db), { seq: 2, hash: prev });
  await insertAudit(db, row('aud_3'));
  const log = await logOf(db);
  assert.deepEqual(log.map((r) => [r.seq, r.prev_hash]), [[1, GENESIS_HASH], [2, log[0].hash], [3, prev]]);
  assert.deepEqual(await verifyChain(db), { ok: true, rows: 3, headSeq: 3, headHash: log[2].hash, broken: null });
});
