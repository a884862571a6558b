// The README stays true: every setting documented with its default, the contract's set-up commands;
// and the role matrix of docs/identity.md equal to the one the service enforces.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { SETTINGS } from '../../src/kernel/config.ts';
import { PERMISSIONS, ROLE_PERMISSIONS } from '../../src/directory/roles.ts';

const readme = fs.readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
const identity = fs.readFileSync(new URL('../../docs/identity.md', import.meta.url), 'utf8');

test('README documents every SVC_* setting with its default', () => {
  for (const s of SETTINGS) {
    const row = readme.split('\n').find((l) => l.startsWith(`| \`${s.env}\``));
    assert.ok(row, `${s.env} missing from the configuration table`);
    const cells = row.split('|').map((c) => c.trim());
    const dflt = s.default === '' ? '(none)' : `\`${s.default}\``;
    assert.equal(cells[3], dflt, `${s.env} default`);
    if (s.flag) assert.equal(cells[2], `\`--${s.flag}\``, `${s.env} flag`);
  }
  const documented = [...readme.matchAll(/^\| `(SVC_[A-Z0-9_]+)`/gm)].map((m) => m[1]);
  assert.deepEqual(documented.sort(), SETTINGS.map((s) => s.env).sort(), 'no stale rows');
});

test('README shows the two set-up commands of the contract', () => {
  assert.ok(readme.includes('npm install && npm start'));
  assert.ok(readme.includes('npm install && npm test'));
  assert.ok(readme.includes('/api/openapi.json'));
});

test('docs/identity.md role matrix equals the enforced one', () => {
  for (const [role, perms] of Object.entries(ROLE_PERMISSIONS)) {
    const row = identity.split('\n').find((l) => l.startsWith('|') && l.split('|')[1].trim() === role);
    assert.ok(row, role);
    const text = row.split('|')[2].trim();
    if (/^every permission below except/.test(text)) {
      const except = text.match(/except ([\w:]+)/)![1];
      assert.deepEqual([...perms].sort(), PERMISSIONS.filter((p) => p !== except).sort(), role);
    } else if (/^every permission/.test(text)) {
      assert.deepEqual([...perms].sort(), [...PERMISSIONS].sort(), role);
    } else if (/^none/.test(text)) {
      assert.deepEqual(perms, [], role);
    } else {
      assert.deepEqual(text.split(' ').sort(), [...perms].sort(), role);
    }
  }
});
