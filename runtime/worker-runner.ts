import { bundleWorkflowCode } from '@temporalio/worker';
import { isDevelopment, webhookTaskQueueOf } from '../core/config';
import { createSafeHttpClient } from '../core/net/safe-http';
import { createSecretBox } from '../core/webhooks/secret-box';
import { createWebhookDispatcher } from '../service/webhook-dispatch';
import type { Services } from './services';
import { startWebhookRelay } from './webhook-relay';
import { createWebhookWorker, createWorker, WORKFLOWS_PATH } from './worker';

/**
 * Starts the workers on the given services: generations on their task queue, webhook deliveries
 * on theirs, and the outbox relay that hands new deliveries to Temporal. `stop()` drains them
 * (in-flight activities finish or are retried).
 */
export async function startWorker(s: Services): Promise<{ stop(): Promise<void> }> {
  const { config } = s;
  // Bundled once for both workers.
  const workflowBundle = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: quiet });
  const worker = await createWorker({
    connection: s.nativeConnection,
    namespace: config.TEMPORAL_NAMESPACE,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    pool: s.pool,
    provider: s.provider,
    store: s.store,
    videoConcurrency: config.VIDEO_CONCURRENCY,
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
  const running = [worker.run(), webhookWorker.run()];
  const relay = startWebhookRelay({
    pool: s.pool,
    dispatcher: createWebhookDispatcher({ client: s.client, taskQueue: webhookTaskQueue }),
    onError: (err) => console.warn('webhook relay:', err instanceof Error ? err.message : err),
  });
  return {
    async stop() {
      await relay.stop();
      for (const w of [worker, webhookWorker]) if (w.getState() === 'RUNNING') w.shutdown();
      await Promise.all(running);
      http.close();
    },
  };
}

const noop = () => undefined;
const quiet = { log: noop, trace: noop, debug: noop, info: noop, warn: (m: string) => console.warn(m), error: (m: string) => console.error(m) };
