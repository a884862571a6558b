// SCIM discovery (RFC 7644 section 4, RFC 7643 sections 5-7): what this service provider supports
// (PATCH, filters and attributes/excludedAttributes; no bulk, sort, etag, password change or POST
// .search), its one resource type (User: no Groups) and the User schema's attributes it keeps; and
// the SCIM error of a request no SCIM route takes.
import * as o from '../../kernel/view.ts';
import { ScimError } from './errors.ts';
import { CORE_USER_SCHEMA } from './filter.ts';
import { listResponse, listView } from './present.ts';

const SPC_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig';
const RESOURCE_TYPE_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:ResourceType';
const SCHEMA_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Schema';
export const MAX_RESULTS = 200;

const flag = () => o.object({ supported: o.bool() });
const schemas = o.array(o.text());
const meta = o.object({ resourceType: o.text(), location: o.text({ format: 'uri' }) });

export const ServiceProviderConfigView = o.named('ScimServiceProviderConfig', o.object({
  schemas,
  patch: flag(), bulk: o.object({ supported: o.bool(), maxOperations: o.int(), maxPayloadSize: o.int() }),
  filter: o.object({ supported: o.bool(), maxResults: o.int('the most Users one page answers') }),
  changePassword: flag(), sort: flag(), etag: flag(),
  authenticationSchemes: o.array(o.object({ type: o.text(), name: o.text(), primary: o.bool(), specUri: o.text({ format: 'uri' }), description: o.text() })),
  meta,
}, 'What this SCIM service provider supports (RFC 7643 section 5)'));

export const ResourceTypeView = o.named('ScimResourceType', o.object({
  schemas, id: o.text(), name: o.text(), endpoint: o.text(), description: o.text(), schema: o.text(), meta,
}, 'A SCIM resource type (RFC 7643 section 6): User is the only one'));

export const SchemaView = o.named('ScimSchema', o.object({
  schemas, id: o.text(), name: o.text(), description: o.text(),
  attributes: o.array(o.anyObject('an attribute definition (RFC 7643 section 7)')), meta,
}, 'A SCIM schema (RFC 7643 section 7): the core User schema, with the attributes this service keeps'));

export const ResourceTypeListView = listView(ResourceTypeView, 'The resource types (User alone)');
export const SchemaListView = listView(SchemaView, 'The schemas (the core User schema alone)');

export function serviceProviderConfig(base: string): o.Out<typeof ServiceProviderConfigView> {
  return {
    schemas: [SPC_SCHEMA],
    patch: { supported: true },
    bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
    filter: { supported: true, maxResults: MAX_RESULTS },
    changePassword: { supported: false },
    sort: { supported: false },
    etag: { supported: false },
    authenticationSchemes: [{
      type: 'oauthbearertoken', name: 'Directory bearer token', primary: true, specUri: 'https://www.rfc-editor.org/info/rfc6750',
      description: 'Authorization: Bearer <token> with the token answered when the directory was created or its token rotated',
    }],
    meta: { resourceType: 'ServiceProviderConfig', location: `${base}/ServiceProviderConfig` },
  };
}

export function userResourceType(base: string): o.Out<typeof ResourceTypeView> {
  return {
    schemas: [RESOURCE_TYPE_SCHEMA],
    id: 'User', name: 'User', endpoint: '/Users', description: 'User Account', schema: CORE_USER_SCHEMA,
    meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/User` },
  };
}

const attr = (name: string, type: string, extra: Record<string, unknown> = {}) => ({
  name, type, multiValued: false, required: false, caseExact: false, mutability: 'readWrite', returned: 'default', uniqueness: 'none', ...extra,
});

export function userSchema(base: string): o.Out<typeof SchemaView> {
  return {
    schemas: [SCHEMA_SCHEMA],
    id: CORE_USER_SCHEMA,
    name: 'User',
    description: 'User Account',
    attributes: [
      attr('userName', 'string', { required: true, uniqueness: 'server', description: 'Unique per directory, regardless of case.' }),
      attr('name', 'complex', {
        description: 'The components of the user\u2019s name.',
        subAttributes: [attr('formatted', 'string'), attr('familyName', 'string'), attr('givenName', 'string')],
      }),
      attr('displayName', 'string'),
      attr('emails', 'complex', {
        multiValued: true,
        description: 'E-mail addresses; the primary (else work, else first) one is the account\u2019s address.',
        subAttributes: [
          attr('value', 'string'),
          attr('type', 'string', { canonicalValues: ['work', 'home', 'other'] }),
          attr('primary', 'boolean'),
        ],
      }),
      attr('active', 'boolean', { description: 'false deactivates the user\u2019s memberships in the organization and revokes the sessions.' }),
    ],
    meta: { resourceType: 'Schema', location: `${base}/Schemas/${CORE_USER_SCHEMA}` },
  };
}

export const resourceTypes = (base: string) => listResponse([userResourceType(base)], 1, 1);
export const schemaList = (base: string) => listResponse([userSchema(base)], 1, 1);

const OFFERED = 'this service provider offers /Users, /ServiceProviderConfig, /ResourceTypes and /Schemas';

/**
 * The SCIM error for a request no SCIM route takes (src/app.ts): 404 for /Groups (not supported:
 * ResourceTypes lists User alone) and any unknown path, 501 for /Bulk, /Me and POST .search (RFC 7644
 * sections 3.7, 3.11 and 3.4.3: operations this provider does not implement), 405 with Allow for
 * another method of a known path.
 */
export function unroutedScimRequest(method: string, path: string, allow: string[] | null): ScimError {
  const segs = path.split('/').filter((x) => x !== '');
  const resource = segs[3]?.toLowerCase();
  if (segs[1] !== 'v2.0' || segs.length < 3) return new ScimError(404, 'no SCIM endpoint here: the base URL is /scim/v2.0/{directoryId} (the directory\u2019s scimBaseUrl)');
  if (method === 'POST' && segs[segs.length - 1] === '.search') return new ScimError(501, 'searching with POST .search is not supported; use GET /Users?filter=');
  if (resource === 'groups') return new ScimError(404, 'Groups are not supported: this service provider provisions Users only (ResourceTypes lists User alone)');
  if (resource === 'bulk') return new ScimError(501, 'bulk operations are not supported (ServiceProviderConfig bulk.supported is false)');
  if (resource === 'me') return new ScimError(501, '/Me is not supported: a directory token stands for the directory, not a user');
  if (allow) return new ScimError(405, `${method} is not supported here; allowed: ${allow.join(', ')}`, undefined, { allow: allow.join(', ') });
  return new ScimError(404, `no such SCIM endpoint; ${OFFERED}`);
}
