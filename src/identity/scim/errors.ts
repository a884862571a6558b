// SCIM errors (RFC 7644 section 3.12): { schemas: [Error], status: "409", scimType?, detail }, with
// status as a string, as application/scim+json. Every error under /scim/ goes through scimErrorReply()
// from the service's one error boundary (src/app.ts): the routes' own, an unknown path or method, a
// body too large, an internal error.
import { AppError } from '../../kernel/errors.ts';
import type { Reply } from '../../http/router.ts';

export const ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';

export type ScimType =
  | 'invalidFilter' | 'tooMany' | 'uniqueness' | 'mutability' | 'invalidSyntax' | 'invalidPath' | 'noTarget'
  | 'invalidValue' | 'invalidVers' | 'sensitive';

export class ScimError extends Error {
  readonly status: number;
  readonly scimType: ScimType | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(status: number, detail: string, scimType?: ScimType, headers?: Record<string, string>) {
    super(detail);
    this.name = 'ScimError';
    this.status = status;
    this.scimType = scimType;
    this.headers = headers;
  }

  body(): { schemas: string[]; status: string; scimType?: ScimType; detail: string } {
    return { schemas: [ERROR_SCHEMA], status: String(this.status), ...(this.scimType ? { scimType: this.scimType } : {}), detail: this.message };
  }
}

export const scimUnauthorized = (detail = 'a valid directory bearer token is required') =>
  new ScimError(401, detail, undefined, { 'www-authenticate': 'Bearer realm="scim"' });
export const scimNotFound = (detail = 'no such user in this directory') => new ScimError(404, detail);
export const invalidFilter = (detail: string) => new ScimError(400, detail, 'invalidFilter');
export const invalidSyntax = (detail: string) => new ScimError(400, detail, 'invalidSyntax');
export const invalidValue = (detail: string) => new ScimError(400, detail, 'invalidValue');
export const invalidPath = (detail: string) => new ScimError(400, detail, 'invalidPath');
export const noTarget = (detail: string) => new ScimError(400, detail, 'noTarget');
export const mutability = (detail: string) => new ScimError(400, detail, 'mutability');
export const uniqueness = (detail: string) => new ScimError(409, detail, 'uniqueness');

/** The SCIM form of any error the service raised (an AppError keeps its status, message and headers). */
export function asScimError(err: AppError | ScimError): ScimError {
  if (err instanceof ScimError) return err;
  if (err.code === 'invalid_json') return invalidSyntax(err.message);
  if (err.code === 'validation_failed') return invalidValue(err.message);
  if (err.code === 'email_already_registered') return uniqueness(err.message);
  return new ScimError(err.status, err.message, undefined, err.headers);
}

/** SCIM's media type (RFC 7644 section 8.1): every SCIM answer, errors included. */
export const SCIM_MEDIA_TYPE = 'application/scim+json';
const SCIM_CONTENT_TYPE = `${SCIM_MEDIA_TYPE}; charset=utf-8`;

/** A SCIM answer: the body as application/scim+json (none for 204). */
export function scimReply(status: number, body: unknown, headers: Record<string, string> = {}): Reply {
  if (body === undefined) return { status, headers };
  return { status, raw: JSON.stringify(body), headers: { ...headers, 'content-type': SCIM_CONTENT_TYPE } };
}

/** Paths a SCIM client talks to: /scim and everything under it answer errors in SCIM's shape. */
export const isScimPath = (path: string): boolean => /^\/scim(\/|$|\?)/.test(path);

export function scimErrorReply(err: AppError | ScimError): Reply {
  const e = asScimError(err);
  return scimReply(e.status, e.body(), { ...e.headers });
}
