// The browser of the browser tests, with no system package: the headless Chromium that the dev
// dependency @sparticuz/chromium ships brotli-packed inside itself, unpacked once per machine (and
// package version, and user) into a cache folder under the system's temporary directory. The unpacked
// folder holds the binary, its graphics libraries (SwiftShader), the NSS libraries it links against
// (the package's Amazon Linux 2023 set, found through LD_LIBRARY_PATH, so that only glibc is needed from
// the machine) and its own fonts (Open Sans, the only fonts it sees: text renders the same everywhere,
// fonts installed or not). SVC_PLAYWRIGHT_CHROMIUM, else CHROMIUM_PATH, names another binary instead
// (Debian's /usr/bin/chromium, say), used as it is with the machine's own libraries and fonts.
//
// Several test files start at once (--test-concurrency) and each may find the cache missing: each one
// then unpacks into a private staging folder (the package writes into TMPDIR, so a child process with
// TMPDIR set to that folder does it) and renames the complete folder into place; the first rename wins,
// a later one finds the place taken and drops its copy. A folder under the cache's name is therefore
// always complete, and nobody ever starts a half-written binary (the package's own /tmp/chromium check
// would return a file another process is still writing).
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const PACKAGE = '@sparticuz/chromium';
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** How playwright-core's chromium.launch() is to start the browser, and where that choice came from. */
export interface ChromiumLaunch {
  source: 'SVC_PLAYWRIGHT_CHROMIUM' | 'CHROMIUM_PATH' | typeof PACKAGE;
  executablePath: string;
  /** The browser's environment (the bundled one: its libraries and fonts); undefined: the test process's own. */
  env?: Record<string, string>;
}

/** The package's folder of packed files (bin/), its version, and the cache folder they unpack into under `tmpRoot`. */
export function bundledChromium(tmpRoot = os.tmpdir()) {
  const pkgDir = path.resolve(path.dirname(fileURLToPath(import.meta.resolve(PACKAGE))), '..');
  const { version } = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8')) as { version: string };
  const user = typeof process.getuid === 'function' ? process.getuid() : os.userInfo().username;
  return { binDir: path.join(pkgDir, 'bin'), version, dir: path.join(tmpRoot, `svc-chromium-${version}-${user}`) };
}

const execFileAsync = promisify(execFile);

// Run in a child whose TMPDIR is the staging folder: the package unpacks the binary, its fonts and
// SwiftShader there (executablePath), and the Amazon Linux 2023 libraries on request (inflate).
const UNPACK = `
import path from 'node:path';
const { default: chromium, inflate } = await import(${JSON.stringify(PACKAGE)});
const binDir = process.argv[1];
const exe = await chromium.executablePath(binDir);
await inflate(path.join(binDir, 'al2023.tar.br'));
process.stdout.write(exe);
`;

const unpacking = new Map<string, Promise<string>>();

/**
 * The cache folder of the bundled Chromium under `tmpRoot`, unpacked first when missing (about 3 s);
 * safe when several processes call it at once. One call per folder and process does the work.
 */
export function unpackChromium(tmpRoot = os.tmpdir()): Promise<string> {
  const { dir } = bundledChromium(tmpRoot);
  let p = unpacking.get(dir);
  if (!p) {
    p = unpack(tmpRoot);
    unpacking.set(dir, p);
    p.catch(() => unpacking.delete(dir));
  }
  return p;
}

const complete = (dir: string) => fs.existsSync(path.join(dir, 'fontconfig.conf'));

async function unpack(tmpRoot: string): Promise<string> {
  const { binDir, dir } = bundledChromium(tmpRoot);
  if (complete(dir)) return dir;
  fs.mkdirSync(tmpRoot, { recursive: true });
  const staging = fs.mkdtempSync(`${dir}.staging-`);
  try {
    const { stdout } = await execFileAsync(process.execPath, ['--input-type=module', '-e', UNPACK, binDir], {
      cwd: ROOT, env: { ...process.env, TMPDIR: staging, TMP: staging, TEMP: staging }, maxBuffer: 1 << 20,
    });
    if (path.resolve(stdout.trim()) !== path.join(staging, 'chromium')) throw new Error(`${PACKAGE} unpacked its binary to ${stdout.trim()}, not into ${staging}`);
    // Written last: its presence marks a complete folder. It names the folder's final place.
    fs.writeFileSync(path.join(staging, 'fontconfig.conf'), [
      '<?xml version="1.0"?>',
      '<!DOCTYPE fontconfig SYSTEM "fonts.dtd">',
      '<fontconfig>',
      `  <dir>${path.join(dir, 'fonts', 'fonts')}</dir>`,
      `  <cachedir>${path.join(dir, 'fontconfig-cache')}</cachedir>`,
      '</fontconfig>',
      '',
    ].join('\n'));
    try {
      fs.renameSync(staging, dir);
    } catch (err) {
      // Another process got there first (a non-empty folder is never replaced): use its copy.
      if (!complete(dir)) throw err;
      fs.rmSync(staging, { recursive: true, force: true });
    }
    return dir;
  } catch (err) {
    fs.rmSync(staging, { recursive: true, force: true });
    throw err;
  }
}

/** SVC_PLAYWRIGHT_CHROMIUM, else CHROMIUM_PATH, else the bundled Chromium (unpacked when needed). */
export async function chromiumLaunch(env: NodeJS.ProcessEnv = process.env, tmpRoot = os.tmpdir()): Promise<ChromiumLaunch> {
  for (const source of ['SVC_PLAYWRIGHT_CHROMIUM', 'CHROMIUM_PATH'] as const) {
    const executablePath = env[source];
    if (!executablePath) continue;
    if (!fs.existsSync(executablePath)) {
      throw new Error(`${source} names ${executablePath}, which does not exist; fix it, or unset it to use the Chromium of ${PACKAGE}`);
    }
    return { source, executablePath };
  }
  const dir = await unpackChromium(tmpRoot);
  const inherited = Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
  const libs = path.join(dir, 'al2023', 'lib');
  return {
    source: PACKAGE,
    executablePath: path.join(dir, 'chromium'),
    env: {
      ...inherited,
      LD_LIBRARY_PATH: inherited.LD_LIBRARY_PATH ? `${libs}:${inherited.LD_LIBRARY_PATH}` : libs,
      FONTCONFIG_FILE: path.join(dir, 'fontconfig.conf'),
    },
  };
}
