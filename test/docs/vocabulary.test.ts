// One thing, one name: the model service the worker calls is a "connector" everywhere the project
// chose the word (the served OpenAPI document, error messages, answers, README and docs). "adapter"
// survives only in the names the API reference fixes: the path /api/adapters/dry-run, a template's
// defaultAdapterId, instantiate's adapter, and the run's deprecated adapterId alias. New connector
// ids start with con_; ids of the former mdl_ form keep working.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { startTestServer } from '../helpers/server.ts';
import { member } from '../helpers/factories.ts';

/** The reference-fixed names (and the OpenAPI operation id generated from the fixed path). */
const FIXED = [/\/api\/adapters\/dry-run/g, /fields\.adapter\b/g, /postApiAdaptersDryRun/g, /defaultAdapterId/g, /"adapter":/g, /`adapter`/g, /"adapterId"/g, /`adapterId`/g];

function strayAdapters(text: string): string[] {
  let rest = text;
  for (const f of FIXED) rest = rest.replace(f, '');
  return [...rest.matchAll(/.{0,60}adapter.{0,60}/gis)].map((m) => m[0]);
}

test('"connector" names the model service: no other "adapter" in the OpenAPI document, errors, answers, README or docs; con_ ids, mdl_ ids still work', async (t) => {
  const s = await startTestServer(t);
  const owner = await member(s, 'org_owner');
  const token = owner.token;
  const scoped = { 'svc-scope': `project=${owner.tree.projectId}` };

  const doc = await s.call('GET', '/api/openapi.json');
  assert.equal(doc.status, 200);
  assert.deepEqual(strayAdapters(JSON.stringify(doc.body)), [], 'the served document');
  for (const [path, ops] of Object.entries<any>(doc.body.paths).filter(([p]) => p.startsWith('/api/platform/models') || p === '/api/adapters/dry-run')) {
    for (const [method, op] of Object.entries<any>(ops)) assert.match(op.summary, /connector/i, `${method} ${path} says connector`);
  }
  const tpl = doc.body.paths['/api/workflows/templates'].post.requestBody.content['application/json'].schema.properties.defaultAdapterId;
  assert.match(JSON.stringify(tpl), /connector/, 'the fixed field is described as a connector');
  const inst = doc.body.paths['/api/workflows/templates/{templateId}/instantiate'].post.requestBody.content['application/json'].schema.properties.adapter;
  assert.match(JSON.stringify(inst), /connector/);

  const docs = ['README.md', ...fs.readdirSync('docs').map((f) => `docs/${f}`)];
  for (const f of docs) assert.deepEqual(strayAdapters(fs.readFileSync(f, 'utf8')), [], f);

  // New ids: con_.
  const reg = await s.call('POST', '/api/platform/models/register', {
    token, body: { label: 'Local', endpoint: 'http://127.0.0.1:9', kind: 'openai-compatible', capability: ['image'], costMode: 'local' },
  });
  assert.equal(reg.status, 201, reg.text);
  assert.match(reg.body.id, /^con_[0-9a-z]+$/);

  // Errors about connectors say connector, whatever field name the reference fixed.
  const errors = [
    await s.call('GET', '/api/platform/models/con_nothing', { token }),
    await s.call('POST', '/api/workflows/templates', { token, headers: scoped, body: { name: 'T', templateKey: 'bad', steps: [{ key: 'a', label: 'A', jobKind: 'image' }], defaultAdapterId: 'con_nothing' } }),
    await s.call('POST', '/api/adapters/dry-run', { token, headers: scoped, body: { kind: 'image', connectorId: 'con_nothing', prompt: 'p' } }),
  ];
  const tplOk = await s.call('POST', '/api/workflows/templates', { token, headers: scoped, body: { name: 'T', templateKey: 'video', status: 'active', steps: [{ key: 'a', label: 'A', jobKind: 'video' }] } });
  assert.equal(tplOk.status, 201, tplOk.text);
  errors.push(await s.call('POST', `/api/workflows/templates/${tplOk.body.id}/instantiate`, { token, headers: scoped, body: { mode: 'plan', adapter: reg.body.id } }));
  errors.push(await s.call('POST', `/api/workflows/templates/${tplOk.body.id}/instantiate`, { token, headers: scoped, body: { mode: 'plan', adapter: 'con_nothing' } }));
  for (const e of errors) {
    assert.ok(e.status === 404 || e.status === 422, e.text);
    // The reasons (a 422's message also names the field, e.g. the fixed `adapter`).
    const fields = e.body.error.details?.fields;
    const said = fields ? Object.values<string>(fields).join(' | ') : e.body.error.message;
    assert.match(said, /connector/, said);
    assert.doesNotMatch(said, /adapter(?!Id\b)|\bmodel\b(?! connector)/i, said);
  }

  // A run names its connector connectorId (adapterId: the deprecated alias, the same value).
  const image = await s.call('POST', '/api/workflows/templates', { token, headers: scoped, body: { name: 'I', templateKey: 'image', status: 'active', steps: [{ key: 'a', label: 'A', jobKind: 'image' }], defaultAdapterId: reg.body.id } });
  assert.equal(image.status, 201, image.text);
  const run = await s.call('POST', `/api/workflows/templates/${image.body.id}/instantiate`, { token, headers: scoped, body: { mode: 'queue' } });
  assert.equal(run.status, 201, run.text);
  assert.equal(run.body.connectorId, reg.body.id);
  assert.equal(run.body.adapterId, run.body.connectorId);
  const audit = (await s.db.get<{ metadata: string }>("SELECT metadata FROM audit_log WHERE action = 'workflow.instantiated' AND target_id = ?", run.body.id))!;
  assert.equal(JSON.parse(audit.metadata).connectorId, reg.body.id);
  assert.ok(!('adapter' in JSON.parse(audit.metadata)));

  // A connector registered before the con_ prefix keeps its mdl_ id, which works everywhere.
  await s.db.run("INSERT INTO model_connectors SELECT 'mdl_06h1legacy0connector', organization_id, 'Legacy', endpoint, kind, capability, cost_mode, auth_env, protocol, status, approved_by, approved_at, last_probe_at, last_probe_ok, last_probe_latency_ms, last_probe_status, last_probe_error, created_by, created_at, updated_at FROM model_connectors WHERE id = ?", reg.body.id);
  const legacy = await s.call('GET', '/api/platform/models/mdl_06h1legacy0connector', { token });
  assert.equal(legacy.status, 200, legacy.text);
  assert.equal(legacy.body.label, 'Legacy');
  const dry = await s.call('POST', '/api/adapters/dry-run', { token, headers: scoped, body: { kind: 'image', connectorId: 'mdl_06h1legacy0connector', prompt: 'a door' } });
  assert.equal(dry.status, 200, dry.text);
  const legacyRun = await s.call('POST', `/api/workflows/templates/${image.body.id}/instantiate`, { token, headers: scoped, body: { mode: 'plan', adapter: 'mdl_06h1legacy0connector' } });
  assert.equal(legacyRun.body.connectorId, 'mdl_06h1legacy0connector');
});
