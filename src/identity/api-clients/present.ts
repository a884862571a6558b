// API client row -> API shape: never the secret or its hash, only its hint.
import * as o from '../../kernel/view.ts';
import type { ApiClientRow } from '../../directory/api-clients/store.ts';
import { permissionsOfRow } from '../../directory/api-clients/actor.ts';

export const TOKEN_PATH = '/api/oauth/token';

export const ApiClientView = o.named('ApiClient', o.object({
  id: o.text(), name: o.text(), organizationId: o.text(),
  workspaceId: o.nullable(o.text({ description: 'bound to this workspace only' })), projectId: o.nullable(o.text({ description: 'bound to this project only' })),
  permissions: o.array(o.text(), 'its base permissions'),
  status: o.oneOf(['active', 'revoked']),
  secretHint: o.text({ description: 'the end of the client secret, to recognize it; never the secret' }),
  tokenUrl: o.text({ description: 'where to exchange the secret for an access token (client credentials)' }),
  createdBy: o.nullable(o.text()), createdAt: o.time(), rotatedAt: o.nullable(o.time()), revokedAt: o.nullable(o.time()), revokedBy: o.nullable(o.text()),
  lastUsedAt: o.nullable(o.time()),
}, 'an API client (service account); never its secret'));

/** Create and rotate: the client and its secret, answered this once. */
export const ApiClientWithSecretView = o.named('ApiClientWithSecret', o.object({
  client: ApiClientView,
  clientSecret: o.text({ description: 'the client secret; in this answer only' }),
}));

/** POST /api/oauth/token (RFC 6749 section 5.1). */
export const AccessTokenView = o.named('AccessToken', o.object({
  access_token: o.text({ description: 'send as Authorization: Bearer' }),
  token_type: o.constant('Bearer'),
  expires_in: o.int('seconds'),
  scope: o.text({ description: 'the client\'s permissions, space separated' }),
}));

export function presentApiClient(c: ApiClientRow): o.Out<typeof ApiClientView> {
  return {
    id: c.id,
    name: c.name,
    organizationId: c.organization_id,
    workspaceId: c.workspace_id,
    projectId: c.project_id,
    permissions: permissionsOfRow(c),
    status: c.status,
    secretHint: c.secret_hint,
    tokenUrl: TOKEN_PATH,
    createdBy: c.created_by,
    createdAt: c.created_at,
    rotatedAt: c.rotated_at,
    revokedAt: c.revoked_at,
    revokedBy: c.revoked_by,
    lastUsedAt: c.last_used_at,
  };
}
