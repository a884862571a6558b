// Address normalization and classes (src/kernel/addresses.ts), as the egress policy judges them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { classifyAddress, clientNetwork, inAllowList, normalizeAddress, parseCidr } from '../../src/kernel/addresses.ts';

test('normalized form: brackets and zone dropped, lower case, IPv4-mapped IPv6 as IPv4; not an address is null', () => {
  assert.deepEqual(normalizeAddress(' 10.0.0.1 '), { address: '10.0.0.1', family: 4 });
  assert.deepEqual(normalizeAddress('[FE80::1%eth0]'), { address: 'fe80::1', family: 6 });
  assert.deepEqual(normalizeAddress('::ffff:169.254.169.254'), { address: '169.254.169.254', family: 4 });
  assert.deepEqual(normalizeAddress('::ffff:a9fe:a9fe'), { address: '169.254.169.254', family: 4 });
  assert.equal(normalizeAddress('example.com'), null);
  assert.equal(normalizeAddress('1.2.3'), null);
});

test('classes: always refused, private, public; NAT64 and 6to4 judged by the IPv4 address they embed', () => {
  const cases: Array<[string, string]> = [
    ['0.1.2.3', 'refused'], ['169.254.169.254', 'refused'], ['192.0.0.8', 'refused'], ['224.0.0.1', 'refused'], ['255.255.255.255', 'refused'],
    ['168.63.129.16', 'refused'], ['100.100.100.200', 'refused'], ['::', 'refused'], ['fe80::1', 'refused'], ['ff02::1', 'refused'], ['fd00:ec2::254', 'refused'],
    ['127.0.0.1', 'private'], ['10.1.2.3', 'private'], ['172.31.0.1', 'private'], ['192.168.1.1', 'private'], ['100.64.0.1', 'private'], ['::1', 'private'], ['fd12::1', 'private'],
    ['8.8.8.8', 'public'], ['172.32.0.1', 'public'], ['2001:db8::1', 'public'],
    ['64:ff9b::a9fe:a9fe', 'refused'], ['64:ff9b::7f00:1', 'private'], ['64:ff9b::808:808', 'public'],
    ['2002:a9fe:a9fe::', 'refused'], ['2002:0a00:0001::', 'private'], ['2002:0808:0808::1', 'public'],
    ['not an address', 'refused'],
  ];
  for (const [address, expected] of cases) assert.equal(classifyAddress(address), expected, address);
});

test('client networks: an IPv4 address itself, an IPv6 address its /64', () => {
  assert.equal(clientNetwork('203.0.113.9'), '203.0.113.9');
  assert.equal(clientNetwork('::ffff:203.0.113.9'), '203.0.113.9');
  assert.equal(clientNetwork('2001:db8:1:2:3:4:5:6'), '2001:db8:1:2::/64');
  assert.equal(clientNetwork('2001:db8::1'), '2001:db8:0:0::/64');
  assert.equal(clientNetwork('unknown'), 'unknown');
});

test('CIDR ranges: normalized, a bare address is one host, prefixes too wide or malformed refused; allow-list membership', () => {
  assert.deepEqual(parseCidr('203.0.113.0/24'), { cidr: '203.0.113.0/24', address: '203.0.113.0', prefix: 24, family: 4 });
  assert.deepEqual(parseCidr('2001:DB8::/32'), { cidr: '2001:db8::/32', address: '2001:db8::', prefix: 32, family: 6 });
  assert.equal(parseCidr('203.0.113.9')?.cidr, '203.0.113.9/32');
  for (const bad of ['10.0.0.0/7', '::/15', '10.0.0.0/33', '10.0.0.0/x', '10.0.0.0/8/8', 'host/24']) assert.equal(parseCidr(bad), null, bad);
  const list = ['203.0.113.0/24', 'nonsense', '2001:db8::/32'];
  assert.equal(inAllowList({ address: '203.0.113.200', family: 4 }, list), true);
  assert.equal(inAllowList({ address: '203.0.114.1', family: 4 }, list), false);
  assert.equal(inAllowList({ address: '2001:db8:ffff::1', family: 6 }, list), true);
  assert.equal(inAllowList({ address: '2001:db9::1', family: 6 }, []), false);
});
