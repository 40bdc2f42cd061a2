import { runStandalone } from './standalone';
import { startWorker } from './worker-runner';

/** A worker alone (docker-compose `worker`; run as many as needed). */
runStandalone('worker', async (services, shutdown) => {
  const worker = await startWorker(services);
  shutdown.add('worker', () => worker.stop());
  return `worker polling task queue '${services.config.TEMPORAL_TASK_QUEUE}' on ${services.config.TEMPORAL_ADDRESS}`;
});
