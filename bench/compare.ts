// npm run bench:compare -- --base COMMIT [--rounds 3] [NAME...]: the same bench scripts measured on
// an older commit and on this working tree in one run. The base commit is checked out in a temporary
// detached worktree (node_modules linked to this tree's), this tree's bench/ folder replaces the
// base's, and the scripts whose file name contains a NAME (default: http-context and jobs) run as
// child processes in turn for each round: base then new in odd rounds, new then base in even ones,
// so that neither side always runs first (on a warming or cooling machine the first run differs). Each script appends its figures as JSON
// lines to BENCH_RESULT_FILE (report() in bench/lib.ts); the table gives the median of the rounds on
// each side and their ratio (a script that exits 1 after reporting its figures, a goal of its own
// missed, is compared all the same). Exit 1 when a throughput figure of the new tree is more than 10 % below
// the base's, 2 when the comparison could not be made. BENCH_DURATION, BENCH_JOBS and the other
// BENCH_* variables are passed through to every run: shorter settings make shorter rounds.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ROOT, machine, num, onExit, printTable, runExitHooks, tempDir } from './lib.ts';

/** A throughput figure within this share below the base's is "ok"; a latency within it above. */
const TOLERANCE = 0.1;
const DEFAULT_NAMES = ['http-context', 'jobs'];

interface Result { bench: string; figure: string; value: number; unit: string; better: 'higher' | 'lower'; goal?: number }
type Side = 'base' | 'new';

function usage(message: string): never {
  process.stderr.write(`${message}\nusage: node bench/compare.ts --base COMMIT [--rounds N] [NAME...]\n`);
  process.exit(2);
}

const args = parseArgs({
  options: { base: { type: 'string' }, rounds: { type: 'string', default: '3' } },
  allowPositionals: true,
});
if (!args.values.base) usage('--base COMMIT is required');
const rounds = Number(args.values.rounds);
if (!Number.isInteger(rounds) || rounds < 1) usage(`--rounds must be a whole number >= 1, not ${args.values.rounds}`);
const names = args.positionals.length ? args.positionals : DEFAULT_NAMES;

const all = fs.readdirSync(import.meta.dirname).filter((f) => f.endsWith('.bench.ts')).sort();
const scripts = all.filter((f) => names.some((x) => f.includes(x)));
if (scripts.length === 0) usage(`no benchmark matches ${names.join(', ')}; there are: ${all.join(', ')}`);

function git(gitArgs: string[]): string {
  const r = spawnSync('git', gitArgs, { cwd: ROOT, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`git ${gitArgs.join(' ')}: ${r.stderr.trim() || r.error?.message}`);
  return r.stdout.trim();
}

let baseSha: string;
try {
  baseSha = git(['rev-parse', '--verify', '--end-of-options', `${args.values.base}^{commit}`]);
} catch {
  usage(`--base ${args.values.base} is not a commit of this repository`);
}
const describe = (rev: string) => git(['log', '-1', '--format=%h %s', rev]);
const baseName = describe(baseSha);
const dirty = git(['status', '--porcelain', '--untracked-files=no']) !== '';
const newName = `this working tree at ${describe('HEAD')}${dirty ? ' (with uncommitted changes)' : ''}`;

// The run's current child: killed (SIGTERM, so that it removes its own servers and folders) when
// the comparison is interrupted. Children have their own process group, so a Ctrl-C reaches only
// this script, which stops the child once and waits for it.
let current: { child: ChildProcess; exited: Promise<unknown> } | null = null;
let stopping = false;
const logs = tempDir('svc-compare-logs-');
const baseTree = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'svc-compare-')), 'base');

onExit(async () => {
  stopping = true;
  if (current) {
    current.child.kill('SIGTERM');
    const hard = setTimeout(() => current?.child.kill('SIGKILL'), 30_000);
    await current.exited;
    clearTimeout(hard);
  }
  const r = spawnSync('git', ['worktree', 'remove', '--force', baseTree], { cwd: ROOT, encoding: 'utf8' });
  if (r.status !== 0 && fs.existsSync(baseTree)) process.stderr.write(`git worktree remove ${baseTree}: ${r.stderr.trim()}\n`);
  fs.rmSync(path.dirname(baseTree), { recursive: true, force: true });
  spawnSync('git', ['worktree', 'prune'], { cwd: ROOT });
});

/** Runs bench/<script> in `tree`; resolves to the figures it reported. */
async function runOnce(side: Side, tree: string, script: string, round: number): Promise<Result[]> {
  if (stopping) throw new Error('interrupted');
  const tag = `${side}-${script.replace(/\.bench\.ts$/, '')}-${round}`;
  const resultFile = path.join(logs, `${tag}.jsonl`);
  const logFile = path.join(logs, `${tag}.log`);
  const out = fs.openSync(logFile, 'w');
  const t0 = performance.now();
  const child = spawn(process.execPath, [path.join('bench', script)], {
    cwd: tree, detached: true, stdio: ['ignore', out, out], env: { ...process.env, BENCH_RESULT_FILE: resultFile },
  });
  fs.closeSync(out);
  const exited = new Promise<number | string>((resolve) => {
    child.once('error', (err) => resolve(err.message));
    child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown'));
  });
  current = { child, exited };
  const how = await exited;
  current = null;
  const seconds = ((performance.now() - t0) / 1000).toFixed(0);
  if (stopping) throw new Error('interrupted');
  const lines = fs.existsSync(resultFile) ? fs.readFileSync(resultFile, 'utf8').split('\n').filter(Boolean) : [];
  // Exit 1 with figures is a script that printed them and missed a goal of its own: they are compared all the same.
  if (how !== 0 && !(how === 1 && lines.length > 0)) {
    const tail = fs.readFileSync(logFile, 'utf8').trimEnd().split('\n').slice(-15).join('\n');
    throw new Error(`${script} on ${side} (round ${round}) failed (${how}) after ${seconds} s; its last lines:\n${tail}`);
  }
  if (lines.length === 0) throw new Error(`${script} on ${side} reported no figure (it must call report() from bench/lib.ts)`);
  const results = lines.map((l) => JSON.parse(l) as Result);
  const missed = how === 1 ? ` (exit 1: a goal of its own missed, ${logFile})` : '';
  process.stdout.write(`  round ${round}/${rounds} ${side.padEnd(4)} ${script}: ${seconds} s${missed}, ${results.map((r) => `${r.figure} ${num(r.value, r.unit === 'ms' ? 1 : 0)} ${r.unit}`).join('; ')}\n`);
  return results;
}

function median(values: readonly number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

const m = machine();
const busy = os.loadavg()[0] > 0.5 * m.cores;
const passed = Object.keys(process.env).filter((k) => k.startsWith('BENCH_')).sort().map((k) => `${k}=${process.env[k]}`);
printTable('Machine', [
  ['cpu', 'cores', 'memory', 'node', 'os', 'load 1/5 min', 'date (UTC)'],
  [m.cpu, String(m.cores), `${m.memGiB} GiB`, m.node, m.os, m.load, m.date],
], [
  `base: ${baseName}`,
  `new:  ${newName}`,
  `scripts: ${scripts.join(', ')}; ${rounds} round(s), base first in odd rounds, new first in even ones; settings: ${passed.length ? passed.join(' ') : "each script's defaults"}`,
  ...(busy ? ['WARNING: the machine is busy (1-min load above half the cores); other processes will skew the figures'] : []),
]);

// figure key -> side -> values in round order
const figures = new Map<string, { first: Result; values: Record<Side, number[]> }>();
let code: number;
try {
  git(['worktree', 'add', '--detach', baseTree, baseSha]);
  fs.symlinkSync(fs.realpathSync(path.join(ROOT, 'node_modules')), path.join(baseTree, 'node_modules'));
  fs.rmSync(path.join(baseTree, 'bench'), { recursive: true, force: true });
  fs.cpSync(path.join(ROOT, 'bench'), path.join(baseTree, 'bench'), { recursive: true });
  process.stdout.write(`\nbase worktree: ${baseTree} (bench/ from this tree)\n`);

  for (let round = 1; round <= rounds; round++) {
    for (const script of scripts) {
      const sides = [['base', baseTree], ['new', ROOT]] as const;
      for (const [side, tree] of round % 2 ? sides : [...sides].reverse()) {
        for (const r of await runOnce(side, tree, script, round)) {
          const key = `${r.bench}\u0000${r.figure}`;
          let f = figures.get(key);
          if (!f) figures.set(key, (f = { first: r, values: { base: [], new: [] } }));
          f.values[side].push(r.value);
        }
      }
    }
  }

  const rows: string[][] = [['bench', 'figure', 'unit', 'base', 'new', 'new/base', `within ${TOLERANCE * 100}%`, 'base rounds', 'new rounds']];
  let worse = 0;
  for (const { first, values } of figures.values()) {
    const digits = first.unit === 'ms' ? 1 : 0;
    const show = (v: number) => num(v, digits);
    const base = median(values.base);
    const now = median(values.new);
    const ratio = base === 0 ? (now === 0 ? 1 : Infinity) : now / base;
    let verdict: string;
    if (values.base.length === 0 || values.new.length === 0) verdict = 'one side only';
    else if (first.better === 'higher') {
      verdict = now >= (1 - TOLERANCE) * base ? 'ok' : 'WORSE';
      if (verdict === 'WORSE') worse++;
    } else if (now <= (1 + TOLERANCE) * base) verdict = 'ok';
    else if (first.goal !== undefined && now < first.goal) verdict = `ok (< goal ${show(first.goal)})`;
    else verdict = 'worse';
    rows.push([
      first.bench, first.figure, first.unit, show(base), show(now), Number.isFinite(ratio) ? `${num(ratio, 3)}×` : '-', verdict,
      values.base.map(show).join(' / '), values.new.map(show).join(' / '),
    ]);
  }
  printTable(`Before/after: base ${baseSha.slice(0, 7)} against this working tree, median of ${rounds} round(s)`, rows, [
    `base: ${baseName}; new: ${newName}`,
    `ok: a throughput (higher is better) at least ${1 - TOLERANCE} × base; a latency at most ${1 + TOLERANCE} × base, or under the script's own goal`,
    `${worse ? `${worse} throughput figure(s) WORSE than ${TOLERANCE * 100}%: exit 1` : 'no throughput figure worse than 10%'}; a worse latency is shown but does not fail the run`,
    `each script a fresh child process per side and round; base runs first in odd rounds, new in even ones; per-round values in round order`,
  ]);
  code = worse ? 1 : 0;
} catch (err) {
  process.stderr.write(`\ncompare: ${(err as Error).message}\n`);
  code = 2;
} finally {
  await runExitHooks();
}
process.exitCode = code;
