import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'data/', 'dist/', 'migrations/', 'bench/results/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', setImmediate: 'readonly', URL: 'readonly', AbortController: 'readonly', AbortSignal: 'readonly', performance: 'readonly', queueMicrotask: 'readonly', TextEncoder: 'readonly', TextDecoder: 'readonly', fetch: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  {
    // Small modules whose names say what they hold (docs/architecture.md): a file that outgrows this is split by
    // responsibility.
    files: ['src/**'],
    rules: { 'max-lines': ['error', { max: 350 }] },
  },
  {
    // The dashboard runs in the browser (its own tsconfig adds the DOM types).
    files: ['src/frontend/app/**'],
    languageOptions: { globals: { window: 'readonly', document: 'readonly', location: 'readonly', addEventListener: 'readonly', removeEventListener: 'readonly', btoa: 'readonly', HTMLElement: 'readonly', HTMLDivElement: 'readonly' } },
  },
);
