// Where a webhook may go, and the one POST that goes there. The host name is resolved once per
// attempt; the first address is checked and the connection is made to that exact address (the Host
// header and TLS server name keep the name), so a second DNS answer cannot redirect it.
//   always refused: 0.0.0.0/8, 169.254.0.0/16 (link-local, cloud metadata), 224.0.0.0/3 (multicast,
//     reserved, broadcast), ::/128, fe80::/10, ff00::/8, fd00:ec2::254, 168.63.129.16, 100.100.100.200
//   allowed by default: 127.0.0.0/8, 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, ::1, fc00::/7
//   anything else (public): only with an allow-list entry of the organization
// IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) are judged, and connected to, as IPv4.
import dns from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { outboundUrl } from '../lib/urls.ts';

export type Resolver = (hostname: string) => Promise<string[]>;

export const systemResolver: Resolver = async (hostname) =>
  (await dns.lookup(hostname, { all: true, verbatim: true })).map((a) => a.address);

function blockList(entries: Array<[string, number]>): net.BlockList {
  const list = new net.BlockList();
  for (const [addr, prefix] of entries) list.addSubnet(addr, prefix, net.isIPv6(addr) ? 'ipv6' : 'ipv4');
  return list;
}

const ALWAYS_REFUSED = blockList([
  ['0.0.0.0', 8], ['169.254.0.0', 16], ['224.0.0.0', 3], ['168.63.129.16', 32], ['100.100.100.200', 32],
  ['::', 128], ['fe80::', 10], ['ff00::', 8], ['fd00:ec2::254', 128],
]);
const PRIVATE = blockList([
  ['127.0.0.0', 8], ['10.0.0.0', 8], ['172.16.0.0', 12], ['192.168.0.0', 16], ['::1', 128], ['fc00::', 7],
]);

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
  const groups = [...head, ...Array(fill).fill('0'), ...tail].map((g) => (/^[0-9a-f]{1,4}$/.test(g) ? parseInt(g, 16) : NaN));
  return groups.length === 8 && groups.every((g) => !Number.isNaN(g)) ? groups : null;
}

/** A literal address without brackets or zone; IPv4-mapped IPv6 becomes IPv4. null: not an address. */
export function normalizeAddress(input: string): { address: string; family: 4 | 6 } | null {
  let a = input.trim();
  if (a.startsWith('[') && a.endsWith(']')) a = a.slice(1, -1);
  a = a.replace(/%.*$/, '').toLowerCase();
  if (net.isIPv4(a)) return { address: a, family: 4 };
  if (!net.isIPv6(a)) return null;
  const g = ipv6Groups(a);
  if (g && g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) {
    return { address: `${g[6] >> 8}.${g[6] & 255}.${g[7] >> 8}.${g[7] & 255}`, family: 4 };
  }
  return { address: a, family: 6 };
}

export function classifyAddress(address: string): AddressClass {
  const n = normalizeAddress(address);
  if (!n) return 'refused';
  const type = n.family === 4 ? 'ipv4' : 'ipv6';
  if (ALWAYS_REFUSED.check(n.address, type)) return 'refused';
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

function inAllowList(address: string, family: 4 | 6, cidrs: readonly string[]): boolean {
  const list = new net.BlockList();
  for (const c of cidrs) {
    const p = parseCidr(c);
    if (p) list.addSubnet(p.address, p.prefix, p.family === 4 ? 'ipv4' : 'ipv6');
  }
  return list.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** Checks of a URL that need no DNS: http(s), no credentials; a literal address must not be always refused. */
export function urlProblem(raw: string): string | null {
  const url = outboundUrl(raw);
  if (typeof url === 'string') return url;
  const literal = normalizeAddress(url.hostname);
  if (literal && classifyAddress(literal.address) === 'refused') return 'points to a link-local, metadata or reserved address';
  return null;
}

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

const fail = (error: string, extra: Partial<PostResult> = {}): PostResult =>
  ({ ok: false, statusCode: null, error, refused: false, address: null, ...extra });

/** Picks and checks the destination address: resolved once, failing closed. */
async function destination(url: URL, o: PostOptions): Promise<{ address: string; family: 4 | 6 } | PostResult> {
  const problem = urlProblem(url.href);
  if (problem) return fail(`destination refused: URL ${problem}`, { refused: true });
  let chosen = normalizeAddress(url.hostname);
  if (!chosen) {
    let answers: string[];
    try {
      answers = await o.resolve(url.hostname);
    } catch (err) {
      return fail(`could not resolve ${url.hostname}: ${(err as Error).message}`);
    }
    chosen = answers.length ? normalizeAddress(answers[0]) : null;
    if (!chosen) return fail(`could not resolve ${url.hostname}: no usable address`);
  }
  const cls = classifyAddress(chosen.address);
  if (cls === 'refused') {
    return fail(`destination refused: ${chosen.address} is a link-local, metadata or reserved address`, { refused: true, address: chosen.address });
  }
  if (cls === 'public' && !inAllowList(chosen.address, chosen.family, o.allowList)) {
    return fail(`destination refused: ${chosen.address} is public and not in the organization's allow-list`, { refused: true, address: chosen.address });
  }
  return chosen;
}

/** One POST, no redirects followed, bounded by timeoutMs (and the caller's signal). */
export async function postOnce(o: PostOptions): Promise<PostResult> {
  const url = new URL(o.url);
  const dest = await destination(url, o);
  if ('ok' in dest) return dest;
  const signal = o.signal ? AbortSignal.any([o.signal, AbortSignal.timeout(o.timeoutMs)]) : AbortSignal.timeout(o.timeoutMs);
  const name = url.hostname.replace(/^\[|\]$/g, '');
  return new Promise<PostResult>((resolve) => {
    const req = (url.protocol === 'https:' ? https : http).request({
      host: dest.address, family: dest.family, port: url.port || (url.protocol === 'https:' ? 443 : 80),
      path: `${url.pathname}${url.search}`, method: 'POST', agent: false, signal,
      ...(url.protocol === 'https:' && !net.isIP(name) ? { servername: name } : {}),
      headers: { ...o.headers, host: url.host, 'content-length': String(Buffer.byteLength(o.body)) },
    }, (res) => {
      const code = res.statusCode ?? 0;
      res.resume();
      res.on('error', () => { /* reported by the request */ });
      res.on('end', () => {
        if (code >= 200 && code < 300) resolve({ ok: true, statusCode: code, error: null, refused: false, address: dest.address });
        else if (code >= 300 && code < 400) resolve(fail(`redirect not followed (HTTP ${code})`, { statusCode: code, address: dest.address }));
        else resolve(fail(`HTTP ${code}`, { statusCode: code, address: dest.address }));
      });
    });
    req.on('error', (err) => {
      const reason = signal.aborted
        ? (o.signal?.aborted ? 'interrupted by shutdown' : `timed out after ${o.timeoutMs} ms`)
        : `${(err as NodeJS.ErrnoException).code ?? 'error'}: ${err.message}`;
      resolve(fail(reason, { address: dest.address }));
    });
    req.end(o.body);
  });
}
