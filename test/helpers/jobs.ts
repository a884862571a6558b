// Helpers of the job and worker tests: the project's own model server, a connector registered and
// probed through HTTP, and waiting for a job to reach a state (through HTTP).
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { startModelServer } from '../../tools/model-server/server.ts';
import { startTestServer, type TestServer } from './server.ts';
import { member } from './factories.ts';

/** Fast worker settings for tests: short poll, short retry backoff. */
export const WORKER_ENV = { SVC_WORKER_POLL_MS: '100', SVC_WORKER_RETRY_BASE_MS: '20' };

export async function startModel(t: TestContext) {
  const m = await startModelServer({ port: 0 });
  t.after(() => m.close());
  const control = async (faults: Record<string, unknown>) => {
    const r = await fetch(`${m.url}/control`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(faults) });
    assert.equal(r.status, 200, await r.text());
  };
  return { ...m, control };
}

export interface ConnectorOpts {
  costMode?: 'local' | 'mixed' | 'cloud';
  capability?: string[];
  kind?: 'openai-compatible' | 'http-json' | 'comfyui';
  probe?: boolean;
  label?: string;
  authEnv?: string;
  protocol?: Record<string, unknown>;
}

/** Registers the model server as a connector of the token's organization and (by default) probes it ready. */
const MODELS: Record<string, string> = { image: 'svc-image', video: 'svc-video', tts: 'svc-tts', asr: 'svc-asr', chat: 'svc-chat' };

export async function connector(s: TestServer, token: string, url: string, o: ConnectorOpts = {}): Promise<string> {
  const capability = o.capability ?? ['image', 'video', 'tts', 'asr', 'chat', 'prompt'];
  const reg = await s.call('POST', '/api/platform/models/register', {
    token,
    body: {
      label: o.label ?? 'Local model server', endpoint: url, kind: o.kind ?? 'openai-compatible',
      capability, costMode: o.costMode ?? 'local', ...(o.authEnv ? { authEnv: o.authEnv } : {}),
      protocol: o.protocol ?? { models: Object.fromEntries(capability.filter((k) => MODELS[k]).map((k) => [k, MODELS[k]])) },
    },
  });
  assert.equal(reg.status, 201, reg.text);
  if (o.probe !== false) {
    const p = await s.call('POST', `/api/platform/models/${reg.body.id}/probe`, { token });
    assert.equal(p.status, 200, p.text);
  }
  return reg.body.id as string;
}

export async function createJob(s: TestServer, token: string, body: Record<string, unknown>) {
  const r = await s.call('POST', '/api/jobs', { token, body: { prompt: 'a red lantern in the rain', ...body } });
  assert.equal(r.status, 201, r.text);
  return r.body as { id: string; status: string };
}

/** Polls the job's detail until its status is one of `statuses`. */
export async function waitJob(s: TestServer, token: string, id: string, statuses: string[], timeoutMs = 15_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const r = await s.call('GET', `/api/jobs/${id}`, { token });
    assert.equal(r.status, 200, r.text);
    if (statuses.includes(r.body.status)) {
      await eventsHandled(s);
      return r.body;
    }
    if (Date.now() > until) assert.fail(`job ${id} is ${r.body.status} after ${timeoutMs} ms, expected ${statuses.join('|')}: ${r.text}`);
    await new Promise((res) => setTimeout(res, 25));
  }
}

/**
 * Waits (at most 5 s) until the events the worker emitted are handled: a job's news (re-opened
 * reviews) is handled in the transaction right after the job's own commits (src/directory/events.ts).
 * Rows whose handler failed (attempts > 0) are not waited for.
 */
export async function eventsHandled(s: TestServer): Promise<void> {
  const until = Date.now() + 5_000;
  while ((await s.db.get<{ n: number }>('SELECT count(*) AS n FROM event_outbox WHERE done_at IS NULL AND attempts = 0'))!.n > 0 && Date.now() < until) {
    await new Promise((res) => setTimeout(res, 5));
  }
}

export const sleep = (ms: number) => new Promise((res) => setTimeout(res, ms));

/** A server with fast worker settings, the model server, an organization owner and a connector of theirs. */
export async function jobWorld(t: TestContext, o: { env?: Record<string, string>; connector?: ConnectorOpts; storage?: 'local' | 's3' } = {}) {
  const s = await startTestServer(t, { ...WORKER_ENV, ...o.env }, { storage: o.storage });
  const m = await startModel(t);
  const owner = await member(s, 'org_owner');
  const id = await connector(s, owner.token, m.url, o.connector);
  return { s, m, token: owner.token, user: owner.user, tree: owner.tree, id };
}
