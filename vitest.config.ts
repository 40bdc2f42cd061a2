import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // The Temporal core bridge is a native addon: it wants real processes, not worker threads.
    pool: 'forks',
    // The files mostly wait on Temporal, PostgreSQL and their own timers, so two run side by side
    // even on two cores (vitest's default there is one: 13 min in a row, 9 min two at a time).
    maxWorkers: Math.max(2, availableParallelism() - 1),
    globalSetup: ['test/support/global-setup.ts'],
    include: ['test/**/*.test.ts'],
    reporters: ['default', './test/support/summary-reporter.ts'],
    testTimeout: 120_000,
    hookTimeout: 180_000,
    teardownTimeout: 60_000,
  },
});
