import { fileURLToPath } from 'node:url';
import { Worker } from '@temporalio/worker';
import type { NativeConnection, WorkerOptions } from '@temporalio/worker';
import type pg from 'pg';
import { createActivities } from '../activities';
import { createWebhookActivities } from '../activities/webhooks';
import type { WebhookActivityDeps } from '../activities/webhooks';
import type { Provider } from '../core/providers/types';
import type { OutputStore } from '../core/storage';

export const WORKFLOWS_PATH = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

export interface WorkerDeps {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  pool: pg.Pool;
  provider: Provider;
  store: OutputStore;
  videoConcurrency: number;
  /** A prebuilt bundle (tests build one for all files); otherwise the workflows are bundled here. */
  workflowBundle?: WorkerOptions['workflowBundle'];
  slotPollMs?: number;
}

/** The worker runs the generation workflow and its activities, bound to real dependencies. */
export async function createWorker(deps: WorkerDeps): Promise<Worker> {
  return Worker.create({
    connection: deps.connection,
    namespace: deps.namespace,
    taskQueue: deps.taskQueue,
    ...(deps.workflowBundle ? { workflowBundle: deps.workflowBundle } : { workflowsPath: WORKFLOWS_PATH }),
    activities: createActivities({
      pool: deps.pool,
      provider: deps.provider,
      store: deps.store,
      videoConcurrency: deps.videoConcurrency,
      ...(deps.slotPollMs === undefined ? {} : { slotPollMs: deps.slotPollMs }),
    }),
    // Activities wait on I/O, not CPU; a small machine can run many at once.
    maxConcurrentActivityTaskExecutions: 200,
    // Short jobs in flight may finish during a graceful stop; longer ones are retried elsewhere.
    shutdownGraceTime: '5 seconds',
  });
}

export interface WebhookWorkerDeps extends WebhookActivityDeps {
  connection: NativeConnection;
  namespace: string;
  /** The webhook task queue, never the generations' one. */
  taskQueue: string;
  /** Delivery attempts in flight at once (WEBHOOK_CONCURRENCY). */
  concurrency: number;
  workflowBundle?: WorkerOptions['workflowBundle'];
}

/**
 * The webhook worker: delivery workflows and their attempts, on their own task queue with their
 * own slots, so that however slow or hostile a receiver is, generations never wait for it.
 */
export async function createWebhookWorker(deps: WebhookWorkerDeps): Promise<Worker> {
  const { connection, namespace, taskQueue, concurrency, workflowBundle, ...activityDeps } = deps;
  return Worker.create({
    connection,
    namespace,
    taskQueue,
    ...(workflowBundle ? { workflowBundle } : { workflowsPath: WORKFLOWS_PATH }),
    activities: createWebhookActivities(activityDeps),
    // Attempts are local activities (see workflows/webhook-delivery.ts): this bounds them.
    maxConcurrentLocalActivityExecutions: concurrency,
    shutdownGraceTime: '5 seconds',
  });
}
