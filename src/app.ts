// createApp({ config, db, log }) -> { handle(req, res), router, close() }. The request's way:
// route -> request id -> authentication (401) -> body and query -> scope and access (403) ->
// handler -> one error boundary writing the contract's error body -> one access-log line. A client
// that closes its connection in the middle of its request body is not a server error (errors.ts
// isClientAbort): 499 client_closed_request in the access log (info), nothing written, no error line.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { Config } from './kernel/config.ts';
import type { Db } from './db/db.ts';
import type { Logger } from './kernel/log.ts';
import { ANONYMOUS, NO_SCOPE, createContext } from './directory/context.ts';
import { assertProjectWritable } from './directory/tenancy/guard.ts';
import { Router, type Reply } from './http/router.ts';
import { AppError, clientClosed, internalError, isClientAbort, methodNotAllowed, notFound, unauthenticated, forbidden } from './kernel/errors.ts';
import { clientAddress, readJson, requestId } from './http/request.ts';
import { turnWriter } from './http/turn-writes.ts';
import { authenticate } from './gate/auth.ts';
import { auditScopeDenied, checkAccess, requestedScope, resolveRequestScope } from './gate/access.ts';
import { parse } from './kernel/validate.ts';
import { bindAuthRoutes } from './identity/sessions/routes.ts';
import { bindMfaRoutes } from './identity/mfa/routes.ts';
import { bindIdentityPolicyRoutes } from './identity/policy/routes.ts';
import { bindSamlRoutes } from './identity/sso/saml/routes.ts';
import { bindSsoRoutes } from './identity/sso/start/routes.ts';
import { createLoginLimits } from './identity/sessions/service.ts';
import { bindTenancyRoutes } from './tenancy/routes.ts';
import { bindProjectRoutes } from './production/projects/routes.ts';
import { bindMemberRoutes } from './identity/members/routes.ts';
import { bindSystemRoutes } from './system/routes.ts';
import { bindApiClientRoutes } from './identity/api-clients/routes.ts';
import { bindUserRoutes } from './identity/users/routes.ts';
import { bindNotificationRoutes } from './platform/notifications/routes.ts';
import { bindFlagRoutes } from './platform/flags/routes.ts';
import { bindAuditRoutes } from './platform/audit/routes.ts';
import { bindTaskRoutes } from './production/tasks/routes.ts';
import { bindAssetRoutes } from './production/assets/routes.ts';
import { bindProductionRoutes } from './production/catalog/routes.ts';
import { bindViewRoutes } from './views/routes.ts';
import { bindScriptRoutes } from './production/scripts/routes.ts';
import { bindSearchRoutes } from './production/search/routes.ts';
import { bindConnectorRoutes } from './generation/connectors/routes.ts';
import { bindJobRoutes } from './generation/jobs/routes.ts';
import { bindMediaRoutes } from './generation/media/routes.ts';
import { bindWorkflowRoutes } from './generation/workflows/routes.ts';
import { bindReviewRoutes } from './finishing/review/routes.ts';
import { bindQaRoutes } from './finishing/qa/routes.ts';
import { bindDeliveryRoutes } from './finishing/delivery/routes.ts';
import { bindClientRoutes } from './finishing/client/routes.ts';
import { bindExportRoutes } from './finishing/export/routes.ts';
import { bindBillingRoutes } from './commercial/billing/routes.ts';
import { bindQuotaRoutes } from './commercial/quotas/routes.ts';
import { bindUsageRoutes } from './commercial/usage/routes.ts';
import { bindInvoiceRoutes } from './commercial/invoices/routes.ts';
import { bindWorkerRoutes } from './generation/worker/routes.ts';
import { bindScimRoutes } from './identity/scim/routes.ts';
import { bindDirectoryRoutes } from './identity/scim/admin.ts';
import { ScimError, isScimPath, scimErrorReply } from './identity/scim/errors.ts';
import { unroutedScimRequest } from './identity/scim/discovery.ts';
import { consoleReply } from './http/static.ts';

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

/**
 * Every route of the service on `router`, each through its module's registrar (so it knows its
 * file). Needs no database: `svc routes` lists what this binds.
 */
export function bindRoutes(router: Router, config: Config): void {
  const limits = createLoginLimits(config);
  bindSystemRoutes(router);
  bindFlagRoutes(router);
  bindApiClientRoutes(router, limits);
  bindAuthRoutes(router, limits);
  bindMfaRoutes(router, limits);
  bindIdentityPolicyRoutes(router);
  bindSsoRoutes(router);
  bindSamlRoutes(router);
  bindTenancyRoutes(router);
  bindProjectRoutes(router);
  bindUserRoutes(router);
  bindAuditRoutes(router);
  bindNotificationRoutes(router);
  bindTaskRoutes(router);
  bindProductionRoutes(router);
  bindViewRoutes(router);
  bindScriptRoutes(router);
  bindAssetRoutes(router);
  bindSearchRoutes(router);
  bindConnectorRoutes(router);
  bindJobRoutes(router);
  bindMediaRoutes(router);
  bindWorkflowRoutes(router);
  bindReviewRoutes(router);
  bindQaRoutes(router);
  bindDeliveryRoutes(router);
  bindClientRoutes(router);
  bindExportRoutes(router);
  bindBillingRoutes(router);
  bindQuotaRoutes(router);
  bindUsageRoutes(router);
  bindInvoiceRoutes(router);
  bindWorkerRoutes(router);
  bindMemberRoutes(router);
  bindDirectoryRoutes(router);
  bindScimRoutes(router);
}

export function createApp({ config, db, log }: AppDeps): App {
  const router = new Router();
  db.onHookError = (err) => log.error('after-commit hook failed', { err });
  bindRoutes(router, config);

  /** Matches the route, authenticates, resolves the scope and checks access, then runs the handler. */
  async function dispatch(req: IncomingMessage, res: ServerResponse, rid: string, setActor: (id: string) => void): Promise<Reply> {
    const raw = req.url ?? '/';
    const q = raw.indexOf('?');
    const path = q < 0 ? raw : raw.slice(0, q);
    const searchParams = new URLSearchParams(q < 0 ? '' : raw.slice(q + 1));
    // A worker-role process answers only the liveness probe: the api processes serve the rest.
    if (config.role === 'worker' && path !== '/api/health') throw notFound(`no route for ${path}: this process runs the worker role (SVC_ROLE=worker)`);
    const m = router.match(req.method ?? 'GET', path);
    if (!m && isScimPath(path)) throw unroutedScimRequest(req.method ?? 'GET', path, null);
    if (m && 'allow' in m && isScimPath(path)) throw unroutedScimRequest(req.method ?? 'GET', path, m.allow);
    if (!m) {
      const page = consoleReply(req.method ?? 'GET', path, req.headers); // the web console (src/http/static.ts) outside /api and /scim
      if (page) return page;
      throw notFound(`no route for ${path}`);
    }
    if ('allow' in m) throw methodNotAllowed(m.allow);
    const { route, params } = m;
    const meta = route.meta;
    db.syncCache();
    const sessionless = meta.auth === 'none' || meta.auth === 'directory';
    const auth = sessionless ? null : await authenticate(req, db, config, new Date());
    if (!sessionless) {
      if (!auth) throw unauthenticated();
      setActor(auth.actor.userId ?? auth.actor.apiClient?.id ?? auth.actor.type);
      if (meta.session === 'browser' && auth.actor.sessionKind !== 'browser') {
        throw forbidden('browser_session_required', 'this route accepts only a browser session (the session cookie of a login from the service or its front end), not a Bearer token');
      }
      if (auth.passwordChangeRequired && !path.startsWith('/api/auth/')) {
        throw forbidden('password_change_required', 'this account has a one-time password; change it with POST /api/auth/password first');
      }
    }
    const base = {
      db, config, log, actor: auth?.actor ?? ANONYMOUS, requestId: rid,
      ip: clientAddress(req, config), userAgent: req.headers['user-agent'] ?? null,
    };
    let resolved: Awaited<ReturnType<typeof resolveRequestScope>> = { scope: NO_SCOPE, memberships: [] };
    if (auth) {
      const asked = requestedScope(config, req, params);
      try {
        resolved = await resolveRequestScope(db, auth, asked);
      } catch (err) {
        if (!(err instanceof AppError) || err.code !== 'scope_forbidden' || !asked) throw err;
        const code = meta.organizationRecords && params.organizationId ? 'organization_forbidden' : 'scope_forbidden';
        await auditScopeDenied(createContext(base), route.pattern, asked, code);
        throw code === 'scope_forbidden' ? err : forbidden(code, 'that organization\u2019s commercial records are not accessible to you');
      }
    }
    const ctx = createContext({ ...base, scope: resolved.scope, memberships: resolved.memberships });
    checkAccess(meta, ctx);
    if (meta.scope === 'project' && !meta.archivedOk && req.method !== 'GET' && req.method !== 'HEAD') {
      await assertProjectWritable(db, ctx.scope.projectId!);
    }
    const query: unknown = meta.query ? parse(meta.query, Object.fromEntries(searchParams), true) : undefined;
    const run = (rawBody: unknown): Reply | Promise<Reply> => {
      const body: unknown = meta.body ? parse(meta.body, rawBody ?? {}) : undefined;
      return route.handler({ req, res, params, path, searchParams, body, query, ctx });
    };
    return await (meta.body ? readJson(req, config.maxBodyBytes).then(run) : run(undefined));
  }

  // Replies are written at the end of the turn of the event loop they finish in (src/http/turn-writes.ts).
  const writeSoon = turnWriter((err) => log.error('writing a reply failed', { err }));

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = performance.now();
    const rid = requestId(req);
    let actorId: string | null = null;
    let reply: Reply;
    try {
      reply = await dispatch(req, res, rid, (id) => { actorId = id; });
    } catch (err) {
      reply = errorReply(err, req, rid, log);
    }
    const logLine = () => {
      const url = req.url ?? '';
      const q = url.indexOf('?');
      log.info('request', {
        method: req.method, path: q < 0 ? url : url.slice(0, q), status: res.statusCode,
        ms: Math.round((performance.now() - started) * 100) / 100, requestId: rid, actorId,
      });
    };
    writeSoon(res, () => {
      try {
        send(req, res, reply, rid, logLine);
      } catch (err) {
        // A reply node refuses to write (a header value it rejects): nothing has gone out, so the
        // client gets the contract's 500 instead, with the error line and the access line of its
        // request; a stream it carried is never started.
        dropStream(reply);
        if (res.headersSent) throw err; // cut short: the turn writer destroys the response and reports it
        send(req, res, errorReply(err, req, rid, log), rid, logLine);
      }
    });
  }

  return {
    router,
    handle,
    async close() {
      log.flush();
    },
  };
}

/** The contract's error body, or SCIM's under /scim (src/identity/scim/errors.ts). */
function errorReply(err: unknown, req: IncomingMessage, rid: string, log: Logger): Reply {
  const known = err instanceof AppError || err instanceof ScimError;
  const e = known ? err : isClientAbort(req, err) ? clientClosed() : internalError();
  if (e.status === 500 && !known) log.error('unhandled error', { requestId: rid, err });
  const reply: Reply = isScimPath(req.url ?? '/') ? scimErrorReply(e) : { status: e.status, body: e.body(), headers: { ...e.headers } };
  if (e.status === 413) reply.headers = { ...reply.headers, connection: 'close' };
  return reply;
}

/** A reply that will not be written: its stream (a file handle, say) is closed unread. */
function dropStream(reply: Reply): void {
  if (reply.raw instanceof Readable) reply.raw.destroy();
}

/** Writes the reply, then the access-log line (for a stream: when it has finished). */
function send(req: IncomingMessage, res: ServerResponse, reply: Reply, rid: string, logLine: () => void): void {
  if (res.headersSent) {
    if (!res.writableEnded) res.destroy();
    logLine();
    return;
  }
  if (res.destroyed) {
    // The client went away before its reply was written (its 'close' has been and gone): nothing is
    // written, a stream is not started, and the access log says 499 like any request whose client left.
    dropStream(reply);
    res.statusCode = clientClosed().status;
    logLine();
    return;
  }
  const headers: Record<string, string | string[]> = { ...BASE_HEADERS, 'x-request-id': rid, ...reply.headers };
  if (reply.raw instanceof Readable) {
    const stream = reply.raw;
    res.writeHead(reply.status, headers);
    res.once('close', () => {
      if (!stream.destroyed) stream.destroy(); // the client went away: stop producing
      logLine();
    });
    stream.on('error', () => res.destroy());
    stream.pipe(res);
    return;
  }
  if (reply.raw !== undefined) {
    headers['content-length'] ??= String(Buffer.byteLength(reply.raw));
    res.writeHead(reply.status, headers);
    res.end(req.method === 'HEAD' ? undefined : reply.raw);
  } else if (reply.body === undefined) {
    res.writeHead(reply.status === 200 ? 204 : reply.status, headers);
    res.end();
  } else {
    const payload = JSON.stringify(reply.body);
    headers['content-type'] = 'application/json; charset=utf-8';
    headers['content-length'] = String(Buffer.byteLength(payload));
    res.writeHead(reply.status, headers);
    res.end(req.method === 'HEAD' ? undefined : payload);
  }
  logLine();
}
