// AppError: every failure a client may see, with the contract's error body
// { "error": { "code", "message", "details"? } }. Anything that is not an AppError becomes 500,
// except a client that closed its connection before its request body was complete (isClientAbort):
// that is 499 client_closed_request, like any other request whose client went away; not a server fault.
// Every code is one of the catalogue's (error-codes.ts, docs/errors.md): the type refuses any other.
import type { IncomingMessage } from 'node:http';
import type { ErrorCode, ErrorCodeWithStatus } from './error-codes.ts';

export type { ErrorCode, ErrorCodeWithStatus };

export class AppError extends Error {
  readonly status: number;
  readonly code: ErrorCode;
  readonly details?: Record<string, unknown>;
  readonly headers?: Record<string, string>;

  constructor(status: number, code: ErrorCode, message: string, details?: Record<string, unknown>, headers?: Record<string, string>) {
    super(message);
    this.name = 'AppError';
    this.status = status;
    this.code = code;
    this.details = details;
    this.headers = headers;
  }

  body(): { error: { code: ErrorCode; message: string; details?: Record<string, unknown> } } {
    return { error: { code: this.code, message: this.message, ...(this.details ? { details: this.details } : {}) } };
  }
}

export const invalidJson = (message = 'request body is not valid JSON') => new AppError(400, 'invalid_json', message);
export const unauthenticated = (message = 'a valid session is required') => new AppError(401, 'unauthenticated', message);
export const forbidden = (code: ErrorCodeWithStatus<403>, message: string, details?: Record<string, unknown>) =>
  new AppError(403, code, message, details);
export const permissionDenied = (permission: string) =>
  new AppError(403, 'permission_denied', `permission ${permission} is required`, { permission });
export const scopeForbidden = (message = 'that scope is not accessible to you') => new AppError(403, 'scope_forbidden', message);
export const notFound = (message = 'not found') => new AppError(404, 'not_found', message);
export const conflict = (code: ErrorCodeWithStatus<409>, message: string, details?: Record<string, unknown>) =>
  new AppError(409, code, message, details);
export const validationFailed = (fields: Record<string, string>) =>
  new AppError(422, 'validation_failed', `invalid input: ${Object.entries(fields).map(([k, v]) => `${k} ${v}`).join('; ')}`, { fields });
export const payloadTooLarge = (limit: number) =>
  new AppError(413, 'payload_too_large', `request body exceeds ${limit} bytes`, { limit });
export const methodNotAllowed = (allow: string[]) =>
  new AppError(405, 'method_not_allowed', `method not allowed; allowed: ${allow.join(', ')}`, { allow }, { allow: allow.join(', ') });
export const rateLimited = (retryAfterSeconds: number) =>
  new AppError(429, 'rate_limited', `too many attempts; retry after ${retryAfterSeconds} s`, { retryAfterSeconds }, { 'retry-after': String(retryAfterSeconds) });
/** The client closed the connection before the answer (nginx's 499): nothing reaches it; the access log shows the status. */
export const clientClosed = (message = 'the client closed the connection before the request was complete; nothing was written') =>
  new AppError(499, 'client_closed_request', message);

const STREAM_CLOSED = new Set(['ECONNRESET', 'ECONNABORTED', 'EPIPE', 'ERR_STREAM_PREMATURE_CLOSE', 'ABORT_ERR']);

/**
 * Whether `err` is the client going away in the middle of its request body (a raw, chunked or
 * multipart upload, a JSON or form body): the request stream failed before it was complete, and `err`
 * is that failure or a reset or premature close passed on from it. Every body reader lets it through
 * as is, so the error boundary recognises it here, once.
 */
export function isClientAbort(req: IncomingMessage, err: unknown): boolean {
  if (req.complete || !req.errored || err instanceof AppError) return false;
  return err === req.errored || STREAM_CLOSED.has((err as NodeJS.ErrnoException | null)?.code ?? '');
}

export const internalError = () => new AppError(500, 'internal_error', 'internal error; the request id identifies it in the service log');

/** Services reachable from the CLI as well check this themselves (routes declare systemAdmin too). */
export function requireSystemAdmin(ctx: { actor: { isSystemAdmin: boolean } }): void {
  if (!ctx.actor.isSystemAdmin) throw forbidden('permission_denied', 'only a system administrator may do this');
}
