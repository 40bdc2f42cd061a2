import { bundleWorkflowCode, GracefulShutdownPeriodExpiredError, Runtime } from '@temporalio/worker';
import type { Worker } from '@temporalio/worker';
import { deadlinesOf, isDevelopment, webhookTaskQueueOf } from '../core/config';
import { createSafeHttpClient } from '../core/net/safe-http';
import { createSecretBox } from '../core/webhooks/secret-box';
import { createWebhookDispatcher } from '../service/webhook-dispatch';
import { ensureReconcilerSchedule } from './reconciler-schedule';
import type { Services } from './services';
import { startWebhookRelay } from './webhook-relay';
import { bundlerLogger, createWebhookWorker, createWorker, SHUTDOWN_FORCE_MS, WORKFLOWS_PATH } from './worker';

/**
 * Starts the workers on the given services: generations on their task queue, webhook deliveries
 * on theirs, the outbox relay that hands new deliveries to Temporal, and (once per task queue)
 * the reconciler's schedule. `stop()` drains them: activities in flight get the grace time to
 * finish and are then cancelled (Temporal retries them); after SHUTDOWN_FORCE_MS a worker stops
 * whatever is still running, such as a ledger step that keeps failing.
 */
export async function startWorker(s: Services, log: (line: string) => void = (line) => console.error(line)): Promise<{ stop(): Promise<void> }> {
  const { config } = s;
  // Bundled once for both workers.
  const workflowBundle = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: bundlerLogger(Runtime.instance().logger) });
  const worker = await createWorker({
    connection: s.nativeConnection,
    namespace: config.TEMPORAL_NAMESPACE,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    pool: s.pool,
    provider: s.provider,
    store: s.store,
    videoConcurrency: config.VIDEO_CONCURRENCY,
    client: s.client,
    deadlines: deadlinesOf(config),
    workflowBundle,
  });
  const http = createSafeHttpClient({ policy: { allowPrivateNetworks: isDevelopment(config) } });
  const webhookTaskQueue = webhookTaskQueueOf(config);
  const webhookWorker = await createWebhookWorker({
    connection: s.nativeConnection,
    namespace: config.TEMPORAL_NAMESPACE,
    taskQueue: webhookTaskQueue,
    concurrency: config.WEBHOOK_CONCURRENCY,
    workflowBundle,
    pool: s.pool,
    store: s.store,
    secretBox: createSecretBox(s.webhookSecretKey),
    http,
  });
  await ensureReconcilerSchedule(s.client, { taskQueue: config.TEMPORAL_TASK_QUEUE, everyMs: config.RECONCILE_EVERY_MS, graceMs: config.RECONCILE_GRACE_MS });
  const running = new Map<Worker, Promise<void>>([[worker, worker.run()], [webhookWorker, webhookWorker.run()]]);
  const relay = startWebhookRelay({
    pool: s.pool,
    dispatcher: createWebhookDispatcher({ client: s.client, taskQueue: webhookTaskQueue }),
    onError: (err) => console.warn('webhook relay:', err instanceof Error ? err.message : err),
  });

  const drain = async (w: Worker, run: Promise<void>, started: number): Promise<void> => {
    try {
      await run;
    } catch (err) {
      // Past the force time the SDK gives up on what is still running, and tearing that down
      // may fail as well (IllegalStateError: "Workflow execution context should have been
      // disposed first") instead of GracefulShutdownPeriodExpiredError.
      if (!(err instanceof GracefulShutdownPeriodExpiredError) && Date.now() - started < SHUTDOWN_FORCE_MS) throw err;
      log(`the ${w.options.taskQueue} worker did not drain within ${SHUTDOWN_FORCE_MS / 1000} s; Temporal will run again what it left unfinished`);
    }
  };

  return {
    async stop() {
      const started = Date.now();
      await relay.stop();
      for (const w of running.keys()) if (w.getState() === 'RUNNING') w.shutdown();
      await Promise.all([...running].map(([w, run]) => drain(w, run, started)));
      http.close();
    },
  };
}
