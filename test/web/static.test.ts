// The built-in web console's serving (src/http/static.ts): the one HTML page for the six console
// routes, assets from web/assets/ with ETags, 404s, the security headers on every console answer,
// and scans of web/ that keep the console free of inline script, inline style and markup from strings.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { loadConfig } from '../../src/kernel/config.ts';
import { frontendBase } from '../../src/http/request.ts';
import { CONTENT_SECURITY_POLICY, WEB_DIR } from '../../src/http/static.ts';

const PAGES = ['/', '/login', '/sso/complete', '/mfa/enroll', '/security', '/overview'];
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";
const ASSETS = path.join(WEB_DIR, 'assets');
const INDEX = fs.readFileSync(path.join(WEB_DIR, 'index.html'));
const sha256 = (b: Buffer) => crypto.createHash('sha256').update(b).digest('hex');

function assertSecurityHeaders(h: Headers | http.IncomingHttpHeaders, where: string): void {
  const get = (k: string) => (h instanceof Headers ? h.get(k) : (h[k] as string | undefined) ?? null);
  assert.equal(get('content-security-policy'), CSP, where);
  assert.equal(get('x-frame-options'), 'DENY', where);
  assert.equal(get('x-content-type-options'), 'nosniff', where);
  assert.equal(get('referrer-policy'), 'no-referrer', where);
  assert.equal(get('cross-origin-opener-policy'), 'same-origin', where);
}

/** A request with the path exactly as given (fetch would normalize "..", this does not). */
function rawGet(s: TestServer, rawPath: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  const u = new URL(s.url);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, path: rawPath, method: 'GET' }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end();
  });
}

const webFiles = (ext: RegExp) => fs.readdirSync(ASSETS).filter((f) => ext.test(f)).map((f) => path.join(ASSETS, f));

test('the CSP the server sends is exactly the console\'s policy', () => {
  assert.equal(CONTENT_SECURITY_POLICY, CSP);
});

test('each of the six console paths answers the same index.html with the security headers and no-store (GET and HEAD)', async (t) => {
  const s = await startTestServer(t);
  for (const p of [...PAGES, '/login?returnTo=%2Fsecurity', '/sso/complete?x=1']) {
    const res = await fetch(s.url + p, { redirect: 'manual' });
    const body = Buffer.from(await res.arrayBuffer());
    assert.equal(res.status, 200, p);
    assert.equal(res.headers.get('content-type'), 'text/html; charset=utf-8', p);
    assert.equal(res.headers.get('cache-control'), 'no-store', p);
    assert.ok(body.equals(INDEX), `${p} answers web/index.html`);
    assertSecurityHeaders(res.headers, p);
    assert.ok(res.headers.get('x-request-id'), p);
  }
  const head = await fetch(`${s.url}/overview`, { method: 'HEAD' });
  assert.equal(head.status, 200);
  assert.equal(head.headers.get('content-length'), String(INDEX.length));
  assert.equal((await head.arrayBuffer()).byteLength, 0);
  assertSecurityHeaders(head.headers, 'HEAD /overview');
  // The page loads the one script (a module) and the one stylesheet, both served from /assets/.
  const html = INDEX.toString('utf8');
  assert.match(html, /<script type="module" src="\/assets\/app\.js"><\/script>/);
  assert.match(html, /<link rel="stylesheet" href="\/assets\/app\.css">/);
});

test('the invitation page and the object pages (an id in place of each :name) answer index.html; a path that is not one of them is 404', async (t) => {
  const s = await startTestServer(t);
  const pages = ['/invitations/accept?token=abc', '/jobs/job_1?project=prj_1', '/reviews/rev_1', '/tasks/tsk_1?project=prj_1',
    '/deliveries/dlv_1?project=prj_1', '/delivery/dlv_1', '/production/shots/sht_1', '/organizations/org_1/commercial'];
  for (const p of pages) {
    const res = await fetch(s.url + p, { redirect: 'manual' });
    assert.equal(res.status, 200, p);
    assert.ok(Buffer.from(await res.arrayBuffer()).equals(INDEX), `${p} answers web/index.html`);
    assertSecurityHeaders(res.headers, p);
    assert.equal(res.headers.get('cache-control'), 'no-store', p);
  }
  for (const p of ['/jobs', '/jobs/', '/jobs/job_1/extra', '/jobs/a%2Fb', '/jobs/%3Cx%3E', `/jobs/${'a'.repeat(201)}`, '/organizations/org_1',
    '/organizations//commercial', '/invitations', '/production/shots']) {
    const r = await rawGet(s, p);
    assert.equal(r.status, 404, p);
    assertSecurityHeaders(r.headers, p);
  }
  assert.equal((await s.call('POST', '/jobs/job_1', { body: {} })).status, 405, 'another method on an object page is 405');
});

test('a console path with another method is 405 Allow: GET, HEAD; the API keeps its own 404 and 405', async (t) => {
  const s = await startTestServer(t);
  const post = await s.call('POST', '/login', { body: {} });
  assert.equal(post.status, 405);
  assert.equal(post.body.error.code, 'method_not_allowed');
  assert.equal(post.headers.get('allow'), 'GET, HEAD');
  assertSecurityHeaders(post.headers, 'POST /login');
  const put = await s.call('PUT', '/assets/app.js', { body: {} });
  assert.equal(put.status, 405);
  assert.equal(put.body.error.code, 'method_not_allowed');
  assert.equal(put.headers.get('allow'), 'GET, HEAD');
  assertSecurityHeaders(put.headers, 'PUT /assets/app.js');
  assert.equal((await s.call('POST', '/elsewhere', { body: {} })).status, 404);
  const api = await s.call('GET', '/api/does-not-exist', { headers: { accept: 'text/html' } });
  assert.equal(api.status, 404);
  assert.equal(api.body.error.code, 'not_found');
  assert.equal(api.headers.get('content-security-policy'), null, 'API answers are not console answers');
  for (const p of ['/api', '/scim/v2/nope', '/api/login']) {
    const r = await s.call('GET', p);
    assert.equal(r.status === 404 || r.status === 401, true, `${p}: ${r.status}`);
    assert.notEqual(r.headers.get('content-type'), 'text/html; charset=utf-8', p);
  }
});

test('unknown paths are 404: the contract\'s JSON error body, or a small HTML page for a browser, both with the security headers', async (t) => {
  const s = await startTestServer(t);
  for (const p of ['/nope', '/login/', '/index.html', '/overview/extra', '/assets', '/assets/', '/web/index.html', '/favicon.ico']) {
    const json = await s.call('GET', p);
    assert.equal(json.status, 404, p);
    assert.equal(json.body?.error?.code, 'not_found', p);
    assertSecurityHeaders(json.headers, p);
    const page = await s.call('GET', p, { headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } });
    assert.equal(page.status, 404, p);
    assert.equal(page.headers.get('content-type'), 'text/html; charset=utf-8', p);
    assert.match(page.text, /<h1>Page not found<\/h1>/);
    assert.doesNotMatch(page.text, /<script|<style| style=/i, 'the 404 page obeys the CSP too');
    assertSecurityHeaders(page.headers, `${p} (html)`);
  }
});

test('every asset is served with its type, no-cache and a sha256 ETag; If-None-Match answers 304', async (t) => {
  const s = await startTestServer(t);
  const types: Record<string, string> = { js: 'text/javascript; charset=utf-8', css: 'text/css; charset=utf-8', svg: 'image/svg+xml', png: 'image/png' };
  const files = fs.readdirSync(ASSETS);
  assert.ok(files.includes('app.js') && files.includes('app.css') && files.includes('api.js') && files.includes('dom.js'));
  for (const name of files) {
    assert.match(name, /^[a-z0-9-]+\.(js|css|svg|png)$/, `web/assets/${name} has a servable name`);
    const bytes = fs.readFileSync(path.join(ASSETS, name));
    const res = await fetch(`${s.url}/assets/${name}`);
    assert.equal(res.status, 200, name);
    assert.ok(Buffer.from(await res.arrayBuffer()).equals(bytes), name);
    assert.equal(res.headers.get('content-type'), types[name.split('.').pop()!], name);
    assert.equal(res.headers.get('cache-control'), 'no-cache', name);
    const etag = res.headers.get('etag');
    assert.equal(etag, `"${sha256(bytes)}"`, name);
    assertSecurityHeaders(res.headers, name);
    for (const inm of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
      const again = await fetch(`${s.url}/assets/${name}`, { headers: { 'if-none-match': inm } });
      assert.equal(again.status, 304, `${name} with If-None-Match ${inm}`);
      assert.equal((await again.arrayBuffer()).byteLength, 0);
      assert.equal(again.headers.get('etag'), etag);
      assert.equal(again.headers.get('cache-control'), 'no-cache');
      assertSecurityHeaders(again.headers, `${name} 304`);
    }
    const stale = await fetch(`${s.url}/assets/${name}`, { headers: { 'if-none-match': '"stale"' } });
    assert.equal(stale.status, 200);
    await stale.arrayBuffer();
  }
  const head = await fetch(`${s.url}/assets/app.css`, { method: 'HEAD' });
  assert.equal(head.status, 200);
  assert.equal(head.headers.get('content-length'), String(fs.statSync(path.join(ASSETS, 'app.css')).size));
});

test('an asset name outside [a-z0-9-]+.(js|css|svg|png), or a way out of web/assets, is 404', async (t) => {
  const s = await startTestServer(t);
  const bad = [
    '/assets/App.js', '/assets/app.JS', '/assets/app.ts', '/assets/app.js.map', '/assets/index.html', '/assets/.app.js',
    '/assets/app_1.js', '/assets/sub/app.js', '/assets/nope.js', '/assets/%61pp.js', '/assets/app.js%00.png',
    '/assets/../src/app.ts', '/assets/../package.json', '/assets/..%2f..%2fpackage.json', '/assets/%2e%2e/%2e%2e/package.json',
    '/assets/..', '/assets/..\\..\\package.json', '/assets//etc/passwd', '/../package.json', '/assets/....js',
  ];
  for (const p of bad) {
    const r = await rawGet(s, p);
    // "....js" passes the pattern only if dots were allowed in the stem: it is not, so every one is 404.
    assert.equal(r.status, 404, `${p} -> ${r.status}`);
    assert.doesNotMatch(r.body, /"name":\s*"svc"|import \{|createApp/, `${p} leaks no file`);
    assertSecurityHeaders(r.headers, p);
  }
});

test('web/: no inline script, inline style, style= or on*= attribute in any HTML page', () => {
  const htmls = [path.join(WEB_DIR, 'index.html'), ...webFiles(/\.html$/)];
  for (const file of htmls) {
    const html = fs.readFileSync(file, 'utf8');
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)];
    assert.ok(scripts.length >= 1, file);
    for (const [, attrs, body] of scripts) {
      assert.match(attrs, /\bsrc="\/assets\/[a-z0-9-]+\.js"/, `${file}: every script is a file from /assets/`);
      assert.equal(body.trim(), '', `${file}: no inline script`);
    }
    assert.doesNotMatch(html, /<style\b/i, `${file}: no <style>`);
    assert.doesNotMatch(html, /\sstyle\s*=/i, `${file}: no style= attribute`);
    assert.doesNotMatch(html, /\son[a-z]+\s*=/i, `${file}: no inline event handler`);
    assert.doesNotMatch(html, /javascript:/i, `${file}: no javascript: URL`);
  }
});

test('web/assets: modules are @ts-check ES modules that build the DOM without markup strings and keep no token in storage', () => {
  const scripts = webFiles(/\.js$/);
  assert.ok(scripts.length >= 6);
  const names = new Set(fs.readdirSync(ASSETS));
  for (const file of scripts) {
    const src = fs.readFileSync(file, 'utf8');
    const name = path.basename(file);
    assert.ok(src.startsWith('// @ts-check\n'), `${name} starts with // @ts-check`);
    assert.doesNotMatch(src, /\binnerHTML\b/, `${name}: no innerHTML`);
    assert.doesNotMatch(src, /\bouterHTML\b|insertAdjacentHTML|document\.write|createContextualFragment/, `${name}: no markup from strings`);
    assert.doesNotMatch(src, /\beval\s*\(|new Function\s*\(/, `${name}: no eval`);
    assert.doesNotMatch(src, /\b(localStorage|sessionStorage|indexedDB)\b|document\.cookie/, `${name}: no token storage`);
    assert.doesNotMatch(src, /\.style\.cssText|setAttribute\(\s*['"]style['"]/, `${name}: no inline style (CSP)`);
    // Every relative import names an asset that exists (a missing module would stop the whole console).
    for (const m of src.matchAll(/\bfrom\s+['"]\.\/([^'"]+)['"]|\bimport\s*\(\s*['"]\.\/([^'"]+)['"]/g)) {
      const target = m[1] ?? m[2];
      assert.ok(names.has(target), `${name} imports ./${target}, which web/assets/ holds`);
    }
    assert.doesNotMatch(src, /\bfrom\s+['"](?!\.\/)/, `${name}: imports only sibling modules (no npm package at run time)`);
  }
  for (const css of webFiles(/\.css$/)) {
    assert.doesNotMatch(fs.readFileSync(css, 'utf8'), /@import\s+url\(\s*['"]?https?:/i, `${css}: no remote stylesheet`);
  }
  // The router imports every page module it routes to.
  const app = fs.readFileSync(path.join(ASSETS, 'app.js'), 'utf8');
  for (const page of ['page-login.js', 'page-sso.js', 'page-enroll.js', 'page-security.js', 'page-overview.js']) {
    assert.match(app, new RegExp(`from '\\./${page.replace('.', '\\.')}'`), `app.js imports ${page}`);
  }
});

test('without SVC_FRONTEND_ORIGIN, SSO lands on the service\'s own origin (the console\'s /sso/complete)', () => {
  const req = { headers: { host: '127.0.0.1:4567' }, socket: {} } as unknown as http.IncomingMessage;
  const base = { port: 0, dataDir: '/tmp/x', storageDir: '/tmp/y' };
  assert.equal(frontendBase(req, loadConfig(base, {})), 'http://127.0.0.1:4567');
  assert.equal(frontendBase(req, loadConfig(base, { SVC_PUBLIC_URL: 'https://svc.example' })), 'https://svc.example');
  assert.equal(frontendBase(req, loadConfig(base, { SVC_FRONTEND_ORIGIN: 'https://console.example/' })), 'https://console.example');
});
