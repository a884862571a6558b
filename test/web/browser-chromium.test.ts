// The browser tests' Chromium comes from the npm package @sparticuz/chromium, so `npm install && npm test`
// needs no system browser: without SVC_PLAYWRIGHT_CHROMIUM and CHROMIUM_PATH the browser launched is the
// package's, unpacked once into a cache folder even when several processes ask at once, linked against
// its own libraries (only glibc from the machine) and rendering text with its own fonts. The two
// variables still name another binary.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { bundledChromium, chromiumLaunch } from '../helpers/chromium.ts';
import { launchBrowser, openPage } from '../helpers/browser.ts';

declare const document: any;

const run = promisify(execFile);
const HELPER = new URL('../helpers/chromium.ts', import.meta.url).href;

test('without an override the browser tests launch the Chromium of @sparticuz/chromium, and it renders text with its own fonts', async (t) => {
  delete process.env.SVC_PLAYWRIGHT_CHROMIUM;
  delete process.env.CHROMIUM_PATH;
  const launch = await chromiumLaunch();
  assert.equal(launch.source, '@sparticuz/chromium');
  assert.equal(launch.executablePath, path.join(bundledChromium().dir, 'chromium'));
  assert.ok(launch.executablePath.startsWith(os.tmpdir() + path.sep), launch.executablePath);

  const browser = await launchBrowser(t);
  // The package's version follows Chromium's major version (Debian's /usr/bin/chromium is another one).
  assert.equal(browser.version().split('.')[0], bundledChromium().version.split('.')[0], browser.version());
  const page = await openPage(browser, t);
  await page.setContent('<canvas width="400" height="60"></canvas>');
  const drawn = await page.evaluate(() => {
    const canvas = document.querySelector('canvas');
    const g = canvas.getContext('2d');
    const width = (font: string) => { g.font = font; return g.measureText('Review · Deliver … 0123').width; };
    g.font = '32px sans-serif';
    g.fillText('Review · Deliver … 0123', 4, 40);
    const pixels = g.getImageData(0, 0, 400, 60).data;
    let inked = 0;
    for (let i = 3; i < pixels.length; i += 4) if (pixels[i] > 128) inked++;
    return { inked, sans: width('32px sans-serif'), openSans: width('32px "Open Sans"'), mono: width('32px monospace') };
  });
  assert.ok(drawn.inked > 500, `text is drawn (${drawn.inked} inked pixels)`);
  // The bundled fonts are the only ones it sees: every family falls back to Open Sans.
  assert.equal(drawn.sans, drawn.openSans);
  assert.equal(drawn.mono, drawn.openSans);
  assert.deepEqual(page.problems, []);
});

test('the bundled Chromium needs only glibc from the machine: its other libraries are in its own folder', async (t) => {
  try {
    execFileSync('ldd', ['--version'], { stdio: 'ignore' });
  } catch {
    t.skip('no ldd on this machine');
    return;
  }
  const launch = await chromiumLaunch({});
  const out = execFileSync('ldd', [launch.executablePath], { encoding: 'utf8', env: launch.env });
  const dir = path.dirname(launch.executablePath);
  const GLIBC = /^(linux-vdso\.so|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libgcc_s\.so|ld-linux)/;
  const resolved = out.split('\n').map((l) => l.trim()).filter((l) => l !== '');
  assert.ok(resolved.some((l) => /^libnss3\.so => /.test(l)), out);
  for (const line of resolved) {
    assert.doesNotMatch(line, /not found/, out);
    const [name, , where] = line.split(/\s+/);
    if (GLIBC.test(path.basename(name))) continue;
    assert.ok(where?.startsWith(dir + path.sep), `${name} comes from the bundle, not ${where}`);
  }
});

test('processes that unpack at the same time end with one complete folder and no leftovers', async (t) => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-chromium-race-'));
  t.after(() => fs.rmSync(root, { recursive: true, force: true }));
  const script = `const { unpackChromium } = await import(${JSON.stringify(HELPER)}); process.stdout.write(await unpackChromium(${JSON.stringify(root)}));`;
  const unpackers = await Promise.all([0, 1].map(() => run(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })));
  const { dir } = bundledChromium(root);
  assert.deepEqual(unpackers.map((r) => r.stdout), [dir, dir]);
  assert.deepEqual(fs.readdirSync(root), [path.basename(dir)], 'no staging folder is left behind');
  // The folder is whole: the binary starts, with the libraries and fonts configuration beside it.
  const launch = await chromiumLaunch({}, root);
  assert.equal(launch.executablePath, path.join(dir, 'chromium'));
  assert.match(fs.readFileSync(launch.env!.FONTCONFIG_FILE, 'utf8'), new RegExp(`<dir>${dir.replace(/[.]/g, '\\.')}/fonts/fonts</dir>`));
  const { stdout } = await run(launch.executablePath, ['--version'], { env: launch.env, encoding: 'utf8' });
  assert.match(stdout, new RegExp(`Chromium ${bundledChromium().version.split('.')[0]}\\.`));
  // Found complete, it is used as it is: no second unpacking.
  const again = await run(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  assert.equal(again.stdout, dir);
});

test('SVC_PLAYWRIGHT_CHROMIUM, else CHROMIUM_PATH, names another binary; a missing one is refused by name', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-chromium-override-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const a = path.join(dir, 'a');
  const b = path.join(dir, 'b');
  fs.writeFileSync(a, '');
  fs.writeFileSync(b, '');
  assert.deepEqual(await chromiumLaunch({ SVC_PLAYWRIGHT_CHROMIUM: a, CHROMIUM_PATH: b }), { source: 'SVC_PLAYWRIGHT_CHROMIUM', executablePath: a });
  assert.deepEqual(await chromiumLaunch({ CHROMIUM_PATH: b }), { source: 'CHROMIUM_PATH', executablePath: b });
  await assert.rejects(chromiumLaunch({ SVC_PLAYWRIGHT_CHROMIUM: path.join(dir, 'missing') }), /SVC_PLAYWRIGHT_CHROMIUM names .*missing, which does not exist/);
});
