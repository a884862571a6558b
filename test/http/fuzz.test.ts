// No input makes a 500. The OpenAPI document drives a fast-check fuzz over EVERY operation it lists:
// inputs generated from each operation's own schemas (valid, boundary) and invalid ones (wrong types,
// huge and unsafe numbers, deep nesting, long strings, unicode with lone surrogates, missing and
// unknown fields, bad ids in the path, malformed JSON, wrong content types), sent over real HTTP to a
// server holding data (a system administrator who owns an organization with a workspace and a project,
// a connector, a job, a task, a season, episode and shot, an asset, a template, an API client, a
// webhook channel, a SCIM directory, an invitation), mostly as that administrator, sometimes without a
// credential or with a wrong one. Every answer is below 500, and every error has the contract's body
// (SCIM routes: the SCIM error body) with a JSON content type. The seed is fixed (SEED), so a failure
// replays; FUZZ_RUNS changes the number of runs per operation (default RUNS) and FUZZ_SEED the seed
// (default 42) for a longer exploration by hand.
//
// Nothing is skipped. Operations that can take the caller's own session or rights away (logout,
// revoking sessions, the identity policy, a user's status or password, memberships, the project's
// lifecycle) run after all the others, and the administrator is provisioned again whenever an answer
// shows its session is gone, so that they cannot hide the rest of the fuzz behind a 401.
import test from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { startTestServer, type TestServer, serversRunTheWorker } from '../helpers/server.ts';
import { grant, login, makeTree, makeUser, type Tree } from '../helpers/factories.ts';

serversRunTheWorker();

const SEED = Number(process.env.FUZZ_SEED ?? 42);
const RUNS = Number(process.env.FUZZ_RUNS ?? 12);

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Schema = Record<string, any>;
interface Op { method: string; path: string; op: Schema; auth: 'none' | 'session' | 'directory' }

/** Operations that may end the caller's session or rights: run last (see the header). */
const LAST = [
  /^POST \/api\/auth\/logout$/, /^DELETE \/api\/auth\/sessions\//, /^POST \/api\/auth\/sessions\/revoke-others$/,
  /^PATCH \/api\/system\/identity\/policy$/, /^(PATCH|POST) \/api\/system\/users\/\{userId\}/, /^POST \/api\/auth\/password$/,
  /^(PUT|DELETE) \/api\/(organizations|workspaces|projects)\/\{\w+\}\/members\//, /^POST \/api\/projects\/\{projectId\}\/lifecycle$/,
  /^PATCH \/api\/projects\/\{projectId\}$/, /^POST \/api\/auth\/mfa\//, /^POST \/api\/invitations\/accept$/,
];

// ---------------------------------------------------------------------------------------------------
// Inputs from JSON Schema

const SAFE = Number.MAX_SAFE_INTEGER;

/** Strings that have broken parsers and databases before. */
const nasty = fc.constantFrom(
  '', ' ', '\u0000', '\ud800', '\udfff', 'e\u0301', '\u202e', '😀'.repeat(50), '%', '%00', '../../etc/passwd', "' OR 1=1 --", '"', '\\',
  '{{prompt}}', '<script>', 'null', 'NaN', '-1', '0', '1e308', '9'.repeat(400), 'x'.repeat(20_001), 'a'.repeat(70_000),
  '2024-02-30', '9999-12-31T23:59:59Z', 'http://169.254.169.254/', 'javascript:alert(1)', 'a@b', '*', '=cmd|', '\n\r\t',
);
const hugeNumber = fc.constantFrom(1e308, -1e308, 2 ** 63, -(2 ** 63), 2 ** 53, SAFE, -SAFE, 0.5, -0, 1e-300, 4294967296);
/** A JSON value nested `levels` deep, as text (building it and JSON.stringify would recurse). */
const deepText = fc.integer({ min: 30, max: 3000 }).map((n) => '['.repeat(n) + ']'.repeat(n));

function fromSchema(s: Schema | undefined, depth = 0): fc.Arbitrary<Json> {
  if (!s || depth > 6) return fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<Json>;
  if (Array.isArray(s.enum)) return fc.constantFrom(...(s.enum as Json[]));
  if (Array.isArray(s.anyOf)) return fc.oneof(...(s.anyOf as Schema[]).map((x) => fromSchema(x, depth + 1)));
  switch (s.type) {
    case 'string': return stringOf(s);
    case 'integer': {
      const min = Math.max(-SAFE, s.minimum ?? -1000), max = Math.min(SAFE, s.maximum ?? 1000);
      return fc.oneof(fc.integer({ min: Math.max(min, -1e9), max: Math.min(max, 1e9) }), fc.constantFrom(min, max));
    }
    case 'number': return fc.double({ min: s.minimum ?? -1e6, max: s.maximum ?? 1e6, noNaN: true, noDefaultInfinity: true });
    case 'boolean': return fc.boolean();
    case 'null': return fc.constant(null);
    case 'array': return fc.array(fromSchema(s.items, depth + 1), { minLength: s.minItems ?? 0, maxLength: Math.max(s.minItems ?? 0, Math.min(s.maxItems ?? 3, 3)) });
    case 'object': {
      if (s.properties && Object.keys(s.properties).length > 0) {
        const props = Object.fromEntries(Object.entries(s.properties as Record<string, Schema>).map(([k, v]) => [k, fromSchema(v, depth + 1)]));
        return fc.record(props, { requiredKeys: (s.required ?? []) as string[] });
      }
      const value = typeof s.additionalProperties === 'object' ? fromSchema(s.additionalProperties, depth + 1) : fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<Json>;
      return fc.dictionary(fc.string({ maxLength: 12 }), value, { maxKeys: 4 });
    }
    default: return fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<Json>;
  }
}

function stringOf(s: Schema): fc.Arbitrary<string> {
  const minLength = s.minLength ?? 0, maxLength = Math.max(minLength, Math.min(s.maxLength ?? 40, 40));
  if (s.format === 'email') return fc.emailAddress();
  if (s.format === 'date') return fc.date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10));
  if (s.format === 'uri') return fc.webUrl();
  if (s.pattern) {
    try {
      return fc.stringMatching(new RegExp(s.pattern)).filter((x) => x.length >= minLength && x.length <= (s.maxLength ?? 10_000));
    } catch { /* a pattern fast-check cannot read: plain strings below */ }
  }
  return fc.oneof(
    fc.string({ minLength, maxLength }),
    fc.string({ minLength, maxLength, unit: 'grapheme' }),
    fc.constant('x'.repeat(Math.min(s.maxLength ?? 10_000, 10_000))),
  );
}

/** Anything of the wrong kind, for one field. */
const wrong: fc.Arbitrary<Json> = fc.oneof(
  nasty, hugeNumber, fc.boolean(), fc.constant(null), fc.constant([]), fc.constant({}),
  fc.jsonValue({ maxDepth: 4 }), fc.array(nasty, { maxLength: 3 }), fc.dictionary(nasty, nasty, { maxKeys: 3 }),
) as unknown as fc.Arbitrary<Json>;

/** A valid body, or one broken in one place: a field wrong, one dropped, one unknown added. */
function bodyOf(schema: Schema | undefined): fc.Arbitrary<Json> {
  const valid = fromSchema(schema);
  const keys = Object.keys(schema?.properties ?? {});
  const broken = keys.length === 0 ? wrong : fc.tuple(valid, fc.constantFrom(...keys), wrong, fc.nat(2)).map(([v, k, w, how]) => {
    const o = (typeof v === 'object' && v !== null && !Array.isArray(v) ? { ...v } : {}) as Record<string, Json>;
    if (how === 0) o[k] = w;
    else if (how === 1) delete o[k];
    else o[`${k}Unknown`] = w;
    return o;
  });
  return fc.oneof({ arbitrary: valid, weight: 3 }, { arbitrary: broken, weight: 3 }, { arbitrary: wrong, weight: 1 });
}

/** How the body travels: JSON of a value, a deeply nested text inside a field, malformed text, another type. */
type Sent = { kind: 'json'; value: Json } | { kind: 'deep'; field: string; text: string; value: Json } | { kind: 'raw'; text: string; type: string } | { kind: 'none' };

function sentOf(schema: Schema | undefined): fc.Arbitrary<Sent> {
  const fields = Object.keys(schema?.properties ?? {});
  return fc.oneof(
    { arbitrary: bodyOf(schema).map((value): Sent => ({ kind: 'json', value })), weight: 12 },
    { arbitrary: fc.tuple(fromSchema(schema), fc.constantFrom('x', ...fields), deepText).map(([value, field, text]): Sent => ({ kind: 'deep', field, text, value })), weight: 2 },
    { arbitrary: fc.tuple(fc.constantFrom('{', '{"a":', 'nul', '[1,]', '\u0000', '{"a":1}{"b":2}', '""', '1e999', '{"__proto__":{"x":1}}'), fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded', 'application/merge-patch+json'))
      .map(([text, type]): Sent => ({ kind: 'raw', text, type })), weight: 2 },
    { arbitrary: fc.constant<Sent>({ kind: 'none' }), weight: 1 },
  );
}

/** A query string: each declared parameter valid, wrong or absent, and sometimes an undeclared one. */
function queryOf(params: Schema[]): fc.Arbitrary<string> {
  const one = (p: Schema) => fc.option(fc.oneof(
    { arbitrary: fromSchema(p.schema).map((v) => (typeof v === 'string' ? v : JSON.stringify(v))), weight: 3 },
    { arbitrary: fc.oneof(nasty, hugeNumber.map(String), fc.constantFrom('1e300', '-1', '0', '1.5', 'true', '[]', '1000000000000000000')), weight: 2 },
  ), { nil: undefined, freq: 3 });
  const entries = params.map((p) => one(p).map((v) => (v === undefined ? null : [p.name as string, v] as const)));
  return fc.tuple(fc.tuple(...entries), fc.option(fc.tuple(nasty, nasty), { freq: 4 })).map(([xs, extra]) => {
    const sp = new URLSearchParams();
    for (const e of xs) if (e) sp.append(e[0], e[1]);
    if (extra) sp.append(extra[0], extra[1]);
    const s = sp.toString();
    return s ? `?${s}` : '';
  });
}

// ---------------------------------------------------------------------------------------------------
// The world the fuzz runs in

interface World { s: TestServer; tree: Tree; admin: { token: string }; ids: Record<string, string>; scimToken: string }

async function provisionAdmin(s: TestServer, tree: Tree): Promise<string> {
  const u = await makeUser(s, { systemAdmin: true });
  await grant(s, u.id, 'organization', tree.organizationId, 'org_owner');
  const token = await login(s, u);
  const r = await s.call('PATCH', '/api/context', { token, body: { projectId: tree.projectId } });
  assert.equal(r.status, 200, r.text);
  return token;
}

async function makeWorld(t: test.TestContext): Promise<World> {
  // the fuzz's wrong logins must not lock the test's own logins out by address
  const s = await startTestServer(t, { SVC_WORKER_POLL_MS: '60000', SVC_LOGIN_MAX_FAILURES_PER_ADDRESS: '100000' });
  const tree = await makeTree(s);
  const token = await provisionAdmin(s, tree);
  const ids: Record<string, string> = { organizationId: tree.organizationId, workspaceId: tree.workspaceId, projectId: tree.projectId };
  const make = async (name: string, method: string, path: string, body: unknown, pick: (b: any) => string | undefined = (b) => b.id) => {
    const r = await s.call(method, path, { token, body });
    assert.ok(r.status === 200 || r.status === 201, `${method} ${path}: ${r.text}`);
    const id = pick(r.body);
    assert.ok(id, `${name} from ${r.text}`);
    ids[name] = id;
    return r.body;
  };
  // a member who is not the administrator: the fuzz's userId and sessionId, so that it does not lock itself out
  const other = await makeUser(s);
  await grant(s, other.id, 'project', tree.projectId, 'project_editor');
  ids.userId = other.id;
  await login(s, other);
  ids.sessionId = (await s.db.get<{ id: string }>('SELECT id FROM sessions WHERE user_id = ? LIMIT 1', other.id))!.id;
  await make('connectorId', 'POST', '/api/platform/models/register', {
    label: 'Local', endpoint: 'http://127.0.0.1:9', kind: 'openai-compatible', capability: ['image', 'video', 'tts', 'chat', 'prompt'], costMode: 'local',
    protocol: { models: { image: 'm', video: 'm', tts: 'm', chat: 'm' } },
  });
  await make('taskId', 'POST', '/api/tasks', { title: 'A task' });
  await make('seasonId', 'POST', '/api/production/seasons', { title: 'Season' });
  await make('episodeId', 'POST', `/api/production/seasons/${ids.seasonId}/episodes`, { title: 'Episode' });
  await make('shotId', 'POST', '/api/production/shots', { episodeId: ids.episodeId, title: 'Shot', prompt: 'a lantern' });
  await make('jobId', 'POST', '/api/jobs', { kind: 'image', prompt: 'a lantern', shotId: ids.shotId });
  await make('assetId', 'POST', '/api/assets', { kind: 'image', name: 'Hero' });
  await make('templateId', 'POST', '/api/workflows/templates', { name: 'T', templateKey: 'fuzz', status: 'active', steps: [{ key: 'img', label: 'Image', jobKind: 'image' }] });
  await make('clientId', 'POST', '/api/system/api-clients', { name: 'Fuzz client', organizationId: tree.organizationId, permissions: ['task:view'] }, (b) => b.client?.id);
  await make('channelId', 'POST', '/api/system/notifications/channels', { organizationId: tree.organizationId, kind: 'log' }, (b) => b.channel?.id);
  const dir = await make('directoryId', 'POST', '/api/system/identity/directory-syncs', { name: 'Fuzz directory', organizationId: tree.organizationId }, (b) => b.directory?.id);
  await make('invitationId', 'POST', `/api/organizations/${tree.organizationId}/invitations`, { email: 'invitee@example.test', role: 'org_member' }, (b) => b.invitation?.id ?? b.id);
  const flags = await s.call('GET', '/api/system/feature-flags', { token });
  ids.flagKey = flags.body.items?.[0]?.key ?? flags.body[0]?.key ?? 'unknown';
  const audit = await s.call('GET', '/api/audit', { token });
  ids.auditId = audit.body.auditLog[0].id;
  ids.revision = '1';
  ids.position = '1';
  ids.category = 'jobs';
  ids.resourceTypeId = 'User';
  ids.schemaId = 'urn:ietf:params:scim:schemas:core:2.0:User';
  return { s, tree, admin: { token }, ids, scimToken: dir.token };
}

// ---------------------------------------------------------------------------------------------------
// One request and what every answer must be

const badId = fc.oneof(nasty, fc.string({ minLength: 1, maxLength: 80 }), fc.constantFrom('0', '-1', '1e300', '18446744073709551616', 'prj_', 'usr_x', 'a'.repeat(500)));

interface Input { path: Record<string, string | null>; query: string; body: Sent; auth: 'caller' | 'none' | 'wrong' }

function inputOf(o: Op, ids: Record<string, string>): fc.Arbitrary<Input> {
  const names = [...o.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
  const path = fc.tuple(...names.map((n) => fc.oneof(
    { arbitrary: fc.constant<string | null>(ids[n] ?? null), weight: 4 },
    { arbitrary: badId, weight: 1 },
  ))).map((vals) => Object.fromEntries(names.map((n, i) => [n, vals[i]])));
  const query = queryOf((o.op.parameters ?? []).filter((p: Schema) => p.in === 'query'));
  const schema = o.op.requestBody?.content?.['application/json']?.schema as Schema | undefined;
  const body = o.method === 'GET' || o.method === 'DELETE' ? fc.constant<Sent>({ kind: 'none' }) : sentOf(schema);
  const auth = fc.constantFrom<Input['auth']>('caller', 'caller', 'caller', 'caller', 'caller', 'caller', 'none', 'wrong');
  return fc.record({ path, query, body, auth });
}

/** A path segment, percent-encoded; a lone surrogate is sent as its (invalid UTF-8) WTF-8 bytes. */
function pathSegment(v: string): string {
  return Array.from(v, (ch) => {
    const c = ch.charCodeAt(0);
    if (ch.length === 1 && c >= 0xd800 && c <= 0xdfff) {
      return [0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f)].map((b) => `%${b.toString(16).toUpperCase()}`).join('');
    }
    return encodeURIComponent(ch);
  }).join('');
}

async function send(w: World, o: Op, input: Input) {
  const url = o.path.replace(/\{(\w+)\}/g, (_m, n: string) => pathSegment(input.path[n] ?? 'unknown')) + input.query;
  const headers: Record<string, string> = {};
  const token = o.auth === 'directory' ? w.scimToken : w.admin.token;
  if (input.auth === 'caller') headers.authorization = `Bearer ${token}`;
  if (input.auth === 'wrong') headers.authorization = 'Bearer svc_not_a_token';
  let raw: string | undefined;
  const b = input.body;
  if (b.kind === 'json') raw = JSON.stringify(b.value);
  else if (b.kind === 'deep') {
    const base = typeof b.value === 'object' && b.value !== null && !Array.isArray(b.value) ? b.value : {};
    raw = JSON.stringify({ ...base, [b.field]: '__DEEP__' }).replace('"__DEEP__"', b.text);
  } else if (b.kind === 'raw') raw = b.text;
  if (raw !== undefined) headers['content-type'] = b.kind === 'raw' ? b.type : o.auth === 'directory' ? 'application/scim+json' : 'application/json';
  let res: Response, text: string;
  try {
    res = await fetch(w.s.url + url, { method: o.method, headers, body: raw, redirect: 'manual', signal: AbortSignal.timeout(20_000) });
    text = await res.text();
  } catch (err) {
    throw new Error(`${(err as Error).message} <- ${o.method} ${url.slice(0, 300)} (${raw?.length ?? 0} bytes of ${b.kind} body)`, { cause: err });
  }
  return { url, status: res.status, type: res.headers.get('content-type') ?? '', text, sentAuth: input.auth };
}

/** The contract for one answer; a string saying what is wrong, or null. */
function verdict(o: Op, a: Awaited<ReturnType<typeof send>>): string | null {
  if (a.status >= 500) return `${a.status}`;
  // refused before any route, with the contract's body whatever the route's own rules: a request line
  // over Node's limit (431), a path that names no route (an id that is not UTF-8 or holds a slash),
  // or whose empty id segment makes it another route's path (405)
  const unrouted = a.status === 431 || a.status === 405 || (a.status === 404 && a.text.includes('"no route for '));
  if (!unrouted && o.auth === 'session' && a.sentAuth !== 'caller' && a.status !== 401) return `without a valid credential: ${a.status}, not 401`;
  if (a.status < 400) return null;
  if (o.auth === 'directory' && a.status !== 431) {
    // SCIM answers its own error body (RFC 7644 section 3.12), unrouted requests under /scim included
    if (!/^application\/scim\+json/.test(a.type)) return `SCIM error content type ${a.type}`;
    const b = JSON.parse(a.text);
    if (!b.schemas?.includes('urn:ietf:params:scim:api:messages:2.0:Error') || b.status !== String(a.status)) return 'not a SCIM error body';
    return null;
  }
  if (!/^application\/json/.test(a.type)) return `error content type ${a.type}`;
  let b: any;
  try {
    b = JSON.parse(a.text);
  } catch {
    return 'error body is not JSON';
  }
  const e = b?.error;
  if (typeof e !== 'object' || e === null || typeof e.code !== 'string' || !/^[a-z][a-z0-9_]*$/.test(e.code) || typeof e.message !== 'string') {
    return 'error body is not { error: { code (snake_case), message } }';
  }
  if (e.details !== undefined && (typeof e.details !== 'object' || e.details === null)) return 'details is not an object';
  if (e.code === 'validation_failed' && typeof e.details?.fields !== 'object') return 'validation_failed without details.fields';
  return null;
}

test('fuzz: every operation of the OpenAPI document, generated valid, boundary and invalid inputs: no 5xx, every error in the contract', { timeout: 300_000 }, async (t) => {
  const started = performance.now();
  const w = await makeWorld(t);
  const doc = (await w.s.call('GET', '/api/openapi.json')).body;
  const ops: Op[] = [];
  for (const [path, byMethod] of Object.entries(doc.paths as Record<string, Record<string, Schema>>)) {
    for (const [method, op] of Object.entries(byMethod)) ops.push({ method: method.toUpperCase(), path, op, auth: op['x-access'].auth });
  }
  const last = (o: Op) => LAST.some((re) => re.test(`${o.method} ${o.path}`));
  ops.sort((a, b) => Number(last(a)) - Number(last(b)));
  assert.ok(ops.length >= 200, `${ops.length} operations`);

  let requests = 0;
  const slow: string[] = [];
  const statuses = new Map<number, number>();
  const failures: string[] = [];
  const only = process.env.FUZZ_ONLY ? new RegExp(process.env.FUZZ_ONLY) : null; // replaying one operation by hand
  for (const [i, o] of ops.entries()) {
    if (only && !only.test(`${o.method} ${o.path}`)) continue;
    const details = await fc.check(fc.asyncProperty(inputOf(o, w.ids), async (input) => {
      const t0 = performance.now();
      const a = await send(w, o, input);
      const ms = performance.now() - t0;
      if (ms > 1000) slow.push(`${Math.round(ms)} ms ${o.method} ${a.url.slice(0, 300)} -> ${a.status}`);
      requests++;
      statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
      const bad = verdict(o, a);
      if (bad) throw new Error(`${bad} <- ${o.method} ${a.url.length > 200 ? `${a.url.slice(0, 200)}... (${a.url.length} characters)` : a.url} (${a.sentAuth}): ${a.text.slice(0, 300)}`);
      // the administrator's session was ended by what this operation may do: provision another
      if (o.auth !== 'directory' && input.auth === 'caller' && (a.status === 401 || /password_change_required|mfa_/.test(a.text.slice(0, 200)))) {
        w.admin.token = await provisionAdmin(w.s, w.tree);
      }
    }), { seed: SEED + i, numRuns: RUNS, endOnFailure: true });
    if (details.failed) failures.push(`${o.method} ${o.path} (seed ${SEED + i}): ${String((details.errorInstance as Error)?.message ?? details.errorInstance).slice(0, 500)}`);
  }
  const logged = w.s.logs.filter((l) => l.includes('"level":"error"'));
  const seconds = (performance.now() - started) / 1000;
  for (const line of slow) t.diagnostic(`slow: ${line}`);
  t.diagnostic(`${ops.length} operations, ${requests} requests in ${seconds.toFixed(1)} s; statuses ${JSON.stringify(Object.fromEntries([...statuses].sort((x, y) => x[0] - y[0])))}`);
  // the fuzz reached the handlers: a good share of the answers are successes
  if (!only) assert.ok([...statuses].filter(([k]) => k < 300).reduce((n, [, c]) => n + c, 0) >= requests * 0.1, 'at least a tenth of the answers are 2xx');
  assert.deepEqual(failures, [], failures.join('\n'));
  assert.deepEqual(logged.slice(0, 5), [], 'nothing was logged as an unhandled error');
  if (!only) assert.ok(requests >= ops.length * RUNS * 0.9, `${requests} requests`);
});
