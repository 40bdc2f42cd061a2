import { runStandalone } from './standalone';
import { startMetricsServer } from './metrics-server';
import { prebuiltWorkflowBundle, SHUTDOWN_FORCE_MS } from './worker';
import { startWorker } from './worker-runner';

/**
 * A worker alone (docker-compose `worker` with WORKER_ROLE=workflows, `provider` with
 * WORKER_ROLE=provider; run as many of each as needed).
 */
runStandalone('worker', 'gensvc-worker', async (services, shutdown) => {
  const worker = await startWorker(services);
  shutdown.add('worker', () => worker.stop(), { timeoutMs: SHUTDOWN_FORCE_MS + 1_000 });
  const port = services.config.METRICS_PORT;
  if (port !== undefined) {
    const server = await startMetricsServer({
      port,
      host: services.config.HOST,
      adminToken: services.adminToken.value,
    });
    shutdown.add('metrics', () => new Promise<void>((resolve) => server.close(() => resolve())));
  }
  const bundle = services.config.WORKER_ROLE === 'provider' ? undefined : prebuiltWorkflowBundle(!!services.tracing);
  return `worker polling task queue${worker.queues.length > 1 ? 's' : ''} ${worker.queues.map((q) => `'${q}'`).join(', ')} on ${services.config.TEMPORAL_ADDRESS} (WORKER_ROLE=${services.config.WORKER_ROLE})${bundle ? `; workflows from ${bundle}` : ''}`;
});
