import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // e2e suites spawn real servers; two forks match the 2-core CI machine.
    pool: 'forks',
    maxWorkers: 2,
    // Each run's temporary directories under one, removed at its end (test/helpers/temp-root.ts).
    globalSetup: ['test/helpers/temp-root.ts'],
    // CI reads the pass/fail counts from the JSON report (.ci/run prints them as one plain line).
    reporters: process.env.CI ? ['default', ['json', { outputFile: '.vitest/results.json' }]] : ['default'],
    projects: [
      { extends: true, test: { name: 'vigie', include: ['test/**/*.test.ts'] } },
      // The restart harness (test/stream/restart-harness.ts): the stream action tests again, every stream stopped
      // and restored from its saved state after every event. The same assertions must hold.
      {
        extends: true,
        test: {
          name: 'restart',
          include: [
            'test/stream/actions/*.test.ts',
            'test/stream/engine/engine.test.ts',
            'test/stream/catalog/test-runner.test.ts',
          ],
          env: { VIGIE_TEST_RESTART: 'every-event' },
        },
      },
    ],
  },
});
