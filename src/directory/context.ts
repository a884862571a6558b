// Ctx is the only thing services see: who acts, in which scope, with which permissions, on which
// database, under which request id. HTTP builds it per request; the CLI, the worker and tests build
// it with createContext().
import os from 'node:os';
import type { Db, Hook } from '../db/db.ts';
import type { Config } from '../kernel/config.ts';
import type { Logger } from '../kernel/log.ts';
import { storageOf } from '../kernel/storage/index.ts';
import type { ObjectStore } from '../kernel/storage/store.ts';
import { newId } from '../kernel/ids.ts';
import type { MembershipRow, Permission, ScopeIds } from './roles.ts';
import { effectivePermissions } from './roles.ts';
import { createEventBus, type EventMap, type EventName } from './events.ts';

/**
 * An API client's binding (src/identity/api-clients/service.ts): the organization, optional workspace and
 * project it acts in, and exactly the permissions it was given.
 */
export interface ApiClientBinding {
  id: string;
  organizationId: string;
  workspaceId: string | null;
  projectId: string | null;
  permissions: readonly Permission[];
}

export interface Actor {
  /** 'api_client': a service account's access token (userId null; see apiClient). */
  type: 'user' | 'operator' | 'system' | 'anonymous' | 'api_client';
  userId: string | null;
  name: string;
  email: string | null;
  isSystemAdmin: boolean;
  sessionId: string | null;
  sessionKind: 'bearer' | 'browser' | null;
  /** Set for type 'api_client' only: its binding and permission set. */
  apiClient?: ApiClientBinding;
}

export interface Ctx {
  readonly db: Db;
  readonly config: Config;
  /** Where media lives (SVC_STORAGE_DRIVER): every file read or written for a tenant goes through it. */
  readonly storage: ObjectStore;
  readonly log: Logger;
  readonly actor: Actor;
  readonly scope: ScopeIds;
  /** Active memberships of the acting user (empty for the operator and the system). */
  readonly memberships: readonly MembershipRow[];
  readonly permissions: readonly Permission[];
  readonly requestId: string;
  readonly ip: string | null;
  readonly userAgent: string | null;
  now(): Date;
  /** Runs fn after the current transaction commits (at once outside one); see Db.afterCommit. */
  afterCommit(fn: Hook): Promise<void>;
  /** Upward news: recorded in the current transaction, dispatched to its subscribers after commit (events.ts). */
  emit<N extends EventName>(event: N, payload: EventMap[N]): Promise<void>;
}

/** The event bus of this thread: subscriptions are bound once at start (src/subscribers.ts). */
export const events = createEventBus<Ctx>();

export const NO_SCOPE: ScopeIds = Object.freeze({ organizationId: null, workspaceId: null, projectId: null });

export const ANONYMOUS: Actor = Object.freeze({
  type: 'anonymous', userId: null, name: 'anonymous', email: null, isSystemAdmin: false, sessionId: null, sessionKind: null,
});

/** The person at the server's console: the CLI acts as this actor, above every organization. */
export function operatorActor(): Actor {
  let who = 'unknown';
  try {
    who = os.userInfo().username;
  } catch { /* no passwd entry */ }
  return { type: 'operator', userId: null, name: `local operator (${who})`, email: null, isSystemAdmin: true, sessionId: null, sessionKind: null };
}

export interface ContextInit {
  db: Db;
  config: Config;
  log: Logger;
  actor?: Actor;
  scope?: ScopeIds;
  memberships?: readonly MembershipRow[];
  requestId?: string;
  ip?: string | null;
  userAgent?: string | null;
  now?: () => Date;
}

export function createContext(init: ContextInit): Ctx {
  const actor = init.actor ?? operatorActor();
  const scope = init.scope ?? NO_SCOPE;
  const memberships = init.memberships ?? [];
  return {
    db: init.db,
    config: init.config,
    storage: storageOf(init.config),
    log: init.log,
    actor,
    scope,
    memberships,
    permissions: permissionsOf(actor, memberships, scope),
    requestId: init.requestId ?? newId('req'),
    ip: init.ip ?? null,
    userAgent: init.userAgent ?? null,
    now: init.now ?? (() => new Date()),
    afterCommit: (fn) => init.db.afterCommit(fn),
    emit(event, payload) { return events.emit(this, event, payload); },
  };
}

/** The same actor and request, acting in another scope (permissions recomputed). */
export function withScope(ctx: Ctx, scope: ScopeIds): Ctx {
  return { ...ctx, scope, permissions: permissionsOf(ctx.actor, ctx.memberships, scope) };
}

/** True when a scope lies at or below an API client's binding (the only place its permissions apply). */
export function withinBinding(b: ApiClientBinding, scope: ScopeIds): boolean {
  return scope.organizationId === b.organizationId
    && (b.workspaceId === null || scope.workspaceId === b.workspaceId)
    && (b.projectId === null || scope.projectId === b.projectId);
}

/** A user's permissions come from memberships; an API client's are exactly its set, inside its binding only. */
function permissionsOf(actor: Actor, memberships: readonly MembershipRow[], scope: ScopeIds): readonly Permission[] {
  if (actor.apiClient) return withinBinding(actor.apiClient, scope) ? actor.apiClient.permissions : [];
  return effectivePermissions(actor.isSystemAdmin, memberships, scope);
}
