// The audit log's streamed CSV/JSON export: quoting, the formula guard, audited, and a snapshot of its
// own on its own connection while writes go on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { startTestServer } from '../helpers/server.ts';
import { member } from '../helpers/factories.ts';
import { seed, type Row, listAll, ids, world } from './audit-setup.ts';

/** RFC 4180: records of CRLF-terminated lines; quoted fields may hold commas, CR, LF and doubled quotes. */
function parseCsv(text: string): string[][] {
  const out: string[][] = [];
  let row: string[] = [];
  let i = 0;
  while (i < text.length) {
    let cell = '';
    if (text[i] === '"') {
      i++;
      for (;;) {
        const q = text.indexOf('"', i);
        assert.ok(q >= 0, 'closing quote');
        cell += text.slice(i, q);
        if (text[q + 1] === '"') { cell += '"'; i = q + 2; } else { i = q + 1; break; }
      }
    } else {
      while (i < text.length && text[i] !== ',' && text[i] !== '\r') {
        assert.notEqual(text[i], '"', 'a quote only in a quoted field');
        assert.notEqual(text[i], '\n', 'a bare LF only in a quoted field');
        cell += text[i++];
      }
    }
    row.push(cell);
    if (text[i] === ',') { i++; continue; }
    assert.equal(text.slice(i, i + 2), '\r\n', 'records end with CRLF');
    i += 2;
    out.push(row);
    row = [];
  }
  return out;
}

test('CSV export: attachment, header row, RFC 4180 quoting, formula guard, the list\'s rows; audited', async (t) => {
  const s = await startTestServer(t);
  const w = await world(s);
  const A = w.A.organizationId;
  const tricky = await seed(s, {
    organizationId: A, action: '-tricky', targetType: '@target', targetId: '+1+2', actorUserId: w.ownerA.user.id,
    actorName: '=HYPERLINK("http://x","y")', metadata: { text: 'comma, "quote"\r\nnew line', formula: '=1+1', unicode: 'Zoë 🎬' },
  });
  const listed = await listAll(s, w.ownerA.token);
  const r = await fetch(`${s.url}/api/audit/export?format=csv`, { headers: { authorization: `Bearer ${w.ownerA.token}` } });
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('content-type'), 'text/csv; charset=utf-8');
  assert.match(r.headers.get('content-disposition')!, /^attachment; filename="audit-log-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ\.csv"$/);
  const text = Buffer.from(await r.arrayBuffer()).toString('utf8');
  const table = parseCsv(text);
  const header = table[0];
  assert.deepEqual(header, ['seq', 'id', 'createdAt', 'actorType', 'actorUserId', 'actorName', 'organizationId', 'workspaceId', 'projectId',
    'action', 'targetType', 'targetId', 'result', 'metadata', 'ip', 'userAgent', 'requestId', 'prevHash', 'hash']);
  const records = table.slice(1).map((cells) => Object.fromEntries(header.map((h, i) => [h, cells[i]])));
  assert.ok(records.every((x) => Object.keys(x).length === header.length));
  // Its own audit.exported record comes first (newest first), then exactly the list's rows.
  assert.equal(records[0].action, 'audit.exported');
  assert.deepEqual(records.slice(1).map((x) => x.id), ids(listed.rows));
  const row = records.find((x) => x.id === tricky)!;
  assert.equal(row.action, "'-tricky");
  assert.equal(row.targetType, "'@target");
  assert.equal(row.targetId, "'+1+2");
  assert.equal(row.actorName, `'=HYPERLINK("http://x","y")`);
  assert.deepEqual(JSON.parse(row.metadata), { text: 'comma, "quote"\r\nnew line', formula: '=1+1', unicode: 'Zoë 🎬' });
  assert.ok(text.includes(`"'=HYPERLINK(""http://x"",""y"")"`), 'quotes doubled inside a quoted cell');
  assert.equal(row.workspaceId, '', 'null is the empty cell');
  const listedRow = listed.rows.find((x) => x.id === tricky)!;
  assert.equal(row.hash, listedRow.hash);
  assert.equal(Number(row.seq), listedRow.seq);

  const exported = await s.db.all<Row>("SELECT * FROM audit_log WHERE action = 'audit.exported'");
  assert.equal(exported.length, 1);
  assert.equal(exported[0].id, records[0].id);
  assert.equal(exported[0].actor_user_id, w.ownerA.user.id);
  assert.equal(exported[0].organization_id, A);
  assert.deepEqual(JSON.parse(exported[0].metadata), { format: 'csv', filters: {}, scope: 'organization' });

  // Filters and a page: the same rows as the list's page.
  const filtered = await s.call('GET', `/api/audit/export?format=csv&result=denied&query=hay&pageSize=3&page=2`, { token: w.producer.token });
  assert.equal(filtered.status, 200);
  const page = await s.call('GET', '/api/audit?result=denied&query=hay&pageSize=3&page=2', { token: w.producer.token });
  assert.deepEqual(parseCsv(filtered.text).slice(1).map((c) => c[1]), ids(page.body.auditLog));
  const last = (await s.db.get<Row>("SELECT * FROM audit_log WHERE action = 'audit.exported' ORDER BY seq DESC LIMIT 1"))!;
  assert.deepEqual(JSON.parse(last.metadata), { format: 'csv', filters: { query: 'hay', result: 'denied' }, scope: 'workspace', page: 2, pageSize: 3 });
  assert.equal(last.actor_user_id, w.producer.user.id);
});

test('JSON export is a streamed array of the records as the list shows them; an empty export is []', async (t) => {
  const s = await startTestServer(t);
  const w = await world(s);
  // A record larger than the export's 64 KiB chunks goes out on its own.
  await seed(s, { organizationId: w.A.organizationId, workspaceId: w.A.workspaceId, action: 'shot.rendered', metadata: { big: 'é'.repeat(70_000) } });
  const listed = await listAll(s, w.producer.token, '&action=shot.rendered');
  const r = await s.call('GET', '/api/audit/export?action=shot.rendered', { token: w.producer.token });
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('content-type'), 'application/json; charset=utf-8');
  assert.match(r.headers.get('content-disposition')!, /^attachment; filename="audit-log-.*\.json"$/);
  assert.ok(Array.isArray(r.body));
  assert.deepEqual(r.body, listed.rows);
  assert.equal(r.body[0].metadata.big.length, 70_000);
  const csv = parseCsv((await s.call('GET', '/api/audit/export?format=csv&action=shot.rendered', { token: w.producer.token })).text);
  assert.deepEqual(csv.slice(1).map((c) => c[1]), ids(listed.rows));
  const none = await s.call('GET', '/api/audit/export?format=json&action=nothing.at.all', { token: w.producer.token });
  assert.deepEqual(none.body, []);
  assert.equal((await s.call('GET', '/api/audit/export?format=xml', { token: w.producer.token })).status, 422);
});

test('an export reads its own snapshot on its own connection: writes go on meanwhile; a client that goes away releases it', async (t) => {
  const s = await startTestServer(t);
  const owner = await member(s, 'org_owner');
  const org = owner.tree.organizationId;
  // About 5 MB, far more than the socket buffers hold, in rows few enough to seed quickly on PostgreSQL
  // (one round trip each).
  const ROWS = 4_000;
  await s.db.tx(async () => {
    for (let i = 0; i < ROWS; i++) await seed(s, { organizationId: org, action: 'bulk.row', targetId: `t_${i}`, metadata: { i, pad: 'x'.repeat(1_200) } });
  });
  /**
   * Whether a reader holds a snapshot of the database: on SQLite a checkpoint of the whole WAL is
   * busy (a read transaction pins it); on PostgreSQL another connection than the one asking keeps a
   * snapshot (its xmin), as only the export's open transaction does while nothing else runs.
   */
  const snapshotHeld = async (): Promise<boolean> => {
    if (s.db.engine === 'postgres') {
      return (await s.db.get<{ n: number }>(`SELECT count(*) AS n FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_xmin IS NOT NULL`))!.n > 0;
    }
    const db = new DatabaseSync(path.join(s.config.dataDir, 'svc.db'));
    try {
      return (db.prepare('PRAGMA wal_checkpoint(TRUNCATE)').get() as { busy: number }).busy === 1;
    } finally {
      db.close();
    }
  };
  const waitFor = async (what: string, ok: () => Promise<boolean>) => {
    for (let i = 0; i < 100 && !await ok(); i++) await new Promise((r) => setTimeout(r, 50));
    assert.ok(await ok(), what);
  };
  const released = async () => !await snapshotHeld();
  /** A slow client: the export started and one chunk read, then nothing; the server's stream waits. */
  const startSlow = async () => {
    const res = await fetch(`${s.url}/api/audit/export?format=csv&action=bulk.row`, { headers: { authorization: `Bearer ${owner.token}` } });
    assert.equal(res.status, 200);
    const reader = res.body!.getReader();
    const first = await reader.read();
    assert.ok(first.value && first.value.length > 0);
    await waitFor('the paused export holds a read snapshot', snapshotHeld);
    return { reader, first: first.value };
  };

  // Writes go on while an export is paused; the export shows the log as it was when it started.
  const slow = await startSlow();
  const ws = await s.call('POST', `/api/organizations/${org}/workspaces`, { token: owner.token, body: { name: 'During the export' } });
  assert.equal(ws.status, 201, ws.text);
  const late = await seed(s, { organizationId: org, action: 'bulk.row', targetId: 'late' });
  const chunks: Uint8Array[] = [slow.first];
  for (let c = await slow.reader.read(); !c.done; c = await slow.reader.read()) chunks.push(c.value);
  const table = parseCsv(Buffer.concat(chunks).toString('utf8'));
  assert.equal(table.length, ROWS + 1);
  assert.ok(!table.some((cells) => cells[1] === late));
  await waitFor('a finished export closes its connection', released);

  // A client that goes away mid-export (node:http, so that the socket really closes at once): the
  // server closes the export's connection.
  const gone = http.get(`${s.url}/api/audit/export?format=csv&action=bulk.row`, { headers: { authorization: `Bearer ${owner.token}` }, agent: false });
  const res = await new Promise<http.IncomingMessage>((resolve) => gone.once('response', resolve));
  assert.equal(res.statusCode, 200);
  await new Promise((resolve) => res.once('data', resolve));
  res.pause();
  await waitFor('the paused export holds a read snapshot', snapshotHeld);
  gone.destroy();
  await waitFor('the export\'s connection is closed once the client is gone', released);
});
