import { deadlinesOf } from '../core/config';
import { ensureReconcilerSchedule } from './reconciler-schedule';
import type { Services } from './services';
import { createWorker } from './worker';

/** Starts a worker on the given services; `stop()` drains it (in-flight activities finish or are retried). */
export async function startWorker(s: Services): Promise<{ stop(): Promise<void> }> {
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
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
    },
  };
}
