import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

// Two projects, split by what a test needs. `unit` (test/unit) starts nothing: no Temporal, no
// PostgreSQL, no workflow bundle, and answers in seconds (`npm run test:unit`). `integration`
// (test/integration) gets the global setup's Temporal dev server, PostgreSQL and bundle. `vitest
// run` runs both, each file once; a global setup starts only when its project has files to run.
export default defineConfig({
  test: {
    // The Temporal core bridge is a native addon: it wants real processes, not worker threads.
    pool: 'forks',
    // The files mostly wait on Temporal, PostgreSQL and their own timers, so two run side by side
    // even on two cores (vitest's default there is one: 13 min in a row, 9 min two at a time).
    maxWorkers: Math.max(2, availableParallelism() - 1),
    reporters: ['default', './test/support/summary-reporter.ts'],
    testTimeout: 120_000,
    hookTimeout: 180_000,
    teardownTimeout: 60_000,
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: ['test/support/global-setup.ts'],
        },
      },
    ],
  },
});
