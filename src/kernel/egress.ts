// The egress policy: where the service may connect when it calls out for a tenant or an
// administrator (webhooks, model connectors and the files their answers name, identity providers).
// Every outbound connection goes through this module: a host name is resolved once, every answer is
// judged in normalized form by its class (src/kernel/addresses.ts: always refused, private,
// public), and the connection is made to exactly the judged address (the Host header and TLS server
// name keep the name), so a second DNS answer cannot redirect it. Redirects are never followed.
// Policies: webhooks (private allowed, public only through the organization's allow-list),
// connectors (private and public allowed), local connectors (private only: costMode local means
// loopback or private), identity providers (private and public allowed; their https rule is theirs).
import dns from 'node:dns/promises';
import type { LookupAddress, LookupOptions } from 'node:dns';
import http from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { outboundUrl } from './urls.ts';
import { classifyAddress, inAllowList, normalizeAddress, type Address } from './addresses.ts';

export type Resolver = (hostname: string) => Promise<string[]>;

export const systemResolver: Resolver = async (hostname) =>
  (await dns.lookup(hostname, { all: true, verbatim: true })).map((a) => a.address);

// ---------------------------------------------------------------------------------------------
// Policies

export interface EgressPolicy {
  /** Who calls out, for messages: 'webhook', 'connector', ... */
  readonly name: string;
  /** What a public address gets: allowed, refused, or allowed only inside `allowList`. */
  readonly publicAddresses: 'allow' | 'refuse' | 'allow-list';
  /** CIDR ranges (publicAddresses 'allow-list'). */
  readonly allowList?: readonly string[];
  /** Why a public address is refused, after "<address> is public and ...". */
  readonly publicRefusal?: string;
}

/** Model connectors (mixed, cloud): local model servers and cloud services alike. */
export const CONNECTOR_EGRESS: EgressPolicy = Object.freeze({ name: 'connector', publicAddresses: 'allow' });
/** Model connectors of costMode local: loopback and private addresses only. */
export const LOCAL_CONNECTOR_EGRESS: EgressPolicy = Object.freeze({
  name: 'local connector', publicAddresses: 'refuse',
  publicRefusal: 'the connector is local (costMode local reaches loopback and private addresses only)',
});
/** Identity providers (OIDC discovery, key sets, token endpoint); their https-unless-loopback rule is checked by the caller. */
export const IDENTITY_PROVIDER_EGRESS: EgressPolicy = Object.freeze({ name: 'identity provider', publicAddresses: 'allow' });
/** Webhooks: private addresses, and public ones in the organization's allow-list. */
export const webhookEgress = (allowList: readonly string[]): EgressPolicy => ({
  name: 'webhook', publicAddresses: 'allow-list', allowList, publicRefusal: 'not in the organization\'s allow-list',
});

/** The prefix of every refusal message: callers and tests recognize a refusal by it. */
export const REFUSED = 'destination refused';

/** A destination the policy refuses: nothing was connected. */
export class EgressRefused extends Error {
  readonly code = 'EGRESS_REFUSED';
  readonly address: string | null;
  constructor(reason: string, address: string | null = null) {
    super(`${REFUSED}: ${reason} (egress policy)`);
    this.address = address;
  }
}

/** Why the policy refuses this address (normalized), or null when it is allowed. */
export function addressRefusal(a: Address, policy: EgressPolicy): string | null {
  const cls = classifyAddress(a.address);
  if (cls === 'refused') return `${a.address} is a link-local, metadata or reserved address`;
  if (cls === 'private' || policy.publicAddresses === 'allow') return null;
  if (policy.publicAddresses === 'allow-list' && inAllowList(a, policy.allowList ?? [])) return null;
  return `${a.address} is public and ${policy.publicRefusal ?? `not allowed for a ${policy.name}`}`;
}

/** Checks of a URL that need no DNS: http(s), no credentials; a literal host must not be always refused. */
export function urlProblem(raw: string): string | null {
  const url = outboundUrl(raw);
  if (typeof url === 'string') return url;
  const literal = normalizeAddress(url.hostname);
  if (literal && classifyAddress(literal.address) === 'refused') return 'points to a link-local, metadata or reserved address';
  return null;
}

/** A name that could not be resolved (not a refusal: the network said no). */
export class ResolveError extends Error {
  readonly code: string;
  constructor(hostname: string, cause: unknown) {
    const e = cause as NodeJS.ErrnoException;
    super(`could not resolve ${hostname}: ${e?.message ?? String(cause)}`);
    this.code = e?.code ?? 'ENOTFOUND';
  }
}

/**
 * The addresses of a host (a literal address is its own answer), normalized; ResolveError when the
 * name has none or the resolver fails or takes longer than `timeoutMs`.
 */
export async function resolveHost(hostname: string, resolve: Resolver = systemResolver, timeoutMs?: number): Promise<Address[]> {
  const literal = normalizeAddress(hostname);
  if (literal) return [literal];
  let answers: string[];
  let timer: NodeJS.Timeout | undefined;
  try {
    const lookup = resolve(hostname);
    answers = timeoutMs === undefined ? await lookup : await Promise.race([
      lookup,
      new Promise<never>((_, reject) => { timer = setTimeout(() => reject(Object.assign(new Error(`no answer within ${timeoutMs} ms`), { code: 'ETIMEOUT' })), timeoutMs); }),
    ]);
  } catch (err) {
    throw new ResolveError(hostname, err);
  } finally {
    clearTimeout(timer);
  }
  const out = answers.map(normalizeAddress).filter((a): a is Address => a !== null);
  if (out.length === 0) throw new ResolveError(hostname, new Error('no usable address'));
  return out;
}

/** The first refusal among the addresses (every answer must pass: fail closed), or null. */
export function refusalOf(addresses: readonly Address[], policy: EgressPolicy): { address: string; reason: string } | null {
  for (const a of addresses) {
    const reason = addressRefusal(a, policy);
    if (reason) return { address: a.address, reason };
  }
  return null;
}

/** Resolves once and judges every answer: the addresses to connect to, or EgressRefused / ResolveError. */
export async function judgeHost(hostname: string, policy: EgressPolicy, resolve: Resolver = systemResolver, timeoutMs?: number): Promise<Address[]> {
  const addresses = await resolveHost(hostname, resolve, timeoutMs);
  const refused = refusalOf(addresses, policy);
  if (refused) throw new EgressRefused(refused.reason, refused.address);
  return addresses;
}

/**
 * A `lookup` for net/http agents: the name resolved once and judged; the socket connects to a judged
 * address. net skips `lookup` for literal IP hosts: callers judge those themselves (literalRefusal).
 */
export function egressLookup(policy: EgressPolicy, resolve: Resolver = systemResolver): net.LookupFunction {
  return (hostname: string, options: LookupOptions, callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void) => {
    judgeHost(hostname, policy, resolve).then((addresses) => {
      const wanted = options.family === 4 || options.family === 6 ? addresses.filter((a) => a.family === options.family) : addresses;
      const usable = wanted.length ? wanted : addresses;
      if (options.all) callback(null, usable.map((a) => ({ address: a.address, family: a.family })));
      else callback(null, usable[0].address, usable[0].family);
    }, (err: NodeJS.ErrnoException) => callback(err, '', 0));
  };
}

/** The refusal of a URL host that is a literal address (net connects to those without a lookup), or null. */
export function literalRefusal(hostname: string, policy: EgressPolicy): EgressRefused | null {
  const literal = normalizeAddress(hostname);
  if (!literal) return null;
  const reason = addressRefusal(literal, policy);
  return reason ? new EgressRefused(reason, literal.address) : null;
}

// ---------------------------------------------------------------------------------------------
// One request without a pool (webhooks, identity providers)

export interface OnceOptions {
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
  policy: EgressPolicy;
  resolve?: Resolver;
  timeoutMs: number;
  signal?: AbortSignal;
  /** Largest answer body kept; a larger one fails the request. 0: the body is read and dropped. */
  maxBytes: number;
}

export interface OnceAnswer { status: number; headers: IncomingHttpHeaders; body: Buffer; address: string }

/** A request that failed after the destination was allowed (network, time-out, size). */
export class EgressFailure extends Error {
  readonly code: string;
  readonly address: string | null;
  constructor(message: string, code: string, address: string | null) {
    super(message);
    this.code = code;
    this.address = address;
  }
}

/**
 * One request to a judged address: resolved once, connected to exactly that address, no redirect
 * followed (a 3xx is returned as it is), bounded by timeoutMs and the caller's signal. Throws
 * EgressRefused (nothing connected), ResolveError or EgressFailure.
 */
export async function requestOnce(o: OnceOptions): Promise<OnceAnswer> {
  const url = outboundUrl(o.url);
  if (typeof url === 'string') throw new EgressRefused(`URL ${url}`);
  const problem = urlProblem(url.href);
  if (problem) throw new EgressRefused(`URL ${problem}`);
  const signal = o.signal ? AbortSignal.any([o.signal, AbortSignal.timeout(o.timeoutMs)]) : AbortSignal.timeout(o.timeoutMs);
  const [dest] = await judgeHost(url.hostname, o.policy, o.resolve ?? systemResolver, o.timeoutMs);
  const name = url.hostname.replace(/^\[|\]$/g, '');
  const headers: Record<string, string> = { ...o.headers, host: url.host };
  if (o.body !== undefined) headers['content-length'] = String(Buffer.byteLength(o.body));
  return new Promise<OnceAnswer>((resolve, reject) => {
    const failWith = (err: Error) => {
      const reason = signal.aborted
        ? (o.signal?.aborted ? 'interrupted by shutdown' : `timed out after ${o.timeoutMs} ms`)
        : `${(err as NodeJS.ErrnoException).code ?? 'error'}: ${err.message}`;
      const code = signal.aborted ? (o.signal?.aborted ? 'EABORTED' : 'ETIMEDOUT') : ((err as NodeJS.ErrnoException).code ?? 'error');
      reject(new EgressFailure(reason, code, dest.address));
    };
    const req = (url.protocol === 'https:' ? https : http).request({
      host: dest.address, family: dest.family, port: url.port || (url.protocol === 'https:' ? 443 : 80),
      path: `${url.pathname}${url.search}`, method: o.method, agent: false, signal, headers,
      ...(url.protocol === 'https:' && !net.isIP(name) ? { servername: name } : {}),
    }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        if (o.maxBytes === 0) return;
        size += chunk.length;
        if (size > o.maxBytes) {
          res.destroy();
          req.destroy();
          reject(new EgressFailure(`answer larger than ${o.maxBytes} bytes`, 'ETOOBIG', dest.address));
          return;
        }
        chunks.push(chunk);
      });
      res.on('error', failWith);
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks, size), address: dest.address }));
    });
    req.on('error', failWith);
    req.end(o.body);
  });
}

// ---------------------------------------------------------------------------------------------
// Webhooks

export interface PostOptions {
  url: string;
  body: string;
  headers: Record<string, string>;
  allowList: readonly string[];
  resolve: Resolver;
  timeoutMs: number;
  signal?: AbortSignal;
}

export interface PostResult {
  ok: boolean;
  statusCode: number | null;
  error: string | null;
  /** true when the destination was refused by policy (never connected). */
  refused: boolean;
  address: string | null;
}

const failed = (error: string, extra: Partial<PostResult> = {}): PostResult =>
  ({ ok: false, statusCode: null, error, refused: false, address: null, ...extra });

/** One webhook POST under the webhook policy: 2xx delivers; a 3xx is not followed. Never throws. */
export async function postOnce(o: PostOptions): Promise<PostResult> {
  try {
    const res = await requestOnce({
      url: o.url, method: 'POST', headers: o.headers, body: o.body, policy: webhookEgress(o.allowList),
      resolve: o.resolve, timeoutMs: o.timeoutMs, signal: o.signal, maxBytes: 0,
    });
    const code = res.status;
    if (code >= 200 && code < 300) return { ok: true, statusCode: code, error: null, refused: false, address: res.address };
    if (code >= 300 && code < 400) return failed(`redirect not followed (HTTP ${code})`, { statusCode: code, address: res.address });
    return failed(`HTTP ${code}`, { statusCode: code, address: res.address });
  } catch (err) {
    if (err instanceof EgressRefused) return failed(err.message, { refused: true, address: err.address });
    if (err instanceof EgressFailure) return failed(err.message, { address: err.address });
    return failed((err as Error).message);
  }
}
