import { ConfigError, loadConfig } from '../core/config';
import { createShutdown } from './lifecycle';
import { openServices } from './services';
import { startWorker } from './worker-runner';

/** A worker alone (docker-compose `worker`, or more of them): needs DATABASE_URL and TEMPORAL_ADDRESS. */
const shutdown = createShutdown();

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  if (!config.DATABASE_URL || !config.TEMPORAL_ADDRESS) throw new ConfigError('The worker needs DATABASE_URL and TEMPORAL_ADDRESS.');
  shutdown.onSignals((code) => process.exit(code));
  const services = await openServices(config, { databaseUrl: config.DATABASE_URL, temporalAddress: config.TEMPORAL_ADDRESS });
  shutdown.add('connections', () => services.close());
  const worker = await startWorker(services);
  shutdown.add('worker', () => worker.stop());
  console.log(`worker polling task queue '${config.TEMPORAL_TASK_QUEUE}' on ${config.TEMPORAL_ADDRESS}`);
}

main().catch(async (err: unknown) => {
  console.error(err instanceof ConfigError ? err.message : err);
  await shutdown.stop();
  process.exit(1);
});
