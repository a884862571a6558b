// Method + path pattern -> route. Patterns are literal segments and ":name" parameters; matching
// walks a segment tree, literal before parameter. An unknown path is 404; a known path with another
// method is 405 with Allow.
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { Schema } from '../kernel/validate.ts';
import type { View } from '../kernel/view.ts';
import type { Ctx } from '../directory/context.ts';
import type { Permission, OrgRole, ProjectRole } from '../directory/roles.ts';

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
export type ScopeLevel = 'none' | 'organization' | 'workspace' | 'project';

export interface RouteMeta<B = unknown, Q = unknown, R = unknown> {
  summary: string;
  tags?: string[];
  /**
   * 'session' (default): a user session is required. 'none': open to anyone. 'directory': no session;
   * the handler checks a SCIM directory's bearer token (documented as its own security scheme).
   */
  auth?: 'none' | 'session' | 'directory';
  /**
   * 'browser': only a browser session (the HttpOnly cookie, with an allowed Origin on state-changing
   * methods) is accepted; a Bearer call is 403 browser_session_required (checked right after authentication).
   */
  session?: 'browser';
  /** Which scope the route acts in; ids come from the path (:organizationId, ...) or the session. */
  scope?: ScopeLevel;
  /** The caller needs at least one of these permissions in the resolved scope. */
  permission?: Permission | Permission[];
  /**
   * A person holding one of these project roles in the scoped project passes the permission check
   * too (the reference's "project role" access, e.g. project_editor on PATCH /api/projects/:id).
   */
  projectRoles?: ProjectRole[];
  /** The caller needs one of these organization roles (system administrators pass). */
  orgRoles?: OrgRole[];
  systemAdmin?: boolean;
  /**
   * Routes acting in a project scope with a writing method answer 409 project_archived on an
   * archived project (one guard, in the request path). true exempts a route that manages the
   * project itself rather than its production (lifecycle, members).
   */
  archivedOk?: boolean;
  /**
   * Commercial records (billing, usage, quotas, cost centers, invoices): an organization in the path
   * that the caller does not belong to is 403 organization_forbidden instead of scope_forbidden.
   */
  organizationRecords?: boolean;
  body?: Schema<B>;
  query?: Schema<Q>;
  /**
   * The success answer: its status (default 200), and `schema`, the view of its JSON body (the
   * handler must then return that type), and/or `type`, the media type(s) of a body that is not JSON
   * (a file, CSV, HTML; several when the answer's type depends on the file or on Accept). `also`
   * lists other success statuses with the same body (e.g. 200 for an idempotent repeat of a 201). A
   * 204 has neither. `jsonType`: the media type of the `schema` body when it is a JSON type of its own
   * (application/scim+json); default application/json. `redirect`: the route may also answer 302
   * with a Location (what it redirects to, and when).
   */
  response?: { status?: number; also?: number[]; description: string; schema?: View<R>; type?: string | readonly string[]; jsonType?: string; redirect?: string };
}

export interface Reply<T = unknown> {
  status: number;
  body?: T;
  headers?: Record<string, string | string[]>;
  /** A raw payload (bytes or a stream) instead of JSON. */
  raw?: Buffer | string | Readable;
}

export interface Call<B = unknown, Q = unknown> {
  req: IncomingMessage;
  res: ServerResponse;
  params: Record<string, string>;
  /** The path without the query string, and the query string's parameters. */
  path: string;
  searchParams: URLSearchParams;
  body: B;
  query: Q;
  ctx: Ctx;
}

export type Handler<B = unknown, Q = unknown, R = unknown> = (c: Call<B, Q>) => Reply<R> | Promise<Reply<R>>;

export interface Route {
  method: Method;
  pattern: string;
  // The table holds routes of every body, query and answer type (Handler is contravariant in its
  // body and query, and TypeScript has no existential type): app.ts parses body and query with the
  // route's own schemas before it calls the handler.
  /* eslint-disable @typescript-eslint/no-explicit-any -- see above */
  meta: RouteMeta<any, any, any>;
  handler: Handler<any, any, any>;
  /* eslint-enable @typescript-eslint/no-explicit-any */
  /**
   * The module that registered the route, relative to the repository (src/production/catalog/routes.ts);
   * null only for a route added straight on the Router rather than through `router.module(import.meta.url)`.
   */
  file: string | null;
}

/** Registers routes on behalf of one module: what a routes module binds through (`router.module(import.meta.url)`). */
export interface Routes {
  readonly router: Router;
  readonly file: string;
  get<B, Q, R>(p: string, m: RouteMeta<B, Q, R>, h: Handler<B, Q, NoInfer<R>>): void;
  post<B, Q, R>(p: string, m: RouteMeta<B, Q, R>, h: Handler<B, Q, NoInfer<R>>): void;
  put<B, Q, R>(p: string, m: RouteMeta<B, Q, R>, h: Handler<B, Q, NoInfer<R>>): void;
  patch<B, Q, R>(p: string, m: RouteMeta<B, Q, R>, h: Handler<B, Q, NoInfer<R>>): void;
  delete<B, Q, R>(p: string, m: RouteMeta<B, Q, R>, h: Handler<B, Q, NoInfer<R>>): void;
}

const REPOSITORY = fileURLToPath(new URL('../../', import.meta.url));

/** A module's path relative to the repository, with forward slashes, from its import.meta.url. */
export function repositoryFile(moduleUrl: string): string {
  return path.relative(REPOSITORY, fileURLToPath(moduleUrl)).split(path.sep).join('/');
}

interface Node {
  literal: Map<string, Node>;
  param?: { name: string; node: Node };
  routes: Map<Method, Route>;
}

const newNode = (): Node => ({ literal: new Map(), routes: new Map() });

export type Match = { route: Route; params: Record<string, string> } | { allow: Method[] } | null;

export class Router {
  readonly routes: Route[] = [];
  private readonly root = newNode();

  add<B, Q, R>(method: Method, pattern: string, meta: RouteMeta<B, Q, R>, handler: Handler<B, Q, NoInfer<R>>, file: string | null = null): void {
    let node = this.root;
    for (const seg of split(pattern)) {
      if (seg.startsWith(':')) {
        const name = seg.slice(1);
        if (node.param && node.param.name !== name) {
          throw new Error(`route ${pattern}: parameter :${name} conflicts with :${node.param.name}`);
        }
        node.param ??= { name, node: newNode() };
        node = node.param.node;
      } else {
        let next = node.literal.get(seg);
        if (!next) node.literal.set(seg, (next = newNode()));
        node = next;
      }
    }
    if (node.routes.has(method)) throw new Error(`duplicate route ${method} ${pattern}`);
    const route: Route = { method, pattern, meta, handler, file };
    node.routes.set(method, route);
    this.routes.push(route);
  }

  get<B, Q, R>(p: string, m: RouteMeta<B, Q, R>, h: Handler<B, Q, NoInfer<R>>): void { this.add('GET', p, m, h); }
  post<B, Q, R>(p: string, m: RouteMeta<B, Q, R>, h: Handler<B, Q, NoInfer<R>>): void { this.add('POST', p, m, h); }
  put<B, Q, R>(p: string, m: RouteMeta<B, Q, R>, h: Handler<B, Q, NoInfer<R>>): void { this.add('PUT', p, m, h); }
  patch<B, Q, R>(p: string, m: RouteMeta<B, Q, R>, h: Handler<B, Q, NoInfer<R>>): void { this.add('PATCH', p, m, h); }
  delete<B, Q, R>(p: string, m: RouteMeta<B, Q, R>, h: Handler<B, Q, NoInfer<R>>): void { this.add('DELETE', p, m, h); }

  /** The registrar of one routes module: every route it adds records that module as its file. */
  module(moduleUrl: string): Routes {
    const file = repositoryFile(moduleUrl);
    return {
      router: this,
      file,
      get: (p, m, h) => this.add('GET', p, m, h, file),
      post: (p, m, h) => this.add('POST', p, m, h, file),
      put: (p, m, h) => this.add('PUT', p, m, h, file),
      patch: (p, m, h) => this.add('PATCH', p, m, h, file),
      delete: (p, m, h) => this.add('DELETE', p, m, h, file),
    };
  }

  match(method: string, pathname: string): Match {
    const params: Record<string, string> = {};
    const node = walk(this.root, split(pathname), 0, params);
    if (!node || node.routes.size === 0) return null;
    const route = node.routes.get((method === 'HEAD' ? 'GET' : method) as Method);
    if (route) return { route, params };
    return { allow: [...node.routes.keys()] };
  }
}

function split(path: string): string[] {
  return path.split('/').filter((s) => s !== '');
}

function walk(node: Node, segs: string[], i: number, params: Record<string, string>): Node | null {
  if (i === segs.length) return node;
  const lit = node.literal.get(segs[i]);
  if (lit) {
    const found = walk(lit, segs, i + 1, params);
    if (found && found.routes.size > 0) return found;
  }
  if (node.param) {
    let value: string;
    try {
      value = decodeURIComponent(segs[i]);
    } catch {
      return null;
    }
    // Like a segment that is not UTF-8, one holding U+0000 (%00) is no id: no text the service keeps can
    // hold it (PostgreSQL's text type refuses it), so the path names no route (404) on either engine.
    if (value.includes('\u0000')) return null;
    const found = walk(node.param.node, segs, i + 1, params);
    if (found && found.routes.size > 0) {
      params[node.param.name] = value;
      return found;
    }
  }
  return null;
}

/**
 * One route's access and handler without its path, for routes shared by several paths: the binding
 * function registers it under each literal path (`r.get('/api/...', ...shared.list)`), so grepping a
 * path finds its registration.
 */
export const defineRoute = <B, Q, R>(meta: RouteMeta<B, Q, R>, handler: Handler<B, Q, NoInfer<R>>) => [meta, handler] as const;

export const json = <T>(status: number, body: T, headers?: Record<string, string | string[]>): Reply<T> => ({ status, body, headers });
