// API clients (/api/system/api-clients, system administrators) and the token endpoint
// (POST /api/oauth/token: OAuth 2.0 client credentials grant, RFC 6749 section 4.4). The client
// secret is in the answers of create and rotate only; the access token in the token answer only.
import type { IncomingMessage } from 'node:http';
import { json, type Router } from '../../http/router.ts';
import { AppError, invalidJson, type ErrorCodeWithStatus } from '../../kernel/errors.ts';
import { readBody } from '../../http/request.ts';
import type { LoginLimits } from '../sessions/service.ts';
import { pageOf } from '../../kernel/validate.ts';
import { ApiClientCreateBody, ApiClientListQuery } from './schema.ts';
import * as o from '../../kernel/view.ts';
import { AccessTokenView, ApiClientView, ApiClientWithSecretView, presentApiClient } from './present.ts';
import {
  apiClientOrFail, createApiClient, invalidClient, issueAccessToken, listApiClientsOf, revokeApiClient, rotateApiClient, TOKEN_TTL_SECONDS,
} from './service.ts';

export function bindApiClientRoutes(router: Router, limits: LoginLimits): void {
  const r = router.module(import.meta.url);
  const admin = { tags: ['system'], systemAdmin: true, scope: 'none' as const };
  const once = 'the client secret (clientSecret) is in this answer only; exchange it at POST /api/oauth/token';

  r.get('/api/system/api-clients', { ...admin, query: ApiClientListQuery, summary: 'API clients (filter organizationId, status active or revoked), paged; never a secret, only its hint (secretHint) and lastUsedAt.', response: { description: 'a page of API clients', schema: o.page(ApiClientView) } },
    async ({ ctx, query, searchParams }) => json(200, pageOf(searchParams, await listApiClientsOf(ctx, query), presentApiClient)));

  r.post('/api/system/api-clients', {
    ...admin, body: ApiClientCreateBody, response: { status: 201, description: `{ client, clientSecret }; ${once}`, schema: ApiClientWithSecretView },
    summary: 'Create an API client bound to an organization (optionally one workspace or project of it) with a set of base permissions, each held by you in that scope (422 naming those not allowed). Audited as api_client.created.',
  }, async ({ ctx, body }) => {
    const { client, clientSecret } = await createApiClient(ctx, body);
    return json(201, { client: presentApiClient(client), clientSecret });
  });

  r.get('/api/system/api-clients/:clientId', { ...admin, summary: 'One API client (never its secret).', response: { description: 'the API client', schema: ApiClientView } },
    async ({ ctx, params }) => json(200, presentApiClient(await apiClientOrFail(ctx, params.clientId))));

  r.post('/api/system/api-clients/:clientId/rotate', {
    ...admin, response: { description: `{ client, clientSecret }; ${once}`, schema: ApiClientWithSecretView },
    summary: 'A new client secret, answered once: the old secret and every token issued so far are refused (401) at once (revoked client: 409 api_client_revoked). Audited as api_client.rotated.',
  }, async ({ ctx, params }) => {
    const { client, clientSecret } = await rotateApiClient(ctx, params.clientId);
    return json(200, { client: presentApiClient(client), clientSecret });
  });

  r.post('/api/system/api-clients/:clientId/revoke', {
    ...admin, response: { description: 'the revoked API client', schema: ApiClientView },
    summary: 'Revoke the client for good: its tokens are deleted (401 from the next request) and its secret is refused at the token endpoint. Audited as api_client.revoked.',
  }, async ({ ctx, params }) => json(200, presentApiClient(await revokeApiClient(ctx, params.clientId))));

  r.post('/api/oauth/token', {
    tags: ['system', 'auth'], auth: 'none',
    summary: `OAuth 2.0 client credentials (RFC 6749 section 4.4): grant_type=client_credentials with client_id and client_secret in HTTP Basic (Authorization: Basic base64(client_id:client_secret)) or in the body (JSON or application/x-www-form-urlencoded) -> { access_token, token_type: "Bearer", expires_in: ${TOKEN_TTL_SECONDS}, scope: the client's permissions, space separated }. Use it as Authorization: Bearer <access_token>. Wrong, unknown or revoked credentials: 401 invalid_client (failures limited per client id and per address like logins: 429 rate_limited); other malformed requests: 400 invalid_request or unsupported_grant_type.`,
    response: { description: '{ access_token, token_type, expires_in, scope }', schema: AccessTokenView },
  }, async ({ ctx, req }) => {
    const form = await tokenForm(req, ctx.config.maxBodyBytes);
    const basic = basicCredentials(req);
    if (basic && (form.client_id !== undefined || form.client_secret !== undefined)) {
      throw badRequest('invalid_request', 'use one way of client authentication: HTTP Basic or client_id and client_secret in the body, not both');
    }
    if (!form.grant_type) throw badRequest('invalid_request', 'grant_type is required');
    if (form.grant_type !== 'client_credentials') throw badRequest('unsupported_grant_type', 'only grant_type=client_credentials is supported');
    const clientId = basic ? basic.id : form.client_id;
    const secret = basic ? basic.secret : form.client_secret;
    // A client id holding U+0000 names no client (no stored text can hold it): refused before any look-up.
    if (!clientId || !secret || clientId.includes('\u0000')) throw invalidClient(basic !== null);
    return json(200, await issueAccessToken(ctx, limits, clientId, secret, basic !== null), { pragma: 'no-cache', 'cache-control': 'no-store' });
  });
}

const badRequest = (code: ErrorCodeWithStatus<400>, message: string) => new AppError(400, code, message);

type TokenForm = Partial<Record<'grant_type' | 'client_id' | 'client_secret' | 'scope', string>>;

/** The token request's body: JSON object or form-encoded; string members only. */
async function tokenForm(req: IncomingMessage, limit: number): Promise<TokenForm> {
  const buf = await readBody(req, limit);
  if (buf.length === 0) return {};
  const type = String(req.headers['content-type'] ?? 'application/json').split(';')[0].trim().toLowerCase();
  let raw: Record<string, unknown>;
  if (type === 'application/x-www-form-urlencoded') {
    raw = Object.fromEntries(new URLSearchParams(buf.toString('utf8')));
  } else if (type === 'application/json' || type.endsWith('+json')) {
    try {
      raw = JSON.parse(buf.toString('utf8')) as Record<string, unknown>;
    } catch {
      throw invalidJson();
    }
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw badRequest('invalid_request', 'the body must be a JSON object');
  } else {
    throw new AppError(415, 'unsupported_media_type', 'request body must be application/json or application/x-www-form-urlencoded');
  }
  const out: TokenForm = {};
  for (const k of ['grant_type', 'client_id', 'client_secret', 'scope'] as const) {
    const v = raw[k];
    if (v === undefined) continue;
    if (typeof v !== 'string' || v.length > 500) throw badRequest('invalid_request', `${k} must be a string`);
    out[k] = v;
  }
  return out;
}

/** HTTP Basic client authentication (RFC 6749 section 2.3.1: id and secret form-encoded, then base64). */
function basicCredentials(req: IncomingMessage): { id: string; secret: string } | null {
  const h = req.headers.authorization;
  if (h === undefined) return null;
  const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(h);
  if (!m) throw invalidClient(true);
  const decoded = Buffer.from(m[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) throw invalidClient(true);
  try {
    const dec = (s: string) => decodeURIComponent(s.replace(/\+/g, ' '));
    return { id: dec(decoded.slice(0, colon)), secret: dec(decoded.slice(colon + 1)) };
  } catch {
    throw invalidClient(true);
  }
}
