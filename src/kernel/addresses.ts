// Addresses as the egress policy (src/kernel/egress.ts) judges them, and as limits count clients.
// Every address is judged in normalized form (brackets and zone dropped, IPv4-mapped IPv6 as IPv4;
// the WHATWG URL parser has already turned decimal, octal, hex and trailing-dot spellings of an
// IPv4 host into dotted quads). Classes:
//   always refused, whatever the caller: 0.0.0.0/8, 169.254.0.0/16 (link-local, cloud metadata),
//     192.0.0.0/24 (IETF protocol assignments), 224.0.0.0/3 (multicast, reserved, broadcast),
//     168.63.129.16 (Azure), 100.100.100.200 (Alibaba), ::/128, fe80::/10, ff00::/8, fd00:ec2::254
//     (AWS); NAT64 (64:ff9b::/96) and 6to4 (2002::/16) addresses are judged by the IPv4 address they embed
//   private: 127.0.0.0/8, 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, 100.64.0.0/10 (shared address
//     space: carrier-grade NAT, overlay networks such as Tailscale), ::1, fc00::/7
//   public: anything else; each egress policy says what a public address gets (allowed, refused, or
//     only inside an allow-list).
import net from 'node:net';

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

/** Whether the address lies in one of the CIDR ranges (invalid ranges are skipped). */
export function inAllowList(a: Address, cidrs: readonly string[]): boolean {
  const list = new net.BlockList();
  for (const c of cidrs) {
    const p = parseCidr(c);
    if (p) list.addSubnet(p.address, p.prefix, p.family === 4 ? 'ipv4' : 'ipv6');
  }
  return list.check(a.address, a.family === 4 ? 'ipv4' : 'ipv6');
}
