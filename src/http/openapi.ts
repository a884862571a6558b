// The OpenAPI 3.1 document, generated from the route table and the input schemas: every route with
// its security, access rule, parameters, body and the contract's error answers.
import { SCOPE_SELECTOR_MAX, SCOPE_SELECTOR_PATTERN } from './scope-header.ts';
import type { Route, Router } from './router.ts';
import { JSON_MAX_DEPTH, JSON_MAX_VALUES, type JsonSchema } from '../kernel/validate.ts';
import { BODY_MAX_DEPTH } from './request.ts';
import { namedViews } from '../kernel/view.ts';
import { HTTP_ERROR_CODES } from '../kernel/error-codes.ts';

const ERROR_SCHEMA = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message'],
      properties: {
        code: { type: 'string', enum: HTTP_ERROR_CODES, description: 'snake_case error code; docs/errors.md gives each code its statuses and meaning' },
        message: { type: 'string', description: 'text for people' },
        details: { type: 'object', description: 'optional; validation_failed carries details.fields { name: reason }' },
      },
    },
  },
};

/** The per-request scope selector (src/http/scope-header.ts, read by src/gate/access.ts requestedScope), a reusable header parameter of every authenticated operation. */
const SCOPE_PARAMETER = {
  name: 'Svc-Scope',
  in: 'header',
  required: false,
  description: 'Acts in this organization, workspace or project for this request only, for sessions and API clients alike: '
    + '`project=<id>`, `workspace=<id>`, `organization=<id>`, or several separated by `;` (they must agree). Checked like PATCH /api/context '
    + '(a person: membership and visibility, lower levels filled with the first visible one; an API client: at or below its binding); '
    + 'otherwise 403 scope_forbidden, audited as access.denied. The session\'s stored scope is not changed. Ids in the path win over it. '
    + 'A malformed value is 422 validation_failed (details.fields["Svc-Scope"]).',
  schema: { type: 'string', maxLength: SCOPE_SELECTOR_MAX, pattern: SCOPE_SELECTOR_PATTERN },
  example: 'project=prj_01jd8z5m2k3q4r5s6t7v8w9x0y',
};

/** SCIM's error body (RFC 7644 section 3.12), application/scim+json: every error under /scim (src/identity/scim/errors.ts). */
const SCIM_ERROR_SCHEMA = {
  type: 'object',
  required: ['schemas', 'status', 'detail'],
  properties: {
    schemas: { type: 'array', items: { const: 'urn:ietf:params:scim:api:messages:2.0:Error' } },
    status: { type: 'string', description: 'the HTTP status, as a string' },
    scimType: { type: 'string', enum: ['invalidFilter', 'tooMany', 'uniqueness', 'mutability', 'invalidSyntax', 'invalidPath', 'noTarget', 'invalidValue', 'invalidVers', 'sensitive'] },
    detail: { type: 'string', description: 'text for people' },
  },
};

const scimErrorResponse = (description: string) => ({ description, content: { 'application/scim+json': { schema: { $ref: '#/components/schemas/ScimError' } } } });

const errorResponse = (description: string) => ({ description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } });

function accessText(r: Route): string {
  const m = r.meta;
  if (m.auth === 'none') return 'Access: none (public).';
  if (m.auth === 'directory') return 'Access: the SCIM directory\'s bearer token (shown once at creation or rotation); no user session.';
  const parts: string[] = [];
  if (m.session === 'browser') parts.push('browser session only (the svc_session cookie; POST/PUT/PATCH/DELETE need an allowed Origin; a Bearer call is 403 browser_session_required)');
  if (m.systemAdmin) parts.push('system administrator');
  if (m.orgRoles) parts.push(`organization role ${m.orgRoles.join(' or ')}`);
  if (m.permission) {
    parts.push(`permission ${([] as string[]).concat(m.permission).join(' or ')}${m.projectRoles ? ` (or project role ${m.projectRoles.join(' or ')} in the project)` : ''}`);
  }
  if (m.scope && m.scope !== 'none') parts.push(`${m.scope} scope`);
  return `Access: ${parts.length ? parts.join(', ') : 'any logged-in user'}.`;
}

/** The documented success statuses of a route: its status (default 200) and the others with the same body. */
export const successStatuses = (m: Route['meta']): number[] => [m.response?.status ?? 200, ...(m.response?.also ?? [])];

function success(m: Route['meta']) {
  const r = m.response;
  const description = r?.description ?? 'success';
  const content: Record<string, unknown> = {};
  if (r?.schema) content[r.jsonType ?? 'application/json'] = { schema: r.schema.json };
  for (const type of r?.type === undefined ? [] : [r.type].flat()) {
    if (type in content) continue; // the view describes it
    // a stored file: JSON as it was stored (any value), text as a string, anything else as bytes
    const json = /^application\/([\w.-]+\+)?json$/.test(type);
    content[type] = { schema: json ? { description: 'the stored JSON document, as it was written' } : { type: 'string', ...(type.startsWith('text/') ? {} : { format: 'binary' }) } };
  }
  return Object.keys(content).length ? { description, content } : { description };
}

function security(m: Route['meta']) {
  if (m.auth === 'none') return [];
  if (m.auth === 'directory') return [{ scimToken: [] }];
  return m.session === 'browser' ? [{ cookieSession: [] }] : [{ bearerAuth: [] }, { cookieSession: [] }];
}

function operation(r: Route) {
  const m = r.meta;
  const params: unknown[] = [...r.pattern.matchAll(/:(\w+)/g)].map((x) => ({ name: x[1], in: 'path', required: true, schema: { type: 'string' } }));
  // The assertion narrows JsonSchema (Record<string, unknown>) to its `properties` and `required`; the
  // rule takes the intersection with an index signature for the same type (a false positive).
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion -- see above
  const q = m.query?.json as (JsonSchema & { properties?: Record<string, JsonSchema>; required?: string[] }) | undefined;
  for (const [name, schema] of Object.entries(q?.properties ?? {})) {
    params.push({ name, in: 'query', required: q?.required?.includes(name) ?? false, schema });
  }
  if (m.auth !== 'none' && m.auth !== 'directory') params.push({ $ref: '#/components/parameters/SvcScope' });
  const responses: Record<string, unknown> = {};
  for (const status of successStatuses(m)) responses[String(status)] = success(m);
  if (m.response?.redirect) {
    responses['302'] = { description: m.response.redirect, headers: { Location: { description: 'where to fetch the answer', schema: { type: 'string', format: 'uri' } } } };
  }
  if (m.body) {
    responses['400'] = errorResponse('invalid_json');
    responses['413'] = errorResponse('payload_too_large');
    responses['422'] = errorResponse('validation_failed');
  } else if (m.query) {
    responses['422'] = errorResponse('validation_failed');
  }
  if (m.auth === 'directory') {
    responses['400'] = scimErrorResponse('invalidFilter, invalidValue, invalidSyntax, invalidPath, noTarget or mutability (scimType)');
    responses['401'] = scimErrorResponse('missing, wrong or rotated directory token');
    responses['403'] = scimErrorResponse('the directory is disabled');
    responses['404'] = scimErrorResponse('no such user in this directory (or resource type, or schema)');
    if (r.method !== 'GET') responses['409'] = scimErrorResponse('uniqueness (userName, externalId, e-mail address), or a full organization or its only owner (no scimType)');
    responses['429'] = scimErrorResponse('too many unknown tokens from this address; Retry-After');
  } else if (m.auth !== 'none') {
    responses['401'] = errorResponse('unauthenticated');
    responses['403'] = errorResponse(m.session === 'browser' ? 'browser_session_required, origin_forbidden' : 'permission_denied, scope_forbidden or another 403 code');
  }
  // any request can be refused before it reaches a route (not valid HTTP 400, headers too large 431, too slow 408)
  responses['4XX'] = { $ref: '#/components/responses/ClientError' };
  return {
    operationId: `${r.method.toLowerCase()}${r.pattern.replace(/[:/{}-](\w)?/g, (_s, c: string | undefined) => (c ? c.toUpperCase() : ''))}`,
    summary: m.summary,
    description: accessText(r),
    tags: m.tags ?? [],
    security: security(m),
    ...(params.length ? { parameters: params } : {}),
    ...(m.body ? { requestBody: { required: true, content: { 'application/json': { schema: m.body.json } } } } : {}),
    responses,
    'x-access': {
      auth: m.auth ?? 'session', scope: m.scope ?? 'none',
      ...(m.session ? { session: m.session } : {}),
      ...(m.permission ? { permission: m.permission } : {}),
      ...(m.projectRoles ? { projectRoles: m.projectRoles } : {}),
      ...(m.orgRoles ? { orgRoles: m.orgRoles } : {}),
      ...(m.systemAdmin ? { systemAdmin: true } : {}),
    },
  };
}

export function buildOpenApi(router: Router, version: string) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of router.routes) {
    const p = r.pattern.replace(/:(\w+)/g, '{$1}');
    (paths[p] ??= {})[r.method.toLowerCase()] = operation(r);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'svc',
      version,
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
      description: 'Production backend for episodic short dramas made with generative models. Errors always have the body '
        + '{ "error": { "code", "message", "details"? } }. Lists take page (from 1) and pageSize (default 50, clamped to 1..200) '
        + 'and answer { items, pagination: { page, pageSize, total } }; a page past the end is an empty page. A request acts in the scope named by its path, else in the one '
        + 'its Svc-Scope header names (project=<id>, workspace=<id> or organization=<id>; this request only), else in the session\'s current '
        + 'scope (PATCH /api/context) or the API client\'s binding. The x-user-id, x-organization-id, x-workspace-id and x-project-id '
        + 'headers are a development bypass honoured only with SVC_ALLOW_DEV_CONTEXT=1. '
        + 'Every integer is a safe integer (|n| <= 2^53 - 1; beyond is 422 validation_failed naming the field). Free-form JSON objects '
        + `(parameters, protocol.workflow, config) nest at most ${JSON_MAX_DEPTH} levels and hold at most ${JSON_MAX_VALUES} values; `
        + `any JSON body nests at most ${BODY_MAX_DEPTH} levels (422 naming the top-level field).`,
    },
    servers: [{ url: '/' }],
    paths,
    components: {
      schemas: { Error: ERROR_SCHEMA, ScimError: SCIM_ERROR_SCHEMA, ...namedViews(paths) },
      parameters: { SvcScope: SCOPE_PARAMETER },
      responses: {
        ClientError: {
          description: 'Any other client error in the error body, among them a request that is not valid HTTP (400 bad_request), '
            + 'headers too large (431 headers_too_large), a request too slow to arrive (408 request_timeout) and 429 rate_limited where limits apply',
          content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
        },
      },
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', description: 'A session token from POST /api/auth/login, or an API client\'s access token from POST /api/oauth/token (client credentials)' },
        scimToken: { type: 'http', scheme: 'bearer', description: 'A SCIM directory\'s token (POST /api/system/identity/directory-syncs or rotate-token), for /scim/v2.0/{directoryId}/*' },
        cookieSession: { type: 'apiKey', in: 'cookie', name: 'svc_session', description: 'Browser session (HttpOnly; Secure; SameSite=Lax); state-changing requests need an allowed Origin' },
      },
    },
  };
}
