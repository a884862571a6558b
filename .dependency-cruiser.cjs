// The house's import rule, checked by dependency-cruiser in `npm test` (see docs/architecture.md).
// Wings from the bottom up: a module may import its own wing, any wing below it, and the directory.
const WINGS = [
  'kernel', 'media-tools', 'db', 'directory', 'http', 'platform', 'gate', 'tenancy', 'identity',
  'commercial', 'production', 'generation', 'finishing', 'views', 'system', 'subscribers.ts', 'worker-thread.ts', 'app.ts', 'server.ts', 'cli',
];
const at = (w) => (w.endsWith('.ts') ? `^src/${w.replace('.', '\\.')}$` : `^src/${w}/`);
const upward = WINGS.map((w, i) => ({
  name: `wing-order:${w}`,
  comment: `${w} may import only the wings below it (${WINGS.slice(0, i).join(', ') || 'none'})`,
  severity: 'error',
  from: { path: at(w) },
  to: { path: WINGS.slice(i + 1).map(at) },
})).filter((r) => r.to.path.length > 0);
module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', comment: 'no module cycle', from: {}, to: { circular: true } },
    { name: 'no-folder-cycle', severity: 'error', scope: 'folder', comment: 'no cycle between folders', from: {}, to: { circular: true } },
    ...upward,
    { name: 'tools-only-from-cli', severity: 'error', comment: 'only the CLI starts the tools (the model server)', from: { path: '^src/', pathNot: '^src/cli/' }, to: { path: '^tools/' } },
    { name: 'not-to-unresolvable', severity: 'error', from: {}, to: { couldNotResolve: true } },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'], conditionNames: ['import', 'require', 'node', 'default'], exportsFields: ['exports'] },
    builtInModules: { add: ['node:sqlite', 'sqlite'] },
    moduleSystems: ['es6'],
  },
};
