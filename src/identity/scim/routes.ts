// SCIM 2.0 endpoints under /scim/v2.0/:directoryId. They skip session authentication (auth 'none')
// and authenticate here with the directory's bearer token: looked up by its SHA-256; a token of
// another directory is refused (401, audited as access.denied) and a disabled directory is 403. An
// unknown token counts against the client address's failed-attempt limit (src/gate/ratelimit.ts):
// over it, 429 with Retry-After in the SCIM error shape.
// Every answer, errors included (src/identity/scim/errors.ts, from the service's one error boundary), is
// application/scim+json in the SCIM shapes.
import type { Ctx } from '../../directory/context.ts';
import type * as o from '../../kernel/view.ts';
import { createContext } from '../../directory/context.ts';
import { addressLimited } from '../sessions/service.ts';
import { record } from '../../platform/audit/service.ts';
import { readJson } from '../../http/request.ts';
import type { Call, Handler, Reply, Router } from '../../http/router.ts';
import { sha256Hex } from '../../kernel/ids.ts';
import { serviceOrigin } from './admin.ts';
import {
  MAX_RESULTS, ResourceTypeListView, ResourceTypeView, SchemaListView, SchemaView, ServiceProviderConfigView, resourceTypes, schemaList,
  serviceProviderConfig, userResourceType, userSchema,
} from './discovery.ts';
import { SCIM_MEDIA_TYPE } from './errors.ts';
import { ScimError, invalidSyntax, invalidValue, scimReply, scimUnauthorized } from './errors.ts';
import { CORE_USER_SCHEMA, parseUserFilter } from './filter.ts';
import { applyPatch } from './patch.ts';
import { projectionOf } from './attributes.ts';
import { ScimUserView, listResponse, listView, presentScimUser, scimBase, userLocation, type ScimUser } from './present.ts';
import { userFromPayload } from './resource.ts';
import { changeUser, createScimUser, deleteUser, getUser, listUsers } from './service.ts';
import { directoryById, directoryByTokenHash, type DirectoryRow, type ScimUserRow } from './store.ts';

const DEFAULT_COUNT = 100;

interface ScimCall {
  call: Call; dir: DirectoryRow; ctx: Ctx; base: string;
  /** A User as this request asks for it (attributes / excludedAttributes, src/identity/scim/attributes.ts). */
  show: (row: ScimUserRow) => ScimUser;
}
interface ScimAnswer<R> { status: number; body?: R; headers?: Record<string, string> }

/** The directory whose token the request carries, when it is the directory of the path and active. */
async function authenticateDirectory(call: Call): Promise<DirectoryRow> {
  const { db } = call.ctx;
  const m = /^Bearer\s+(\S{20,300})\s*$/i.exec(call.req.headers.authorization ?? '');
  if (!m) throw scimUnauthorized('Authorization: Bearer <directory token> is required');
  // A wrong token counts against the client address's failed-attempt limit; over it, no lookup.
  const dir = await addressLimited(call.ctx, async () => {
    const found = await directoryByTokenHash(db, sha256Hex(m[1]));
    if (!found) throw scimUnauthorized('the bearer token is not valid');
    return found;
  });
  if (dir.id !== call.params.directoryId) {
    await record(call.ctx, {
      action: 'access.denied', targetType: 'scim_directory', targetId: call.params.directoryId, result: 'denied',
      organizationId: (await directoryById(db, call.params.directoryId))?.organization_id ?? null, workspaceId: null, projectId: null,
      actorName: `SCIM directory ${dir.name} (${dir.id})`,
      metadata: { route: `${call.req.method} ${call.path}`, reason: 'scim_token_of_another_directory', tokenDirectoryId: dir.id, tokenOrganizationId: dir.organization_id },
    });
    throw scimUnauthorized('the bearer token is not valid for this directory');
  }
  if (dir.status !== 'active') throw new ScimError(403, 'the directory is disabled');
  return dir;
}

/** The directory acting in its organization: audit records name it as the actor. */
function directoryContext(base: Ctx, dir: DirectoryRow): Ctx {
  return createContext({
    db: base.db, config: base.config, log: base.log, requestId: base.requestId, ip: base.ip, userAgent: base.userAgent,
    actor: { type: 'system', userId: null, name: `SCIM directory ${dir.name} (${dir.id})`, email: null, isSystemAdmin: false, sessionId: null, sessionKind: null },
    scope: { organizationId: dir.organization_id, workspaceId: null, projectId: null },
  });
}

/** Authenticates, runs the handler and answers application/scim+json; errors reach src/app.ts's boundary, which answers them in SCIM's shape. */
function scim<R>(handler: (s: ScimCall) => ScimAnswer<R> | Promise<ScimAnswer<R>>): Handler<unknown, unknown, R> {
  return async (call) => {
    const dir = await authenticateDirectory(call);
    const base = scimBase(serviceOrigin(call.req, call.ctx.config), dir.id);
    const shape = projectionOf(call.searchParams); // before anything is written: a malformed one is 400 and changes nothing
    // A projection only leaves out what the view has optional (schemas and id always stay).
    const show = (row: ScimUserRow) => shape(presentScimUser(row, base)) as ScimUser;
    const a = await handler({ call, dir, ctx: directoryContext(call.ctx, dir), base, show });
    return scimReply(a.status, a.body, a.headers) as Reply<R>;
  };
}

async function body(call: Call): Promise<unknown> {
  const b = await readJson(call.req, call.ctx.config.maxBodyBytes);
  if (b === undefined) throw invalidSyntax('a JSON body is required');
  return b;
}

function intParam(sp: URLSearchParams, name: string, dflt: number): number {
  const raw = sp.get(name);
  if (raw === null || raw.trim() === '') return dflt;
  if (!/^-?\d{1,9}$/.test(raw.trim())) throw invalidValue(`${name} must be an integer`);
  return Number(raw);
}

/** Every route answering Users takes these (RFC 7644 section 3.9). */
const PARTIAL = 'attributes or excludedAttributes (comma-separated, e.g. userName,name.givenName,emails.value; any case; id and schemas always returned) select what each User carries';

export function bindScimRoutes(router: Router): void {
  const r = router.module(import.meta.url);
  const meta = (summary: string) => ({ summary: `${summary} (SCIM 2.0)`, tags: ['scim'], auth: 'directory' as const });
  /** A route answering `view` as application/scim+json. */
  const answers = <R>(summary: string, description: string, view: o.View<R>, status = 200) =>
    ({ ...meta(summary), response: { status, description, schema: view, jsonType: SCIM_MEDIA_TYPE } });
  const UserList = listView(ScimUserView, 'A page of the directory\u2019s Users');

  r.get('/scim/v2.0/:directoryId/Users', answers(`The directory\u2019s users: ListResponse; filter (userName, externalId, id, displayName, emails.value with eq, sw or co; one comparison), startIndex from 1, count default ${DEFAULT_COUNT}, at most ${MAX_RESULTS}; ${PARTIAL}.`, 'a ListResponse of Users', UserList),
    scim(async ({ call, dir, ctx, show }) => {
      const sp = call.searchParams;
      const text = sp.get('filter');
      const filter = text === null || text.trim() === '' ? null : parseUserFilter(text);
      const startIndex = Math.max(1, intParam(sp, 'startIndex', 1));
      const count = Math.min(MAX_RESULTS, Math.max(0, intParam(sp, 'count', DEFAULT_COUNT)));
      const { rows, total } = await listUsers(ctx, dir, filter, startIndex, count);
      return { status: 200, body: listResponse(rows.map(show), total, startIndex) };
    }));

  r.post('/scim/v2.0/:directoryId/Users', answers(`Provision a user into the directory\u2019s organization (an account with that e-mail address is linked); 409 uniqueness; ${PARTIAL}.`, 'the User, with Location', ScimUserView, 201),
    scim(async ({ call, dir, ctx, base, show }) => {
      const row = await createScimUser(ctx, dir, userFromPayload(await body(call), true));
      return { status: 201, body: show(row), headers: { location: userLocation(base, row.user_id) } };
    }));

  r.get('/scim/v2.0/:directoryId/Users/:userId', answers(`One of the directory\u2019s users (any other id: 404); ${PARTIAL}.`, 'the User', ScimUserView),
    scim(async ({ call, dir, ctx, show }) => ({ status: 200, body: show(await getUser(ctx, dir, call.params.userId)) })));

  r.put('/scim/v2.0/:directoryId/Users/:userId', answers(`Replace a user (absent attributes are cleared; absent active keeps its value); ${PARTIAL}.`, 'the User', ScimUserView),
    scim(async ({ call, dir, ctx, show }) => {
      const b = await body(call);
      return { status: 200, body: show(await changeUser(ctx, dir, call.params.userId, (cur) => userFromPayload(b, cur.active))) };
    }));

  r.patch('/scim/v2.0/:directoryId/Users/:userId', answers(`PatchOp: add, replace, remove (any case); active false deactivates, true reactivates; ${PARTIAL}.`, 'the User', ScimUserView),
    scim(async ({ call, dir, ctx, show }) => {
      const b = await body(call);
      return { status: 200, body: show(await changeUser(ctx, dir, call.params.userId, (cur) => applyPatch(cur, b))) };
    }));

  r.delete('/scim/v2.0/:directoryId/Users/:userId', { ...meta('Deprovision: the organization memberships become inactive, sessions are revoked, the SCIM user is gone (a second DELETE is 404).'), response: { status: 204, description: 'deprovisioned; no body' } },
    scim(async ({ call, dir, ctx }) => {
      await deleteUser(ctx, dir, call.params.userId);
      return { status: 204 };
    }));

  r.get('/scim/v2.0/:directoryId/ServiceProviderConfig', answers('What this service provider supports: PATCH, filter, attributes/excludedAttributes; no bulk, sort, etag or password change.', 'the ServiceProviderConfig', ServiceProviderConfigView),
    scim(({ base }) => ({ status: 200, body: serviceProviderConfig(base) })));
  r.get('/scim/v2.0/:directoryId/ResourceTypes', answers('The resource types (User alone: Groups are not supported).', 'a ListResponse of ResourceTypes', ResourceTypeListView),
    scim(({ base }) => ({ status: 200, body: resourceTypes(base) })));
  r.get('/scim/v2.0/:directoryId/ResourceTypes/:resourceTypeId', answers('One resource type (User; any other: 404).', 'the ResourceType', ResourceTypeView),
    scim(({ call, base }) => {
      if (call.params.resourceTypeId !== 'User') throw new ScimError(404, 'the only resource type is User');
      return { status: 200, body: userResourceType(base) };
    }));
  r.get('/scim/v2.0/:directoryId/Schemas', answers('The schemas (the core User schema, with the attributes this service keeps).', 'a ListResponse of Schemas', SchemaListView),
    scim(({ base }) => ({ status: 200, body: schemaList(base) })));
  r.get('/scim/v2.0/:directoryId/Schemas/:schemaId', answers('One schema (the core User schema; any other: 404).', 'the Schema', SchemaView),
    scim(({ call, base }) => {
      if (call.params.schemaId !== CORE_USER_SCHEMA) throw new ScimError(404, `the only schema is ${CORE_USER_SCHEMA}`);
      return { status: 200, body: userSchema(base) };
    }));
}
