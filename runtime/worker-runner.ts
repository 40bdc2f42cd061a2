import { deadlinesOf } from '../core/config';
import { providerTaskQueueOf } from '../workflows/definitions';
import { ensureReconcilerSchedule } from './reconciler-schedule';
import type { Services } from './services';
import { createWorkers } from './worker';
import type { WorkerRole } from './worker';

/**
 * Starts the workers of a role on the given services (`all`: workflows and provider runs, as
 * `npm start` does); `stop()` drains them (in-flight activities finish or are retried).
 */
export async function startWorker(s: Services, role: WorkerRole = s.config.WORKER_ROLE): Promise<{ stop(): Promise<void>; queues: string[] }> {
  const workers = await createWorkers({
    connection: s.nativeConnection,
    namespace: s.config.TEMPORAL_NAMESPACE,
    taskQueue: s.config.TEMPORAL_TASK_QUEUE,
    pool: s.pool,
    provider: s.provider,
    store: s.store,
    videoConcurrency: s.config.VIDEO_CONCURRENCY,
    client: s.client,
    deadlines: deadlinesOf(s.config),
    providerConcurrency: s.config.PROVIDER_CONCURRENCY,
    workflowCacheSize: s.config.WORKFLOW_CACHE_SIZE,
  }, role);
  if (role !== 'provider') {
    await ensureReconcilerSchedule(s.client, { taskQueue: s.config.TEMPORAL_TASK_QUEUE, everyMs: s.config.RECONCILE_EVERY_MS, graceMs: s.config.RECONCILE_GRACE_MS });
  }
  const running = workers.map((w) => w.run());
  const queues = [
    ...(role !== 'provider' ? [s.config.TEMPORAL_TASK_QUEUE] : []),
    ...(role !== 'workflows' ? [providerTaskQueueOf(s.config.TEMPORAL_TASK_QUEUE)] : []),
  ];
  return {
    queues,
    async stop() {
      for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
      await Promise.all(running);
    },
  };
}
