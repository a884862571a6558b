// Which command modules a command line loads (src/cli/commands.ts): only the one it names, all of
// them for help or an unknown word; and a real `svc config` that never loads the server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import yargs from 'yargs';
import { commandWord, commandsFor } from '../../src/cli/commands.ts';
import { BIN_SVC, Sandbox, childEnv, describe } from '../helpers/cli.ts';

test('the command word skips options and the values of the global options that take one', () => {
  const cases: Array<[string[], string | undefined]> = [
    [['users', 'create', '--email', 'a@b.test'], 'users'],
    [['--json', 'config'], 'config'],
    [['--data-dir', 'users', 'serve'], 'serve'],
    [['--dataDir', 'serve', 'migrate'], 'migrate'],
    [['--storage-dir=/x', 'backup'], 'backup'],
    [['--help'], undefined],
    [[], undefined],
    [['--', 'serve'], undefined],
  ];
  for (const [argv, word] of cases) assert.equal(commandWord(argv), word, argv.join(' '));
});

test('a named command loads that command alone; help, nothing or an unknown word loads all thirteen', async () => {
  const helpOf = async (argv: string[]) => {
    const registers = await commandsFor(argv);
    return { count: registers.length, help: await registers.reduce((y, r) => r(y), yargs([]).scriptName('svc')).getHelp() };
  };
  for (const name of ['serve', 'migrate', 'users', 'orgs', 'audit', 'model-server', 'worker', 'storage', 'backup', 'db', 'health', 'config', 'routes']) {
    const { count, help } = await helpOf([name, '--json']);
    assert.equal(count, 1, name);
    assert.match(help, new RegExp(`^\\s+svc ${name}\\b`, 'm'), `${name}:\n${help}`);
  }
  for (const argv of [['--help'], [], ['bogus']]) {
    const { count, help } = await helpOf(argv);
    assert.equal(count, 13, argv.join(' '));
    assert.match(help, /svc model-server/);
    assert.match(help, /svc users <command>/);
  }
});

test('svc config --json runs without loading the server or the identity providers\' libraries', async (t) => {
  const sb = new Sandbox(t);
  const record = path.join(sb.root, 'loaded.txt');
  const hook = path.join(sb.root, 'hook.mjs');
  fs.writeFileSync(hook, `import module from 'node:module';
import fs from 'node:fs';
const seen = [];
module.registerHooks({ load(url, context, next) { seen.push(url); return next(url, context); } });
process.on('exit', () => fs.writeFileSync(${JSON.stringify(record)}, seen.join('\\n')));
`);
  const r = await sb.run(['config', '--json'], { env: { NODE_OPTIONS: `--import=${hook}` } });
  assert.equal(r.code, 0, describe(r));
  assert.ok(JSON.parse(r.stdout), r.stdout);
  const loaded = fs.readFileSync(record, 'utf8').split('\n');
  assert.ok(loaded.some((u) => u.endsWith('/src/cli/health.ts')), 'the config command was loaded');
  for (const unwanted of ['/src/server.ts', '/src/cli/serve.ts', '/node_modules/xml-crypto/', '/tools/model-server/']) {
    assert.ok(!loaded.some((u) => u.includes(unwanted)), `${unwanted} was not loaded`);
  }
});

test('bin/svc keeps compiled modules in the compile cache folder it is given, and none when told not to', async (t) => {
  const sb = new Sandbox(t);
  const cache = path.join(sb.root, 'compile-cache');
  const files = () => (fs.existsSync(cache) ? fs.readdirSync(cache, { recursive: true }).length : 0);
  // Node reads these variables when they exist at all, even empty: the runs start without them.
  const env = childEnv({ NODE_COMPILE_CACHE: cache });
  delete env.NODE_DISABLE_COMPILE_CACHE;
  delete env.NODE_V8_COVERAGE;
  const routes = (extra: NodeJS.ProcessEnv = {}) => execFileSync(process.execPath, [BIN_SVC, 'routes', '--json'], { cwd: sb.root, env: { ...env, ...extra }, encoding: 'utf8' });
  const off = routes({ NODE_DISABLE_COMPILE_CACHE: '1' });
  assert.equal(files(), 0, 'nothing cached when disabled');
  const on = routes();
  assert.ok(files() > 10, `the modules' compiled code is kept (${files()} entries)`);
  assert.equal(routes(), on, 'the same answer from cached code');
  assert.equal(on, off);
});
