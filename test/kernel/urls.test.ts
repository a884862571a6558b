// Outbound URLs and operator origin lists (src/kernel/urls.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { outboundUrl, parseOriginList } from '../../src/kernel/urls.ts';

test('an outbound URL is absolute http(s) without credentials', () => {
  assert.equal((outboundUrl('https://hooks.example.com/a?b=1') as URL).href, 'https://hooks.example.com/a?b=1');
  assert.equal(outboundUrl('/relative'), 'must be an absolute URL');
  assert.equal(outboundUrl('ftp://example.com/'), 'must be an http or https URL');
  assert.equal(outboundUrl('https://user:pw@example.com/'), 'must not carry credentials');
});

test('origin lists: comma or space separated, normalized and deduplicated; anything after the origin or a reserved address refused', () => {
  assert.deepEqual(parseOriginList('https://CDN.example.com, http://10.0.0.5:9000  https://cdn.example.com/'),
    ['https://cdn.example.com', 'http://10.0.0.5:9000']);
  assert.deepEqual(parseOriginList(''), []);
  assert.throws(() => parseOriginList('https://cdn.example.com/files'), /is not an http or https origin/);
  assert.throws(() => parseOriginList('https://cdn.example.com?x=1'), /is not an http or https origin/);
  assert.throws(() => parseOriginList('ftp://cdn.example.com'), /is not an http or https origin/);
  assert.throws(() => parseOriginList('http://169.254.169.254'), /points to a link-local, metadata or reserved address/);
  assert.throws(() => parseOriginList('http://[::ffff:a9fe:a9fe]'), /reserved address/);
});
