// createApp({ config, db, log }) -> { handle(req, res), router, close() }. The request's way:
// route -> request id -> authentication (401) -> body and query -> scope and access (403) ->
// handler -> one error boundary writing the contract's error body -> one access-log line.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { Config } from './config.ts';
import type { Db } from './db/db.ts';
import type { Logger } from './log.ts';
import { ANONYMOUS, NO_SCOPE, createContext } from './context.ts';
import { Router, type Reply } from './http/router.ts';
import { AppError, internalError, methodNotAllowed, notFound, unauthenticated, forbidden } from './http/errors.ts';
import { clientAddress, readJson, requestId } from './http/request.ts';
import { authenticate } from './http/auth.ts';
import { checkAccess, resolveRequestScope } from './http/access.ts';
import { parse } from './http/validate.ts';
import { bindAuthRoutes } from './auth/routes.ts';
import { createLoginLimits } from './auth/service.ts';
import { bindTenancyRoutes } from './tenancy/routes.ts';
import { bindSystemRoutes } from './system/routes.ts';

export interface App {
  router: Router;
  handle(req: IncomingMessage, res: ServerResponse): Promise<void>;
  close(): Promise<void>;
}

export interface AppDeps { config: Config; db: Db; log: Logger }

const BASE_HEADERS = {
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
};

export function createApp({ config, db, log }: AppDeps): App {
  const router = new Router();
  db.onHookError = (err) => log.error('after-commit hook failed', { err });
  const limits = createLoginLimits(config);
  bindSystemRoutes(router);
  bindAuthRoutes(router, limits);
  bindTenancyRoutes(router);

  async function dispatch(req: IncomingMessage, res: ServerResponse, rid: string, setActor: (id: string) => void): Promise<Reply> {
    const url = new URL(req.url ?? '/', 'http://svc.invalid');
    const m = router.match(req.method ?? 'GET', url.pathname);
    if (!m) throw notFound(`no route for ${url.pathname}`);
    if ('allow' in m) throw methodNotAllowed(m.allow);
    const { route, params } = m;
    const meta = route.meta;
    const now = new Date();
    const auth = meta.auth === 'none' ? null : authenticate(req, db, config, now);
    if (meta.auth !== 'none') {
      if (!auth) throw unauthenticated();
      setActor(auth.actor.userId ?? auth.actor.type);
      if (auth.passwordChangeRequired && !url.pathname.startsWith('/api/auth/')) {
        throw forbidden('password_change_required', 'this account has a one-time password; change it with POST /api/auth/password first');
      }
    }
    const body = meta.body ? parse(meta.body, (await readJson(req, config.maxBodyBytes)) ?? {}) : undefined;
    const query = meta.query ? parse(meta.query, Object.fromEntries(url.searchParams), true) : undefined;
    const resolved = auth ? resolveRequestScope(db, config, req, auth, params) : { scope: NO_SCOPE, memberships: [] };
    const ctx = createContext({
      db, config, log, actor: auth?.actor ?? ANONYMOUS, scope: resolved.scope, memberships: resolved.memberships,
      requestId: rid, ip: clientAddress(req, config), userAgent: (req.headers['user-agent'] as string | undefined) ?? null,
    });
    checkAccess(meta, ctx);
    return route.handler({ req, res, params, url, body, query, ctx });
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = performance.now();
    const rid = requestId(req);
    let actorId: string | null = null;
    res.setHeader('x-request-id', rid);
    res.once('finish', () => {
      const q = (req.url ?? '').indexOf('?');
      log.info('request', {
        method: req.method, path: q < 0 ? req.url : req.url!.slice(0, q), status: res.statusCode,
        ms: Math.round((performance.now() - started) * 100) / 100, requestId: rid, actorId,
      });
    });
    let reply: Reply;
    try {
      reply = await dispatch(req, res, rid, (id) => { actorId = id; });
    } catch (err) {
      reply = errorReply(err, rid, log);
    }
    send(req, res, reply);
  }

  return {
    router,
    handle,
    async close() {
      log.flush();
    },
  };
}

function errorReply(err: unknown, rid: string, log: Logger): Reply {
  const e = err instanceof AppError ? err : internalError();
  if (!(err instanceof AppError)) log.error('unhandled error', { requestId: rid, err });
  const headers: Record<string, string> = { ...e.headers };
  if (e.status === 413) headers.connection = 'close';
  return { status: e.status, body: e.body(), headers };
}

function send(req: IncomingMessage, res: ServerResponse, reply: Reply): void {
  if (res.headersSent) {
    if (!res.writableEnded) res.destroy();
    return;
  }
  const headers: Record<string, string | string[]> = { ...BASE_HEADERS, ...reply.headers };
  if (reply.raw !== undefined) {
    if (reply.raw instanceof Readable) {
      res.writeHead(reply.status, headers);
      reply.raw.on('error', () => res.destroy());
      reply.raw.pipe(res);
      return;
    }
    res.writeHead(reply.status, headers);
    res.end(reply.raw);
    return;
  }
  if (reply.body === undefined) {
    res.writeHead(reply.status === 200 ? 204 : reply.status, headers);
    res.end();
    return;
  }
  const payload = JSON.stringify(reply.body);
  headers['content-type'] = 'application/json; charset=utf-8';
  headers['content-length'] = String(Buffer.byteLength(payload));
  res.writeHead(reply.status, headers);
  res.end(req.method === 'HEAD' ? undefined : payload);
}
