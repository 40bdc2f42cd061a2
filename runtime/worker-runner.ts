import { deadlinesOf } from '../core/config';
import { ensureReconcilerSchedule } from './reconciler-schedule';
import { GracefulShutdownPeriodExpiredError } from '@temporalio/worker';
import type { Services } from './services';
import { createWorker, SHUTDOWN_FORCE_MS } from './worker';

/**
 * Starts a worker on the given services. `stop()` drains it: activities in flight get the grace
 * time to finish and are then cancelled (Temporal retries them); after SHUTDOWN_FORCE_MS the
 * worker stops whatever is still running, such as a ledger step that keeps failing.
 */
export async function startWorker(s: Services, log: (line: string) => void = (line) => console.error(line)): Promise<{ stop(): Promise<void> }> {
  const worker = await createWorker({
    connection: s.nativeConnection,
    namespace: s.config.TEMPORAL_NAMESPACE,
    taskQueue: s.config.TEMPORAL_TASK_QUEUE,
    pool: s.pool,
    provider: s.provider,
    store: s.store,
    videoConcurrency: s.config.VIDEO_CONCURRENCY,
    client: s.client,
    deadlines: deadlinesOf(s.config),
  });
  await ensureReconcilerSchedule(s.client, { taskQueue: s.config.TEMPORAL_TASK_QUEUE, everyMs: s.config.RECONCILE_EVERY_MS, graceMs: s.config.RECONCILE_GRACE_MS });
  const running = worker.run();
  return {
    async stop() {
      const started = Date.now();
      if (worker.getState() === 'RUNNING') worker.shutdown();
      try {
        await running;
      } catch (err) {
        // Past the force time the SDK gives up on what is still running, and tearing that down
        // may fail as well (IllegalStateError: "Workflow execution context should have been
        // disposed first") instead of GracefulShutdownPeriodExpiredError.
        if (!(err instanceof GracefulShutdownPeriodExpiredError) && Date.now() - started < SHUTDOWN_FORCE_MS) throw err;
        log(`the worker did not drain within ${SHUTDOWN_FORCE_MS / 1000} s; Temporal will run again what it left unfinished`);
      }
    },
  };
}
