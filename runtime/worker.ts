import { fileURLToPath } from 'node:url';
import type { Client } from '@temporalio/client';
import type { Logger } from '@temporalio/common';
import { bundleWorkflowCode, Runtime, Worker } from '@temporalio/worker';
import type { NativeConnection, WorkerOptions } from '@temporalio/worker';
import type pg from 'pg';
import { createActivities } from '../activities';
import { createWebhookActivities } from '../activities/webhooks';
import type { WebhookActivityDeps } from '../activities/webhooks';
import type { Provider } from '../core/providers/types';
import type { OutputStore } from '../core/storage';

export const WORKFLOWS_PATH = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

/** How long activities in flight get to finish when the worker stops; then they are cancelled. */
export const SHUTDOWN_GRACE_MS = 4_000;
/**
 * How long the worker may take to stop at all. A local activity that keeps failing (ledger steps
 * retry without limit) holds its workflow task open, and the SDK's graceful shutdown would wait
 * for it forever; past this the worker gives up on it. Temporal then times the task out and
 * another worker (or this one after a restart) runs it again, which is safe because every ledger
 * step is idempotent.
 */
export const SHUTDOWN_FORCE_MS = 5_000;

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
  client: Client;
  deadlines: Record<'image' | 'video' | 'chat' | 'upscale', number>;
}

/** The worker runs the generation workflow and its activities, bound to real dependencies. */
export async function createWorker(deps: WorkerDeps): Promise<Worker> {
  const workflowBundle = deps.workflowBundle ?? (await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: bundlerLogger(Runtime.instance().logger) }));
  return Worker.create({
    connection: deps.connection,
    namespace: deps.namespace,
    taskQueue: deps.taskQueue,
    workflowBundle,
    activities: createActivities({
      pool: deps.pool,
      provider: deps.provider,
      store: deps.store,
      videoConcurrency: deps.videoConcurrency,
      client: deps.client,
      deadlines: deps.deadlines,
      ...(deps.slotPollMs === undefined ? {} : { slotPollMs: deps.slotPollMs }),
    }),
    // Activities wait on I/O, not CPU; a small machine can run many at once.
    maxConcurrentActivityTaskExecutions: 200,
    // Short jobs in flight may finish during a graceful stop; longer ones are retried elsewhere.
    shutdownGraceTime: SHUTDOWN_GRACE_MS,
    shutdownForceTime: SHUTDOWN_FORCE_MS,
  });
}

/**
 * The SDK logs webpack's statistics of the workflow bundle (a screen of module sizes) at info
 * level on every start. Only what needs attention goes through: errors, and warnings, which
 * webpack reports inside that same text.
 */
export function bundlerLogger(logger: Logger): Logger {
  const quiet = (): void => undefined;
  const info = (message: string, meta?: Record<string, unknown>): void => {
    if (/\bWARNING\b|compiled with \d+ warnings?/.test(message)) logger.warn(message, meta);
  };
  return {
    log: (level, message, meta) => {
      if (level === 'WARN' || level === 'ERROR') logger.log(level, message, meta);
      else if (level === 'INFO') info(message, meta);
    },
    trace: quiet,
    debug: quiet,
    info,
    warn: (message, meta) => void logger.warn(message, meta),
    error: (message, meta) => void logger.error(message, meta),
  };
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
    shutdownGraceTime: SHUTDOWN_GRACE_MS,
    shutdownForceTime: SHUTDOWN_FORCE_MS,
  });
}
