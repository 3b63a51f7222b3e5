import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** The stream part's ports: what a cluster may import of stream/ (src/stream/partition/placement.ts says why). */
const STREAM_PORTS = [
  'partition/placement.ts',
  'durability/event-log.ts',
  'durability/checkpoint-store.ts',
  'event.ts',
];

/**
 * An import of part `name`, refused: `who` says who imports nothing of it.
 * @param {string} name
 * @param {string} who
 */
const part = (name, who) => ({
  group: [`**/${name}/**`],
  message: `${who} nothing of ${name}/: parts meet through the ports they declare (docs/architecture.md)`,
});

/** A raw sleep in a test: a promise resolved by a timer, a `sleep`/`delay` helper's call, node's timers/promises. */
const RAW_SLEEP = [
  "CallExpression[callee.name='setTimeout'] > Identifier.arguments:first-child[name=/^(r|res|resolve|done)$/]",
  "CallExpression[callee.name='setTimeout'] > ArrowFunctionExpression.arguments:first-child > CallExpression.body[callee.name=/^(r|res|resolve|done)$/]",
  'CallExpression[callee.name=/^(sleep|delay|pause)$/]',
  "ImportDeclaration[source.value='node:timers/promises']",
];
const NO_RAW_SLEEP =
  'wait on observable state (test/helpers/wait.ts) rather than for a time; a pause that proves nothing happens is quietFor(ms, reason)';

const NO_CLUSTER = {
  group: ['**/cluster/**'],
  message: 'healthcheck/ and stream/ import nothing from cluster/: declare a port (docs/architecture.md)',
};

/** The process shell (src/process/) knows the whole config and every part: only src/main.ts imports it. */
const NO_PROCESS = {
  group: ['**/process/**'],
  message:
    'only src/main.ts imports src/process/, which builds the parts and hands each its settings (docs/architecture.md)',
};

/** The whole config is the process's: a part declares its own settings and is handed them (src/server/part.ts). */
const NO_CONFIG = {
  group: ['**/config/**'],
  message:
    'only src/process/ reads the whole config: declare the settings this needs and take them (docs/architecture.md)',
};

export default tseslint.config(
  { ignores: ['node_modules/', 'data/', 'dist/', 'migrations/', 'bench/results/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        setImmediate: 'readonly',
        URL: 'readonly',
        AbortController: 'readonly',
        AbortSignal: 'readonly',
        performance: 'readonly',
        queueMicrotask: 'readonly',
        TextEncoder: 'readonly',
        TextDecoder: 'readonly',
        fetch: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      // Prettier wraps code at 120 but leaves comments and strings alone: comments are held to it here, messages
      // and help texts (which a reader greps for whole) are not.
      'max-len': [
        'error',
        {
          code: 120,
          ignoreStrings: true,
          ignoreTemplateLiterals: true,
          ignoreUrls: true,
          ignoreRegExpLiterals: true,
          // A directive's reason stays on its line, where eslint reads it.
          ignorePattern: '^\\s*// eslint-disable',
        },
      ],
    },
  },
  {
    // Small modules whose names say what they hold (docs/architecture.md): a file that outgrows this is split by
    // responsibility.
    files: ['src/**'],
    rules: { 'max-lines': ['error', { max: 350, skipBlankLines: true, skipComments: true }] },
  },
  // The doors between the parts (docs/architecture.md, "What lint keeps"): one block per directory, since a later
  // block's rule replaces an earlier one's for the files both name.
  {
    // The domain parts reach a cluster only through the ports they declare, and each other not at all: what both
    // use (the notification senders) lives in src/notify/ (docs/architecture.md).
    files: ['src/healthcheck/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            NO_CLUSTER,
            NO_PROCESS,
            NO_CONFIG,
            {
              group: ['**/stream/**'],
              message:
                'healthcheck/ imports nothing from stream/: what both use goes in notify/ or common/ (docs/architecture.md)',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['src/stream/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            NO_CLUSTER,
            NO_PROCESS,
            NO_CONFIG,
            {
              group: ['**/healthcheck/**'],
              message:
                'stream/ imports nothing from healthcheck/: what both use goes in notify/ or common/ (docs/architecture.md)',
            },
          ],
        },
      ],
    },
  },
  {
    // The notification senders serve both parts, and depend on neither (nor on the cluster).
    files: ['src/notify/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/cluster/**', '**/healthcheck/**', '**/stream/**', '**/frontend/**'],
              message:
                'notify/ is shared by healthcheck/ and stream/: it imports neither, nor cluster/ (docs/architecture.md)',
            },
            NO_PROCESS,
            NO_CONFIG,
          ],
        },
      ],
    },
  },
  {
    // A cluster reaches the other parts through the ports they declare: stream/'s own the types they speak;
    // healthcheck/cluster-port.ts names the part's vocabulary it speaks.
    files: ['src/cluster/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              // A regex, not a group: a group's `!` cannot let a file out of a folder it shuts (`stream/durability/`).
              regex: `(^|/)stream/(?!(${STREAM_PORTS.map((port) => port.replaceAll('.', '\\.')).join('|')})$)`,
              message: `cluster/ reaches the stream part through its ports only: ${STREAM_PORTS.join(', ')} of stream/`,
            },
            {
              group: ['**/healthcheck/**', '!**/healthcheck/cluster-port.ts'],
              message: 'cluster/ reaches the healthcheck part through its port only: healthcheck/cluster-port.ts',
            },
            part('frontend', 'cluster/ imports'),
            part('notify', 'cluster/ imports'),
            NO_PROCESS,
            NO_CONFIG,
          ],
        },
      ],
    },
  },
  {
    // What every part uses imports no part, nor the process shell that builds them (docs/architecture.md).
    files: ['src/common/**', 'src/db/**', 'src/server/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            ...['stream', 'healthcheck', 'cluster', 'frontend', 'notify'].map((name) =>
              part(name, 'common/, db/ and server/ import'),
            ),
            NO_PROCESS,
            NO_CONFIG,
          ],
        },
      ],
    },
  },
  {
    // The dashboard takes its own settings; its app reads the parts' wire types (what their API answers).
    files: ['src/frontend/**'],
    rules: { 'no-restricted-imports': ['error', { patterns: [NO_PROCESS, NO_CONFIG] }] },
  },
  {
    // The config reads each part's settings schema, and nothing of the process that loads it.
    files: ['src/config/**'],
    rules: { 'no-restricted-imports': ['error', { patterns: [NO_PROCESS] }] },
  },
  {
    // Tests wait on what they can observe (test/helpers/wait.ts), never for a time: too long on an idle machine, too
    // short on a loaded one. A pause that proves nothing happens (no second export, no timer left) is
    // `quietFor(ms, reason)`, better after a wait on a sign that the thing had its chance (test/helpers/runs.ts). A
    // fixture's own timer (its workload's pace, a deadline) says why where it stands:
    // `// eslint-disable-next-line no-restricted-syntax -- ...`.
    files: ['test/**/*.ts'],
    rules: { 'no-restricted-syntax': ['error', ...RAW_SLEEP.map((selector) => ({ selector, message: NO_RAW_SLEEP }))] },
  },
  {
    // The dashboard runs in the browser (its own tsconfig adds the DOM types).
    files: ['src/frontend/app/**'],
    languageOptions: {
      globals: {
        window: 'readonly',
        document: 'readonly',
        location: 'readonly',
        addEventListener: 'readonly',
        removeEventListener: 'readonly',
        btoa: 'readonly',
        HTMLElement: 'readonly',
        HTMLDivElement: 'readonly',
      },
    },
  },
);
