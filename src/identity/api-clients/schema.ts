// Input of the API client routes (/api/system/api-clients) and of the token endpoint
// (/api/oauth/token, OAuth 2.0 client credentials).
import * as v from '../../kernel/validate.ts';
import { PERMISSIONS } from '../../directory/roles.ts';

const id = v.string({ min: 1, max: 64 });

export const ApiClientCreateBody = v.object({
  name: v.string({ min: 1, max: 200 }),
  organizationId: v.string({ min: 1, max: 64, description: 'the organization the client is bound to (fixed)' }),
  workspaceId: v.optional(v.nullable(v.string({ min: 1, max: 64, description: 'binds the client to one workspace of the organization' }))),
  projectId: v.optional(v.nullable(v.string({ min: 1, max: 64, description: 'binds the client to one project of the organization (and of workspaceId when given)' }))),
  permissions: v.array(v.string({ min: 1, max: 100, description: `one of ${PERMISSIONS.join(', ')}` }), { min: 1, max: 100 }),
});

export const ApiClientListQuery = v.object({
  organizationId: v.optional(id),
  status: v.optional(v.oneOf(['active', 'revoked'] as const)),
  page: v.optional(v.int()),
  pageSize: v.optional(v.int()),
}, { allowUnknown: true });
