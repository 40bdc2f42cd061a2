// Dynamic config the service needs from every Temporal server it runs on, in one place. The dev
// server (npm start, tests, bench) gets it as --dynamic-config-value flags
// (runtime/temporal-dev-server.ts); the docker-compose server reads the same keys from
// deploy/temporal/dynamicconfig/gensvc.yaml, which test/unit/deploy/compose.test.ts keeps identical.
// docs/decisions/ ("Temporal dispatch latency") has the measurements.
export const TEMPORAL_DYNAMIC_CONFIG = {
  // The api and worker register the search attributes at start-up (runtime/temporal-setup.ts)
  // and use them at once, so they must be read through rather than from a cache that refreshes
  // every few seconds. (The dev server sets this by itself.)
  'system.forceSearchAttributesCacheRefreshOnRead': true,

  // Every workflow or activity task reaches matching through the history shard's transfer queue,
  // and the reader of that queue may poll the database only 20 times a second per shard by default
  // (a token bucket holding 20). The dev server has one shard, and a one-activity workflow needs
  // about three reads, so after ~7 workflows in a row each dispatch waited for a token: 35-47 ms
  // instead of 2-5 ms, 147 ms instead of 25-35 ms per workflow. 100 already removes it for one
  // client; 1000 leaves room for more and still bounds the reads. The reader polls when tasks are
  // written, so the cap costs no idle CPU, and with 20 or 50 workflows at once the Temporal CPU
  // per workflow stayed the same.
  'history.transferProcessorMaxPollRPS': 1000,

  // An activity scheduled by a workflow task is handed to that worker in the reply to the task's
  // completion, skipping the transfer queue and matching, when the worker has a slot free: ~10-15 %
  // less Temporal CPU per one-activity workflow; its latency gain is within this machine's noise.
  // The SDK asks for it by default (maxEagerActivityReservationsPerWorkflowTask 3) for activities
  // on the workflow's own task queue, which all of ours are.
  'system.enableActivityEagerExecution': true,

  // Tasks are handed out fairly across their fairness keys (each generation's account, set at
  // start by service/generation/temporal-gateway.ts) instead of first come, first served: one account's
  // flood of 300 images kept another account's lone image waiting 53.9 s (median), 1.8 s with
  // this on, 0.4 s alone (`npm run fairness`, docs/benchmark.md).
  'matching.enableFairness': true,

  // Fairness and priority hold within one partition of a task queue, not across its partitions: with
  // the default four, a lone account's task sat in one of them while a freed slot polled another
  // (three times in four), and waited for the flood's tasks there. One partition matches thousands
  // of tasks a second, far above what one deployment of the service dispatches. Lowering it on a
  // running server strands the tasks already written to the other partitions: docs/operations.md
  // has the two-step change (writes first, reads once those are drained).
  'matching.numTaskqueueReadPartitions': 1,
  'matching.numTaskqueueWritePartitions': 1,
} as const satisfies Record<string, boolean | number | string>;

export type TemporalDynamicConfig = Record<string, boolean | number | string>;

/** `--dynamic-config-value KEY=JSON` pairs for `temporal server start-dev`. */
export function dynamicConfigArgs(config: TemporalDynamicConfig): string[] {
  return Object.entries(config).flatMap(([key, value]) => [
    '--dynamic-config-value',
    `${key}=${JSON.stringify(value)}`,
  ]);
}
