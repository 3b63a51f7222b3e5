import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // e2e suites spawn real servers; two forks match the 2-core CI machine.
    pool: 'forks',
    maxWorkers: 2,
    // CI reads the pass/fail counts from the JSON report (.ci/run prints them as one plain line).
    reporters: process.env.CI ? ['default', ['json', { outputFile: '.vitest/results.json' }]] : ['default'],
  },
});
