// Replies finished in one turn of the event loop are written together at its end
// (src/http/turn-writes.ts): in order, none lost, a failing write alone; and over a real server,
// pipelined requests on one connection are still answered in order.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import type { ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { turnWriter } from '../../src/http/turn-writes.ts';
import { startTestServer } from '../helpers/server.ts';

/** A stand-in for the response, which the writer touches only to destroy it. */
function response(name: string, destroyed: string[]): ServerResponse {
  return { destroy: () => destroyed.push(name) } as unknown as ServerResponse;
}

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

test('writes run at the end of the turn, together and in the order they were queued', async () => {
  const done: string[] = [];
  const destroyed: string[] = [];
  const later = turnWriter((err) => assert.fail(String(err)));
  for (const name of ['a', 'b', 'c']) later(response(name, destroyed), () => done.push(name));
  assert.deepEqual(done, [], 'nothing is written in the turn that queued it');
  await Promise.resolve();
  assert.deepEqual(done, [], 'nor in its microtasks');
  // An immediate queued after the writes runs after all of them: they were written in one go.
  await nextTurn();
  assert.deepEqual(done, ['a', 'b', 'c']);
  assert.deepEqual(destroyed, []);
});

test('a write that throws destroys its own response only, is reported, and the next ones still run', async () => {
  const done: string[] = [];
  const destroyed: string[] = [];
  const reported: unknown[] = [];
  const later = turnWriter((err) => reported.push(err));
  later(response('a', destroyed), () => done.push('a'));
  later(response('b', destroyed), () => { throw new TypeError('bad header'); });
  later(response('c', destroyed), () => done.push('c'));
  await nextTurn();
  assert.deepEqual(done, ['a', 'c']);
  assert.deepEqual(destroyed, ['b']);
  assert.equal(reported.length, 1);
  assert.equal((reported[0] as Error).message, 'bad header');
});

test('a write queued while the turn\'s writes run is written in a later turn, not lost', async () => {
  const done: string[] = [];
  const destroyed: string[] = [];
  const later = turnWriter((err) => assert.fail(String(err)));
  later(response('a', destroyed), () => {
    done.push('a');
    later(response('b', destroyed), () => done.push('b'));
  });
  await nextTurn();
  assert.deepEqual(done, ['a']);
  await nextTurn();
  assert.deepEqual(done, ['a', 'b']);
});

test('pipelined requests on one connection are answered in order, each once', async (t) => {
  const s = await startTestServer(t);
  const ids = ['pipe-1', 'pipe-2', 'pipe-3', 'pipe-4'];
  const sock = net.connect(s.port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => { sock.once('connect', resolve); sock.once('error', reject); });
  // Four requests in one write: a known path, an unknown one (404), and two more, the last closing.
  const paths = ['/api/health', '/api/no-such-route', '/api/health', '/api/health'];
  sock.write(paths.map((p, i) => `GET ${p} HTTP/1.1\r\nhost: 127.0.0.1\r\nx-request-id: ${ids[i]}\r\n${i === 3 ? 'connection: close\r\n' : ''}\r\n`).join(''));
  const chunks: Buffer[] = [];
  for await (const chunk of sock) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  const answers = [...text.matchAll(/HTTP\/1\.1 (\d{3}) [^\r]*\r\n([\s\S]*?)\r\n\r\n/g)].map((m) => ({
    status: Number(m[1]), id: /^x-request-id: (\S+)$/im.exec(m[2])?.[1],
  }));
  assert.deepEqual(answers, [
    { status: 200, id: 'pipe-1' }, { status: 404, id: 'pipe-2' }, { status: 200, id: 'pipe-3' }, { status: 200, id: 'pipe-4' },
  ]);
  s.log.flush();
  const logged = s.logs.map((l) => JSON.parse(l) as { msg: string; requestId?: string }).filter((l) => l.msg === 'request').map((l) => l.requestId);
  // Each request has one access-log line, written when its reply was (in the order the replies finished).
  assert.deepEqual(logged.filter((id) => id?.startsWith('pipe-')).sort(), ids);
});

test('a reply node refuses to write is answered as the contract\'s 500, logged with its request id, its stream never started', async (t) => {
  const s = await startTestServer(t);
  let produced = 0;
  const stream = new Readable({ read() { produced++; this.push(Buffer.alloc(1024)); } });
  // A header value with a line break: node's writeHead throws before anything is sent.
  s.app.router.get('/api/test/bad-header', { summary: 'test only', auth: 'none' }, () => ({ status: 200, body: { ok: true }, headers: { 'x-note': 'a\nb' } }));
  s.app.router.get('/api/test/bad-header-stream', { summary: 'test only', auth: 'none' }, () => ({ status: 200, raw: stream, headers: { 'x-note': 'a\nb' } }));
  for (const [path, rid] of [['/api/test/bad-header', 'bad-header'], ['/api/test/bad-header-stream', 'bad-header-stream']]) {
    const r = await s.call('GET', path, { headers: { 'x-request-id': rid } });
    assert.equal(r.status, 500);
    assert.equal(r.headers.get('x-request-id'), rid);
    assert.equal(r.headers.get('x-note'), null);
    assert.equal((r.body as { error: { code: string } }).error.code, 'internal_error');
    s.log.flush();
    const lines = s.logs.map((l) => JSON.parse(l) as { msg: string; level: string; requestId?: string; status?: number }).filter((l) => l.requestId === rid);
    assert.deepEqual(lines.filter((l) => l.level === 'error').map((l) => l.msg), ['unhandled error']);
    assert.deepEqual(lines.filter((l) => l.msg === 'request').map((l) => l.status), [500]);
  }
  assert.ok(stream.destroyed, 'the stream was destroyed');
  assert.equal(produced, 0, 'nothing was read from it');
  assert.equal((await s.call('GET', '/api/health')).status, 200);
});
