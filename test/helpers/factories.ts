// Factories that create what a test needs through the services, making missing parents on the way.
import assert from 'node:assert/strict';
import { createUser } from '../../src/identity/users/service.ts';
import { createOrganization, createWorkspace, grantRole } from '../../src/tenancy/service.ts';
import { createProject } from '../../src/production/projects/service.ts';
import type { Level, Role } from '../../src/directory/roles.ts';
import { ROLE_LEVEL } from '../../src/directory/roles.ts';
import type { TestServer } from './server.ts';

let counter = 0;
const unique = () => `${process.pid}-${++counter}`;

export interface TestUser { id: string; email: string; name: string; password: string }

export async function makeUser(s: TestServer, o: { email?: string; name?: string; password?: string; systemAdmin?: boolean } = {}): Promise<TestUser> {
  const email = o.email ?? `user-${unique()}@example.test`;
  const password = o.password ?? 'a long test password';
  const name = o.name ?? `User ${counter}`;
  const { user } = await createUser(s.operator(), { email, name, password, isSystemAdmin: o.systemAdmin });
  return { id: user.id, email, name, password };
}

export async function login(s: TestServer, u: { email: string; password: string }, headers: Record<string, string> = {}): Promise<string> {
  const r = await s.call('POST', '/api/auth/login', { body: { email: u.email, password: u.password }, headers });
  assert.equal(r.status, 200, r.text);
  return r.body.token;
}

export async function makeOrg(s: TestServer, o: { name?: string; ownerUserId?: string } = {}) {
  return await createOrganization(s.operator(), { name: o.name ?? `Org ${unique()}`, ownerUserId: o.ownerUserId });
}

export async function makeWorkspace(s: TestServer, organizationId?: string, name?: string) {
  return await createWorkspace(s.operator(), organizationId ?? (await makeOrg(s)).id, { name: name ?? `Workspace ${unique()}` });
}

export async function makeProject(s: TestServer, workspaceId?: string, name?: string) {
  return await createProject(s.operator(), workspaceId ?? (await makeWorkspace(s)).id, { name: name ?? `Project ${unique()}` });
}

export async function grant(s: TestServer, userId: string, level: Level, scopeId: string, role: Role) {
  return await grantRole(s.operator(), { userId, level, scopeId, role });
}

export interface Tree { organizationId: string; workspaceId: string; projectId: string }

/** An organization with one workspace and one project. */
export async function makeTree(s: TestServer): Promise<Tree> {
  const org = await makeOrg(s);
  const ws = await makeWorkspace(s, org.id);
  const p = await makeProject(s, ws.id);
  return { organizationId: org.id, workspaceId: ws.id, projectId: p.id };
}

/** A user holding `role` at its level of `tree` (a new tree when none is given), logged in. */
export async function member(s: TestServer, role: Role, given?: Tree) {
  const tree = given ?? await makeTree(s);
  const user = await makeUser(s);
  const level = ROLE_LEVEL[role];
  const scopeId = level === 'organization' ? tree.organizationId : level === 'workspace' ? tree.workspaceId : tree.projectId;
  await grant(s, user.id, level, scopeId, role);
  const token = await login(s, user);
  return { user, token, tree };
}
