// The egress policy: where the service may connect when it calls out for a tenant or an
// administrator (webhooks, model connectors and the files their answers name, identity providers).
// Every outbound connection goes through this module: a host name is resolved once, every answer is
// judged in normalized form (IPv4-mapped IPv6 as IPv4; the WHATWG URL parser has already turned
// decimal, octal, hex and trailing-dot spellings of an IPv4 host into dotted quads), and the
// connection is made to exactly the judged address (the Host header and TLS server name keep the
// name), so a second DNS answer cannot redirect it. Redirects are never followed.
//   always refused, whatever the caller: 0.0.0.0/8, 169.254.0.0/16 (link-local, cloud metadata),
//     192.0.0.0/24 (IETF protocol assignments), 224.0.0.0/3 (multicast, reserved, broadcast),
//     168.63.129.16 (Azure), 100.100.100.200 (Alibaba), ::/128, fe80::/10, ff00::/8, fd00:ec2::254
//     (AWS); NAT64 (64:ff9b::/96) and 6to4 (2002::/16) addresses are judged by the IPv4 address they embed
//   private: 127.0.0.0/8, 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, 100.64.0.0/10 (shared address
//     space: carrier-grade NAT, overlay networks such as Tailscale), ::1, fc00::/7
//   public: anything else; each policy says what a public address gets (allowed, refused, or only
//     inside an allow-list).
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

export type Resolver = (hostname: string) => Promise<string[]>;

export const systemResolver: Resolver = async (hostname) =>
  (await dns.lookup(hostname, { all: true, verbatim: true })).map((a) => a.address);

function blockList(entries: Array<[string, number]>): net.BlockList {
  const list = new net.BlockList();
  for (const [addr, prefix] of entries) list.addSubnet(addr, prefix, net.isIPv6(addr) ? 'ipv6' : 'ipv4');
  return list;
}

const ALWAYS_REFUSED = blockList([
  ['0.0.0.0', 8], ['169.254.0.0', 16], ['192.0.0.0', 24], ['224.0.0.0', 3], ['168.63.129.16', 32], ['100.100.100.200', 32],
  ['::', 128], ['fe80::', 10], ['ff00::', 8], ['fd00:ec2::254', 128],
]);
const PRIVATE = blockList([
  ['127.0.0.0', 8], ['10.0.0.0', 8], ['172.16.0.0', 12], ['192.168.0.0', 16], ['100.64.0.0', 10], ['::1', 128], ['fc00::', 7],
]);
const NAT64 = blockList([['64:ff9b::', 96]]);
const SIX_TO_FOUR = blockList([['2002::', 16]]);

export type AddressClass = 'refused' | 'private' | 'public';

/** The eight 16-bit groups of an IPv6 address (embedded IPv4 tail allowed); null when malformed. */
function ipv6Groups(a: string): number[] | null {
  let s = a;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  if (v4) {
    if (!net.isIPv4(v4[1])) return null;
    const [b0, b1, b2, b3] = v4[1].split('.').map(Number);
    s = `${s.slice(0, -v4[1].length)}${((b0 << 8) | b1).toString(16)}:${((b2 << 8) | b3).toString(16)}`;
  }
  const halves = s.split('::');
  if (halves.length > 2) return null;
  const head = halves[0] ? halves[0].split(':') : [];
  const tail = halves.length === 2 && halves[1] ? halves[1].split(':') : [];
  const fill = halves.length === 2 ? 8 - head.length - tail.length : 0;
  if (fill < 0 || (halves.length === 1 && head.length !== 8)) return null;
  const groups = [...head, ...Array<string>(fill).fill('0'), ...tail].map((g) => (/^[0-9a-f]{1,4}$/.test(g) ? parseInt(g, 16) : NaN));
  return groups.length === 8 && groups.every((g) => !Number.isNaN(g)) ? groups : null;
}

const v4Of = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;

export interface Address { address: string; family: 4 | 6 }

/** A literal address without brackets or zone; IPv4-mapped IPv6 becomes IPv4. null: not an address. */
export function normalizeAddress(input: string): Address | null {
  let a = input.trim();
  if (a.startsWith('[') && a.endsWith(']')) a = a.slice(1, -1);
  a = a.replace(/%.*$/, '').toLowerCase();
  if (net.isIPv4(a)) return { address: a, family: 4 };
  if (!net.isIPv6(a)) return null;
  const g = ipv6Groups(a);
  if (g && g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) return { address: v4Of(g[6], g[7]), family: 4 };
  return { address: a, family: 6 };
}

/**
 * The network a client address belongs to, for limits counted per address: an IPv4 address itself
 * (IPv4-mapped IPv6 as IPv4), an IPv6 address's /64 (one subscriber's prefix: rotating addresses
 * inside it buys no new budget). Anything else is returned as given.
 */
export function clientNetwork(input: string): string {
  const n = normalizeAddress(input);
  if (!n) return input;
  if (n.family === 4) return n.address;
  const g = ipv6Groups(n.address);
  return g ? `${g.slice(0, 4).map((x) => x.toString(16)).join(':')}::/64` : n.address;
}

export function classifyAddress(address: string): AddressClass {
  const n = normalizeAddress(address);
  if (!n) return 'refused';
  const type = n.family === 4 ? 'ipv4' : 'ipv6';
  if (ALWAYS_REFUSED.check(n.address, type)) return 'refused';
  if (type === 'ipv6' && NAT64.check(n.address, 'ipv6')) {
    const g = ipv6Groups(n.address);
    return g ? classifyAddress(v4Of(g[6], g[7])) : 'refused';
  }
  if (type === 'ipv6' && SIX_TO_FOUR.check(n.address, 'ipv6')) {
    const g = ipv6Groups(n.address);
    return g ? classifyAddress(v4Of(g[1], g[2])) : 'refused';
  }
  if (PRIVATE.check(n.address, type)) return 'private';
  return 'public';
}

/** "a.b.c.d/n" or "x::y/n" (a bare address means a single host), normalized; null when invalid. */
export function parseCidr(input: string): { cidr: string; address: string; prefix: number; family: 4 | 6 } | null {
  const [addr, bits, ...rest] = input.trim().split('/');
  if (rest.length) return null;
  const n = normalizeAddress(addr);
  if (!n) return null;
  const max = n.family === 4 ? 32 : 128;
  if (bits !== undefined && !/^\d{1,3}$/.test(bits)) return null;
  const prefix = bits === undefined ? max : Number(bits);
  if (prefix > max || prefix < (n.family === 4 ? 8 : 16)) return null;
  return { cidr: `${n.address}/${prefix}`, address: n.address, prefix, family: n.family };
}

function inAllowList(a: Address, cidrs: readonly string[]): boolean {
  const list = new net.BlockList();
  for (const c of cidrs) {
    const p = parseCidr(c);
    if (p) list.addSubnet(p.address, p.prefix, p.family === 4 ? 'ipv4' : 'ipv6');
  }
  return list.check(a.address, a.family === 4 ? 'ipv4' : 'ipv6');
}

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

// ---------------------------------------------------------------------------------------------
// Operator settings

/**
 * A list of origins (comma or space separated, e.g. SVC_CONNECTOR_OUTPUT_ORIGINS) as normalized
 * `scheme://host[:port]` strings; throws with the first entry that is not an http(s) origin.
 */
export function parseOriginList(raw: string): string[] {
  const out: string[] = [];
  for (const entry of raw.split(/[\s,]+/).filter(Boolean)) {
    const u = outboundUrl(entry);
    if (typeof u === 'string' || (u.pathname !== '/' && u.pathname !== '') || u.search || u.hash) {
      throw new Error(`"${entry.slice(0, 100)}" is not an http or https origin (scheme://host[:port], nothing after it)`);
    }
    const literal = normalizeAddress(u.hostname);
    if (literal && classifyAddress(literal.address) === 'refused') throw new Error(`"${entry.slice(0, 100)}" points to a link-local, metadata or reserved address`);
    if (!out.includes(u.origin)) out.push(u.origin);
  }
  return out;
}
