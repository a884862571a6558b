// What the audit log's test files (test/platform/audit*.test.ts) share: rows written through the
// service's append path, every page of GET /api/audit, and a log seeded over several organizations.
import assert from 'node:assert/strict';
import { createContext, operatorActor } from '../../src/directory/context.ts';
import { record, type AuditEntry } from '../../src/platform/audit/service.ts';
import { type TestServer } from '../helpers/server.ts';
import { login, makeProject, makeTree, makeUser, makeWorkspace, member, type Tree } from '../helpers/factories.ts';

interface Seed extends AuditEntry { at?: string }

/** One audit row written through the service's append path (the operator's context, or the given actor). */
const OPERATOR = operatorActor();
export async function seed(s: TestServer, e: Seed): Promise<string> {
  const ctx = createContext({ db: s.db, config: s.config, log: s.log, actor: OPERATOR, now: () => new Date(e.at ?? Date.now()) });
  return await record(ctx, { organizationId: null, workspaceId: null, projectId: null, ...e });
}

export type Row = Record<string, any>;
export const allRows = async (s: TestServer): Promise<Row[]> => await s.db.all<Row>('SELECT * FROM audit_log ORDER BY seq DESC');

/** Every page of GET /api/audit with `qs`, and the first page's body. */
export async function listAll(s: TestServer, token: string, qs = ''): Promise<{ rows: Row[]; first: Row }> {
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

export const ids = (rows: Row[]) => rows.map((r) => r.id);

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
export async function world(s: TestServer): Promise<World> {
  const base = await makeTree(s);
  const ws2 = (await makeWorkspace(s, base.organizationId)).id;
  const A = { ...base, ws2, p2: (await makeProject(s, ws2)).id, p1b: (await makeProject(s, base.workspaceId)).id };
  const B = await makeTree(s);
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
    await seed(s, {
      ...scopes[i % scopes.length], action: actions[i % 4], targetType: targets[(i >> 1) % 4], targetId: `t_${i % 7}`,
      result: results[i % 4], actorUserId: actor.id, actorName: actor.name, metadata: { i, note: i % 5 === 0 ? 'needle 100%' : 'hay' },
    });
  }
  return w;
}
