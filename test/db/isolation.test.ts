// The isolation rule of the asynchronous data layer over real HTTP: while one request's transaction is
// open and waiting, another request's read does not see its uncommitted rows and its write does not
// join it (src/db/db.ts; docs/architecture.md, "The data layer").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../helpers/server.ts';
import { member } from '../helpers/factories.ts';
import { createProject } from '../../src/production/projects/service.ts';
import { withScope } from '../../src/directory/context.ts';

test('a request\'s open transaction: another request\'s read never sees its rows (on SQLite it waits), its write does not join it', async (t) => {
  const s = await startTestServer(t);
  const { token, tree } = await member(s, 'producer');
  const names = async () => {
    const r = await s.call('GET', `/api/workspaces/${tree.workspaceId}/projects?pageSize=100`, { token });
    assert.equal(r.status, 200, r.text);
    return (r.body.items as Array<{ name: string }>).map((p) => p.name).sort();
  };
  const before = await names();

  // Request A, through the same service functions the API runs: creates a project in a transaction,
  // then waits (as a request waits for anything) before failing, so the transaction rolls back.
  let release!: () => void;
  const paused = new Promise<void>((resolve) => { release = resolve; });
  let opened!: () => void;
  const isOpen = new Promise<void>((resolve) => { opened = resolve; });
  const ctx = withScope(s.operator(), tree);
  const a = s.db.tx(async () => {
    await createProject(ctx, tree.workspaceId, { name: 'uncommitted' });
    opened();
    await paused;
    const seen = (await s.db.all<{ name: string }>('SELECT name FROM projects WHERE workspace_id = ?', tree.workspaceId)).map((r) => r.name);
    assert.ok(seen.includes('uncommitted'), 'its own statements see its rows');
    assert.ok(!seen.includes('written meanwhile'), 'the other request\'s write is not in this transaction');
    throw new Error('request A fails');
  });
  await isOpen;

  // Requests B (a read) and C (a write) over HTTP while A is open.
  let readDone = false;
  let writeDone = false;
  const read = names().then((r) => { readDone = true; return r; });
  const write = s.call('POST', `/api/workspaces/${tree.workspaceId}/projects`, { token, body: { name: 'written meanwhile' } })
    .then((r) => { writeDone = true; return r; });
  if (s.db.engine === 'postgres') {
    // PostgreSQL reads a committed snapshot without waiting (MVCC); the write waits for A's lock on
    // the audit chain's head row.
    assert.deepEqual(await read, before, 'the read answers at once, without the uncommitted project');
  }
  await new Promise((resolve) => setTimeout(resolve, 300));
  if (s.db.engine === 'sqlite') assert.equal(readDone, false, 'the read waits while the transaction is open');
  assert.equal(writeDone, false, 'the write waits while the transaction is open');

  release();
  await assert.rejects(a, /request A fails/);
  assert.deepEqual(await read, before, 'the read never saw the uncommitted project');
  const w = await write;
  assert.equal(w.status, 201, w.text);
  assert.deepEqual(await names(), [...before, 'written meanwhile'].sort(), 'the write was not rolled back with A: it never joined it');
});
