// npm run checks: the static checks of `npm test` at once rather than one after the other (each is
// single-threaded; on 2 cores the type-check and the typed lint overlap): type-check, lint, the
// import rule, Prettier. Each one's output is printed as a block when it ends; the exit code is 1
// when any failed.
import { spawn } from 'node:child_process';

const CHECKS = ['typecheck', 'lint', 'deps', 'format:check'];
const npm = process.env.npm_execpath ? [process.execPath, process.env.npm_execpath] : ['npm'];

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
if (failed.length) {
  process.stderr.write(`checks failed: ${failed.join(', ')}\n`);
  process.exit(1);
}
