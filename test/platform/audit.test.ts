// The audit log over real HTTP: what each role kind sees of a log seeded over several organizations,
// filters that cross the caller's scope, facets, inclusive dates, and the detail's related and
// account-security events. The export and the hash chain have their own files beside this one.
import { mapSeq } from '../../src/kernel/seq.ts';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../helpers/server.ts';
import { grant, makeUser, member } from '../helpers/factories.ts';
import { seed, type Row, allRows, listAll, ids, world } from './audit-setup.ts';

test('each role kind sees exactly its audit scope over a log of several organizations', async (t) => {
  const s = await startTestServer(t);
  const w = await world(s);
  const all = await allRows(s);
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
  const denied = await s.db.all<Row>("SELECT * FROM audit_log WHERE action = 'access.denied' AND target_type = 'audit_log'");
  assert.equal(denied.length, refused.length * 2);
  assert.equal((await s.db.get<Row>("SELECT count(*) AS n FROM audit_log WHERE action = 'audit.exported'"))!.n, 0, 'a refused export exports nothing');

  const all = await allRows(s);
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
  const all = await allRows(s);
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
    for (const facet of Object.values<Array<{ count: number }>>(first.facets)) {
      assert.equal(facet.reduce((n, f) => n + f.count, 0), first.pagination.total, `${name}: a facet adds up to the total`);
    }
    const producerFacet = first.facets.actor.find((f: Row) => f.value === w.producer.user.id);
    if (producerFacet) assert.deepEqual({ type: producerFacet.type, name: producerFacet.name }, { type: 'user', name: w.producer.user.name });
  }
  // The LIKE wildcards of the query are literal: '100%' does not match '100' followed by anything else.
  await seed(s, { organizationId: A, action: 'wild.card', metadata: { note: 'needle 1000' } });
  const literal = await s.call('GET', '/api/audit?action=wild.card&query=needle%20100%25', { token: w.ownerA.token });
  assert.equal(literal.body.pagination.total, 0);

  // Paging: default 50, clamped to 1..200, newest first, presented in camelCase with parsed metadata.
  const first = await s.call('GET', '/api/audit', { token: w.admin.token });
  assert.deepEqual(first.body.pagination, { page: 1, pageSize: 50, total: (await allRows(s)).length });
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
  const seeded = await mapSeq(at, async (when) => await seed(s, { organizationId: org, action: 'test.dated', targetId: when, at: when }));
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
  const main = await seed(s, { ...inA1, action: 'shot.approved', targetType: 'shot', targetId: 'shot_rel', actorUserId: u.id, actorName: u.name });
  const sameTarget = [
    await seed(s, { ...inA1, action: 'shot.rendered', targetType: 'shot', targetId: 'shot_rel' }),
    await seed(s, { organizationId: A.organizationId, workspaceId: A.workspaceId, action: 'shot.moved', targetType: 'shot', targetId: 'shot_rel' }),
    await seed(s, { organizationId: A.organizationId, workspaceId: A.ws2, projectId: A.p2, action: 'shot.rendered', targetType: 'shot', targetId: 'shot_rel' }),
    await seed(s, { organizationId: B.organizationId, action: 'shot.rendered', targetType: 'shot', targetId: 'shot_rel' }),
  ];
  await seed(s, { ...inA1, action: 'shot.rendered', targetType: 'asset', targetId: 'shot_rel' }); // another target type: not related
  const security = [
    await seed(s, { action: 'auth.login', targetType: 'session', targetId: 'ses_x', actorUserId: u.id, actorName: u.name }),
    await seed(s, { ...inA1, action: 'auth.logout', targetType: 'session', targetId: 'ses_x', actorUserId: u.id, actorName: u.name }),
    await seed(s, { organizationId: A.organizationId, action: 'user.password_reset', targetType: 'user', targetId: u.id }),
    await seed(s, { organizationId: B.organizationId, action: 'auth.password.changed', targetType: 'user', targetId: u.id, actorUserId: u.id }),
    await seed(s, { ...inA1, action: 'script.edited', targetType: 'script', targetId: 's1', actorUserId: u.id }), // not a security event
  ];
  const db = async (sql: string, ...p: string[]) => await s.db.all<Row>(sql, ...p);
  const rowsById = new Map((await db('SELECT * FROM audit_log')).map((r) => [r.id, r]));
  const expectRelated = (visible: (r: Row) => boolean) => [...sameTarget].reverse().filter((id) => visible(rowsById.get(id)!));
  const securityAll = await db(`SELECT * FROM audit_log WHERE (actor_user_id = ? OR (target_type = 'user' AND target_id = ?))
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
  const failed = await seed(s, { action: 'auth.login', targetType: 'user', targetId: u.id, result: 'failure', actorUserId: null, actorName: 'anonymous' });
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

test('targetType/targetId naming an organization, workspace, project or user outside the reach, and actorUserId outside it, are 403 scope_forbidden (audited)', async (t) => {
  const s = await startTestServer(t);
  const w = await world(s);
  const { A, B } = w;
  // A writer of A's second workspace: a member of A (its organization-level records are the
  // producer's too); a former member of A, with no membership left but a record in A.
  const ws2Writer = await makeUser(s);
  await grant(s, ws2Writer.id, 'workspace', A.ws2, 'writer');
  const former = await makeUser(s);
  const formerRecord = await seed(s, { organizationId: A.organizationId, action: 'shot.rendered', actorUserId: former.id, actorName: former.name });
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
  const denied = await s.db.all<Row>("SELECT * FROM audit_log WHERE action = 'access.denied' AND target_type = 'audit_log' ORDER BY seq");
  assert.equal(denied.length, refused.length * 2, 'every refusal is audited');
  assert.ok(denied.every((d) => d.result === 'denied' && JSON.parse(d.metadata).reason === 'scope_forbidden'));
  assert.deepEqual(JSON.parse(denied[0].metadata).filters, { targetType: 'organization', targetId: B.organizationId });
  assert.equal((await s.db.get<Row>("SELECT count(*) AS n FROM audit_log WHERE action = 'audit.exported'"))!.n, 0, 'a refused export exports nothing');

  // Inside the reach the same filters narrow as before.
  const all = await allRows(s);
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
