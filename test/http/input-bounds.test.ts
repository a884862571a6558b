// Bounds of free-form input, over real HTTP: free-form JSON (job and dry-run parameters, template step
// parameters, a connector's workflow, a provider's configuration) nests at most JSON_MAX_DEPTH levels and
// holds at most JSON_MAX_VALUES values (422 naming the field, never a 500 from a serializer's recursion);
// any JSON body nests at most BODY_MAX_DEPTH levels; every integer parameter is a safe integer (422
// beyond), so a page number never reaches SQL out of range, and a page past the end is an empty page;
// no input carries U+0000 to the database (PostgreSQL's text cannot hold it).
import test from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../helpers/server.ts';
import { grant, login, makeTree, makeUser } from '../helpers/factories.ts';
import { JSON_MAX_DEPTH, JSON_MAX_VALUES, MAX_PAGE, jsonExcess, pageWindow } from '../../src/kernel/validate.ts';
import { BODY_MAX_DEPTH } from '../../src/http/request.ts';

/** An object nested `levels` deep: { a: { a: ... { a: 1 } } } (levels objects). */
function deep(levels: number): Record<string, unknown> {
  let v: Record<string, unknown> = { a: 1 };
  for (let i = 1; i < levels; i++) v = { a: v };
  return v;
}
/** The JSON text of `prefix` + an array nested `levels` deep, without building it (no recursion either way). */
const deepArrayText = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);

async function world(t: test.TestContext) {
  const s = await startTestServer(t);
  const tree = await makeTree(s);
  const admin = await makeUser(s, { systemAdmin: true });
  await grant(s, admin.id, 'organization', tree.organizationId, 'org_owner');
  const token = await login(s, admin);
  const ctx = await s.call('PATCH', '/api/context', { token, body: { projectId: tree.projectId } });
  assert.equal(ctx.status, 200, ctx.text);
  // a connector for image work (never called: nothing here runs), so jobs and dry-runs get past the connector choice
  const reg = await s.call('POST', '/api/platform/models/register', {
    token, body: { label: 'Local', endpoint: 'http://127.0.0.1:9', kind: 'openai-compatible', capability: ['image'], costMode: 'local', protocol: { models: { image: 'm' } } },
  });
  assert.equal(reg.status, 201, reg.text);
  return { s, tree, token };
}

function assertField(r: { status: number; text: string; body: any }, field: string, reason: RegExp) {
  assert.equal(r.status, 422, `${field}: ${r.text.slice(0, 300)}`);
  assert.equal(r.body.error.code, 'validation_failed');
  assert.match(r.body.error.details.fields[field] ?? '', reason, r.text.slice(0, 300));
}

const registerBody = (workflow: unknown) => ({
  label: 'Comfy', endpoint: 'http://127.0.0.1:9/', kind: 'comfyui', capability: ['image'], costMode: 'local', protocol: { workflow },
});

test('free-form JSON 20,000 levels deep is 422 naming the field on every route that takes it, and nothing is stored', async (t) => {
  const { s, token } = await world(t);
  const text = (body: Record<string, unknown>, field: string, path: string[]) => {
    // { ...body, <field path>: <20,000 levels> } written as text: JSON.stringify itself would overflow
    const marker = '"__DEEP__"';
    let skeleton: unknown = '__DEEP__';
    for (const k of [...path].reverse()) skeleton = k.startsWith('[') ? [skeleton] : { [k]: skeleton };
    return JSON.stringify({ ...body, [field]: skeleton }).replace(marker, `{"x":${deepArrayText(20_000)}}`);
  };
  const cases: Array<[string, string, string, string[], Record<string, unknown>]> = [
    ['POST', '/api/jobs', 'parameters', [], { kind: 'image', prompt: 'p' }],
    ['POST', '/api/adapters/dry-run', 'parameters', [], { kind: 'image', prompt: 'p' }],
    ['POST', '/api/workflows/templates', 'steps', ['[0]', 'parameters'], { name: 'T', templateKey: 'deep' }],
    ['POST', '/api/platform/models/register', 'protocol', ['workflow'], registerBody(undefined)],
  ];
  for (const [method, path, field, inner, body] of cases) {
    let raw = text(body, field, inner);
    if (path === '/api/workflows/templates') raw = raw.replace('[{"parameters"', '[{"key":"s1","label":"S","jobKind":"image","parameters"');
    const r = await s.call(method, path, { token, raw, headers: { 'content-type': 'application/json' } });
    assert.equal(r.status, 422, `${path}: ${r.text.slice(0, 300)}`);
    assert.equal(r.body.error.code, 'validation_failed');
    assert.ok(Object.keys(r.body.error.details.fields).some((k) => k.startsWith(field)), `${path} names ${field}: ${r.text.slice(0, 300)}`);
  }
  const jobs = await s.call('GET', '/api/jobs', { token });
  assert.equal(jobs.body.pagination.total, 0);
  assert.equal(s.logs.filter((l) => l.includes('"level":"error"')).length, 0, 'no unhandled error was logged');
});

test(`free-form JSON: ${JSON_MAX_DEPTH} levels pass, one more is 422 naming the exact field; more than ${JSON_MAX_VALUES} values is 422`, async (t) => {
  const { s, token } = await world(t);
  const ok = await s.call('POST', '/api/adapters/dry-run', { token, body: { kind: 'image', prompt: 'p', parameters: deep(JSON_MAX_DEPTH) } });
  assert.ok(ok.status < 500, ok.text);
  assert.equal(ok.body.error?.details?.fields?.parameters, undefined, ok.text);

  const depthReason = new RegExp(`more than ${JSON_MAX_DEPTH} levels`);
  assertField(await s.call('POST', '/api/adapters/dry-run', { token, body: { kind: 'image', prompt: 'p', parameters: deep(JSON_MAX_DEPTH + 1) } }), 'parameters', depthReason);
  assertField(await s.call('POST', '/api/jobs', { token, body: { kind: 'image', prompt: 'p', parameters: { list: [deep(JSON_MAX_DEPTH)] } } }), 'parameters', depthReason);
  assertField(await s.call('POST', '/api/workflows/templates', {
    token, body: { name: 'T', templateKey: 'deep', steps: [{ key: 's1', label: 'S', jobKind: 'image', parameters: deep(JSON_MAX_DEPTH + 1) }] },
  }), 'steps[0].parameters', depthReason);
  assertField(await s.call('POST', '/api/platform/models/register', { token, body: registerBody(deep(JSON_MAX_DEPTH + 1)) }), 'protocol.workflow', depthReason);

  const wide = { values: Array.from({ length: JSON_MAX_VALUES }, (_, i) => i) };
  assertField(await s.call('POST', '/api/adapters/dry-run', { token, body: { kind: 'image', prompt: 'p', parameters: wide } }), 'parameters', new RegExp(`at most ${JSON_MAX_VALUES} values`));
});

test(`any JSON body deeper than ${BODY_MAX_DEPTH} levels is 422 naming its top-level field, on routes with and without a schema`, async (t) => {
  const { s, token } = await world(t);
  const raw = `{"name":${deepArrayText(BODY_MAX_DEPTH)}}`;
  const r = await s.call('POST', '/api/organizations', { token, raw, headers: { 'content-type': 'application/json' } });
  assertField(r, 'name', new RegExp(`more than ${BODY_MAX_DEPTH} levels`));
  const root = await s.call('PATCH', '/api/context', { token, raw: deepArrayText(100_000), headers: { 'content-type': 'application/json' } });
  assert.equal(root.status, 422, root.text.slice(0, 300));
  assert.ok(root.body.error.details.fields['[0]'], root.text.slice(0, 300));
  // just under the limit it is an ordinary field error
  const fine = await s.call('POST', '/api/organizations', { token, raw: `{"name":${deepArrayText(BODY_MAX_DEPTH - 1)}}`, headers: { 'content-type': 'application/json' } });
  assertField(fine, 'name', /must be a string/);
});

test('U+0000, which PostgreSQL text cannot hold: a path segment names no route, free-form JSON is 422, a client id is invalid_client; never a 500', async (t) => {
  const { s, tree, token } = await world(t);
  // A path segment holding U+0000 names no route (404 not_found), as one that is not UTF-8, signed in or not.
  for (const path of ['/api/projects/%00/members', `/api/organizations/%00/invitations?status=pending`, '/api/workspaces/a%00b/projects',
    '/api/jobs/%00', '/api/production/media-artifacts/art_1%00/content?frame=first', '/api/system/users/%00', '/api/projects/%E0%A4%A/members']) {
    for (const auth of [token, undefined]) {
      const r = await s.call('GET', path, { token: auth });
      assert.deepEqual([r.status, r.body.error?.code], [404, 'not_found'], `${path}: ${r.text.slice(0, 300)}`);
      assert.match(r.body.error.message, /^no route for /);
    }
  }
  const renamed = await s.call('PATCH', `/api/projects/${tree.projectId}%00`, { token, body: { name: 'x' } });
  assert.equal(renamed.status, 404, renamed.text);

  // Free-form JSON holding U+0000 in a string or a key is 422 naming the field; nothing is stored.
  const nul = /must not contain the NUL character/;
  for (const parameters of [{ seed: 'a\u0000b' }, { ['k\u0000']: 1 }, { list: [{ deep: ['\u0000'] }] }]) {
    assertField(await s.call('POST', '/api/jobs', { token, body: { kind: 'image', prompt: 'p', parameters } }), 'parameters', nul);
    assertField(await s.call('POST', '/api/adapters/dry-run', { token, body: { kind: 'image', prompt: 'p', parameters } }), 'parameters', nul);
  }
  assertField(await s.call('POST', '/api/workflows/templates', {
    token, body: { name: 'T', templateKey: 'nul', steps: [{ key: 's1', label: 'S', jobKind: 'image', parameters: { a: '\u0000' } }] },
  }), 'steps[0].parameters', nul);
  assertField(await s.call('POST', '/api/platform/models/register', { token, body: registerBody({ 1: { inputs: { text: '{{prompt}}\u0000' } } }) }), 'protocol.workflow', nul);
  assert.equal((await s.call('GET', '/api/jobs', { token })).body.pagination.total, 0);

  // The token endpoint: a client id holding U+0000 is an unknown client (body or HTTP Basic).
  const form = await s.call('POST', '/api/oauth/token', { body: { grant_type: 'client_credentials', client_id: 'cli_\u0000', client_secret: 'x' } });
  assert.deepEqual([form.status, form.body.error?.code], [401, 'invalid_client'], form.text);
  const basic = await s.call('POST', '/api/oauth/token', {
    headers: { authorization: `Basic ${Buffer.from('cli_%00:x').toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' }, raw: 'grant_type=client_credentials',
  });
  assert.deepEqual([basic.status, basic.body.error?.code], [401, 'invalid_client'], basic.text);
  assert.equal(s.logs.filter((l) => l.includes('"level":"error"')).length, 0, 'no unhandled error was logged');
});

test('jsonExcess walks without recursion and stops at the first excess', () => {
  let v: unknown = 1;
  for (let i = 0; i < 200_000; i++) v = [v];
  assert.deepEqual(jsonExcess(v, 10, Infinity), { depth: true, path: ['[0]'] });
  assert.equal(jsonExcess({ a: [1, { b: 2 }] }, 3, 10), null);
  assert.deepEqual(jsonExcess({ a: [1, { b: 2 }] }, 2, 10), { depth: true, path: ['a'] });
  assert.deepEqual(jsonExcess({ a: [1, 2, 3] }, 5, 4), { values: true });
});

test('a page number that is not a safe integer is 422 on every list; a safe page past the end is an empty page', async (t) => {
  const { s, token, tree } = await world(t);
  const doc = (await s.call('GET', '/api/openapi.json')).body;
  const ids: Record<string, string> = { organizationId: tree.organizationId, workspaceId: tree.workspaceId, projectId: tree.projectId };
  const lists: string[] = [];
  for (const [path, ops] of Object.entries(doc.paths as Record<string, any>)) {
    const get = ops.get;
    if (!get?.parameters?.some((p: any) => p.in === 'query' && p.name === 'page')) continue;
    lists.push(path.replace(/\{(\w+)\}/g, (_m, name: string) => ids[name] ?? 'unknown'));
  }
  assert.ok(lists.length >= 12, `lists with page: ${lists.length}`);
  for (const path of lists) {
    for (const [name, value] of [['page', '1000000000000000000'], ['page', '1e300'], ['pageSize', '-1000000000000000000000']] as const) {
      const r = await s.call('GET', `${path}?${name}=${value}`, { token });
      if (r.status === 422) {
        assert.equal(r.body.error.code, 'validation_failed', `${path}: ${r.text}`);
        assert.match(r.body.error.details.fields[name] ?? '', /between|at most|at least/, `${path} ?${name}=${value}: ${r.text}`);
      } else {
        // a route whose query schema does not declare pageSize reads it with the contract's clamping
        assert.ok(name === 'pageSize' && r.status < 500, `${path} ?${name}=${value}: ${r.status} ${r.text.slice(0, 300)}`);
      }
    }
    const far = await s.call('GET', `${path}?page=${Number.MAX_SAFE_INTEGER}`, { token });
    assert.ok(far.status < 500, `${path}: ${far.status} ${far.text.slice(0, 300)}`);
    if (far.status === 200 && Array.isArray(far.body?.items)) assert.deepEqual(far.body.items, [], `${path}: ${far.text.slice(0, 300)}`);
  }
  // other integer parameters that reach SQL (limit) are bounded the same way
  for (const path of ['/api/search?q=a&limit=1000000000000000000', '/api/notifications?limit=1e300', '/api/tasks?limit=1000000000000000000']) {
    const r = await s.call('GET', path, { token });
    assert.equal(r.status, 422, `${path}: ${r.text.slice(0, 300)}`);
    assert.equal(r.body.error.code, 'validation_failed');
  }
});

test('pageWindow keeps the SQL offset a safe integer whatever a caller passes', () => {
  assert.deepEqual(pageWindow(), { page: 1, pageSize: 50, offset: 0 });
  assert.deepEqual(pageWindow(0, 500), { page: 1, pageSize: 200, offset: 0 });
  assert.deepEqual(pageWindow(Number.NaN, Number.NaN), { page: 1, pageSize: 50, offset: 0 });
  for (const page of [1e18, 1e300]) {
    const w = pageWindow(page, 200);
    assert.ok(Number.isSafeInteger(w.offset) && w.page === MAX_PAGE, JSON.stringify(w));
  }
});


test('a request Node\'s parser refuses (request line over 16 KiB, malformed HTTP) answers the contract\'s error body', async (t) => {
  const s = await startTestServer(t);
  const long = await fetch(`${s.url}/api/organizations?q=${'a'.repeat(20_000)}`);
  assert.equal(long.status, 431);
  assert.match(long.headers.get('content-type') ?? '', /^application\/json/);
  assert.deepEqual(await long.json(), { error: { code: 'headers_too_large', message: 'the request line and headers exceed the server\u2019s limit (16 KiB)' } });
  // a request line that is not HTTP, over a raw socket
  const net = await import('node:net');
  const answer = await new Promise<string>((resolve, reject) => {
    const socket = net.connect(s.port, '127.0.0.1', () => socket.write('GET /api/health HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n'));
    let text = '';
    socket.on('data', (d) => { text += d.toString('utf8'); });
    socket.on('close', () => resolve(text));
    socket.on('error', reject);
  });
  assert.match(answer, /^HTTP\/1\.1 400 /);
  assert.match(answer, /content-type: application\/json/i);
  assert.ok(answer.endsWith('{"error":{"code":"bad_request","message":"the request is not valid HTTP/1.1"}}'), answer);
});
