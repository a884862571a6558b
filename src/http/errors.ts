// AppError: every failure a client may see, with the contract's error body
// { "error": { "code", "message", "details"? } }. Anything that is not an AppError becomes 500.
export class AppError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details?: Record<string, unknown>;
  readonly headers?: Record<string, string>;

  constructor(status: number, code: string, message: string, details?: Record<string, unknown>, headers?: Record<string, string>) {
    super(message);
    this.name = 'AppError';
    this.status = status;
    this.code = code;
    this.details = details;
    this.headers = headers;
  }

  body(): { error: { code: string; message: string; details?: Record<string, unknown> } } {
    return { error: { code: this.code, message: this.message, ...(this.details ? { details: this.details } : {}) } };
  }
}

export const invalidJson = (message = 'request body is not valid JSON') => new AppError(400, 'invalid_json', message);
export const unauthenticated = (message = 'a valid session is required') => new AppError(401, 'unauthenticated', message);
export const forbidden = (code: string, message: string, details?: Record<string, unknown>) =>
  new AppError(403, code, message, details);
export const permissionDenied = (permission: string) =>
  new AppError(403, 'permission_denied', `permission ${permission} is required`, { permission });
export const scopeForbidden = (message = 'that scope is not accessible to you') => new AppError(403, 'scope_forbidden', message);
export const notFound = (message = 'not found') => new AppError(404, 'not_found', message);
export const conflict = (code: string, message: string, details?: Record<string, unknown>) =>
  new AppError(409, code, message, details);
export const validationFailed = (fields: Record<string, string>) =>
  new AppError(422, 'validation_failed', `invalid input: ${Object.entries(fields).map(([k, v]) => `${k} ${v}`).join('; ')}`, { fields });
export const payloadTooLarge = (limit: number) =>
  new AppError(413, 'payload_too_large', `request body exceeds ${limit} bytes`, { limit });
export const methodNotAllowed = (allow: string[]) =>
  new AppError(405, 'method_not_allowed', `method not allowed; allowed: ${allow.join(', ')}`, { allow }, { allow: allow.join(', ') });
export const rateLimited = (retryAfterSeconds: number) =>
  new AppError(429, 'rate_limited', `too many attempts; retry after ${retryAfterSeconds} s`, { retryAfterSeconds }, { 'retry-after': String(retryAfterSeconds) });
export const internalError = () => new AppError(500, 'internal_error', 'internal error; the request id identifies it in the service log');

/** Services reachable from the CLI as well check this themselves (routes declare systemAdmin too). */
export function requireSystemAdmin(ctx: { actor: { isSystemAdmin: boolean } }): void {
  if (!ctx.actor.isSystemAdmin) throw forbidden('permission_denied', 'only a system administrator may do this');
}
