// @ts-check
// `npm run lint`: typescript-eslint's type-checked rules over the service (src/), the model server
// (tools/), the tests, the benchmarks and the console's browser modules (web/assets/, typed by their
// JSDoc through web/tsconfig.json); plain JavaScript rules over bin/svc and the config files.
// The data layer is about to become asynchronous: no-floating-promises and no-misused-promises are
// the rules that matter most, and they are errors everywhere.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** Node's globals for the plain JavaScript files (the typed files get theirs from @types/node). */
const nodeGlobals = Object.fromEntries(
  ['process', 'console', 'URL', 'module', 'require', '__dirname'].map((name) => [name, 'readonly']),
);

export default tseslint.config(
  {
    // What is generated or written at run time: never linted.
    ignores: ['node_modules/', 'coverage/', 'test-output/', 'data/', 'storage/', '.nyc_output/'],
  },
  {
    linterOptions: { reportUnusedDisableDirectives: 'error' },
  },
  {
    files: ['bin/svc', '*.js', '*.cjs'],
    extends: [js.configs.recommended],
    languageOptions: { globals: nodeGlobals },
  },
  {
    files: ['**/*.ts', 'web/assets/*.js'],
    extends: [js.configs.recommended, ...tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      // Each file is checked with the tsconfig.json nearest to it: the project's, or web/tsconfig.json.
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          // node:test's test()/describe() return a promise that the runner itself awaits and reports:
          // the house writes them at the top level of a test file, as node's documentation does.
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['test', 'it', 'describe', 'suite'] },
          ],
        },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      // Off: `async` without `await` is how the house implements a promise-returning signature (a
      // Committer, App.close(), oidc-provider's findAccount) so that a throw becomes a rejection;
      // the rule would have those rewritten as hand-made Promise.resolve()/reject() pairs.
      '@typescript-eslint/require-await': 'off',
      // Same convention as tsc's noUnusedLocals/noUnusedParameters: a leading underscore names what is
      // unused on purpose (a parameter a signature requires, a property left out of a `...rest` copy).
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          caughtErrorsIgnorePattern: '^_',
          destructuredArrayIgnorePattern: '^_',
          ignoreRestSiblings: true,
        },
      ],
    },
  },
  {
    // The tests and benchmarks read the service's JSON answers and ad-hoc SQL rows as `any`
    // (test/helpers/server.ts's Answer<T = any>, db.get<any>(...)) and hold them to node:assert and to
    // the OpenAPI document (test/helpers/openapi-check.ts); the console's api() resolves to the parsed
    // answer as `any` too. Typing every answer would rewrite thousands of assertions for no check they
    // do not already make, so the `any` family is off there; it stays on, as errors, for src/ and tools/.
    files: ['test/**/*.ts', 'bench/**/*.ts', 'web/assets/*.js'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
);
