// The HTTP core: routing, the error body, body limits, request ids, the access log, the 500 boundary.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../helpers/server.ts';
import { login, makeUser } from '../helpers/factories.ts';

const isErrorBody = (body: any, code: string) => {
  assert.equal(typeof body?.error?.message, 'string', JSON.stringify(body));
  assert.equal(body.error.code, code);
};

test('health is open and says only ok', async (t) => {
  const s = await startTestServer(t);
  const r = await s.call('GET', '/api/health');
  assert.equal(r.status, 200);
  assert.deepEqual(r.body, { status: 'ok' });
});

test('an unknown path is 404 not_found and a wrong method 405 with Allow', async (t) => {
  const s = await startTestServer(t);
  const r404 = await s.call('GET', '/api/does-not-exist');
  assert.equal(r404.status, 404);
  isErrorBody(r404.body, 'not_found');
  const r405 = await s.call('DELETE', '/api/context');
  assert.equal(r405.status, 405);
  isErrorBody(r405.body, 'method_not_allowed');
  assert.equal(r405.headers.get('allow'), 'GET, PATCH');
  // Parameters match any segment; literal segments win.
  const unknownOrg = await s.call('GET', '/api/organizations/org_x/nope');
  assert.equal(unknownOrg.status, 404);
});

test('a business route without a credential is 401 before the body is read', async (t) => {
  const s = await startTestServer(t);
  const r = await s.call('PATCH', '/api/context', { raw: '{not json', headers: { 'content-type': 'application/json' } });
  assert.equal(r.status, 401);
  isErrorBody(r.body, 'unauthenticated');
  const bad = await s.call('GET', '/api/context', { headers: { authorization: 'Basic abc' } });
  assert.equal(bad.status, 401);
  const unknown = await s.call('GET', '/api/context', { token: 'x'.repeat(43) });
  assert.equal(unknown.status, 401);
});

test('malformed JSON is 400 invalid_json, bad fields 422 naming each field, wrong type 415', async (t) => {
  const s = await startTestServer(t);
  const r = await s.call('POST', '/api/auth/login', { raw: '{"email": "a@b.c",', headers: { 'content-type': 'application/json' } });
  assert.equal(r.status, 400);
  isErrorBody(r.body, 'invalid_json');
  const v = await s.call('POST', '/api/auth/login', { body: { email: 5, extra: true } });
  assert.equal(v.status, 422);
  isErrorBody(v.body, 'validation_failed');
  assert.deepEqual(v.body.error.details.fields, { email: 'must be a string', password: 'is required', extra: 'is not a known field' });
  const form = await s.call('POST', '/api/auth/login', { raw: 'email=a', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  assert.equal(form.status, 415);
});

test('an oversized body is 413 payload_too_large, declared or streamed', async (t) => {
  const s = await startTestServer(t, { SVC_MAX_BODY_BYTES: '2048' });
  const big = JSON.stringify({ email: 'a@b.c', password: 'x'.repeat(4000) });
  const r = await s.call('POST', '/api/auth/login', { raw: big, headers: { 'content-type': 'application/json' } });
  assert.equal(r.status, 413);
  isErrorBody(r.body, 'payload_too_large');
  // Without Content-Length (chunked), the limit is enforced while reading.
  const chunked = await fetch(`${s.url}/api/auth/login`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, duplex: 'half',
    body: new ReadableStream({ start(c) { c.enqueue(new TextEncoder().encode(big)); c.close(); } }),
  });
  assert.equal(chunked.status, 413);
  isErrorBody(await chunked.json(), 'payload_too_large');
  // The server still answers afterwards.
  assert.equal((await s.call('GET', '/api/health')).status, 200);
});

test('x-request-id is echoed when sane and generated otherwise', async (t) => {
  const s = await startTestServer(t);
  const given = await s.call('GET', '/api/health', { headers: { 'x-request-id': 'abc-123.def' } });
  assert.equal(given.headers.get('x-request-id'), 'abc-123.def');
  const bad = await s.call('GET', '/api/health', { headers: { 'x-request-id': 'has spaces <script>' } });
  assert.match(bad.headers.get('x-request-id')!, /^req_[0-9a-z]{10}-[0-9a-z]+$/);
  assert.notEqual(bad.headers.get('x-request-id'), (await s.call('GET', '/api/health')).headers.get('x-request-id'));
  const none = await s.call('GET', '/api/nowhere');
  assert.match(none.headers.get('x-request-id')!, /^req_/);
});

test('a thrown bug is 500 internal_error without stack or message, logged with the request id', async (t) => {
  const s = await startTestServer(t);
  s.app.router.get('/api/test/boom', { summary: 'test only', auth: 'none' }, () => {
    throw new Error('SELECT secret FROM somewhere failed');
  });
  const r = await s.call('GET', '/api/test/boom', { headers: { 'x-request-id': 'boom-1' } });
  assert.equal(r.status, 500);
  isErrorBody(r.body, 'internal_error');
  assert.doesNotMatch(r.text, /SELECT|secret|at .*\.ts/);
  s.log.flush();
  const line = s.logs.map((l) => JSON.parse(l)).find((l) => l.level === 'error' && l.requestId === 'boom-1');
  assert.ok(line, 'error logged with request id');
  assert.match(line.err.stack, /SELECT secret/);
});

test('one JSON access-log line per request, with actor and without tokens or query strings', async (t) => {
  const s = await startTestServer(t);
  const u = await makeUser(s);
  const token = await login(s, u);
  await s.call('GET', '/api/context?token=should-not-appear', { token, headers: { 'x-request-id': 'ctx-1' } });
  s.log.flush();
  const lines = s.logs.map((l) => JSON.parse(l)).filter((l) => l.msg === 'request');
  const ctxLine = lines.find((l) => l.requestId === 'ctx-1');
  assert.ok(ctxLine);
  assert.equal(ctxLine.method, 'GET');
  assert.equal(ctxLine.path, '/api/context');
  assert.equal(ctxLine.status, 200);
  assert.equal(typeof ctxLine.ms, 'number');
  assert.equal(ctxLine.actorId, u.id);
  assert.equal(lines.filter((l) => l.requestId === 'ctx-1').length, 1);
  const all = s.logs.join('\n');
  assert.ok(!all.includes(token), 'no token in the log');
  assert.ok(!all.includes('should-not-appear'));
  assert.ok(!all.includes(u.password));
});

test('HEAD answers like GET without a body', async (t) => {
  const s = await startTestServer(t);
  const r = await fetch(`${s.url}/api/health`, { method: 'HEAD' });
  assert.equal(r.status, 200);
  assert.equal(await r.text(), '');
});
