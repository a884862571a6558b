// Requests to an identity provider (OIDC discovery, key sets, the token endpoint), all through the
// egress policy (src/kernel/egress.ts, identity-provider policy): the name resolved once and judged,
// the connection made to that address, no redirects, a time-out, a size limit; anything else is a
// FetchJsonError with a short reason (never the document).
import { IDENTITY_PROVIDER_EGRESS, EgressFailure, EgressRefused, ResolveError, requestOnce, type OnceAnswer } from '../../kernel/egress.ts';

const TIMEOUT_MS = 5_000;
const MAX_DOCUMENT = 512 * 1024;

export class FetchJsonError extends Error {}

/** One request to a provider under the egress policy; FetchJsonError with a short reason when it cannot be made. */
export async function providerRequest(o: {
  url: string; method: 'GET' | 'POST'; headers: Record<string, string>; body?: string; timeoutMs?: number; signal?: AbortSignal; maxBytes?: number;
}): Promise<OnceAnswer> {
  const timeoutMs = o.timeoutMs ?? TIMEOUT_MS;
  try {
    return await requestOnce({
      url: o.url, method: o.method, headers: o.headers, body: o.body, policy: IDENTITY_PROVIDER_EGRESS, timeoutMs, signal: o.signal,
      maxBytes: o.maxBytes ?? MAX_DOCUMENT,
    });
  } catch (err) {
    if (err instanceof EgressRefused) throw new FetchJsonError(err.message);
    if (err instanceof ResolveError) throw new FetchJsonError(`cannot connect (${err.code})`);
    if (err instanceof EgressFailure) {
      if (err.code === 'ETIMEDOUT') throw new FetchJsonError(`no answer within ${timeoutMs / 1000} s`);
      if (err.code === 'ETOOBIG') throw new FetchJsonError(`document larger than ${o.maxBytes ?? MAX_DOCUMENT} bytes`);
      throw new FetchJsonError(`cannot connect (${err.code})`);
    }
    throw err;
  }
}

/** GET a JSON document: no redirects, a timeout, a size limit; FetchJsonError with a short reason otherwise. */
export async function fetchJson(url: string): Promise<Record<string, unknown>> {
  const res = await providerRequest({ url, method: 'GET', headers: { accept: 'application/json' } });
  if (res.status !== 200) throw new FetchJsonError(`answered HTTP ${res.status}`);
  let doc: unknown;
  try {
    doc = JSON.parse(res.body.toString('utf8'));
  } catch {
    throw new FetchJsonError('is not JSON');
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new FetchJsonError('is not a JSON object');
  return doc as Record<string, unknown>;
}

/** A fetch for jose's createRemoteJWKSet (its customFetch option): the key set GET through the egress policy. */
export async function keySetFetch(url: string, init: { headers: Headers; signal: AbortSignal }): Promise<Response> {
  const res = await providerRequest({ url, method: 'GET', headers: Object.fromEntries(init.headers), signal: init.signal, timeoutMs: 10_000 });
  return new Response(res.status === 204 || res.status === 304 ? null : new Uint8Array(res.body), { status: res.status });
}
