import { runStandalone } from './standalone';
import { startMetricsServer } from './metrics-server';
import { startWorker } from './worker-runner';

/** A worker alone (docker-compose `worker`; run as many as needed). */
runStandalone('worker', async (services, shutdown) => {
  const worker = await startWorker(services);
  shutdown.add('worker', () => worker.stop());
  const port = services.config.METRICS_PORT;
  if (port !== undefined) {
    const server = await startMetricsServer({ port, host: services.config.HOST, adminToken: services.adminToken.value });
    shutdown.add('metrics', () => new Promise<void>((resolve) => server.close(() => resolve())));
  }
  return `worker polling task queue '${services.config.TEMPORAL_TASK_QUEUE}' on ${services.config.TEMPORAL_ADDRESS}`;
});
