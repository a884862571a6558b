// npm run checks: the static checks of `npm test` at once rather than one after the other (each is
// single-threaded; on 2 cores the type-check and the typed lint overlap): type-check, lint, the
// import rule, Prettier. Each one's output is printed as a block when it ends; the exit code is 1
// when any failed. `node tools/checks.ts -- COMMAND...` (what `npm test` runs) also runs COMMAND (the
// test suite) at the same time, its output streamed as it comes: the suite spends a fifth of its time
// waiting on child processes, servers and timers, time the checks fill; the exit code is 1 when the
// command or any check failed.
import { spawn } from 'node:child_process';

const CHECKS = ['typecheck', 'lint', 'deps', 'format:check'];
const dash = process.argv.indexOf('--');
const command = dash >= 0 ? process.argv.slice(dash + 1) : [];
const npm = process.env.npm_execpath ? [process.execPath, process.env.npm_execpath] : ['npm'];

const suite = command.length === 0 ? Promise.resolve(0) : new Promise<number>((resolve) => {
  const child = spawn(command[0], command.slice(1), { stdio: 'inherit' });
  child.on('error', (err) => {
    process.stderr.write(`${command[0]}: ${err.message}\n`);
    resolve(1);
  });
  child.on('close', (code) => resolve(code ?? 1));
});

const results = await Promise.all(CHECKS.map((name) => new Promise<{ name: string; code: number; out: string; seconds: number }>((resolve) => {
  const t0 = performance.now();
  const child = spawn(npm[0], [...npm.slice(1), 'run', '--silent', name], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (b: Buffer) => { out += b.toString(); });
  child.stderr.on('data', (b: Buffer) => { out += b.toString(); });
  child.on('close', (code) => {
    const r = { name, code: code ?? 1, out, seconds: (performance.now() - t0) / 1000 };
    process.stdout.write(`== npm run ${name}: ${r.code === 0 ? 'ok' : `FAILED (exit ${r.code})`} in ${r.seconds.toFixed(1)} s\n${out}`);
    resolve(r);
  });
})));
const failed = results.filter((r) => r.code !== 0).map((r) => r.name);
if (failed.length && command.length) process.stderr.write(`checks failed: ${failed.join(', ')}; the tests go on\n`);
if ((await suite) !== 0) failed.push(command.join(' '));
if (failed.length) {
  process.stderr.write(`checks failed: ${failed.join(', ')}\n`);
  process.exit(1);
}
