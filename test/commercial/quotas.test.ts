// Workspace quotas and cost centers: PATCH refusals (above the plan, below usage) that change nothing,
// success and nulls, budgets, access; enforcement of a workspace's own quota at video job creation
// (video jobs not finished yet counted) and upload (a copy of a stored file adds nothing) while the
// organization still has room; quota warnings once per threshold and quota value (clips: per month),
// generated media included.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { startTestServer, type TestServer, serversRunTheWorker } from '../helpers/server.ts';
import { makeTree, member } from '../helpers/factories.ts';
import { createJob, jobWorld, waitJob } from '../helpers/jobs.ts';

serversRunTheWorker();

const GIB = 1024 ** 3;
/** The documented ids of a workspace's quota and cost center (made with the workspace). */
const quotaIdOf = (workspaceId: string) => `wq_${workspaceId.slice(4)}`;
const costCenterIdOf = (workspaceId: string) => `cc_${workspaceId.slice(4)}`;
const png = (size: number) => Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), crypto.randomBytes(size - 8)]);

const quotaRow = async (s: TestServer, id: string) => await s.db.get('SELECT monthly_clip_quota, storage_gb, updated_at FROM workspace_quotas WHERE id = ?', id);
const audits = async (s: TestServer, action: string) => await s.db.all<{ metadata: string; organization_id: string }>('SELECT * FROM audit_log WHERE action = ? ORDER BY created_at', action);

function patchQuota(s: TestServer, token: string | undefined, orgId: string, quotaId: string, body: unknown) {
  return s.call('PATCH', `/api/organizations/${orgId}/quotas/${quotaId}`, { token, body });
}

async function uploadTo(s: TestServer, token: string, bytes: Buffer) {
  const a = await s.call('POST', '/api/assets', { token, body: { kind: 'image', name: `still ${crypto.randomUUID()}` } });
  assert.equal(a.status, 201, a.text);
  const r = await s.call('POST', `/api/assets/${a.body.id}/versions/upload?fileName=still.png`, {
    token, raw: bytes, headers: { 'content-type': 'image/png' },
  });
  return { assetId: a.body.id as string, r };
}

async function quotaNotifications(s: TestServer, token: string) {
  const r = await s.call('GET', '/api/notifications?limit=200', { token });
  assert.equal(r.status, 200, r.text);
  return (r.body.items as Array<{ category: string; type: string; subject: string }>).filter((n) => n.category === 'usage_quota');
}

test('quota PATCH: 401, 403 for members and another organization, 404 for another organization\u2019s quota id', async (t) => {
  const s = await startTestServer(t);
  const tree = await makeTree(s);
  const owner = await member(s, 'org_owner', tree);
  const plain = await member(s, 'org_member', tree);
  const producer = await member(s, 'producer', tree);
  const other = await member(s, 'org_owner');
  const quotaId = quotaIdOf(tree.workspaceId);
  const body = { monthlyClipQuota: 10 };
  assert.equal((await patchQuota(s, undefined, tree.organizationId, quotaId, body)).status, 401);
  const denied = await patchQuota(s, plain.token, tree.organizationId, quotaId, body);
  assert.equal(denied.status, 403, denied.text);
  assert.equal(denied.body.error.code, 'permission_denied');
  assert.equal((await patchQuota(s, producer.token, tree.organizationId, quotaId, body)).status, 403, 'a workspace producer has no quota:manage');
  const outside = await patchQuota(s, other.token, tree.organizationId, quotaId, body);
  assert.equal(outside.status, 403, 'another organization in the path');
  assert.equal(outside.body.error.code, 'organization_forbidden');
  const foreign = await patchQuota(s, other.token, other.tree.organizationId, quotaId, body);
  assert.equal(foreign.status, 404, 'another organization\u2019s quota id under the caller\u2019s organization');
  assert.equal((await patchQuota(s, owner.token, tree.organizationId, 'wq_nothing', body)).status, 404);
  assert.equal((await quotaRow(s, quotaId))!.monthly_clip_quota, null, 'nothing changed');
  assert.equal((await audits(s, 'quota.updated')).length, 0);
  const admin = await member(s, 'org_admin', tree);
  assert.equal((await patchQuota(s, admin.token, tree.organizationId, quotaId, body)).status, 200, 'an organization admin holds quota:manage');
});

test('quota PATCH: above the plan and below usage are refused with their codes and change nothing; success, nulls, audit', async (t) => {
  const s = await startTestServer(t);
  const tree = await makeTree(s);
  const owner = await member(s, 'org_owner', tree);
  const producer = await member(s, 'producer', tree);
  const quotaId = quotaIdOf(tree.workspaceId);
  const orgId = tree.organizationId;
  // The plan (billing account defaults): 1000 clips a month, 100 GB.
  const set = await patchQuota(s, owner.token, orgId, quotaId, { monthlyClipQuota: 40, storageGb: 2.5 });
  assert.equal(set.status, 200, set.text);
  assert.deepEqual(set.body, {
    id: quotaId, workspaceId: tree.workspaceId, workspaceName: set.body.workspaceName, monthlyClipQuota: 40, storageGb: 2.5, usedClips: 0, usedStorageBytes: 0,
  });
  const before = await quotaRow(s, quotaId);

  const refusals: Array<[unknown, string, Record<string, unknown>]> = [
    [{ monthlyClipQuota: 1001 }, 'quota_above_plan', { field: 'monthlyClipQuota', planLimit: 1000, requested: 1001 }],
    [{ storageGb: 100.5 }, 'quota_above_plan', { field: 'storageGb', planLimit: 100, requested: 100.5 }],
    [{ monthlyClipQuota: 5, storageGb: 101 }, 'quota_above_plan', { field: 'storageGb' }],
  ];
  const up = await uploadTo(s, producer.token, png(5000));
  assert.equal(up.r.status, 201, up.r.text);
  await s.db.run(`INSERT INTO usage_events (id, organization_id, workspace_id, project_id, kind, unit, quantity, estimated_cost_e4, currency, created_at, event_key)
    VALUES ('use_t1', ?, ?, ?, 'clip', 'clip', 1, 0, 'USD', ?, 'clip:t1'), ('use_t2', ?, ?, ?, 'clip', 'clip', 1, 0, 'USD', ?, 'clip:t2')`,
  orgId, tree.workspaceId, tree.projectId, new Date().toISOString(), orgId, tree.workspaceId, tree.projectId, new Date().toISOString());
  refusals.push(
    [{ monthlyClipQuota: 1 }, 'quota_below_usage', { field: 'monthlyClipQuota', used: 2, requested: 1 }],
    [{ storageGb: 4000 / GIB }, 'quota_below_usage', { field: 'storageGb', usedBytes: 5000, requestedBytes: 4000 }],
    [{ monthlyClipQuota: 30, storageGb: 0 }, 'quota_below_usage', { field: 'storageGb' }],
  );
  for (const [body, code, details] of refusals) {
    const r = await patchQuota(s, owner.token, orgId, quotaId, body);
    assert.equal(r.status, 409, `${JSON.stringify(body)}: ${r.text}`);
    assert.equal(r.body.error.code, code);
    for (const [k, v] of Object.entries(details)) assert.equal(r.body.error.details[k], v, `${JSON.stringify(body)} details.${k}`);
    assert.deepEqual(await quotaRow(s, quotaId), before, 'nothing changes on refusal');
  }
  assert.equal((await audits(s, 'quota.updated')).length, 1);

  const bad = await patchQuota(s, owner.token, orgId, quotaId, { monthlyClipQuota: -1, storageGb: 'big' });
  assert.equal(bad.status, 422);
  assert.deepEqual(Object.keys(bad.body.error.details.fields).sort(), ['monthlyClipQuota', 'storageGb']);
  assert.equal((await patchQuota(s, owner.token, orgId, quotaId, { monthlyClipQuota: 2.5 })).status, 422);
  assert.equal((await patchQuota(s, owner.token, orgId, quotaId, {})).status, 422, 'an empty patch');

  const exact = await patchQuota(s, owner.token, orgId, quotaId, { monthlyClipQuota: 2, storageGb: 5000 / GIB });
  assert.equal(exact.status, 200, 'a quota equal to the use is allowed');
  assert.equal(exact.body.usedClips, 2);
  assert.equal(exact.body.usedStorageBytes, 5000);
  const cleared = await patchQuota(s, owner.token, orgId, quotaId, { monthlyClipQuota: null });
  assert.equal(cleared.status, 200, cleared.text);
  assert.equal(cleared.body.monthlyClipQuota, null);
  assert.equal(cleared.body.storageGb, 5000 / GIB, 'an absent field stays');
  const none = await patchQuota(s, owner.token, orgId, quotaId, { storageGb: null });
  assert.deepEqual([none.body.monthlyClipQuota, none.body.storageGb], [null, null]);
  const log = await audits(s, 'quota.updated');
  assert.equal(log.length, 4);
  assert.equal(log[0].organization_id, orgId);
  assert.deepEqual(JSON.parse(log[0].metadata), { before: { monthlyClipQuota: null, storageGb: null }, after: { monthlyClipQuota: 40, storageGb: 2.5 } });
  assert.deepEqual(JSON.parse(log[3].metadata).after, { monthlyClipQuota: null, storageGb: null });
});

test('cost center PATCH: billing:manage only (owners), budget per billing period, name, 422, another organization', async (t) => {
  const s = await startTestServer(t);
  const tree = await makeTree(s);
  const owner = await member(s, 'org_owner', tree);
  const admin = await member(s, 'org_admin', tree);
  const plain = await member(s, 'org_member', tree);
  const other = await member(s, 'org_owner');
  const id = costCenterIdOf(tree.workspaceId);
  const url = `/api/organizations/${tree.organizationId}/cost-centers/${id}`;
  assert.equal((await s.call('PATCH', url, { body: { budget: '10.00' } })).status, 401);
  for (const who of [plain, admin]) {
    const r = await s.call('PATCH', url, { token: who.token, body: { budget: '10.00' } });
    assert.equal(r.status, 403, r.text);
    assert.equal(r.body.error.code, 'permission_denied');
  }
  assert.equal((await s.call('PATCH', url, { token: other.token, body: { budget: '10.00' } })).status, 403);
  assert.equal((await s.call('PATCH', `/api/organizations/${other.tree.organizationId}/cost-centers/${id}`, { token: other.token, body: { budget: '1' } })).status, 404);
  for (const body of [{ budget: '10.001' }, { budget: '-1.00' }, { budget: 'ten' }, { name: '' }, { budget: 10 }, {}]) {
    const r = await s.call('PATCH', url, { token: owner.token, body });
    assert.equal(r.status, 422, `${JSON.stringify(body)}: ${r.text}`);
  }
  assert.equal((await s.db.get<{ b: number | null }>('SELECT budget_minor AS b FROM cost_centers WHERE id = ?', id))!.b, null);

  await s.db.run(`INSERT INTO usage_events (id, organization_id, workspace_id, project_id, kind, unit, quantity, estimated_cost_e4, currency, cost_center_id, created_at, event_key)
    VALUES ('use_c1', ?, ?, ?, 'clip', 'clip', 1, 1255000, 'USD', ?, ?, 'clip:c1')`, tree.organizationId, tree.workspaceId, tree.projectId, id, new Date().toISOString());
  const r = await s.call('PATCH', url, { token: owner.token, body: { budget: '250.5', name: 'Feature film' } });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual({ ...r.body, code: undefined }, {
    id, code: undefined, name: 'Feature film', workspaceId: tree.workspaceId, budget: '250.50', currency: 'USD', spent: '1.26', events: 1, budgetUsedRatio: 0.00501,
  });
  const cleared = await s.call('PATCH', url, { token: owner.token, body: { budget: null } });
  assert.equal(cleared.body.budget, null);
  assert.equal(cleared.body.budgetUsedRatio, null);
  assert.equal(cleared.body.name, 'Feature film');
  const log = await audits(s, 'cost_center.updated');
  assert.equal(log.length, 2);
  assert.deepEqual(JSON.parse(log[0].metadata).before, { name: (await s.db.get<{ name: string }>('SELECT name FROM workspaces WHERE id = ?', tree.workspaceId))!.name, budget: null, currency: 'USD' });
  assert.deepEqual(JSON.parse(log[0].metadata).after, { name: 'Feature film', budget: '250.50', currency: 'USD' });
});

test('a video job is refused by the workspace\u2019s own clip quota while the organization still has room', async (t) => {
  const { s, token, tree, id } = await jobWorld(t);
  const quotaId = quotaIdOf(tree.workspaceId);
  assert.equal((await patchQuota(s, token, tree.organizationId, quotaId, { monthlyClipQuota: 1 })).status, 200);
  const first = await createJob(s, token, { kind: 'video', connectorId: id });
  await waitJob(s, token, first.id, ['completed']);
  const second = await s.call('POST', '/api/jobs', { token, body: { kind: 'video', connectorId: id, prompt: 'again' } });
  assert.equal(second.status, 409, second.text);
  assert.equal(second.body.error.code, 'clip_quota_exceeded');
  assert.match(second.body.error.message, /workspace's own monthly clip quota of 1/);
  assert.deepEqual(second.body.error.details, { used: 1, quota: 1, scope: 'workspace' });
  assert.equal((await s.call('POST', '/api/jobs', { token, body: { kind: 'image', connectorId: id, prompt: 'stills are not clips' } })).status, 201);
  const below = await patchQuota(s, token, tree.organizationId, quotaId, { monthlyClipQuota: 0 });
  assert.equal(below.body.error.code, 'quota_below_usage', 'the completed clip counts as used');
  assert.equal((await patchQuota(s, token, tree.organizationId, quotaId, { monthlyClipQuota: null })).status, 200);
  assert.equal((await s.call('POST', '/api/jobs', { token, body: { kind: 'video', connectorId: id, prompt: 'room again' } })).status, 201);
});

test('video jobs not finished yet (queued, blocked) count against the workspace and organization clip quotas; PATCH bounds keep counting recorded clips', async (t) => {
  const { s, token, tree, id } = await jobWorld(t, { env: { SVC_WORKER_ENABLED: '0' } });
  const orgId = tree.organizationId;
  const quotaId = quotaIdOf(tree.workspaceId);
  const video = (prompt: string, extra: Record<string, unknown> = {}) =>
    s.call('POST', '/api/jobs', { token, body: { kind: 'video', connectorId: id, prompt, ...extra } });
  assert.equal((await patchQuota(s, token, orgId, quotaId, { monthlyClipQuota: 2 })).status, 200);
  const queued = await video('queued, the worker paused');
  assert.equal(queued.status, 201, queued.text);
  // A video job behind a cancelled one is created blocked: it still reserves a clip.
  const chat = await createJob(s, token, { kind: 'chat', connectorId: id });
  assert.equal((await s.call('POST', `/api/jobs/${chat.id}/cancel`, { token })).status, 200);
  const blocked = await video('behind a cancelled job', { dependsOn: chat.id });
  assert.equal(blocked.status, 201, blocked.text);
  assert.equal(blocked.body.status, 'blocked');
  for (let i = 0; i < 5; i++) {
    const r = await video(`over the quota ${i}`);
    assert.equal(r.status, 409, r.text);
    assert.equal(r.body.error.code, 'clip_quota_exceeded');
    assert.deepEqual(r.body.error.details, { used: 2, quota: 2, scope: 'workspace' });
  }
  assert.match((await video('again')).body.error.message, /with video jobs not finished yet, reached the workspace's own monthly clip quota of 2/);
  assert.equal((await s.db.get<{ n: number }>("SELECT count(*) AS n FROM generation_jobs WHERE kind = 'video'"))!.n, 2, 'nothing written by a refusal');

  // The quota PATCH bound is recorded use: no clip is recorded yet, so 0 is accepted; 2 again.
  const zero = await patchQuota(s, token, orgId, quotaId, { monthlyClipQuota: 0 });
  assert.equal(zero.status, 200, zero.text);
  assert.equal(zero.body.usedClips, 0);
  assert.equal((await patchQuota(s, token, orgId, quotaId, { monthlyClipQuota: 2 })).status, 200);
  // Run now: the queued job completes and records its clip; it is counted once (1 clip + 1 blocked job).
  const run = await s.call('POST', `/api/jobs/${queued.body.id}/run`, { token, body: {} });
  assert.equal(run.status, 200, run.text);
  assert.equal(run.body.job.status, 'completed');
  assert.deepEqual((await video('still full')).body.error.details, { used: 2, quota: 2, scope: 'workspace' });
  assert.equal((await patchQuota(s, token, orgId, quotaId, { monthlyClipQuota: 0 })).body.error.code, 'quota_below_usage', 'the recorded clip counts');
  // A cancelled job frees its reservation.
  assert.equal((await s.call('POST', `/api/jobs/${blocked.body.id}/cancel`, { token })).status, 200);
  const freed = await video('room again');
  assert.equal(freed.status, 201, freed.text);
  const retried = await s.call('POST', `/api/jobs/${blocked.body.id}/retry`, { token, body: {} });
  assert.equal(retried.status, 409, `a retry reserves a clip again: ${retried.text}`);
  assert.equal(retried.body.error.code, 'clip_quota_exceeded');
  assert.equal((await s.call('GET', `/api/jobs/${blocked.body.id}`, { token })).body.status, 'cancelled');

  // The organization's quota: 1 recorded clip + 1 queued job. The billing PATCH accepts 1 (recorded use),
  // then a job is refused with scope organization.
  assert.equal((await patchQuota(s, token, orgId, quotaId, { monthlyClipQuota: null })).status, 200);
  const billing = `/api/organizations/${orgId}/billing`;
  const below = await s.call('PATCH', billing, { token, body: { monthlyClipQuota: 0 } });
  assert.equal(below.status, 409, below.text);
  assert.equal(below.body.error.code, 'clip_quota_below_usage');
  assert.equal(below.body.error.details.minimum, 1);
  assert.equal((await s.call('PATCH', billing, { token, body: { monthlyClipQuota: 1 } })).status, 200);
  const org = await video('over the plan');
  assert.equal(org.status, 409, org.text);
  assert.deepEqual(org.body.error.details, { used: 2, quota: 1, scope: 'organization' });
  assert.match(org.body.error.message, /reached the organization's monthly clip quota of 1/);
  assert.equal((await s.call('POST', '/api/jobs', { token, body: { kind: 'image', connectorId: id, prompt: 'stills are not clips' } })).status, 201);
});

test('an upload is refused by the workspace\u2019s own storage quota (409 storage_quota_exceeded) and nothing is kept; a warning at 80 %', async (t) => {
  const s = await startTestServer(t);
  const tree = await makeTree(s);
  const owner = await member(s, 'org_owner', tree);
  const producer = await member(s, 'producer', tree);
  const set = await patchQuota(s, owner.token, tree.organizationId, quotaIdOf(tree.workspaceId), { storageGb: 4096 / GIB });
  assert.equal(set.status, 200, set.text);
  const first = await uploadTo(s, producer.token, png(3300));
  assert.equal(first.r.status, 201, first.r.text);
  const warned = await quotaNotifications(s, owner.token);
  assert.deepEqual(warned.map((n) => n.type), ['quota.warning'], 'one warning: 3300 of 4096 bytes is 80.6 %');
  assert.match(warned[0].subject, /storage quota at 80 %/);
  const versions = (await s.db.get<{ n: number }>('SELECT count(*) AS n FROM asset_versions'))!.n;
  const second = await uploadTo(s, producer.token, png(1000));
  assert.equal(second.r.status, 409, second.r.text);
  assert.equal(second.r.body.error.code, 'storage_quota_exceeded');
  assert.match(second.r.body.error.message, /storage quota of workspace/);
  assert.deepEqual(second.r.body.error.details, { scope: 'workspace', workspaceId: tree.workspaceId, usedBytes: 3300, limitBytes: 4096, requestedBytes: 1000 });
  assert.equal((await s.db.get<{ n: number }>('SELECT count(*) AS n FROM asset_versions'))!.n, versions, 'nothing registered');
  // Streamed without Content-Length: refused while receiving (409, or a reset after the answer), nothing kept.
  const streamed = await s.call('POST', '/api/assets', { token: producer.token, body: { kind: 'image', name: 'streamed' } });
  let answer: { status: number; code?: string } | { error: string };
  try {
    const res = await fetch(`${s.url}/api/assets/${streamed.body.id}/versions/upload?fileName=big.bin`, {
      method: 'POST', headers: { authorization: `Bearer ${producer.token}`, 'content-type': 'application/octet-stream' },
      body: Readable.toWeb(Readable.from([png(600), png(600)])) as ReadableStream, duplex: 'half',
    });
    answer = { status: res.status, code: ((await res.json()) as { error?: { code: string } }).error?.code };
  } catch (err) {
    answer = { error: String(err) };
  }
  if ('status' in answer) assert.deepEqual(answer, { status: 409, code: 'storage_quota_exceeded' });
  assert.equal((await s.db.get<{ n: number }>('SELECT count(*) AS n FROM asset_versions'))!.n, versions, 'nothing registered from the stream');
  assert.deepEqual(fs.readdirSync(path.join(s.config.storageDir, 'tmp')), [], 'nothing left in storage/tmp');
  const again = await uploadTo(s, producer.token, png(796));
  assert.equal(again.r.status, 201, 'what fits exactly is stored');
  assert.deepEqual((await quotaNotifications(s, owner.token)).map((n) => n.type).sort(), ['quota.reached', 'quota.warning']);
  const usage = (await s.db.get<{ n: number }>('SELECT count(*) AS n FROM quota_warnings WHERE metric = ?', 'storage'))!.n;
  assert.equal(usage, 2);
});

test('a copy of a file the workspace (or organization) already stores fits its quota; other uploads over it are refused, before reading when they cannot be a copy', async (t) => {
  const s = await startTestServer(t);
  const tree = await makeTree(s);
  const owner = await member(s, 'org_owner', tree);
  const producer = await member(s, 'producer', tree);
  const quotaId = quotaIdOf(tree.workspaceId);
  assert.equal((await patchQuota(s, owner.token, tree.organizationId, quotaId, { storageGb: 5000 / GIB })).status, 200);
  const bytes = png(3008);
  const first = await uploadTo(s, producer.token, bytes);
  assert.equal(first.r.status, 201, first.r.text);
  const copy = await uploadTo(s, producer.token, bytes);
  assert.equal(copy.r.status, 201, `3,008 + 3,008 > 5,000 but the same content adds nothing: ${copy.r.text}`);
  assert.equal(copy.r.body.deduplicated, true);
  // Streamed without Content-Length: the running total never exceeds the largest stored file.
  const streamed = await s.call('POST', '/api/assets', { token: producer.token, body: { kind: 'image', name: 'streamed copy' } });
  const res = await fetch(`${s.url}/api/assets/${streamed.body.id}/versions/upload?fileName=copy.png`, {
    method: 'POST', headers: { authorization: `Bearer ${producer.token}`, 'content-type': 'image/png' },
    body: Readable.toWeb(Readable.from([bytes.subarray(0, 1000), bytes.subarray(1000)])) as ReadableStream, duplex: 'half',
  });
  assert.equal(res.status, 201, await res.text());
  // Other content of the same size may be a copy until hashed: refused at commit. Another size: before reading.
  for (const other of [png(3008), png(2000)]) {
    const r = (await uploadTo(s, producer.token, other)).r;
    assert.equal(r.status, 409, r.text);
    assert.deepEqual(r.body.error.details, { scope: 'workspace', workspaceId: tree.workspaceId, usedBytes: 3008, limitBytes: 5000, requestedBytes: other.length });
  }
  // The organization's quota behaves the same (its check comes first).
  assert.equal((await patchQuota(s, owner.token, tree.organizationId, quotaId, { storageGb: null })).status, 200);
  assert.equal((await s.call('PATCH', `/api/organizations/${tree.organizationId}/billing`, { token: owner.token, body: { storageGb: 5000 / GIB } })).status, 200);
  assert.equal((await uploadTo(s, producer.token, bytes)).r.status, 201);
  const over = (await uploadTo(s, producer.token, png(2000))).r;
  assert.equal(over.status, 409, over.text);
  assert.deepEqual(over.body.error.details, { usedBytes: 3008, limitBytes: 5000, requestedBytes: 2000 });
  assert.equal((await s.db.get<{ n: number }>('SELECT count(DISTINCT storage_path) AS n FROM asset_versions'))!.n, 1, 'one stored file');
});

test('storage warnings: generated media warn too, once per threshold and quota value (no period), counting files added on other connections', async (t) => {
  const { s, token, tree, id } = await jobWorld(t);
  const producer = await member(s, 'producer', tree);
  const quotaId = quotaIdOf(tree.workspaceId);
  const stored = async (): Promise<number> => (await s.call('GET', `/api/organizations/${tree.organizationId}/commercial`, { token }))
    .body.workspaceQuotas.find((q: { workspaceId: string }) => q.workspaceId === tree.workspaceId).usedStorageBytes;
  const complete = async () => waitJob(s, token, (await createJob(s, token, { kind: 'video', connectorId: id })).id, ['completed']);
  const types = async () => (await quotaNotifications(s, token)).map((n) => n.type);
  await complete();
  const v = await stored(); // one generated video with its first and last frames
  assert.ok(v > 0);
  // Own quota 4.5 v: 2 v, then 3 v with an upload made on the server's connection, stay below 80 % (3.6 v);
  // the next video (in the worker thread, on its own connection) reaches 4 v only with that upload counted.
  const limit = Math.floor(4.5 * v);
  assert.equal((await patchQuota(s, token, tree.organizationId, quotaId, { storageGb: limit / GIB })).status, 200);
  await complete();
  assert.equal((await uploadTo(s, producer.token, png(v))).r.status, 201);
  assert.equal(await stored(), 3 * v);
  assert.deepEqual(await types(), []);
  await complete();
  const warned = await quotaNotifications(s, token);
  assert.deepEqual(warned.map((n) => n.type), ['quota.warning']);
  assert.match(warned[0].subject, new RegExp(`storage quota at 80 %: ${4 * v} of ${limit} bytes stored`));
  await complete();
  assert.deepEqual(await types(), ['quota.reached', 'quota.warning'], '5 v of 4.5 v');
  await complete();
  assert.equal((await types()).length, 2, 'sitting above the thresholds: warned once per quota value');
  // A new quota value: 6 v of 10 v, then 7 v, then 8 v crosses its 80 %.
  assert.equal((await patchQuota(s, token, tree.organizationId, quotaId, { storageGb: (10 * v) / GIB })).status, 200);
  await complete();
  assert.equal((await types()).length, 2);
  await complete();
  assert.deepEqual(await types(), ['quota.warning', 'quota.reached', 'quota.warning']);
  const rows = await s.db.all<{ workspace_id: string; period: string; threshold: number; used: number; quota: number }>(
    "SELECT workspace_id, period, threshold, used, quota FROM quota_warnings WHERE metric = 'storage' ORDER BY quota, threshold");
  assert.deepEqual(rows.map((r) => ({ ...r })), [
    { workspace_id: tree.workspaceId, period: '', threshold: 80, used: 4 * v, quota: limit },
    { workspace_id: tree.workspaceId, period: '', threshold: 100, used: 5 * v, quota: limit },
    { workspace_id: tree.workspaceId, period: '', threshold: 80, used: 8 * v, quota: 10 * v },
  ]);
});

test('quota warnings: completing video jobs across 80 % and 100 % notifies once per threshold and quota value; a raised quota is warned again', async (t) => {
  const { s, token, tree, id } = await jobWorld(t);
  const admin = await member(s, 'org_admin', tree);
  const producer = await member(s, 'producer', tree);
  const quotaId = quotaIdOf(tree.workspaceId);
  assert.equal((await patchQuota(s, token, tree.organizationId, quotaId, { monthlyClipQuota: 5 })).status, 200);
  const complete = async (n: number) => {
    for (let i = 0; i < n; i++) {
      const job = await createJob(s, token, { kind: 'video', connectorId: id, prompt: `clip ${i}` });
      await waitJob(s, token, job.id, ['completed']);
    }
  };
  const types = async (who = token) => (await quotaNotifications(s, who)).map((n) => n.type);
  await complete(3);
  assert.deepEqual(await types(), [], '3 of 5 is 60 %');
  await complete(1);
  const at80 = await quotaNotifications(s, token);
  assert.deepEqual(at80.map((n) => n.type), ['quota.warning']);
  assert.match(at80[0].subject, /monthly clip quota at 80 %: 4 of 5 clips this month/);
  await complete(1);
  assert.deepEqual(await types(), ['quota.reached', 'quota.warning']);
  assert.equal((await types(admin.token)).length, 2, 'organization admins are told too');
  assert.equal((await types(producer.token)).length, 0, 'a producer is not');

  // The quota raised to 10: 5 and 7 of 10 are below 80 %, 8 of 10 crosses the new value's 80 % once.
  assert.equal((await patchQuota(s, token, tree.organizationId, quotaId, { monthlyClipQuota: 10 })).status, 200);
  await complete(2);
  assert.equal((await types()).length, 2);
  await complete(1);
  const raised = await quotaNotifications(s, token);
  assert.deepEqual(raised.map((n) => n.type), ['quota.warning', 'quota.reached', 'quota.warning']);
  assert.match(raised[0].subject, /at 80 %: 8 of 10 clips this month/);
  await complete(1);
  assert.equal((await types()).length, 3, '9 of 10: nothing new');
  const month = (await s.call('GET', `/api/organizations/${tree.organizationId}/commercial`, { token })).body.usageThisMonth.month as string;
  const rows = await s.db.all<{ workspace_id: string; period: string; threshold: number; used: number; quota: number }>(
    'SELECT workspace_id, period, threshold, used, quota FROM quota_warnings WHERE organization_id = ? ORDER BY quota, threshold', tree.organizationId);
  assert.deepEqual(rows.map((r) => ({ ...r })), [
    { workspace_id: tree.workspaceId, period: month, threshold: 80, used: 4, quota: 5 },
    { workspace_id: tree.workspaceId, period: month, threshold: 100, used: 5, quota: 5 },
    { workspace_id: tree.workspaceId, period: month, threshold: 80, used: 8, quota: 10 },
  ]);
});
