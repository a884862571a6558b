// npm run bench [-- NAME...]: prints the machine's figures, then runs every bench/*.bench.ts (or
// those whose file name contains one of the NAMEs) one after the other as a child process of this
// same Node, streaming its output, and ends with a summary; exit 1 when a script failed.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { machine, printTable } from './lib.ts';

const filters = process.argv.slice(2);
const all = fs.readdirSync(import.meta.dirname).filter((f) => f.endsWith('.bench.ts')).sort();
const scripts = filters.length ? all.filter((f) => filters.some((x) => f.includes(x))) : all;
if (scripts.length === 0) {
  process.stderr.write(`no benchmark matches ${filters.join(', ')}; there are: ${all.join(', ')}\n`);
  process.exit(2);
}

const m = machine();
const busy = os.loadavg()[0] > 0.5 * m.cores;
printTable('Machine', [
  ['cpu', 'cores', 'memory', 'node', 'os', 'load 1/5 min', 'date (UTC)'],
  [m.cpu, String(m.cores), `${m.memGiB} GiB`, m.node, m.os, m.load, m.date],
], [
  `scripts: ${scripts.join(', ')}`,
  ...(busy ? ['WARNING: the machine is busy (1-min load above half the cores); other processes will skew the figures'] : []),
]);

let current: ChildProcess | null = null;
let interrupted = false;
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    interrupted = true; // no further script starts
    if (current) current.kill(sig); // the script cleans up its servers and temp dirs, then exits
    else process.exit(1);
  });
}

const summary: string[][] = [['script', 'result', 'seconds']];
let failed = false;
for (const script of scripts) {
  process.stdout.write(`\n== ${script}\n`);
  const t0 = performance.now();
  const child = spawn(process.execPath, [path.join(import.meta.dirname, script)], { stdio: 'inherit' });
  current = child;
  const how = await new Promise<number | string>((resolve) => {
    child.once('error', (err) => resolve(err.message));
    child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown'));
  });
  current = null;
  if (how !== 0) failed = true;
  summary.push([script, how === 0 ? 'ok' : `FAILED (${how})`, ((performance.now() - t0) / 1000).toFixed(1)]);
  if (interrupted || (typeof how === 'string' && how.startsWith('SIG'))) break;
}
printTable('Summary', summary);
process.exitCode = failed ? 1 : 0;
