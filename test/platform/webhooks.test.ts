// Organization channels: Standard Webhooks signatures checked by a real receiver, retries in the
// persistent outbox across a server restart, destination rules (allow-list, link-local, DNS failures,
// DNS rebinding), redirects, the local log channel and the channel routes.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { startTestServer, serversRunTheWorker } from '../helpers/server.ts';
import { login, makeTree, makeUser, member } from '../helpers/factories.ts';
import type { Db } from '../../src/db/db.ts';
import { notify } from '../../src/platform/notifications/service.ts';
import { deliveryLoopOf } from '../../src/platform/notifications/delivery.ts';

serversRunTheWorker();

interface Received { headers: http.IncomingHttpHeaders; body: string; path: string }

/** A webhook receiver on 127.0.0.1:0; `answer` decides the status of each request (by 0-based index). */
async function receiver(t: TestContext, answer: (i: number, r: Received) => number | { status: number; headers: Record<string, string> } = () => 204) {
  const got: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), path: req.url ?? '' };
      got.push(r);
      const a = answer(got.length - 1, r);
      const { status, headers } = typeof a === 'number' ? { status: a, headers: {} } : a;
      res.writeHead(status, headers).end(status === 204 ? undefined : 'ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }));
  const port = (server.address() as AddressInfo).port;
  return { got, port, url: `http://127.0.0.1:${port}` };
}

/** Standard Webhooks verification, written independently of the service. */
function verify(secret: string, r: Received): boolean {
  assert.match(secret, /^whsec_[A-Za-z0-9+/]+=*$/);
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const id = String(r.headers['webhook-id']);
  const ts = String(r.headers['webhook-timestamp']);
  if (Math.abs(Date.now() / 1000 - Number(ts)) > 300) return false;
  const expected = crypto.createHmac('sha256', key).update(`${id}.${ts}.${r.body}`).digest();
  return String(r.headers['webhook-signature']).split(' ').some((sig) => {
    const [version, value] = sig.split(',');
    const given = Buffer.from(value ?? '', 'base64');
    return version === 'v1' && given.length === expected.length && crypto.timingSafeEqual(given, expected);
  });
}

async function until<T>(what: string, fn: () => T | undefined | null | false | Promise<T | undefined | null | false>, timeoutMs = 15_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const deliveriesOf = async (db: Db, channelId: string) =>
  await db.all<any>(`SELECT * FROM notification_outbox WHERE channel_id = ? ORDER BY created_at, ${db.dialect.rowKey}`, channelId);

async function setup(t: TestContext, env: Record<string, string> = {}) {
  const s = await startTestServer(t, env);
  const admin = await makeUser(s, { systemAdmin: true });
  const token = await login(s, admin);
  const tree = await makeTree(s);
  const createChannel = (body: Record<string, unknown>) =>
    s.call('POST', '/api/system/notifications/channels', { token, body: { organizationId: tree.organizationId, ...body } });
  const testEvent = async (channelId: string) => {
    const r = await s.call('POST', `/api/system/notifications/channels/${channelId}/test`, { token });
    assert.equal(r.status, 202, r.text);
    return r.body.delivery.id as string;
  };
  return { s, token, tree, createChannel, testEvent };
}

const taskEvent = (tree: { organizationId: string; workspaceId: string; projectId: string }, subject = 'Task assigned') =>
  ({ category: 'collaboration_tasks' as const, type: 'task.assigned', ...tree, subject, link: '/tasks/tsk_1', recipients: [] });

test('a real receiver verifies the Standard Webhooks signature; the secret is shown once and never stored, logged or audited in clear', async (t) => {
  const { s, token, tree, createChannel, testEvent } = await setup(t);
  const rx = await receiver(t);
  const created = await createChannel({ kind: 'webhook', url: `${rx.url}/hooks/svc?x=1`, description: 'studio bot', categories: ['collaboration_tasks'] });
  assert.equal(created.status, 201, created.text);
  const secret: string = created.body.secret;
  assert.ok(Buffer.from(secret.slice(6), 'base64').length >= 24);
  const ch = created.body.channel;
  assert.equal(ch.kind, 'webhook');
  assert.deepEqual(ch.categories, ['collaboration_tasks']);
  assert.equal(ch.secretHint, `whsec_\u2026${secret.slice(-4)}`);
  const shown = await s.call('GET', `/api/system/notifications/channels/${ch.id}`, { token });
  assert.equal(shown.status, 200);
  assert.ok(!shown.text.includes(secret) && !shown.text.includes('secretEncrypted'));
  const row = await s.db.get<any>('SELECT * FROM notification_channels WHERE id = ?', ch.id);
  assert.ok(row.secret_encrypted.startsWith('v1:') && !row.secret_encrypted.includes(secret.slice(6, 20)));

  assert.equal(await notify(s.operator(), taskEvent(tree, 'Record temp VO')), 0);
  await notify(s.operator(), { ...taskEvent(tree), category: 'review', type: 'review.requested' });
  await until('the delivery', () => rx.got.length === 1);
  const r = rx.got[0];
  assert.ok(verify(secret, r), 'signature verifies with the secret shown at creation');
  assert.ok(!verify(`whsec_${crypto.randomBytes(32).toString('base64')}`, r));
  assert.equal(r.path, '/hooks/svc?x=1');
  assert.equal(r.headers['content-type'], 'application/json');
  assert.equal(r.headers.host, `127.0.0.1:${rx.port}`);
  const body = JSON.parse(r.body);
  assert.equal(body.type, 'task.assigned');
  assert.equal(body.data.subject, 'Record temp VO');
  assert.equal(body.data.category, 'collaboration_tasks');
  assert.equal(body.data.projectId, tree.projectId);
  const d = await until('delivered', async () => (await deliveriesOf(s.db, ch.id)).find((x) => x.status === 'delivered'));
  assert.equal(d.id, r.headers['webhook-id']);
  assert.equal((await deliveriesOf(s.db, ch.id)).length, 1, 'the review event is not in the channel\u2019s categories');

  const list = await s.call('GET', `/api/system/notifications/channels/${ch.id}/deliveries`, { token });
  assert.equal(list.status, 200);
  assert.equal(list.body.items[0].status, 'delivered');
  assert.equal(list.body.items[0].attempts, 1);
  assert.equal(list.body.items[0].lastStatusCode, 204);
  assert.equal(list.body.pagination.total, 1);
  const audits = await s.db.all<any>("SELECT * FROM audit_log WHERE action = 'notification.delivery_attempt' AND target_id = ?", d.id);
  assert.equal(audits.length, 1);
  assert.equal(audits[0].result, 'success');
  assert.equal(audits[0].organization_id, tree.organizationId);

  // Rotation: a new secret, answered once; the next delivery is signed with it only.
  const rotated = await s.call('POST', `/api/system/notifications/channels/${ch.id}/rotate-secret`, { token });
  assert.equal(rotated.status, 200, rotated.text);
  assert.notEqual(rotated.body.secret, secret);
  await testEvent(ch.id);
  await until('the test delivery', () => rx.got.length === 2);
  assert.ok(verify(rotated.body.secret, rx.got[1]) && !verify(secret, rx.got[1]));
  assert.equal(JSON.parse(rx.got[1].body).type, 'channel.test');

  s.log.flush();
  const everything = [
    s.logs.join('\n'),
    JSON.stringify(await s.db.all('SELECT * FROM audit_log')),
    JSON.stringify(await s.db.all('SELECT * FROM notification_outbox')),
    (await s.call('GET', `/api/system/notifications/channels/${ch.id}/deliveries`, { token })).text,
    (await s.call('GET', '/api/system/notifications', { token })).text,
  ].join('\n');
  for (const sec of [secret, rotated.body.secret]) {
    assert.ok(!everything.includes(sec) && !everything.includes(sec.slice(6)), 'no secret in logs, audit, outbox or answers');
  }
  for (const sig of rx.got.map((x) => String(x.headers['webhook-signature']).slice(3))) assert.ok(!everything.includes(sig), 'no signature either');
});

test('a receiver that fails twice then succeeds gets the event exactly once, with a server restart in between', async (t) => {
  const env = { SVC_WEBHOOK_RETRY_BASE_MS: '1000' };
  const { s, tree, createChannel } = await setup(t, env);
  const rx = await receiver(t, (i) => (i < 2 ? 500 : 200));
  const created = await createChannel({ kind: 'webhook', url: `${rx.url}/flaky` });
  const ch = created.body.channel;
  await notify(s.operator(), taskEvent(tree));
  await until('the first failed attempt', async () => (await deliveriesOf(s.db, ch.id))[0]?.attempts >= 1);
  await s.close();
  assert.equal(rx.got.length, 1, 'stopped after the first failure');

  // The same data folder: the same database (SQLite's file, or the test's PostgreSQL database).
  const again = await startTestServer(t, env, { dataDir: s.config.dataDir, storageDir: s.config.storageDir });
  const row = (await deliveriesOf(again.db, ch.id))[0];
  assert.equal(row.status, 'pending', 'the restart kept the outbox row');
  const done = await until('delivery after the restart', async () => (await deliveriesOf(again.db, ch.id)).find((x) => x.status === 'delivered'));
  await new Promise((r) => setTimeout(r, 1200));
  const ok = rx.got.filter((_, i) => i >= 2);
  assert.equal(ok.length, 1, 'received successfully exactly once');
  assert.equal(rx.got.length, 3);
  assert.deepEqual(new Set(rx.got.map((x) => x.headers['webhook-id'])), new Set([done.id]), 'the same webhook-id on every attempt');
  assert.equal(done.attempts, 3);
  assert.equal(done.last_status_code, 200);
  const secondStamp = Number(rx.got[1].headers['webhook-timestamp']);
  assert.ok(secondStamp >= Number(rx.got[0].headers['webhook-timestamp']));
  const audits = await again.db.all<any>("SELECT result, metadata FROM audit_log WHERE action = 'notification.delivery_attempt' AND target_id = ? ORDER BY created_at", done.id);
  assert.deepEqual(audits.map((a) => a.result), ['failure', 'failure', 'success']);
  assert.deepEqual(audits.map((a) => JSON.parse(a.metadata).statusCode), [500, 500, 200]);
  assert.deepEqual(audits.map((a) => JSON.parse(a.metadata).outcome), ['pending', 'pending', 'delivered']);
});

test('destinations: public without an allow-list entry, link-local and metadata addresses are refused; unresolvable names fail closed', async (t) => {
  const { s, token, tree, createChannel, testEvent } = await setup(t);
  const rx = await receiver(t);
  const lookups: string[] = [];
  const answers: Record<string, string[]> = {
    'public.test': ['203.0.113.10'], 'metadata.test': ['169.254.169.254'], 'mapped.test': ['::ffff:169.254.169.254'],
    'ec2v6.test': ['fd00:ec2::254'], 'private.test': ['127.0.0.1'],
  };
  const loop = deliveryLoopOf(s.db)!;
  loop.options.resolve = async (host) => {
    lookups.push(host);
    if (!answers[host]) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return answers[host];
  };
  loop.options.timeoutMs = 500;

  for (const url of ['http://169.254.169.254/latest/meta-data', 'http://[::ffff:169.254.169.254]/', 'http://[fe80::1]/', 'http://[fd00:ec2::254]/',
    'http://2852039166/', 'ftp://127.0.0.1/', 'http://user:pw@127.0.0.1/', 'not a url']) {
    const r = await createChannel({ kind: 'webhook', url });
    assert.equal(r.status, 422, `${url}: ${r.text}`);
    assert.ok(r.body.error.details.fields.url, url);
  }
  assert.equal((await createChannel({ kind: 'webhook' })).status, 422);
  assert.equal((await createChannel({ kind: 'log', url: rx.url })).status, 422);

  const attempt = async (host: string) => {
    const ch = (await createChannel({ kind: 'webhook', url: `http://${host}:${rx.port}/` })).body.channel;
    const id = await testEvent(ch.id);
    return until(`an attempt to ${host}`, async () => await s.db.get<any>('SELECT * FROM notification_outbox WHERE id = ? AND attempts >= 1', id));
  };
  const pub = await attempt('public.test');
  assert.match(pub.last_error, /203\.0\.113\.10 is public and not in the organization's allow-list/);
  assert.equal(pub.status, 'pending', 'a refused attempt is retried like any failure');
  for (const host of ['metadata.test', 'mapped.test', 'ec2v6.test']) {
    assert.match((await attempt(host)).last_error, /destination refused: .* link-local, metadata or reserved/, host);
  }
  assert.match((await attempt('missing.test')).last_error, /could not resolve missing\.test/);
  assert.equal(rx.got.length, 0, 'nothing reached the receiver');
  const denied = await s.db.all<any>("SELECT metadata FROM audit_log WHERE action = 'notification.delivery_attempt' AND result = 'denied'");
  assert.equal(denied.length, 4);

  // An allow-list entry opens the public address (the attempt now connects and fails on the network, not on policy).
  assert.equal((await s.call('POST', '/api/system/notifications/allow-list', { token, body: { organizationId: tree.organizationId, cidr: '169.254.169.254' } })).status, 422);
  assert.equal((await s.call('POST', '/api/system/notifications/allow-list', { token, body: { organizationId: tree.organizationId, cidr: '10.0.0.0/33' } })).status, 422);
  const entry = await s.call('POST', '/api/system/notifications/allow-list', { token, body: { organizationId: tree.organizationId, cidr: '203.0.113.0/24', description: 'partner' } });
  assert.equal(entry.status, 201, entry.text);
  assert.equal(entry.body.cidr, '203.0.113.0/24');
  assert.equal((await s.call('POST', '/api/system/notifications/allow-list', { token, body: { organizationId: tree.organizationId, cidr: '203.0.113.0/24' } })).status, 409);
  const opened = await attempt('public.test');
  assert.doesNotMatch(opened.last_error, /destination refused/);
  // Another organization's allow-list does not count.
  const otherOrg = await makeTree(s);
  const foreign = await s.call('POST', '/api/system/notifications/channels', { token, body: { organizationId: otherOrg.organizationId, kind: 'webhook', url: `http://public.test:${rx.port}/` } });
  const fid = await testEvent(foreign.body.channel.id);
  const f = await until('foreign attempt', async () => await s.db.get<any>('SELECT * FROM notification_outbox WHERE id = ? AND attempts >= 1', fid));
  assert.match(f.last_error, /not in the organization's allow-list/);
  assert.equal((await s.call('DELETE', `/api/system/notifications/allow-list/${entry.body.id}`, { token })).status, 204);
  assert.match((await attempt('public.test')).last_error, /not in the organization's allow-list/);

  // A private name is fine.
  const ok = await attempt('private.test');
  assert.equal(ok.status, 'delivered');
  assert.equal(rx.got.length, 1);
  assert.equal(rx.got[0].headers.host, `private.test:${rx.port}`);
});

test('the connection goes to the address that was checked: a resolver answering differently on its second lookup cannot redirect it', async (t) => {
  const { s, createChannel, testEvent } = await setup(t);
  const rx = await receiver(t);
  let calls = 0;
  deliveryLoopOf(s.db)!.options.resolve = async (host) => {
    assert.equal(host, 'rebind.test');
    calls++;
    return calls === 1 ? ['127.0.0.1'] : ['169.254.169.254'];
  };
  const ch = (await createChannel({ kind: 'webhook', url: `http://rebind.test:${rx.port}/in` })).body.channel;
  const first = await testEvent(ch.id);
  const d1 = await until('first attempt', async () => await s.db.get<any>("SELECT * FROM notification_outbox WHERE id = ? AND status != 'pending'", first));
  assert.equal(d1.status, 'delivered', d1.last_error);
  assert.equal(calls, 1, 'resolved once for the attempt: the connection did not look the name up again');
  assert.equal(rx.got.length, 1, 'the request reached the checked address');
  assert.equal(rx.got[0].headers.host, `rebind.test:${rx.port}`);
  const audit = await s.db.get<any>("SELECT metadata FROM audit_log WHERE action = 'notification.delivery_attempt' AND target_id = ?", first);
  assert.equal(JSON.parse(audit.metadata).address, '127.0.0.1');
  // The next attempt resolves again, gets the metadata address and is refused before connecting.
  const second = await testEvent(ch.id);
  const d2 = await until('second attempt', async () => await s.db.get<any>('SELECT * FROM notification_outbox WHERE id = ? AND attempts >= 1', second));
  assert.match(d2.last_error, /169\.254\.169\.254 is a link-local/);
  assert.equal(calls, 2);
  assert.equal(rx.got.length, 1);
});

test('redirects are not followed and timeouts fail the attempt; disabled channels fail without sending', async (t) => {
  const { s, token, createChannel, testEvent } = await setup(t);
  const target = await receiver(t);
  const redirecting = await receiver(t, () => ({ status: 302, headers: { location: `${target.url}/elsewhere` } }));
  const ch = (await createChannel({ kind: 'webhook', url: `${redirecting.url}/` })).body.channel;
  const id = await testEvent(ch.id);
  const d = await until('redirect attempt', async () => await s.db.get<any>('SELECT * FROM notification_outbox WHERE id = ? AND attempts >= 1', id));
  assert.equal(d.status, 'pending');
  assert.equal(d.last_status_code, 302);
  assert.match(d.last_error, /redirect not followed/);
  assert.equal(target.got.length, 0);

  const silent = http.createServer(() => { /* never answers */ });
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => { silent.closeAllConnections(); silent.close(() => resolve()); }));
  deliveryLoopOf(s.db)!.options.timeoutMs = 300;
  const slow = (await createChannel({ kind: 'webhook', url: `http://127.0.0.1:${(silent.address() as AddressInfo).port}/` })).body.channel;
  const sid = await testEvent(slow.id);
  const sd = await until('timeout attempt', async () => await s.db.get<any>('SELECT * FROM notification_outbox WHERE id = ? AND attempts >= 1', sid));
  assert.match(sd.last_error, /timed out after 300 ms/);

  // Pending retries of a channel that is then disabled fail without being sent.
  const off = await s.call('PATCH', `/api/system/notifications/channels/${ch.id}`, { token, body: { enabled: false } });
  assert.equal(off.status, 200, off.text);
  assert.equal(off.body.enabled, false);
  const failed = await until('disabled channel', async () => await s.db.get<any>("SELECT * FROM notification_outbox WHERE id = ? AND status = 'failed'", id));
  assert.equal(failed.last_error, 'channel disabled');
  assert.equal((await s.call('POST', `/api/system/notifications/channels/${ch.id}/test`, { token })).status, 409);
});

test('a log channel appends JSON lines under the data directory; channel routes list, change and delete', async (t) => {
  const { s, token, tree, createChannel } = await setup(t);
  const log = await createChannel({ kind: 'log', description: 'local journal' });
  assert.equal(log.status, 201, log.text);
  assert.equal(log.body.secret, undefined);
  assert.equal(log.body.channel.logFile, `notifications/${tree.organizationId}.jsonl`);
  const off = await createChannel({ kind: 'webhook', url: 'http://127.0.0.1:9/', enabled: false });
  assert.equal(off.status, 201);
  const writer = await member(s, 'writer', tree);
  assert.equal(await notify(s.operator(), taskEvent(tree, 'first')), 0);
  await notify(s.operator(), { category: 'system_notices', type: 'notice.maintenance', organizationId: tree.organizationId, subject: 'second', recipients: [writer.user.id] });
  const file = path.join(s.config.dataDir, 'notifications', `${tree.organizationId}.jsonl`);
  const lines = await until('two log lines', () => {
    const text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
    const ls = text.split('\n').filter(Boolean);
    return ls.length === 2 ? ls.map((l) => JSON.parse(l)) : null;
  });
  assert.deepEqual(lines.map((l) => [l.type, l.data.subject, l.channelId]).sort(),
    [['notice.maintenance', 'second', log.body.channel.id], ['task.assigned', 'first', log.body.channel.id]]);
  assert.equal((await deliveriesOf(s.db, off.body.channel.id)).length, 0, 'a disabled channel gets no deliveries');

  const overview = await s.call('GET', `/api/system/notifications?organizationId=${tree.organizationId}`, { token });
  assert.equal(overview.status, 200);
  assert.equal(overview.body.channels.length, 2);
  assert.equal(overview.body.delivery.maxAttempts, 12);
  assert.equal((await s.call('GET', `/api/system/notifications/channels?organizationId=${tree.organizationId}`, { token })).body.pagination.total, 2);
  const patched = await s.call('PATCH', `/api/system/notifications/channels/${off.body.channel.id}`, { token, body: { categories: ['review', 'delivery'], description: 'x', url: 'http://10.0.0.7/hook' } });
  assert.equal(patched.status, 200, patched.text);
  assert.deepEqual([patched.body.categories, patched.body.url], [['review', 'delivery'], 'http://10.0.0.7/hook']);
  assert.equal((await s.call('PATCH', `/api/system/notifications/channels/${off.body.channel.id}`, { token, body: { url: 'http://169.254.169.254/' } })).status, 422);
  assert.equal((await s.call('PATCH', `/api/system/notifications/channels/${log.body.channel.id}`, { token, body: { url: 'http://10.0.0.7/' } })).status, 422);
  assert.equal((await s.call('POST', `/api/system/notifications/channels/${log.body.channel.id}/rotate-secret`, { token })).status, 409);
  assert.equal((await createChannel({ kind: 'log', organizationId: 'org_none' })).status, 422);
  assert.equal((await s.call('DELETE', `/api/system/notifications/channels/${log.body.channel.id}`, { token })).status, 204);
  assert.equal((await s.call('GET', `/api/system/notifications/channels/${log.body.channel.id}`, { token })).status, 404);
  assert.equal((await s.call('GET', `/api/system/notifications/channels/${log.body.channel.id}/deliveries`, { token })).status, 404);
  const actions = (await s.db.all<any>("SELECT action FROM audit_log WHERE action LIKE 'notification.channel_%' ORDER BY created_at")).map((r) => r.action);
  assert.deepEqual(actions, ['notification.channel_created', 'notification.channel_created', 'notification.channel_updated', 'notification.channel_deleted']);
});

test('notify writes in the caller\u2019s transaction: a rollback leaves neither inbox rows nor deliveries', async (t) => {
  const { s, tree, createChannel } = await setup(t);
  const writer = await member(s, 'writer', tree);
  const ch = (await createChannel({ kind: 'log' })).body.channel;
  const ctx = s.operator();
  await assert.rejects(async () => await ctx.db.tx(async () => {
    assert.equal(await notify(ctx, { category: 'system_notices', type: 'x.y', organizationId: tree.organizationId, subject: 's', recipients: [writer.user.id] }), 1);
    throw new Error('caller fails');
  }), /caller fails/);
  assert.equal((await s.db.get<any>('SELECT count(*) AS n FROM notifications')).n, 0);
  assert.equal((await deliveriesOf(s.db, ch.id)).length, 0);
});
