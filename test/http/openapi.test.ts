// The OpenAPI document covers every route of the router, with security and input schemas.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../helpers/server.ts';

test('GET /api/openapi.json is open and documents every route with its security', async (t) => {
  const s = await startTestServer(t);
  const r = await s.call('GET', '/api/openapi.json');
  assert.equal(r.status, 200);
  const doc = r.body;
  assert.equal(doc.openapi, '3.1.0');
  assert.ok(doc.components.securitySchemes.bearerAuth);
  const ids = new Set<string>();
  for (const route of s.app.router.routes) {
    const path = route.pattern.replace(/:(\w+)/g, '{$1}');
    const op = doc.paths[path]?.[route.method.toLowerCase()];
    assert.ok(op, `${route.method} ${route.pattern} documented`);
    assert.ok(op.summary, `${route.pattern} has a summary`);
    assert.ok(!ids.has(op.operationId), `unique operationId ${op.operationId}`);
    ids.add(op.operationId);
    if (route.meta.auth === 'none') assert.deepEqual(op.security, [], `${route.pattern} is public`);
    else if (route.meta.auth === 'directory') {
      assert.match(route.pattern, /^\/scim\/v2\.0\/:directoryId\//);
      assert.deepEqual(op.security, [{ scimToken: [] }], route.pattern);
      assert.ok(op.responses['401'], `${route.pattern} documents 401`);
    } else {
      const expected = route.meta.session === 'browser' ? [{ cookieSession: [] }] : [{ bearerAuth: [] }, { cookieSession: [] }];
      assert.deepEqual(op.security, expected, route.pattern);
      assert.ok(op.responses['401'] && op.responses['403'], `${route.pattern} documents 401/403`);
    }
    if (route.meta.body) assert.deepEqual(op.requestBody.content['application/json'].schema, route.meta.body.json);
    for (const name of route.pattern.matchAll(/:(\w+)/g)) {
      assert.ok(op.parameters.some((p: any) => p.in === 'path' && p.name === name[1]), `${route.pattern} parameter ${name[1]}`);
    }
  }
  const login = doc.paths['/api/auth/login'].post;
  assert.deepEqual(login.requestBody.content['application/json'].schema.required, ['email', 'password']);
  assert.equal(doc.paths['/api/workspaces/{workspaceId}/projects'].post['x-access'].permission, 'project:create');
  assert.ok(doc.paths['/api/workspaces/{workspaceId}/projects'].post.responses['201']);
});

test('every success answer documents its body: a JSON schema, or the media type of a file', async (t) => {
  const s = await startTestServer(t);
  const doc = (await s.call('GET', '/api/openapi.json')).body;
  const missing: string[] = [];
  for (const [path, ops] of Object.entries<Record<string, any>>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(ops)) {
      for (const [status, answer] of Object.entries<any>(op.responses)) {
        if (!/^2\d\d$/.test(status) || status === '204') continue;
        if (!answer.content || !Object.values<any>(answer.content).every((c) => c.schema)) missing.push(`${method.toUpperCase()} ${path} ${status}`);
      }
    }
  }
  assert.deepEqual(missing, [], `${missing.length} success answers without a documented body:\n${missing.join('\n')}`);
});
