// The audit log over real HTTP: what each role kind sees of a log seeded over several organizations,
// filters that cross the caller's scope, facets, inclusive dates, the detail's related and
// account-security events, the streamed CSV/JSON export (quoting, formula guard, audited), and the
// hash chain checked by `svc audit verify` as a child process after edits through a second
// SQLite connection.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import http from 'node:http';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DatabaseSync } from 'node:sqlite';
import { createContext, operatorActor } from '../../src/directory/context.ts';
import { record, type AuditEntry } from '../../src/platform/audit/service.ts';
import { csvCell } from '../../src/platform/audit/present.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { grant, login, makeProject, makeTree, makeUser, makeWorkspace, member, type Tree } from '../helpers/factories.ts';

const BIN_SVC = fileURLToPath(new URL('../../bin/svc', import.meta.url));

interface Seed extends AuditEntry { at?: string }

/** One audit row written through the service's append path (the operator's context, or the given actor). */
const OPERATOR = operatorActor();
function seed(s: TestServer, e: Seed): string {
  const ctx = createContext({ db: s.db, config: s.config, log: s.log, actor: OPERATOR, now: () => new Date(e.at ?? Date.now()) });
  return record(ctx, { organizationId: null, workspaceId: null, projectId: null, ...e });
}

type Row = Record<string, any>;
const allRows = (s: TestServer): Row[] => s.db.all<Row>('SELECT * FROM audit_log ORDER BY seq DESC');

/** Every page of GET /api/audit with `qs`, and the first page's body. */
async function listAll(s: TestServer, token: string, qs = ''): Promise<{ rows: Row[]; first: Row }> {
  const rows: Row[] = [];
  let first: Row | undefined;
  for (let page = 1; ; page++) {
    const r = await s.call('GET', `/api/audit?pageSize=200&page=${page}${qs}`, { token });
    assert.equal(r.status, 200, r.text);
    first ??= r.body;
    rows.push(...r.body.auditLog);
    if (rows.length >= r.body.pagination.total || r.body.auditLog.length === 0) break;
  }
  assert.equal(rows.length, first!.pagination.total);
  return { rows, first: first! };
}

const ids = (rows: Row[]) => rows.map((r) => r.id);

interface World {
  A: Tree & { ws2: string; p2: string; p1b: string };
  B: Tree;
  admin: { id: string; token: string };
  ownerA: Awaited<ReturnType<typeof member>>;
  adminA: Awaited<ReturnType<typeof member>>;
  producer: Awaited<ReturnType<typeof member>>;
  writer: Awaited<ReturnType<typeof member>>;
  orgMember: Awaited<ReturnType<typeof member>>;
  ownerB: Awaited<ReturnType<typeof member>>;
}

/**
 * Two organizations (A with workspaces A1 and A2, B), one user of every role kind, and records at
 * every level: system (no organization), organization, workspace and project, in both organizations.
 */
async function world(s: TestServer): Promise<World> {
  const base = makeTree(s);
  const ws2 = makeWorkspace(s, base.organizationId).id;
  const A = { ...base, ws2, p2: makeProject(s, ws2).id, p1b: makeProject(s, base.workspaceId).id };
  const B = makeTree(s);
  const adminUser = await makeUser(s, { systemAdmin: true });
  const w: World = {
    A, B, admin: { id: adminUser.id, token: await login(s, adminUser) },
    ownerA: await member(s, 'org_owner', A), adminA: await member(s, 'org_admin', A), producer: await member(s, 'producer', A),
    writer: await member(s, 'writer', A), orgMember: await member(s, 'org_member', A), ownerB: await member(s, 'org_owner', B),
  };
  const scopes = [
    { organizationId: null, workspaceId: null, projectId: null },
    { organizationId: A.organizationId, workspaceId: null, projectId: null },
    { organizationId: A.organizationId, workspaceId: A.workspaceId, projectId: null },
    { organizationId: A.organizationId, workspaceId: A.workspaceId, projectId: A.projectId },
    { organizationId: A.organizationId, workspaceId: A.workspaceId, projectId: A.p1b },
    { organizationId: A.organizationId, workspaceId: ws2, projectId: null },
    { organizationId: A.organizationId, workspaceId: ws2, projectId: A.p2 },
    { organizationId: B.organizationId, workspaceId: null, projectId: null },
    { organizationId: B.organizationId, workspaceId: B.workspaceId, projectId: B.projectId },
  ];
  const actions = ['shot.rendered', 'script.edited', 'asset.verified', 'billing.account.updated'];
  const targets = ['shot', 'script', 'asset', 'billing_account'];
  const results = ['success', 'success', 'failure', 'denied'] as const;
  const actors = [w.ownerA.user, w.producer.user, w.ownerB.user];
  for (let i = 0; i < 90; i++) {
    const actor = actors[i % 3];
    seed(s, {
      ...scopes[i % scopes.length], action: actions[i % 4], targetType: targets[(i >> 1) % 4], targetId: `t_${i % 7}`,
      result: results[i % 4], actorUserId: actor.id, actorName: actor.name, metadata: { i, note: i % 5 === 0 ? 'needle 100%' : 'hay' },
    });
  }
  return w;
}

test('each role kind sees exactly its audit scope over a log of several organizations', async (t) => {
  const s = await startTestServer(t);
  const w = await world(s);
  const all = allRows(s);
  const A = w.A.organizationId;
  const cases = [
    { who: 'system administrator', token: w.admin.token, visible: (_r: Row) => true,
      scope: { kind: 'system', organizationId: null, workspaceId: null, projectId: null, includesOrganizationEvents: false } },
    { who: 'org_owner', token: w.ownerA.token, visible: (r: Row) => r.organization_id === A,
      scope: { kind: 'organization', organizationId: A, workspaceId: null, projectId: null, includesOrganizationEvents: false } },
    { who: 'org_admin', token: w.adminA.token, visible: (r: Row) => r.organization_id === A,
      scope: { kind: 'organization', organizationId: A, workspaceId: null, projectId: null, includesOrganizationEvents: false } },
    { who: 'producer', token: w.producer.token,
      visible: (r: Row) => r.organization_id === A && (r.workspace_id === w.A.workspaceId || r.workspace_id === null),
      scope: { kind: 'workspace', organizationId: A, workspaceId: w.A.workspaceId, projectId: null, includesOrganizationEvents: true } },
    { who: 'org_owner of B', token: w.ownerB.token, visible: (r: Row) => r.organization_id === w.B.organizationId,
      scope: { kind: 'organization', organizationId: w.B.organizationId, workspaceId: null, projectId: null, includesOrganizationEvents: false } },
  ];
  for (const c of cases) {
    const { rows, first } = await listAll(s, c.token);
    const expected = all.filter(c.visible);
    assert.ok(expected.length > 10, c.who);
    assert.deepEqual(ids(rows), ids(expected), `${c.who}: exactly its scope, newest first`);
    assert.deepEqual(first.scope, c.scope, c.who);
  }
  // The producer's view holds organization-level records and its own workspace's, nothing of A2 or B.
  const producerRows = (await listAll(s, w.producer.token)).rows;
  assert.ok(producerRows.some((r) => r.workspaceId === null));
  assert.ok(!producerRows.some((r) => r.workspaceId === w.A.ws2 || r.organizationId !== A));

  for (const [who, token] of [['writer', w.writer.token], ['org_member', w.orgMember.token]] as const) {
    for (const p of ['/api/audit', '/api/audit/export?format=csv', `/api/audit/${all[0].id}`]) {
      const r = await s.call('GET', p, { token });
      assert.equal(r.status, 403, `${who} ${p}`);
      assert.equal(r.body.error.code, 'permission_denied', `${who} ${p}`);
    }
  }
  for (const p of ['/api/audit', '/api/audit/export', `/api/audit/${all[0].id}`]) {
    const r = await s.call('GET', p);
    assert.equal(r.status, 401, p);
    assert.equal(r.body.error.code, 'unauthenticated');
  }
});

test('a filter crossing the caller\'s organization, workspace or project is 403 scope_forbidden (and audited); narrowing inside is fine', async (t) => {
  const s = await startTestServer(t);
  const w = await world(s);
  const { A, B } = w;
  const refused: Array<[string, string, string]> = [
    ['producer', w.producer.token, `organizationId=${B.organizationId}`],
    ['producer', w.producer.token, `workspaceId=${A.ws2}`],
    ['producer', w.producer.token, `projectId=${A.p2}`],
    ['producer', w.producer.token, `projectId=${B.projectId}`],
    ['producer', w.producer.token, 'workspaceId=wsp_unknown'],
    ['org_owner', w.ownerA.token, `organizationId=${B.organizationId}`],
    ['org_owner', w.ownerA.token, `workspaceId=${B.workspaceId}`],
    ['org_owner', w.ownerA.token, `projectId=${B.projectId}`],
    ['org_owner', w.ownerA.token, 'projectId=prj_unknown'],
    ['org_admin', w.adminA.token, `organizationId=${B.organizationId}&action=shot.rendered`],
  ];
  for (const [who, token, qs] of refused) {
    for (const p of [`/api/audit?${qs}`, `/api/audit/export?format=csv&${qs}`]) {
      const r = await s.call('GET', p, { token });
      assert.equal(r.status, 403, `${who} ${p}: ${r.text}`);
      assert.equal(r.body.error.code, 'scope_forbidden', `${who} ${p}`);
    }
  }
  const denied = s.db.all<Row>("SELECT * FROM audit_log WHERE action = 'access.denied' AND target_type = 'audit_log'");
  assert.equal(denied.length, refused.length * 2);
  assert.equal(s.db.get<Row>("SELECT count(*) AS n FROM audit_log WHERE action = 'audit.exported'")!.n, 0, 'a refused export exports nothing');

  const all = allRows(s);
  const allowed: Array<[string, string, string, (r: Row) => boolean]> = [
    ['producer', w.producer.token, `organizationId=${A.organizationId}`,
      (r) => r.organization_id === A.organizationId && (r.workspace_id === A.workspaceId || r.workspace_id === null)],
    ['producer', w.producer.token, `workspaceId=${A.workspaceId}`, (r) => r.workspace_id === A.workspaceId],
    ['producer', w.producer.token, `projectId=${A.p1b}`, (r) => r.project_id === A.p1b],
    ['org_owner', w.ownerA.token, `workspaceId=${A.ws2}`, (r) => r.workspace_id === A.ws2],
    ['org_owner', w.ownerA.token, `projectId=${A.p2}&result=failure`, (r) => r.project_id === A.p2 && r.result === 'failure'],
    ['system administrator', w.admin.token, `organizationId=${B.organizationId}`, (r) => r.organization_id === B.organizationId],
    ['system administrator', w.admin.token, `projectId=${A.projectId}`, (r) => r.project_id === A.projectId],
  ];
  for (const [who, token, qs, pick] of allowed) {
    const { rows } = await listAll(s, token, `&${qs}`);
    const expected = all.filter(pick);
    assert.ok(expected.length > 0, `${who} ${qs}`);
    assert.deepEqual(ids(rows), ids(expected), `${who} ${qs}`);
  }
});

test('facets count exactly the filtered records; filters, substring query and paging', async (t) => {
  const s = await startTestServer(t);
  const w = await world(s);
  const A = w.A.organizationId;
  const all = allRows(s);
  const cases: Array<[string, string, (r: Row) => boolean]> = [
    ['owner, no filter', '', (r) => r.organization_id === A],
    ['owner, failures', '&result=failure', (r) => r.organization_id === A && r.result === 'failure'],
    ['owner, query', '&query=NEEDLE%20100%25', (r) => r.organization_id === A && r.metadata.includes('needle 100%')],
    ['owner, actor and target', `&actorUserId=${w.producer.user.id}&targetType=shot`,
      (r) => r.organization_id === A && r.actor_user_id === w.producer.user.id && r.target_type === 'shot'],
    ['owner, action and target id', '&action=asset.verified&targetId=t_3', (r) => r.organization_id === A && r.action === 'asset.verified' && r.target_id === 't_3'],
  ];
  for (const [name, qs, pick] of cases) {
    const { rows, first } = await listAll(s, w.ownerA.token, qs);
    const expected = all.filter(pick);
    assert.ok(expected.length > 0, name);
    assert.deepEqual(ids(rows), ids(expected), name);
    const count = (key: (r: Row) => string | null, of = rows) => {
      const m = new Map<string | null, number>();
      for (const r of of) m.set(key(r), (m.get(key(r)) ?? 0) + 1);
      return m;
    };
    const asMap = (facet: Array<{ value: string | null; count: number }>) => new Map(facet.map((f) => [f.value, f.count]));
    assert.deepEqual(asMap(first.facets.action), count((r) => r.action), `${name}: action facet`);
    assert.deepEqual(asMap(first.facets.targetType), count((r) => r.targetType), `${name}: targetType facet`);
    assert.deepEqual(asMap(first.facets.result), count((r) => r.result), `${name}: result facet`);
    const userActors = first.facets.actor.filter((f: Row) => f.value !== null);
    assert.deepEqual(asMap(userActors), count((r) => r.actorUserId, rows.filter((r) => r.actorUserId !== null)), `${name}: actor facet (users)`);
    for (const facet of Object.values(first.facets) as Array<Array<{ count: number }>>) {
      assert.equal(facet.reduce((n, f) => n + f.count, 0), first.pagination.total, `${name}: a facet adds up to the total`);
    }
    const producerFacet = first.facets.actor.find((f: Row) => f.value === w.producer.user.id);
    if (producerFacet) assert.deepEqual({ type: producerFacet.type, name: producerFacet.name }, { type: 'user', name: w.producer.user.name });
  }
  // The LIKE wildcards of the query are literal: '100%' does not match '100' followed by anything else.
  seed(s, { organizationId: A, action: 'wild.card', metadata: { note: 'needle 1000' } });
  const literal = await s.call('GET', '/api/audit?action=wild.card&query=needle%20100%25', { token: w.ownerA.token });
  assert.equal(literal.body.pagination.total, 0);

  // Paging: default 50, clamped to 1..200, newest first, presented in camelCase with parsed metadata.
  const first = await s.call('GET', '/api/audit', { token: w.admin.token });
  assert.deepEqual(first.body.pagination, { page: 1, pageSize: 50, total: allRows(s).length });
  assert.equal(first.body.auditLog.length, 50);
  assert.ok(first.body.auditLog[0].seq > first.body.auditLog[49].seq);
  assert.equal((await s.call('GET', '/api/audit?pageSize=999', { token: w.admin.token })).body.pagination.pageSize, 200);
  assert.equal((await s.call('GET', '/api/audit?pageSize=0', { token: w.admin.token })).body.pagination.pageSize, 1);
  const second = await s.call('GET', '/api/audit?pageSize=10&page=2', { token: w.admin.token });
  assert.deepEqual(ids(second.body.auditLog), ids(first.body.auditLog.slice(10, 20)));
  const rec = first.body.auditLog.find((r: Row) => r.action === 'wild.card');
  assert.deepEqual(rec.metadata, { note: 'needle 1000' });
  assert.deepEqual(Object.keys(rec).sort(), [
    'action', 'actorName', 'actorType', 'actorUserId', 'createdAt', 'hash', 'id', 'ip', 'metadata', 'organizationId', 'prevHash',
    'projectId', 'requestId', 'result', 'seq', 'targetId', 'targetType', 'userAgent', 'workspaceId',
  ]);
  const bad = await s.call('GET', '/api/audit?result=maybe&from=2024-02-30', { token: w.admin.token });
  assert.equal(bad.status, 422);
  assert.deepEqual(Object.keys(bad.body.error.details.fields).sort(), ['from', 'result']);
});

test('from and to are inclusive UTC days', async (t) => {
  const s = await startTestServer(t);
  const owner = await member(s, 'org_owner');
  const org = owner.tree.organizationId;
  const at = ['2024-03-09T23:59:59.999Z', '2024-03-10T00:00:00.000Z', '2024-03-10T12:00:00.000Z', '2024-03-10T23:59:59.999Z', '2024-03-11T00:00:00.000Z'];
  const seeded = at.map((when) => seed(s, { organizationId: org, action: 'test.dated', targetId: when, at: when }));
  const got = async (qs: string) => {
    const r = await s.call('GET', `/api/audit?action=test.dated${qs}`, { token: owner.token });
    assert.equal(r.status, 200, r.text);
    return r.body.auditLog.map((x: Row) => x.targetId).reverse();
  };
  assert.deepEqual(await got('&from=2024-03-10&to=2024-03-10'), at.slice(1, 4));
  assert.deepEqual(await got('&from=2024-03-10'), at.slice(1));
  assert.deepEqual(await got('&to=2024-03-10'), at.slice(0, 4));
  assert.deepEqual(await got('&from=2024-03-09&to=2024-03-11'), at);
  assert.deepEqual(await got('&from=2024-03-12'), []);
  assert.equal(seeded.length, 5);
  const reversed = await s.call('GET', '/api/audit?from=2024-03-11&to=2024-03-10', { token: owner.token });
  assert.equal(reversed.status, 422);
  assert.equal(reversed.body.error.details.fields.to, 'must not be before from');
  for (const bad of ['10-03-2024', '2024-3-10', '2024-03-32']) {
    const r = await s.call('GET', `/api/audit?from=${bad}`, { token: owner.token });
    assert.equal(r.status, 422, bad);
  }
});

test('detail: related records of the same target and the user\'s account-security events, in scope; 404 outside it', async (t) => {
  const s = await startTestServer(t);
  const w = await world(s);
  const { A, B } = w;
  const u = w.producer.user;
  const inA1 = { organizationId: A.organizationId, workspaceId: A.workspaceId, projectId: A.projectId };
  const main = seed(s, { ...inA1, action: 'shot.approved', targetType: 'shot', targetId: 'shot_rel', actorUserId: u.id, actorName: u.name });
  const sameTarget = [
    seed(s, { ...inA1, action: 'shot.rendered', targetType: 'shot', targetId: 'shot_rel' }),
    seed(s, { organizationId: A.organizationId, workspaceId: A.workspaceId, action: 'shot.moved', targetType: 'shot', targetId: 'shot_rel' }),
    seed(s, { organizationId: A.organizationId, workspaceId: A.ws2, projectId: A.p2, action: 'shot.rendered', targetType: 'shot', targetId: 'shot_rel' }),
    seed(s, { organizationId: B.organizationId, action: 'shot.rendered', targetType: 'shot', targetId: 'shot_rel' }),
  ];
  seed(s, { ...inA1, action: 'shot.rendered', targetType: 'asset', targetId: 'shot_rel' }); // another target type: not related
  const security = [
    seed(s, { action: 'auth.login', targetType: 'session', targetId: 'ses_x', actorUserId: u.id, actorName: u.name }),
    seed(s, { ...inA1, action: 'auth.logout', targetType: 'session', targetId: 'ses_x', actorUserId: u.id, actorName: u.name }),
    seed(s, { organizationId: A.organizationId, action: 'user.password_reset', targetType: 'user', targetId: u.id }),
    seed(s, { organizationId: B.organizationId, action: 'auth.password.changed', targetType: 'user', targetId: u.id, actorUserId: u.id }),
    seed(s, { ...inA1, action: 'script.edited', targetType: 'script', targetId: 's1', actorUserId: u.id }), // not a security event
  ];
  const db = (sql: string, ...p: string[]) => s.db.all<Row>(sql, ...p);
  const rowsById = new Map(db('SELECT * FROM audit_log').map((r) => [r.id, r]));
  const expectRelated = (visible: (r: Row) => boolean) => [...sameTarget].reverse().filter((id) => visible(rowsById.get(id)!));
  const securityAll = db(`SELECT * FROM audit_log WHERE (actor_user_id = ? OR (target_type = 'user' AND target_id = ?))
    AND (action LIKE 'auth.%' OR action LIKE 'user.%') ORDER BY seq DESC`, u.id, u.id);
  assert.ok(security.slice(0, 4).every((id) => securityAll.some((r) => r.id === id)));
  const views: Array<[string, string, (r: Row) => boolean]> = [
    ['system administrator', w.admin.token, () => true],
    ['org_owner', w.ownerA.token, (r) => r.organization_id === A.organizationId],
    ['producer', w.producer.token, (r) => r.organization_id === A.organizationId && (r.workspace_id === A.workspaceId || r.workspace_id === null)],
  ];
  for (const [who, token, visible] of views) {
    const r = await s.call('GET', `/api/audit/${main}`, { token });
    assert.equal(r.status, 200, `${who}: ${r.text}`);
    assert.equal(r.body.id, main);
    assert.equal(r.body.action, 'shot.approved');
    assert.deepEqual(ids(r.body.related), expectRelated(visible), `${who}: related`);
    assert.deepEqual(ids(r.body.securityEvents), ids(securityAll.filter(visible)), `${who}: security events`);
  }
  // The producer sees the org-level password reset and the workspace's logout, not the login (no
  // organization) nor organization B's record.
  const producerView = (await s.call('GET', `/api/audit/${main}`, { token: w.producer.token })).body;
  assert.ok(ids(producerView.securityEvents).includes(security[1]) && ids(producerView.securityEvents).includes(security[2]));
  assert.ok(!ids(producerView.securityEvents).includes(security[0]) && !ids(producerView.securityEvents).includes(security[3]));
  // A failed login of a known e-mail has no actor: its account is the target user.
  const failed = seed(s, { action: 'auth.login', targetType: 'user', targetId: u.id, result: 'failure', actorUserId: null, actorName: 'anonymous' });
  const failedView = await s.call('GET', `/api/audit/${failed}`, { token: w.admin.token });
  assert.ok(ids(failedView.body.securityEvents).includes(security[0]));

  const outside: Array<[string, string, string]> = [
    ['org_owner of B', w.ownerB.token, main],
    ['producer, other workspace', w.producer.token, sameTarget[2]],
    ['producer, no organization', w.producer.token, security[0]],
    ['org_owner, other organization', w.ownerA.token, sameTarget[3]],
    ['org_owner, unknown id', w.ownerA.token, 'aud_unknown'],
  ];
  for (const [who, token, id] of outside) {
    const r = await s.call('GET', `/api/audit/${id}`, { token });
    assert.equal(r.status, 404, `${who}: ${r.text}`);
    assert.equal(r.body.error.code, 'not_found');
  }
});

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
  const tricky = seed(s, {
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
  assert.deepEqual(['x', 'a,b', 'a"b', '=x', '+x', '-x', '@x', '\tx', '', null].map(csvCell),
    ['x', '"a,b"', '"a""b"', "'=x", "'+x", "'-x", "'@x", "'\tx", '', '']);

  const exported = s.db.all<Row>("SELECT * FROM audit_log WHERE action = 'audit.exported'");
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
  const last = s.db.get<Row>("SELECT * FROM audit_log WHERE action = 'audit.exported' ORDER BY seq DESC LIMIT 1")!;
  assert.deepEqual(JSON.parse(last.metadata), { format: 'csv', filters: { query: 'hay', result: 'denied' }, scope: 'workspace', page: 2, pageSize: 3 });
  assert.equal(last.actor_user_id, w.producer.user.id);
});

test('JSON export is a streamed array of the records as the list shows them; an empty export is []', async (t) => {
  const s = await startTestServer(t);
  const w = await world(s);
  // A record larger than the export's 64 KiB chunks goes out on its own.
  seed(s, { organizationId: w.A.organizationId, workspaceId: w.A.workspaceId, action: 'shot.rendered', metadata: { big: 'é'.repeat(70_000) } });
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

/** The environment of a CLI child: the caller's minus SVC_* settings and the test runner's context. */
function childEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('SVC_') && k !== 'NODE_TEST_CONTEXT') env[k] = v;
  return { ...env, SVC_SCRYPT_LOG_N: '10' };
}

function svc(s: TestServer, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [BIN_SVC, ...args, '--data-dir', s.config.dataDir, '--storage-dir', s.config.storageDir], {
    env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => { stdout += c; });
  child.stderr.setEncoding('utf8').on('data', (c: string) => { stderr += c; });
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => { clearTimeout(timer); resolve({ code, stdout, stderr }); });
  });
}

/** A second connection to the server's database, as the sqlite3 shell would open it. */
function tamper(s: TestServer, t: TestContext, ...sql: string[]): void {
  const db = new DatabaseSync(path.join(s.config.dataDir, 'svc.db'));
  t.after(() => { if (db.isOpen) db.close(); });
  for (const q of sql) db.exec(q);
  db.close();
}

test('hash chain: svc audit verify passes, then names the row edited, re-hashed or removed through another connection', async (t) => {
  const s = await startTestServer(t);
  const w = await world(s);
  // Awkward content the canonical text must survive, and appends from another process in between.
  seed(s, { organizationId: w.A.organizationId, action: 'odd.text', actorName: 'N\u0000ul\nl 🎬 "q" \\ \u2028', metadata: { k: '\u0001\u007f' } });
  const cli = await svc(s, ['orgs', 'create', '--name', 'From the CLI', '--owner', w.ownerA.user.email, '--json']);
  assert.equal(cli.code, 0, cli.stderr);
  await login(s, w.ownerA.user);

  const ok = await svc(s, ['audit', 'verify', '--json']);
  assert.equal(ok.code, 0, ok.stderr);
  const report = JSON.parse(ok.stdout);
  const rows = s.db.all<Row>('SELECT seq, id, prev_hash, hash FROM audit_log ORDER BY seq');
  assert.deepEqual(report, { ok: true, rows: rows.length, headSeq: rows.at(-1)!.seq, headHash: rows.at(-1)!.hash, broken: null });
  assert.equal(rows[0].prev_hash, '0'.repeat(64), 'the first row chains to the genesis value');
  for (let i = 1; i < rows.length; i++) assert.equal(rows[i].prev_hash, rows[i - 1].hash, `seq ${rows[i].seq} links to the row before`);
  const text = await svc(s, ['audit', 'verify']);
  assert.equal(text.code, 0);
  assert.match(text.stdout, new RegExp(`^audit log intact: ${rows.length} rows; head seq ${rows.at(-1)!.seq} hash [0-9a-f]{64}\\n$`));

  // The database refuses edits while its triggers are there.
  assert.throws(() => s.db.run("UPDATE audit_log SET action = 'x' WHERE seq = 1"), /append-only/);

  // Edited content: that row's own hash no longer matches.
  const victim = rows[Math.floor(rows.length / 2)];
  tamper(s, t, 'DROP TRIGGER audit_log_no_update', `UPDATE audit_log SET metadata = '{"tampered":true}' WHERE seq = ${victim.seq}`);
  const edited = await svc(s, ['audit', 'verify', '--json']);
  assert.equal(edited.code, 1, edited.stderr);
  // With --json the error is one JSON document on stderr (the report stays on stdout).
  const editedError = JSON.parse(edited.stderr).error;
  assert.equal(editedError.code, 'audit_chain_broken');
  assert.equal(editedError.message, `audit chain broken at seq ${victim.seq} (id ${victim.id}): its content does not match its hash (the row or its hash was changed)`);
  assert.deepEqual(JSON.parse(edited.stdout).broken, { seq: victim.seq, id: victim.id, problem: 'hash', message: editedError.message });
  assert.deepEqual(editedError.details.broken, JSON.parse(edited.stdout).broken);
  const plain = await svc(s, ['audit', 'verify']);
  assert.equal(plain.code, 1);
  assert.equal(plain.stdout, '');
  assert.match(plain.stderr, new RegExp(`seq ${victim.seq} \\(id ${victim.id}\\)`));
  assert.equal(plain.stderr, `svc: ${editedError.message}\n`);

  // The editor recomputes that row's hash: now the next row's link names the break.
  const db = new DatabaseSync(path.join(s.config.dataDir, 'svc.db'));
  const canon = db.prepare(`SELECT json_array(id, created_at, actor_type, actor_user_id, actor_name, organization_id, workspace_id, project_id,
    action, target_type, target_id, result, metadata, ip, user_agent, request_id, prev_hash) AS c FROM audit_log WHERE seq = ?`).get(victim.seq) as { c: string };
  db.prepare('UPDATE audit_log SET hash = ? WHERE seq = ?').run(createHash('sha256').update(canon.c).digest('hex'), victim.seq);
  db.close();
  const next = rows[rows.indexOf(victim) + 1];
  const relinked = await svc(s, ['audit', 'verify', '--json']);
  assert.equal(relinked.code, 1);
  assert.equal(JSON.parse(relinked.stdout).broken.problem, 'link');
  assert.match(JSON.parse(relinked.stderr).error.message, new RegExp(`^audit chain broken at seq ${next.seq} \\(id ${next.id}\\): its prev_hash is not the hash of the row before it`));
});

test('hash chain: removing the last rows or a row in the middle is reported', async (t) => {
  const s = await startTestServer(t);
  await member(s, 'org_owner');
  for (let i = 0; i < 5; i++) seed(s, { action: 'test.row', metadata: { i } });
  const rows = s.db.all<Row>('SELECT seq, id FROM audit_log ORDER BY seq');
  const last = rows.at(-1)!;
  tamper(s, t, 'DROP TRIGGER audit_log_no_delete', `DELETE FROM audit_log WHERE seq = ${last.seq}`);
  const truncated = await svc(s, ['audit', 'verify', '--json']);
  assert.equal(truncated.code, 1);
  assert.deepEqual(JSON.parse(truncated.stdout).broken, {
    seq: last.seq, id: null, problem: 'truncated',
    message: `audit chain broken after seq ${last.seq - 1}: rows up to seq ${last.seq} were written and are missing (the end of the log was removed)`,
  });
  const middle = rows[2];
  tamper(s, t, `DELETE FROM audit_log WHERE seq = ${middle.seq}`);
  const gap = await svc(s, ['audit', 'verify', '--json']);
  assert.equal(gap.code, 1);
  assert.deepEqual(JSON.parse(gap.stdout).broken.seq, rows[3].seq);
  assert.equal(JSON.parse(gap.stdout).broken.problem, 'link');
});

test('an export reads its own snapshot on its own connection: writes go on meanwhile; a client that goes away releases it', async (t) => {
  const s = await startTestServer(t);
  const owner = await member(s, 'org_owner');
  const org = owner.tree.organizationId;
  const ROWS = 20_000;
  s.db.tx(() => {
    for (let i = 0; i < ROWS; i++) seed(s, { organizationId: org, action: 'bulk.row', targetId: `t_${i}`, metadata: { i, pad: 'x'.repeat(200) } });
  });
  const checkpointBusy = () => {
    const db = new DatabaseSync(path.join(s.config.dataDir, 'svc.db'));
    try {
      return (db.prepare('PRAGMA wal_checkpoint(TRUNCATE)').get() as { busy: number }).busy;
    } finally {
      db.close();
    }
  };
  const waitFor = async (what: string, ok: () => boolean) => {
    for (let i = 0; i < 100 && !ok(); i++) await new Promise((r) => setTimeout(r, 50));
    assert.ok(ok(), what);
  };
  /** A slow client: the export started and one chunk read, then nothing; the server's stream waits. */
  const startSlow = async () => {
    const res = await fetch(`${s.url}/api/audit/export?format=csv&action=bulk.row`, { headers: { authorization: `Bearer ${owner.token}` } });
    assert.equal(res.status, 200);
    const reader = res.body!.getReader();
    const first = await reader.read();
    assert.ok(first.value && first.value.length > 0);
    await waitFor('the paused export holds a read snapshot', () => checkpointBusy() === 1);
    return { reader, first: first.value };
  };

  // Writes go on while an export is paused; the export shows the log as it was when it started.
  const slow = await startSlow();
  const ws = await s.call('POST', `/api/organizations/${org}/workspaces`, { token: owner.token, body: { name: 'During the export' } });
  assert.equal(ws.status, 201, ws.text);
  const late = seed(s, { organizationId: org, action: 'bulk.row', targetId: 'late' });
  const chunks: Uint8Array[] = [slow.first];
  for (let c = await slow.reader.read(); !c.done; c = await slow.reader.read()) chunks.push(c.value);
  const table = parseCsv(Buffer.concat(chunks).toString('utf8'));
  assert.equal(table.length, ROWS + 1);
  assert.ok(!table.some((cells) => cells[1] === late));
  await waitFor('a finished export closes its connection', () => checkpointBusy() === 0);

  // A client that goes away mid-export (node:http, so that the socket really closes at once): the
  // server closes the export's connection.
  const gone = http.get(`${s.url}/api/audit/export?format=csv&action=bulk.row`, { headers: { authorization: `Bearer ${owner.token}` }, agent: false });
  const res = await new Promise<http.IncomingMessage>((resolve) => gone.once('response', resolve));
  assert.equal(res.statusCode, 200);
  await new Promise((resolve) => res.once('data', resolve));
  res.pause();
  await waitFor('the paused export holds a read snapshot', () => checkpointBusy() === 1);
  gone.destroy();
  await waitFor('the export\'s connection is closed once the client is gone', () => checkpointBusy() === 0);
});

test('targetType/targetId naming an organization, workspace, project or user outside the reach, and actorUserId outside it, are 403 scope_forbidden (audited)', async (t) => {
  const s = await startTestServer(t);
  const w = await world(s);
  const { A, B } = w;
  // A writer of A's second workspace: a member of A (its organization-level records are the
  // producer's too); a former member of A, with no membership left but a record in A.
  const ws2Writer = await makeUser(s);
  grant(s, ws2Writer.id, 'workspace', A.ws2, 'writer');
  const former = await makeUser(s);
  const formerRecord = seed(s, { organizationId: A.organizationId, action: 'shot.rendered', actorUserId: former.id, actorName: former.name });
  // A member of B only, who never acted in A (the seeded owner of B did, in A's records).
  const writerB = (await member(s, 'writer', B)).user;
  const refused: Array<[string, string, string]> = [
    ['org_owner', w.ownerA.token, `targetType=organization&targetId=${B.organizationId}`],
    ['org_owner', w.ownerA.token, `targetType=workspace&targetId=${B.workspaceId}`],
    ['org_owner', w.ownerA.token, `targetType=project&targetId=${B.projectId}`],
    ['org_owner', w.ownerA.token, `targetId=${B.projectId}`],
    ['org_owner', w.ownerA.token, `targetId=${B.organizationId}&action=shot.rendered`],
    ['org_owner', w.ownerA.token, 'targetType=project&targetId=prj_unknown'],
    ['org_owner', w.ownerA.token, `targetType=user&targetId=${writerB.id}`],
    ['org_owner', w.ownerA.token, `actorUserId=${writerB.id}`],
    ['org_owner', w.ownerA.token, 'actorUserId=usr_unknown'],
    ['producer', w.producer.token, `targetType=workspace&targetId=${A.ws2}`],
    ['producer', w.producer.token, `targetType=project&targetId=${A.p2}`],
    ['producer', w.producer.token, `targetId=${A.p2}`],
    ['producer', w.producer.token, `actorUserId=${writerB.id}`],
  ];
  for (const [who, token, qs] of refused) {
    for (const p of [`/api/audit?${qs}`, `/api/audit/export?format=csv&${qs}`]) {
      const r = await s.call('GET', p, { token });
      assert.equal(r.status, 403, `${who} ${p}: ${r.text}`);
      assert.equal(r.body.error.code, 'scope_forbidden', `${who} ${p}`);
    }
  }
  const denied = s.db.all<Row>("SELECT * FROM audit_log WHERE action = 'access.denied' AND target_type = 'audit_log' ORDER BY seq");
  assert.equal(denied.length, refused.length * 2, 'every refusal is audited');
  assert.ok(denied.every((d) => d.result === 'denied' && JSON.parse(d.metadata).reason === 'scope_forbidden'));
  assert.deepEqual(JSON.parse(denied[0].metadata).filters, { targetType: 'organization', targetId: B.organizationId });
  assert.equal(s.db.get<Row>("SELECT count(*) AS n FROM audit_log WHERE action = 'audit.exported'")!.n, 0, 'a refused export exports nothing');

  // Inside the reach the same filters narrow as before.
  const all = allRows(s);
  const allowed: Array<[string, string, string, (r: Row) => boolean]> = [
    ['org_owner', w.ownerA.token, `targetType=organization&targetId=${A.organizationId}`, (r) => r.target_type === 'organization' && r.target_id === A.organizationId],
    ['org_owner', w.ownerA.token, `actorUserId=${w.producer.user.id}`, (r) => r.organization_id === A.organizationId && r.actor_user_id === w.producer.user.id],
    ['org_owner', w.ownerA.token, `actorUserId=${ws2Writer.id}`, (r) => r.organization_id === A.organizationId && r.actor_user_id === ws2Writer.id],
    ['org_owner', w.ownerA.token, `actorUserId=${former.id}`, (r) => r.id === formerRecord],
    ['org_owner', w.ownerA.token, `actorUserId=${w.ownerB.user.id}`, (r) => r.organization_id === A.organizationId && r.actor_user_id === w.ownerB.user.id],
    ['producer', w.producer.token, `targetType=workspace&targetId=${A.workspaceId}`, (r) => r.target_id === A.workspaceId],
    ['producer', w.producer.token, `actorUserId=${ws2Writer.id}`, (r) => r.actor_user_id === ws2Writer.id],
    ['producer', w.producer.token, `actorUserId=${w.ownerA.user.id}`,
      (r) => r.organization_id === A.organizationId && (r.workspace_id === A.workspaceId || r.workspace_id === null) && r.actor_user_id === w.ownerA.user.id],
    ['system administrator', w.admin.token, `actorUserId=${w.ownerB.user.id}`, (r) => r.actor_user_id === w.ownerB.user.id],
    ['system administrator', w.admin.token, `targetType=project&targetId=${B.projectId}`, (r) => r.target_type === 'project' && r.target_id === B.projectId],
  ];
  for (const [who, token, qs, pick] of allowed) {
    const r = await s.call('GET', `/api/audit?pageSize=200&${qs}`, { token });
    assert.equal(r.status, 200, `${who} ${qs}: ${r.text}`);
    assert.deepEqual(ids(r.body.auditLog), ids(all.filter(pick)), `${who} ${qs}`);
  }
});
