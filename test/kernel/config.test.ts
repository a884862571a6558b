// The service's version lives in the kernel's config (src/kernel/config.ts), read from package.json.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { VERSION } from '../../src/kernel/config.ts';

test('VERSION is the version of package.json', () => {
  assert.equal(VERSION, JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version);
  assert.match(VERSION, /^\d+\.\d+\.\d+/);
});
