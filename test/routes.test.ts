// `svc routes` as a real child process: one line METHOD PATH FILE per route, by path then method;
// --json the same as { method, path, file }. Every operation of the served OpenAPI document is
// listed, and every FILE exists and registers its path as a literal (grepping a path finds it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Sandbox, describe, lines } from './helpers/cli.ts';
import { startTestServer } from './helpers/server.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

interface Line { method: string; path: string; file: string }

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

test('svc routes: every route of the served OpenAPI document, its file registering the literal path', async (t) => {
  const sb = new Sandbox(t);
  const [asJson, asText] = await Promise.all([sb.run(['routes', '--json', ...sb.dirs]), sb.run(['routes', ...sb.dirs])]);
  assert.equal(asJson.code, 0, describe(asJson));
  assert.equal(asJson.stderr, '', describe(asJson));
  assert.equal(asText.code, 0, describe(asText));
  assert.equal(asText.stderr, '', describe(asText));
  assert.equal(fs.existsSync(sb.data), false, 'svc routes opens no database');
  const table = JSON.parse(asJson.stdout) as Line[];
  for (const r of table) assert.deepEqual(Object.keys(r), ['method', 'path', 'file']);

  // The text form: the same routes in the same order, three fields a line.
  assert.deepEqual(lines(asText.stdout).map((l) => l.split(/\s+/)), table.map((r) => [r.method, r.path, r.file]));

  // A stable order: by path, then GET, POST, PUT, PATCH, DELETE; no route twice.
  const key = (r: Line) => `${r.path} ${METHODS.indexOf(r.method)}`;
  for (let i = 1; i < table.length; i++) {
    const [a, b] = [table[i - 1], table[i]];
    assert.ok(a.path < b.path || (a.path === b.path && METHODS.indexOf(a.method) < METHODS.indexOf(b.method)), `${key(a)} before ${key(b)}`);
  }

  // Exactly the operations of the served document.
  const s = await startTestServer(t);
  const doc = (await s.call('GET', '/api/openapi.json')).body as { paths: Record<string, Record<string, unknown>> };
  const served = Object.entries(doc.paths).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p.replace(/\{(\w+)\}/g, ':$1')}`));
  assert.deepEqual(table.map((r) => `${r.method} ${r.path}`).sort(), served.sort());
  assert.equal(table.length, s.app.router.routes.length);

  // Every file is in the repository and registers the path as a literal: r.get('/api/...', ...).
  const sources = new Map<string, string>();
  for (const r of table) {
    assert.match(r.file, /^src\/.+\.ts$/, `${r.method} ${r.path}`);
    const file = path.join(ROOT, r.file);
    assert.ok(fs.existsSync(file), `${r.file} exists`);
    if (!sources.has(r.file)) sources.set(r.file, fs.readFileSync(file, 'utf8'));
    const registration = new RegExp(`\\.${r.method.toLowerCase()}\\(\\s*'${escape(r.path)}'`);
    assert.match(sources.get(r.file)!, registration, `${r.file} registers ${r.method} ${r.path} under its literal path`);
  }
});
