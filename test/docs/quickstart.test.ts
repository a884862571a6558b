// The README's quickstart, run as written: the shell block between the `quickstart` markers goes to
// bash unchanged, in the repository, with only the environment a reader could set (free ports for the
// service and the bundled model server, temporary data and storage folders). It must reach an
// approved delivery whose export package downloads, so the walkthrough cannot rot.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { tempDir, TEST_ENV } from '../helpers/server.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** The quickstart's shell commands, exactly as the README shows them. */
export function quickstartBlock(readme: string): string {
  const m = /<!-- quickstart:begin -->\s*```sh\n([\s\S]*?)```\s*<!-- quickstart:end -->/.exec(readme);
  if (!m) throw new Error('README.md has no quickstart block between <!-- quickstart:begin --> and <!-- quickstart:end -->');
  return m[1];
}

async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const { port } = srv.address() as net.AddressInfo;
  await new Promise((resolve) => srv.close(resolve));
  return port;
}

test('the README quickstart reaches an approved delivery and downloads its export package', async (t) => {
  const block = quickstartBlock(fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8'));
  const commands = block.split('\n').filter((l) => l.trim() && !l.trim().startsWith('#'));
  assert.ok(commands.length <= 22, `the quickstart stays short (${commands.length} commands)`);
  const dir = tempDir(t);
  const script = `set -euo pipefail\ncd ${JSON.stringify(ROOT)}\n${block}`;
  const env = {
    ...process.env, ...TEST_ENV,
    // what npm scripts do: the project's node_modules/.bin (Node 24 among it) first on PATH
    PATH: `${path.join(ROOT, 'node_modules', '.bin')}${path.delimiter}${process.env.PATH}`,
    SVC_PORT: String(await freePort()), MODEL_PORT: String(await freePort()),
    SVC_DATA_DIR: path.join(dir, 'data'), SVC_STORAGE_DIR: path.join(dir, 'storage'), SVC_LOG_LEVEL: 'warn',
  };
  // Its own process group, so the background servers it starts (npx's children included) stop with it.
  const child = spawn('bash', ['-c', script], { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const stopAll = () => { try { process.kill(-child.pid!, 'SIGTERM'); } catch { /* already gone */ } };
  t.after(stopAll);
  let out = '';
  let err = '';
  child.stdout.on('data', (b: Buffer) => { out += b.toString(); });
  child.stderr.on('data', (b: Buffer) => { err += b.toString(); });
  const timer = setTimeout(stopAll, 300_000);
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  clearTimeout(timer);
  stopAll();
  assert.equal(code, 0, `the quickstart failed (exit ${code}):\n--- stdout\n${out.slice(-4000)}\n--- stderr\n${err.slice(-4000)}`);
  // besides the servers' "listening on" lines and the account's: the probe, the review decision, the delivery approval, then the package's files
  const lines = out.trim().split('\n').filter((l) => !/^(listening on |created user )/.test(l));
  assert.deepEqual(lines.slice(0, 3), ['ready', 'approved', 'approved'], out);
  const files = lines.slice(3).map((l) => l.split(/\s+/).at(-1)!.replace(/^exp_[^/]+\//, ''));
  for (const f of ['manifest.json', 'media/01-E01-cut.mp4', 'timeline/E01.otio', 'timeline/E01.edl', 'subtitles/E01.srt']) assert.ok(files.includes(f), `${f} in the package:\n${out}`);
  assert.equal(fs.existsSync(path.join(ROOT, 'episode-1.tar')), false, 'the walkthrough writes nothing into the repository');
});
