import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // The Temporal core bridge is a native addon: it wants real processes, not worker threads.
    pool: 'forks',
    globalSetup: ['test/support/global-setup.ts'],
    include: ['test/**/*.test.ts'],
    reporters: ['default', './test/support/summary-reporter.ts'],
    testTimeout: 120_000,
    hookTimeout: 180_000,
    teardownTimeout: 60_000,
  },
});
