// Lint: typescript-eslint's recommended type-aware rules plus a few house rules.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'test/fixtures/**', '.run/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // node:test's describe/it return promises the runner itself tracks.
      '@typescript-eslint/no-floating-promises': ['error', {
        allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['describe', 'it', 'test', 'suite', 'before', 'after', 'beforeEach', 'afterEach'] }],
      }],
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-syntax': ['error', {
        selector: "MemberExpression[object.name='process'][property.name='exit']",
        message: 'process.exit belongs in bin/ only',
      }],
    },
  },
  {
    files: ['bin/**', 'test/**', 'bench/**', 'scripts/**'],
    rules: { 'no-restricted-syntax': 'off' },
  },
  {
    // Production code narrows or throws naming the impossible state; it never asserts `x!`.
    files: ['lib/**', 'server/**', 'workers/**', 'cli/**', 'bin/**'],
    rules: { '@typescript-eslint/no-non-null-assertion': 'error' },
  },
  {
    files: ['eslint.config.js', 'test/support/duration-reporter.mjs'],
    ...tseslint.configs.disableTypeChecked,
  },
);
