import { GracefulShutdownPeriodExpiredError } from '@temporalio/worker';
import type { Worker } from '@temporalio/worker';
import { allowsPrivateNetworks, batchLimitsOf, deadlinesOf, mailOptionsOf, webhookTaskQueueOf } from '../core/config';
import { createSafeHttpClient } from '../core/net/safe-http';
import { createSecretBox } from '../core/webhooks/secret-box';
import { ensureReconcilerSchedule } from './reconciler-schedule';
import type { Services } from './services';
import { startWebhookRelay } from './webhook-relay';
import { createWorkers, SHUTDOWN_FORCE_MS } from './worker';
import type { WorkerRole } from './worker';

/**
 * Starts the workers of a role on the given services (`all`, as `npm start` does: everything).
 * A workflows worker runs generations on their task queue, webhook deliveries on theirs, the
 * outbox relay that hands new deliveries to Temporal, and (once per task queue) the reconciler's
 * schedule; a provider worker runs provider work on its own queue. `stop()` drains them:
 * activities in flight get the grace time to finish and are then cancelled (Temporal retries
 * them); after SHUTDOWN_FORCE_MS a worker stops whatever is still running, such as a ledger step
 * that keeps failing.
 */
export async function startWorker(
  s: Services,
  role: WorkerRole = s.config.WORKER_ROLE,
  log: (line: string) => void = (line) => console.error(line),
  /** Another workflows entry than workflows/index.ts (the roll-out proof's next version). */
  workflowsPath?: string,
): Promise<{ stop(): Promise<void>; queues: string[] }> {
  const { config } = s;
  const serveWorkflows = role !== 'provider';
  const http = serveWorkflows
    ? createSafeHttpClient({ policy: { allowPrivateNetworks: allowsPrivateNetworks(config) } })
    : undefined;
  const webhookTaskQueue = webhookTaskQueueOf(config);
  const workers = await createWorkers(
    {
      connection: s.nativeConnection,
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      pool: s.pool,
      provider: s.provider,
      store: s.store,
      videoConcurrency: config.VIDEO_CONCURRENCY,
      client: s.client,
      deadlines: deadlinesOf(config),
      batchLimits: batchLimitsOf(config),
      providerConcurrency: config.PROVIDER_CONCURRENCY,
      workflowCacheSize: config.WORKFLOW_CACHE_SIZE,
      ...(workflowsPath ? { workflowsPath } : {}),
      ...(s.tracing ? { tracing: s.tracing.worker } : {}),
      ...(config.WORKER_BUILD_ID
        ? {
            // Pinned: a workflow finishes on the code it started on, so the next version may change
            // command order freely; the old version's workers are stopped once it is drained.
            deployment: {
              version: { deploymentName: config.WORKER_DEPLOYMENT_NAME, buildId: config.WORKER_BUILD_ID },
              useWorkerVersioning: true,
              defaultVersioningBehavior: 'PINNED' as const,
            },
          }
        : {}),
      ...(http
        ? {
            webhooks: {
              taskQueue: webhookTaskQueue,
              concurrency: config.WEBHOOK_CONCURRENCY,
              pool: s.pool,
              store: s.store,
              secretBox: createSecretBox(s.webhookSecretKey),
              http,
            },
          }
        : {}),
    },
    role,
  );
  if (serveWorkflows) {
    await ensureReconcilerSchedule(s.client, {
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      everyMs: config.RECONCILE_EVERY_MS,
      graceMs: config.RECONCILE_GRACE_MS,
    });
  }
  const running = new Map<Worker, Promise<void>>(workers.map((w) => [w, w.run()]));
  const relay = serveWorkflows
    ? startWebhookRelay({
        pool: s.pool,
        dispatcher: s.dispatcher,
        retentionMs: config.WEBHOOK_LOG_RETENTION_DAYS * 86_400_000,
        onError: (err) => console.warn('webhook relay:', err instanceof Error ? err.message : err),
      })
    : undefined;
  const mail = mailOptionsOf(config);
  const mailRelay =
    serveWorkflows && mail
      ? (await import('./mail-relay')).startMailRelay({
          pool: s.pool,
          smtpUrl: mail.smtpUrl,
          from: mail.from,
          dashboardUrl: `${s.publicBaseUrl.replace(/\/$/, '')}/dashboard`,
          onError: (err) => console.warn('mail relay:', err instanceof Error ? err.message : err),
        })
      : undefined;
  const queues = workers.map((w) => w.options.taskQueue);

  const drain = async (w: Worker, run: Promise<void>, started: number): Promise<void> => {
    try {
      await run;
    } catch (err) {
      // Past the force time the SDK gives up on what is still running, and tearing that down
      // may fail as well (IllegalStateError: "Workflow execution context should have been
      // disposed first") instead of GracefulShutdownPeriodExpiredError.
      if (!(err instanceof GracefulShutdownPeriodExpiredError) && Date.now() - started < SHUTDOWN_FORCE_MS) throw err;
      log(
        `the ${w.options.taskQueue} worker did not drain within ${SHUTDOWN_FORCE_MS / 1000} s; Temporal will run again what it left unfinished`,
      );
    }
  };

  return {
    queues,
    async stop() {
      const started = Date.now();
      await relay?.stop();
      await mailRelay?.stop();
      for (const w of running.keys()) if (w.getState() === 'RUNNING') w.shutdown();
      await Promise.all([...running].map(([w, run]) => drain(w, run, started)));
      http?.close();
    },
  };
}
